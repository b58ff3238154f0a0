// Package events writes gleaner-agent's Kubernetes events: the evictor's on the pods it evicts or kills, the QoS
// plugins' (a malformed pod annotation) and the QoS manager's (a refused NodeSLO).
//
// Events are core/v1 Events written with the agent's client: no clientset and no event broadcaster, which would
// cost the agent memory it does not have. An event that cannot be written waits in a bounded queue (the oldest go
// first) that Start, every 10 s, and every later event retry: what the local last resort does while the API server
// cannot be reached is reported once it answers again, with the time it happened.
package events
