// Package sloconfig parses the slo-controller-config ConfigMap (the keys and JSON fields of seed 002) into typed,
// defaulted, validated strategies, and merges the cluster strategy with the node overrides whose selector matches a
// node.
package sloconfig
