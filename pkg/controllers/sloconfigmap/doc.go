// Package sloconfigmap is gleaner-manager's SLO config loader: a controller that loads the slo-controller-config
// ConfigMap into the shared sloconfig.Store, its only writer. Every other controller that needs the config (nodeslo,
// nodemetric, noderesource) reads the Store and reacts to its changes through Store.NodeSource, so none of them
// watches or parses the ConfigMap itself.
//
// The loader is part of the manager, not one of the controllers --controllers selects: the manager sets it up
// before them, always, since a controller reading a Store that nothing fills would run on nothing without a word.
// Its name (Name) still labels its logs and workqueue metrics.
package sloconfigmap
