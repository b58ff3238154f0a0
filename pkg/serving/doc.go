// Package serving is what gleaner-manager and gleaner-agent share about the HTTP servers other programs reach:
// /metrics over HTTPS behind Kubernetes authentication (TokenReview) and authorization (SubjectAccessReview on the
// request's path, a nonResourceURL), plain HTTP only on a loopback address, and HTTP/2 off on the metrics and
// webhook servers unless a flag asks for it.
//
// The manager hands these options to controller-runtime's metrics and webhook servers; the agent, whose metrics
// live in a registry of its own, serves them with Listener and Protect. docs/security.md says who may scrape and
// why HTTP/2 is off.
package serving
