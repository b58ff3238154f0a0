// Package colocationprofile is gleaner-manager's mutating admission webhook of pod creation: it applies
// ColocationProfiles (api/config/v1alpha1), so that a pod created in a namespace a profile selects becomes a batch
// pod — the QoS class label, a priority class of the batch band, optionally a scheduler name, labels and
// annotations, and its containers' cpu and memory moved to kubernetes.io/batch-cpu and kubernetes.io/batch-memory —
// without its owner writing any of that into the pod template.
//
// The webhook never blocks pod creation: its configuration (config/webhook) has failurePolicy Ignore, and every
// pod it cannot handle is admitted unchanged, with an admission warning, a count in
// gleaner_colocation_profile_pods_total and, when a profile selected it, a Warning event on the profile.
package colocationprofile
