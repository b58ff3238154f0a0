package nodeslo

import (
	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/pernode"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Name is the controller's name.
const Name = "nodeslo"

// workers is how many nodes are reconciled at once; reconciles share nothing but the API server.
const workers = 4

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=slo.gleaner.sh,resources=nodeslos,verbs=get;list;watch;create;patch;delete

// Controller is the nodeslo controller.
type Controller = pernode.Controller[*slov1alpha1.NodeSLO, slov1alpha1.NodeSLOSpec]

// New returns the controller, reading the config from store.
func New(store *sloconfig.Store) *Controller {
	return pernode.New(pernode.Kind[*slov1alpha1.NodeSLO, slov1alpha1.NodeSLOSpec]{
		Name:    Name,
		New:     func() *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{} },
		Spec:    func(o *slov1alpha1.NodeSLO) *slov1alpha1.NodeSLOSpec { return &o.Spec },
		Desired: (*sloconfig.Snapshot).NodeSLOSpec,
		Changed: sloconfig.NodeSLOChanged,
	}, store, workers)
}
