package testenv

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

var env = New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

// TestStopReportNamesTheStuckController: a reconcile that ignores its context keeps its controller from stopping;
// the stop fails after the shutdown period, and the report names the controller, the shutdown step it held up
// and the reconcile's goroutine.
func TestStopReportNamesTheStuckController(t *testing.T) {
	e := env.Start(t)
	opts := ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	report := PrepareManager(&opts)
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	stuck := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		close(entered)
		<-release
		return reconcile.Result{}, nil
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("stuck").
		WatchesRawSource(source.TypedFunc[reconcile.Request](func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: "once"}})
			return nil
		})).
		Complete(stuck)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(mgr, report)
	<-entered
	err = stop()
	if err == nil {
		t.Fatal("the manager stopped although a reconcile was still running")
	}
	for _, want := range []string{
		"manager stopped with an error",
		"grace period of " + managerShutdown.String(),
		"held up at: Stopping and waiting for leader election runnables",
		"controllers not finished: [stuck]",
		"testenv.TestStopReportNamesTheStuckController.func",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the stop's error does not say %q:\n%v", want, err)
		}
	}
}
