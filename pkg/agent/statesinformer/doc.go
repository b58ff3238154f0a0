// Package statesinformer keeps gleaner-agent's view of its node: the Node object, the pods bound to it, its
// NodeSLO and its NodeMetric. Other modules read it through the States interface (typed getters) and learn about
// changes through callbacks.
//
// Sources fill a Store: the Informer watches the API server (a field selector on the node name, so the agent
// never lists the cluster) and, as an option, polls the kubelet's pod list instead of watching pods. When the API
// server becomes unreachable the Store keeps serving the last state it saw, and the watches resume on their own.
package statesinformer
