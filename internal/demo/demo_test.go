package demo

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

var env = testenv.New()

func TestMain(m *testing.M) { os.Exit(env.Run(m)) }

const mi = 1 << 20

func TestSizeFor(t *testing.T) {
	manifest := Size{CPU: 500, Memory: 128 * mi}
	tests := []struct {
		name      string
		published Size
		want      Size
		wantOK    bool
	}{
		{name: "room for the manifest", published: Size{CPU: 1500, Memory: 8 << 30}, want: manifest, wantOK: true},
		{name: "less CPU: two thirds shared by the two pods", published: Size{CPU: 600, Memory: 8 << 30},
			want: Size{CPU: 200, Memory: 128 * mi}, wantOK: true},
		{name: "less memory, rounded down to whole MiB", published: Size{CPU: 1500, Memory: 100*mi + 5},
			want: Size{CPU: 500, Memory: 33 * mi}, wantOK: true},
		{name: "just enough", published: Size{CPU: 150, Memory: 96 * mi}, want: Size{CPU: 50, Memory: 32 * mi}, wantOK: true},
		{name: "too little CPU", published: Size{CPU: 149, Memory: 8 << 30}, want: Size{CPU: 49, Memory: 128 * mi}},
		{name: "nothing", published: Size{}, want: Size{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sizeFor(tt.published, manifest, 2)
			if diff := cmp.Diff(tt.want, got); diff != "" || ok != tt.wantOK {
				t.Errorf("sizeFor(%v) ok %t, want %t (-want +got):\n%s", tt.published, ok, tt.wantOK, diff)
			}
		})
	}
}

func TestSetLoad(t *testing.T) {
	got := setLoad([]string{"--report=10s", "--load=500m", "--load", "1"}, 120)
	if diff := cmp.Diff([]string{"--load=120m", "--report=10s", "1"}, got); diff != "" {
		// "--load 1" as two words is not how config/demo writes it; the stray value stays, which a test would show.
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNoRoomErrorSaysWhyAndWhatWouldChangeIt(t *testing.T) {
	term := func(name, value, detail string) slov1alpha1.DerivationTerm {
		return slov1alpha1.DerivationTerm{Name: name, Value: resource.MustParse(value), Detail: detail}
	}
	err := &NoRoomError{Node: "localhost", Pods: 2, Published: Size{CPU: 0, Memory: 8 << 30},
		CPU: &slov1alpha1.ResourceDerivation{Resource: slov1alpha1.BatchCPU, Value: ptr.To(resource.MustParse("0")),
			Terms: []slov1alpha1.DerivationTerm{
				term("capacity", "2", ""), term("safetyMargin", "800m", "(100 - reclaimThresholdPercent 60)% of capacity"),
				term("systemUsed", "1700m", ""), term("hpUsed", "150m", ""), term("calculated", "-650m", ""),
				term("batchHeld", "0", ""),
			}},
		Memory: &slov1alpha1.ResourceDerivation{Resource: slov1alpha1.BatchMemory, Reason: "not looked at"}}
	msg := err.Error()
	for _, want := range []string{
		"node localhost publishes 0m of batch-cpu and 8192Mi of batch-memory",
		"at least 150m of batch-cpu and 96Mi of batch-memory",
		"kubernetes.io/batch-cpu = capacity 2 - safetyMargin 800m - systemUsed 1700m - hpUsed 150m = -650m",
		"(100 - reclaimThresholdPercent 60)% of capacity",
		"a higher cpuReclaimThresholdPercent",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	// Memory is plentiful: its derivation is not part of why.
	if strings.Contains(msg, "not looked at") {
		t.Errorf("the message explains batch-memory, which is not short:\n%s", msg)
	}
}

// world is the demo as gleaner-local applies it, on an API server without kubelet or controllers: the test plays
// the agent (NodeMetric), the manager (the node's batch resources and explanation) and the kubelet (pod phases).
type world struct {
	t       *testing.T
	c       client.Client
	node    string
	service *corev1.Pod
}

func newWorld(t *testing.T, node string) *world {
	c := env.Start(t).Client
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	env.CreateNode(t, testutil.Node(node).Capacity("cpu", "2", "memory", "8Gi").Allocatable("cpu", "2", "memory", "8Gi").Obj())
	svc := env.CreatePod(t, testutil.Pod("ls-service-"+node).Namespace(Namespace).Node(node).Label("app", "ls-service").
		Container("service").Image("gleaner.local/lsservice:dev").Requests("cpu", "1").Phase(corev1.PodRunning).Obj())
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: BatchDeployment},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch-burner"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "batch-burner"}},
				Spec:       *batchPod(Size{CPU: 500, Memory: 128 * mi}).Spec.DeepCopy(),
			},
		},
	}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), dep) })
	return &world{t: t, c: c, node: node, service: svc}
}

func batchPod(s Size) *corev1.Pod {
	cpu, mem := resource.NewQuantity(s.CPU, resource.DecimalSI).String(), resource.NewQuantity(s.Memory, resource.BinarySI).String()
	return testutil.Pod("batch").Namespace(Namespace).Label("app", "batch-burner").Container("burner").
		Image("gleaner.local/burner:dev", "--load=500m").
		Requests(string(slov1alpha1.BatchCPU), cpu, string(slov1alpha1.BatchMemory), mem).
		Limits(string(slov1alpha1.BatchCPU), cpu, string(slov1alpha1.BatchMemory), mem).Obj()
}

// report writes the agent's NodeMetric at at, listing the service when measured.
func (w *world) report(at time.Time, measured bool) {
	w.t.Helper()
	b := testutil.NodeMetric(w.node).Updated(at)
	if measured {
		b = b.Pod(w.service, "cpu", "100m", "memory", "50Mi")
	}
	nm := b.Obj()
	existing := &slov1alpha1.NodeMetric{}
	ctx := context.Background()
	if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, existing); err != nil {
		if err := w.c.Create(ctx, nm.DeepCopy()); err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(func() { _ = w.c.Delete(context.Background(), nm) })
		if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, existing); err != nil {
			w.t.Fatal(err)
		}
	}
	existing.Status = nm.Status
	if err := w.c.Status().Update(ctx, existing); err != nil {
		w.t.Fatal(err)
	}
}

// publish writes the manager's batch resources on the node, calculated from the NodeMetric of metricTime.
func (w *world) publish(s Size, metricTime time.Time) {
	w.t.Helper()
	ctx := context.Background()
	node := &corev1.Node{}
	if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, node); err != nil {
		w.t.Fatal(err)
	}
	cpu, mem := *resource.NewQuantity(s.CPU, resource.DecimalSI), *resource.NewQuantity(s.Memory, resource.BinarySI)
	node.Status.Allocatable[slov1alpha1.BatchCPU], node.Status.Allocatable[slov1alpha1.BatchMemory] = cpu, mem
	node.Status.Capacity[slov1alpha1.BatchCPU], node.Status.Capacity[slov1alpha1.BatchMemory] = cpu, mem
	if err := w.c.Status().Update(ctx, node); err != nil {
		w.t.Fatal(err)
	}
	mt := metav1.NewTime(metricTime)
	x := slov1alpha1.NodeResourceExplanationStatus{UpdateTime: metav1.Now(), Resources: []slov1alpha1.ResourceDerivation{
		{Resource: slov1alpha1.BatchCPU, Value: &cpu, MetricTime: &mt, Terms: []slov1alpha1.DerivationTerm{
			{Name: "systemUsed", Value: resource.MustParse("1700m")}}},
		{Resource: slov1alpha1.BatchMemory, Value: &mem, MetricTime: &mt},
	}}
	// The manager's NodeResourceExplanation, created the first time.
	exp := &slov1alpha1.NodeResourceExplanation{}
	if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, exp); err != nil {
		exp = &slov1alpha1.NodeResourceExplanation{ObjectMeta: metav1.ObjectMeta{Name: w.node}}
		if err := w.c.Create(ctx, exp); err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(func() { _ = w.c.Delete(context.Background(), exp) })
	}
	exp.Status = x
	if err := w.c.Status().Update(ctx, exp); err != nil {
		w.t.Fatal(err)
	}
}

// runBatchPods plays the deployment controller and the kubelet: n Running batch pods of the size.
func (w *world) runBatchPods(n int, s Size) {
	w.t.Helper()
	for i := range n {
		p := batchPod(s)
		p.Name = "batch-" + w.node + "-" + string(rune('a'+i))
		p.Spec.NodeName = w.node
		p.Status.Phase = corev1.PodRunning
		env.CreatePod(w.t, p)
	}
}

func (w *world) deploymentSize() (Size, []string) {
	w.t.Helper()
	dep := &appsv1.Deployment{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: Namespace, Name: BatchDeployment}, dep); err != nil {
		w.t.Fatal(err)
	}
	s, err := podSize(&dep.Spec.Template.Spec)
	if err != nil {
		w.t.Fatal(err)
	}
	return s, dep.Spec.Template.Spec.Containers[0].Args
}

func (w *world) placer(publish, run time.Duration) Placer {
	return Placer{Client: w.c, Node: w.node, Out: io.Discard, PublishTimeout: publish, RunTimeout: run}
}

// The batch pods are sized from what the node publishes once the service is measured, not before: a publication
// from a NodeMetric without the service (which counts it at its request) is not the one to size from.
func TestPlaceSizesFromThePublicationThatMeasuredTheService(t *testing.T) {
	w := newWorld(t, "sizes")
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	w.report(t0, false)
	w.publish(Size{}, t0) // the service at its 1 CPU request: nothing for batch

	done := make(chan error, 1)
	var size Size
	go func() {
		var err error
		size, err = w.placer(30*time.Second, 30*time.Second).Place(context.Background())
		done <- err
	}()
	time.Sleep(2 * pollInterval) // Place sees the unmeasured publication first
	t1 := t0.Add(20 * time.Second)
	w.report(t1, true)
	w.publish(Size{CPU: 600, Memory: 4 << 30}, t1)
	want := Size{CPU: 200, Memory: 128 * mi}
	testenv.Eventually(t, "the Deployment is resized", func() error {
		if got, _ := w.deploymentSize(); got != want {
			return errors.New("deployment asks " + got.String())
		}
		return nil
	})
	if _, args := w.deploymentSize(); !cmp.Equal(args, []string{"--load=200m"}) {
		t.Errorf("burner args %q, want the load of the new size", args)
	}
	w.runBatchPods(2, want)
	if err := <-done; err != nil {
		t.Fatalf("Place: %v", err)
	}
	if size != want {
		t.Errorf("Place sized the pods to %v, want %v", size, want)
	}
}

func TestPlaceWithTooLittleSaysWhyAndAsksTheLeast(t *testing.T) {
	w := newWorld(t, "too-little")
	at := time.Now().Truncate(time.Second)
	w.report(at, true)
	w.publish(Size{CPU: 100, Memory: 4 << 30}, at)
	var out strings.Builder
	p := w.placer(3*time.Second, 3*time.Second)
	p.Out = &out
	_, err := p.Place(context.Background())
	// Said at once, not only when the wait ends, and what the pods ask then.
	for _, want := range []string{"cannot run: node too-little publishes 100m of batch-cpu", "Waiting up to 3s",
		"now ask 50m of batch-cpu and 32Mi of batch-memory each, and start once the node publishes 150m"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Place's output does not say %q:\n%s", want, out.String())
		}
	}
	var noRoom *NoRoomError
	if !errors.As(err, &noRoom) {
		t.Fatalf("Place: %v, want a NoRoomError", err)
	}
	if noRoom.Published.CPU != 100 || noRoom.CPU == nil || !strings.Contains(err.Error(), "systemUsed 1700m") {
		t.Errorf("the error does not carry the node's derivation: %v", err)
	}
	if got, _ := w.deploymentSize(); got != (Size{CPU: minCPU, Memory: minMemory}) {
		t.Errorf("the pods ask %v, want the least they can (%dm, %dMi)", got, minCPU, minMemory>>20)
	}
}

func TestPlaceSaysWhatItWaitedFor(t *testing.T) {
	w := newWorld(t, "waits")
	at := time.Now().Truncate(time.Second)
	w.report(at, false)
	w.publish(Size{CPU: 1000, Memory: 4 << 30}, at)
	_, err := w.placer(3*time.Second, time.Second).Place(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not measure the demo service") {
		t.Errorf("Place without the service measured: %v", err)
	}

	// Measured, but the node still carries what was calculated before.
	w.report(at.Add(20*time.Second), true)
	_, err = w.placer(3*time.Second, time.Second).Place(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not publish batch resources from a NodeMetric that measured the service") {
		t.Errorf("Place with an old publication: %v", err)
	}

	// Published, but no pod runs: the error names the pods and why.
	w.publish(Size{CPU: 1000, Memory: 4 << 30}, at.Add(20*time.Second))
	p := batchPod(Size{CPU: 333, Memory: 128 * mi})
	p.Name = "batch-waits-pending"
	p.Status.Phase = corev1.PodPending
	env.CreatePod(t, p)
	_, err = w.placer(3*time.Second, 2*time.Second).Place(context.Background())
	if err == nil || !strings.Contains(err.Error(), "0 of 2 batch pods running; batch-waits-pending Pending") {
		t.Errorf("Place with no pod running: %v", err)
	}
}
