// Package sloconfigmap is the controller that loads the slo-controller-config ConfigMap into the shared
// sloconfig.Store: it is the Store's only writer. Every other controller that needs the config (nodeslo,
// nodemetric, noderesource) reads the Store and reacts to its changes through Store.NodeSource, so none of them
// watches or parses the ConfigMap itself.
package sloconfigmap
