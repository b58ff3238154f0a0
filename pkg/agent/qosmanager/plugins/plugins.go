// Package plugins lists gleaner-agent's QoS manager plugins, one package each.
package plugins

import (
	"github.com/gleaner-sh/gleaner/pkg/agent/qosmanager"
)

// Registry returns every QoS plugin, in the order they are listed in logs and flags. Adding a plugin is one line
// here.
func Registry() []qosmanager.Factory {
	return []qosmanager.Factory{}
}
