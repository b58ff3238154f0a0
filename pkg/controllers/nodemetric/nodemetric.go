package nodemetric

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/pernode"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the controller's name.
const Name = "nodemetric"

// workers is how many nodes are reconciled at once; reconciles share nothing but the API server.
const workers = 4

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodemetrics,verbs=get;list;watch;create;patch;delete

// Controller is the nodemetric controller.
type Controller = pernode.Controller[*slov1alpha1.NodeMetric, slov1alpha1.NodeMetricSpec]

// New returns the controller, reading the config from store.
func New(store *sloconfig.Store) *Controller {
	return pernode.New(pernode.Kind[*slov1alpha1.NodeMetric, slov1alpha1.NodeMetricSpec]{
		Name:    Name,
		New:     func() *slov1alpha1.NodeMetric { return &slov1alpha1.NodeMetric{} },
		Spec:    func(o *slov1alpha1.NodeMetric) *slov1alpha1.NodeMetricSpec { return &o.Spec },
		Desired: (*sloconfig.Snapshot).NodeMetricSpec,
		Changed: sloconfig.NodeMetricChanged,
	}, store, workers)
}
