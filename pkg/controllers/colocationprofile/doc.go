// Package colocationprofile is gleaner-manager's controller of the ColocationProfiles' status: how many pods each
// profile applies to now (status.matchedPods) and whether the admission webhook (pkg/webhook/colocationprofile) can
// apply it at all (the Valid condition, with the webhook's own checks: selectors that parse, a priority class of the
// batch band, labels and annotations the API server accepts), for the spec of status.observedGeneration.
//
// A profile's pods are the pods carrying the label configv1alpha1.LabelColocationProfile with its name, which the
// webhook sets on every pod it makes a batch pod, and that have not finished (phase neither Succeeded nor Failed).
// The controller never lists pods: the bound ones it counts in the manager's pod cache (package podcache, which
// keeps a count per profile as pods come and go), the ones still waiting for a node in a cache of its own that holds
// only those (a label selector on the profile label and a field selector on an empty spec.nodeName, each pod cut
// down to its name, label and phase). A pod of a profile enqueues the profile when it comes, goes, finishes or is
// bound; a PriorityClass enqueues the profiles that name it.
//
// The status is written only when it differs from the cached profile's, with a merge patch of the status
// subresource; the profile's own updates are watched, so a write the cache had not seen when a reconcile compared is
// checked again when it arrives. A change of the count alone is written at most once per Config.MinWriteInterval per
// profile, so that a job creating a thousand pods costs a few writes, not a thousand; a change of the spec or of the
// condition is written at once.
package colocationprofile
