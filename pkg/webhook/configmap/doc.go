// Package configmap is the validating admission webhook of the slo-controller-config ConfigMap, served by
// gleaner-manager. It parses the ConfigMap exactly as the manager will (sloconfig.ParseConfigMap) and denies a
// create or update with a malformed or invalid key, with the same message the manager's Warning event would carry,
// so a bad `kubectl apply` fails at once. An update is judged on the keys it writes (added, or with a new value):
// a bad key already stored that it leaves as it is comes back as a warning, so that keys can be mended one at a
// time. Findings about the written keys that do not stop them from applying (unknown fields, names matched ignoring
// case, unknown keys) come back as admission warnings, which kubectl prints. Deleting the ConfigMap is allowed, with
// a warning that every key returns to its defaults.
package configmap
