package manager

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gleaner-sh/gleaner/pkg/controllers/colocationprofile"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeallocation"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodemetric"
	"github.com/gleaner-sh/gleaner/pkg/controllers/noderesource"
	"github.com/gleaner-sh/gleaner/pkg/controllers/nodeslo"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Controller is one controller of gleaner-manager.
type Controller interface {
	// Name is the controller's name, as logs, metrics and the --controllers flag know it.
	Name() string
	// SetupWithManager registers the controller's watches, indexes and reconciler with mgr. It is called once, before
	// mgr starts; an error stops gleaner-manager from starting.
	SetupWithManager(mgr ctrl.Manager) error
}

// Deps are what the controllers share, built once by New. Constructors only keep what they are given: they also
// run for flag validation, with only default Options set.
type Deps struct {
	// Options are the manager's options.
	Options *Options
	// Clock is the time source of every controller; tests pass a fake one.
	Clock clock.WithTicker
	// Metrics receives every controller's Prometheus metrics: controller-runtime's registry, which the manager
	// serves on /metrics next to controller-runtime's own.
	Metrics prometheus.Registerer
	// SLOConfig is the one shared, versioned copy of the slo-controller-config ConfigMap: read Current once per
	// reconcile, and watch WatchesRawSource(SLOConfig.NodeSource(mgr.GetCache(), sloconfig.ColocationChanged)) (or
	// another NodeChangedFunc) to reconcile the nodes a config change affects. Its only writer is the config loader
	// (package sloconfigmap), which is part of the manager rather than one of these controllers: it always runs,
	// whatever --controllers selects, so no controller can read a store that nothing fills.
	SLOConfig *sloconfig.Store
	// Pods is the cache of the cluster's bound pods, one for every controller that reads pods (package podcache).
	Pods *podcache.Cache
}

// controllers returns every controller gleaner-manager has, in the order they are set up. Adding a controller is
// one line here.
func controllers(d Deps) []Controller {
	return []Controller{
		nodeallocation.New(nodeallocation.Config{Clock: d.Clock, Registerer: d.Metrics, Pods: d.Pods}),
		nodeslo.New(d.SLOConfig),
		nodemetric.New(d.SLOConfig),
		noderesource.New(d.SLOConfig, d.Clock, d.Metrics, d.Options.NodeResource).WithPods(d.Pods),
		colocationprofile.New(colocationprofile.Config{Clock: d.Clock, Pods: d.Pods}),
	}
}

// controllerNames lists the names of all controllers, for flag validation.
func controllerNames() []string {
	var names []string
	for _, c := range controllers(Deps{Options: NewOptions()}) {
		names = append(names, c.Name())
	}
	return names
}
