// Package sloconfig parses the slo-controller-config ConfigMap (Koordinator's keys and JSON fields) into typed,
// defaulted, validated strategies, merges the cluster strategy with the first node override whose selector matches a
// node, and keeps the result as one shared, versioned Snapshot for every controller of gleaner-manager.
//
// The pieces, in the order data flows through them:
//
//   - parse.go: ParseConfigMap and ParseKey (one io.Reader per key); fields.go: how field names are matched (as
//     encoding/json does, so configs written for Koordinator work unchanged) and the Findings about
//     unknown, case-mismatched and repeated fields (a walker of its own: sigs.k8s.io/json's strict decoding is
//     case-sensitive only; fields.go says why that is not enough).
//   - validate.go: ranges and enums from the NodeSLO CRD's own schema, plus the checks a schema cannot express.
//   - compile.go: layering (defaults < clusterStrategy < first matching nodeStrategies/nodeConfigs entry).
//   - the documented default of every NodeSLO field, WithDefaults and MergeStrategy are in the API package
//     (api/slo/v1alpha1/defaults.go), so the agent applies them without this package; colocation.go holds the
//     defaults of colocation-config, which only the manager reads.
//   - store.go, snapshot.go, source.go: the Store every controller reads (Current), what a node gets from a Snapshot
//     (Colocation, NodeSLOSpec, NodeMetricSpec), and NodeSource, which enqueues only the nodes a change affects.
//
// docs/configuration.md documents every key and field for users.
package sloconfig
