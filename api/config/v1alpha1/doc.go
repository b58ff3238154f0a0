// Package v1alpha1 holds Gleaner's configuration API, group config.gleaner.sh, version v1alpha1: objects an
// operator writes to tell Gleaner what to do, as opposed to the per-node objects of slo.gleaner.sh that Gleaner
// writes itself.
//
//   - ColocationProfile: which pods gleaner-manager's admission webhook turns into batch pods when they are created
//     (QoS class label, a priority class of the batch band, batch-cpu and batch-memory instead of cpu and memory),
//     so that a job owner only labels a namespace.
//
// +kubebuilder:object:generate=true
// +groupName=config.gleaner.sh
package v1alpha1
