package podcache

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// ForManager returns pods when it is set (gleaner-manager shares one cache between its controllers), else a new
// cache of mgr's API server, added to mgr's runnables: a controller set up alone, as its tests do, gets its own.
func ForManager(mgr ctrl.Manager, pods *Cache) (*Cache, error) {
	if pods != nil {
		return pods, nil
	}
	pods, err := New(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(pods); err != nil {
		return nil, fmt.Errorf("adding the pod cache to the manager: %w", err)
	}
	return pods, nil
}
