// Package pernode is the machinery shared by the controllers that keep one object per Node whose spec follows the
// SLO config (nodeslo, nodemetric): create it owned by the node, patch its spec only when the config gives the node
// something else, delete it with the node, and reconcile only the nodes a config change affects.
package pernode
