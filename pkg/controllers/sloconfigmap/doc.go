// Package sloconfigmap is gleaner-manager's SLO config loader: a controller that loads the slo-controller-config
// ConfigMap into the shared sloconfig.Store, its only writer. Every other controller that needs the config (nodeslo,
// nodemetric, noderesource) reads the Store and reacts to its changes through Store.NodeSource, so none of them
// watches or parses the ConfigMap itself.
//
// The loader also keeps the last good value of each key across restarts (lastgood.go): it saves the values in force
// that came from the ConfigMap in a companion ConfigMap (LastGoodName) and hands them to Store.Restore before its
// first Apply, so a restarted manager keeps a rejected key at its last good value rather than at its defaults.
//
// The loader is part of the manager, not one of the controllers --controllers selects: the manager sets it up
// before them, always, since a controller reading a Store that nothing fills would run on nothing without a word.
// Its name (Name) still labels its logs and workqueue metrics.
package sloconfigmap
