package manager

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// TestGiveBackOffIsAValidConfig: what the give-back writes passes the ConfigMap's validation (the webhook refuses
// an invalid key even during an uninstall) without a finding, and leaves every key it writes off.
func TestGiveBackOffIsAValidConfig(t *testing.T) {
	res := sloconfig.ParseConfigMap(GiveBackOff())
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if w := res.Warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	// Every key on first, so that a give-back that leaves a key's default in force would fail below.
	s := sloconfig.NewStore()
	on := s.Apply(&corev1.ConfigMap{Data: map[string]string{
		sloconfig.ColocationConfigKey:            `{"enable": true}`,
		sloconfig.CPUNormalizationConfigKey:      `{"enable": true}`,
		sloconfig.ResourceAmplificationConfigKey: `{"enable": true, "resourceAmplificationRatio": {"cpu": 1.5}}`,
	}}).Current
	for _, k := range on.KeyStatuses() {
		if k.Err != nil {
			t.Fatalf("the config with every key on: %v", k.Err)
		}
	}
	snap := s.Apply(&corev1.ConfigMap{Data: GiveBackOff()}).Current
	labels := map[string]string{"any": "node"}
	if en := on.ResourceAmplification(labels).Enable; en == nil || !*en {
		t.Fatalf("amplification not on before the give-back: %v", en)
	}
	if on := snap.Colocation(labels).Enable; on == nil || *on {
		t.Errorf("colocation enable = %v, want false", on)
	}
	if on := snap.CPUNormalization(labels).Enable; on == nil || *on {
		t.Errorf("CPU normalization enable = %v, want false", on)
	}
	if on := snap.ResourceAmplification(labels).Enable; on == nil || *on {
		t.Errorf("amplification enable = %v, want false", on)
	}
}

// TestLeftOnNode lists the tier resources of capacity and allocatable and the manager's annotations, and nothing of
// the kubelet's or the agent's.
func TestLeftOnNode(t *testing.T) {
	node := testutil.Node("n").
		Capacity("cpu", "4", "kubernetes.io/batch-cpu", "2000", "example.com/gpu", "1").
		Allocatable("cpu", "4", "kubernetes.io/batch-cpu", "2000", "kubernetes.io/mid-memory", "1Gi").
		Annotation(slov1alpha1.AnnotationRawAllocatable, `{"cpu":"4"}`).
		Annotation(slov1alpha1.AnnotationCPUBasicInfo, `{}`).Obj()
	got := strings.Join(LeftOnNode(node), "; ")
	want := "allocatable kubernetes.io/batch-cpu; allocatable kubernetes.io/mid-memory; annotation node.koordinator.sh/raw-allocatable; capacity kubernetes.io/batch-cpu"
	if got != want {
		t.Errorf("LeftOnNode = %q, want %q", got, want)
	}
	if left := LeftOnNode(testutil.Node("clean").Allocatable("cpu", "4").Obj()); len(left) != 0 {
		t.Errorf("a clean node: %v", left)
	}
	labelled := testutil.Node("labelled").Label(slov1alpha1.LabelCPUNormalizationEnabled, "true").
		Annotation(slov1alpha1.AnnotationCPUNormalizationRatio, "1.2").Obj()
	if got := strings.Join(LeftOnNode(labelled), "; "); !strings.Contains(got, "remove the label") {
		t.Errorf("a ratio the node's label keeps: %q does not say to remove the label", got)
	}
}

// TestGiveBack against a real API server, with a token of the Job's service account and config/uninstall's RBAC
// only: the give-back turns the keys off in the SLO ConfigMap and keeps its other keys; while a Node holds what the
// manager wrote it waits, and when its time runs out it fails naming the node and each field; once the Node is clean
// (here the test takes the fields off, standing in for the manager, whose part is proven by the e2e test
// TestUninstallRestoresTheNode) it ends without an error. Without a ConfigMap it only waits.
func TestGiveBack(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	const ns, name = "gleaner-system", "slo-controller-config"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if out, err := e.Kubectl("apply", "-k", "../../config/uninstall").CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -k config/uninstall: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = e.Kubectl("delete", "--wait=false", "-k", "../../config/uninstall").Run() })
	c, err := kubernetes.NewForConfig(e.TokenConfig(e.ServiceAccountToken(t, ns, "gleaner-give-back", nil)))
	if err != nil {
		t.Fatal(err)
	}
	threshold := `{"clusterStrategy": {"enable": true, "cpuSuppressThresholdPercent": 60}}`
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{
		sloconfig.ColocationConfigKey:        `{"enable": true}`,
		sloconfig.ResourceThresholdConfigKey: threshold,
	}}
	_ = e.Client.Delete(ctx, cm) // left by another test
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), cm) })
	e.CreateNode(t, testutil.Node("giveback-clean").Allocatable("cpu", "4").Obj())
	node := e.CreateNode(t, testutil.Node("giveback-node").
		Capacity("cpu", "4", "kubernetes.io/batch-cpu", "2000").
		Allocatable("cpu", "6", "kubernetes.io/batch-cpu", "2000").
		Annotation(slov1alpha1.AnnotationResourceAmplificationRatio, `{"cpu":1.5}`).
		Annotation(slov1alpha1.AnnotationRawAllocatable, `{"cpu":"4"}`).Obj())

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err = GiveBack(short, c, clock.RealClock{}, ns, name, 200*time.Millisecond)
	if err == nil {
		t.Fatal("GiveBack ended without an error while the node held batch-cpu")
	}
	for _, want := range []string{"giveback-node: allocatable kubernetes.io/batch-cpu, annotation node.koordinator.sh/raw-allocatable, annotation node.koordinator.sh/resource-amplification-ratio, capacity kubernetes.io/batch-cpu", "is it running?"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "giveback-clean") {
		t.Errorf("the error names the clean node: %v", err)
	}
	got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range GiveBackOff() {
		if got.Data[k] != v {
			t.Errorf("ConfigMap key %s = %q, want %q", k, got.Data[k], v)
		}
	}
	if got.Data[sloconfig.ResourceThresholdConfigKey] != threshold {
		t.Errorf("the give-back changed a key it does not own: %q", got.Data[sloconfig.ResourceThresholdConfigKey])
	}

	done := make(chan error, 1)
	go func() {
		long, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		done <- GiveBack(long, c, clock.RealClock{}, ns, name, 200*time.Millisecond)
	}()
	time.Sleep(time.Second)
	select {
	case err := <-done:
		t.Fatalf("GiveBack ended before the node was clean: %v", err)
	default:
	}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	delete(node.Status.Capacity, "kubernetes.io/batch-cpu")
	delete(node.Status.Allocatable, "kubernetes.io/batch-cpu")
	node.Status.Allocatable[corev1.ResourceCPU] = node.Status.Capacity[corev1.ResourceCPU]
	delete(node.Annotations, slov1alpha1.AnnotationResourceAmplificationRatio)
	delete(node.Annotations, slov1alpha1.AnnotationRawAllocatable)
	if err := e.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("GiveBack on clean nodes: %v", err)
	}

	if err := e.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	short, cancel = context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := GiveBack(short, c, clock.RealClock{}, ns, name, 200*time.Millisecond); err != nil {
		t.Errorf("GiveBack without a ConfigMap, nodes clean: %v", err)
	}
}

// TestGiveBackWithoutRBAC: without the Job's RBAC the first answer says so, without waiting out the time.
func TestGiveBackWithoutRBAC(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	const ns, name = "gleaner-system", "slo-controller-config"
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{sloconfig.ColocationConfigKey: `{"enable": true}`}}
	_ = e.Client.Delete(ctx, cm) // left by another test
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), cm) })
	bare, err := kubernetes.NewForConfig(e.TokenConfig(e.ServiceAccountToken(t, ns, "default", nil)))
	if err != nil {
		t.Fatal(err)
	}
	long, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	begin := time.Now()
	if err := GiveBack(long, bare, clock.RealClock{}, ns, name, 200*time.Millisecond); !apierrors.IsForbidden(err) || time.Since(begin) > 20*time.Second {
		t.Errorf("GiveBack without RBAC: %v after %s, want Forbidden at once", err, time.Since(begin))
	}
}
