package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/config/crd"
	"github.com/gleaner-sh/gleaner/test/testenv"
	"github.com/gleaner-sh/gleaner/test/testutil"
)

// checkedNode is a node as its kubelet reports itself in status.nodeInfo, labelled check=nodes.
func checkedNode(name, kernel, runtime, kubelet, arch string) *corev1.Node {
	n := testutil.Node(name).Label("check", "nodes").Allocatable("cpu", "4").Obj()
	n.Status.NodeInfo = corev1.NodeSystemInfo{KernelVersion: kernel, ContainerRuntimeVersion: runtime,
		KubeletVersion: kubelet, OperatingSystem: "linux", Architecture: arch}
	return n
}

// appliedStatus is a NodeSLO status whose Applied condition has status s, as gleaner-agent writes it.
func appliedStatus(s metav1.ConditionStatus, reason, message string) slov1alpha1.NodeSLOStatus {
	return slov1alpha1.NodeSLOStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
		Type: slov1alpha1.NodeSLOApplied, Status: s, Reason: reason, Message: message, ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)),
	}}}
}

// serverVersion is the test API server's version, which the kubernetes and kubelet checks print.
func serverVersion(t *testing.T, e *testenv.Env) (string, *k8sversion.Version) {
	t.Helper()
	d, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := d.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return info.GitVersion, k8sversion.MustParseGeneric(info.GitVersion)
}

// createCheckedNodes creates nine nodes labelled check=nodes, and the NodeSLOs of seven: four identical ones
// (containerd 2.1, NodeSLO applied), an old kernel whose NodeSLO is not applied, containerd 1.7 (NodeSLO without
// status), CRI-O on arm64, docker with a kubelet five minors behind (no NodeSLO) and an s390x node. The two with
// warnings only are also labelled outcome=warning.
func createCheckedNodes(t *testing.T, e *testenv.Env) {
	t.Helper()
	_, server := serverVersion(t, e)
	kubelet := "v" + server.String()
	oldKubelet := fmt.Sprintf("v%d.%d.0", server.Major(), server.Minor()-5)
	applied := appliedStatus(metav1.ConditionTrue, slov1alpha1.NodeSLOReasonApplied, "every feature is applied")
	for _, name := range []string{"chk-c21-a", "chk-c21-b", "chk-c21-c", "chk-c21-d"} {
		e.CreateNode(t, checkedNode(name, "6.8.0-45-generic", "containerd://2.1.4", kubelet, "amd64"))
		createNodeSLO(t, e, name, applied)
	}
	e.CreateNode(t, checkedNode("chk-old-kernel", "4.18.0-513.el8.x86_64", "containerd://2.1.4", kubelet, "amd64"))
	createNodeSLO(t, e, "chk-old-kernel", appliedStatus(metav1.ConditionFalse, slov1alpha1.NodeSLOReasonNotApplied,
		"not applied on this node: CPUIdle (Unsupported); each condition says why"))
	c17 := checkedNode("chk-c17", "6.8.0-45-generic", "containerd://1.7.27", kubelet, "amd64")
	c17.Labels["outcome"] = "warning"
	e.CreateNode(t, c17)
	createNodeSLO(t, e, "chk-c17", slov1alpha1.NodeSLOStatus{})
	e.CreateNode(t, checkedNode("chk-crio", "6.8.0-45-generic", "cri-o://1.30.2", kubelet, "arm64"))
	createNodeSLO(t, e, "chk-crio", applied)
	docker := checkedNode("chk-docker", "6.8.0-45-generic", "docker://24.0.7", oldKubelet, "amd64")
	docker.Labels["outcome"] = "warning"
	e.CreateNode(t, docker)
	e.CreateNode(t, checkedNode("chk-s390x", "6.8.0-45-generic", "containerd://2.1.4", kubelet, "s390x"))
	createNodeSLO(t, e, "chk-s390x", applied)
}

// TestCheckNodes: every node check on nodes of each kind, identical nodes on one line, the worst result first, and
// the failed checks named in the error.
func TestCheckNodes(t *testing.T) {
	e := env.Start(t)
	createCheckedNodes(t, e)
	gitVersion, server := serverVersion(t, e)

	out, errOut, err := glean(t, "--kubeconfig", e.Kubeconfig, "check", "-l", "check=nodes")
	if !errors.Is(err, errChecksFailed) || err.Error() != "checks failed: architecture on 1 node, nodeslo on 1 node" {
		t.Errorf("err = %v, want the failed architecture and nodeslo checks", err)
	}
	if errOut != "" {
		t.Errorf("stderr = %q", errOut)
	}
	want := strings.NewReplacer("$V", gitVersion, "$S", "v"+server.String(),
		"$OLD", fmt.Sprintf("v%d.%d.0", server.Major(), server.Minor()-5)).Replace(
		`CHECK          SCOPE                             RESULT    DETAIL
kubernetes     cluster                           ok        $V; Gleaner supports 1.32 to 1.36
crds           cluster                           ok        installed: all 5 of slo.gleaner.sh and config.gleaner.sh
koordinator    cluster                           ok        not found: no *.koordinator.sh API group, no koordlet DaemonSet
kernel         chk-old-kernel                    warning   4.18.0-513.el8.x86_64 is older than 5.15 and has no cpu.idle: the NodeSLO condition CPUIdle (best-effort pods at SCHED_IDLE, on by default) will be Unsupported
kernel         chk-c17, chk-c21-a and 6 more     ok        6.8.0-45-generic (cpu.idle needs 5.15)
runtime        chk-c17                           warning   containerd://1.7.27 has NRI, off by default before 2.0: enable NRI (docs/runtime-hook.md#enabling-nri-in-the-runtime), else the runtime hook falls back to its reconciler, which sets batch and mid pods' cgroups after they start (docs/runtime-hook.md#what-happens-without-nri)
runtime        chk-docker                        warning   docker://24.0.7 is neither containerd nor CRI-O, no NRI: the runtime hook falls back to its reconciler, which sets batch and mid pods' cgroups after they start (docs/runtime-hook.md#what-happens-without-nri)
runtime        chk-c21-a, chk-c21-b and 4 more   ok        containerd://2.1.4: NRI, on by default
runtime        chk-crio                          ok        cri-o://1.30.2: NRI, where [crio.nri] enable_nri = true (docs/runtime-hook.md#enabling-nri-in-the-runtime)
kubelet        chk-docker                        warning   $OLD is 5 minor versions older than the API server ($S): Kubernetes supports 3
kubelet        chk-c17, chk-c21-a and 6 more     ok        $S, within 3 minor versions of the API server ($S)
architecture   chk-s390x                         fail      linux/s390x: Gleaner's images are built for amd64 and arm64 only, so gleaner-agent cannot start here (keep it off this node with the chart's agent.affinity on kubernetes.io/arch)
architecture   chk-c17, chk-c21-a and 5 more     ok        linux/amd64
architecture   chk-crio                          ok        linux/arm64
nodeslo        chk-old-kernel                    fail      NotApplied: not applied on this node: CPUIdle (Unsupported); each condition says why (kubectl glean explain NODE)
nodeslo        chk-c17                           warning   the agent has not written its status (not running on the node, or older than this release)
nodeslo        chk-docker                        warning   no NodeSLO: gleaner-manager has not created one for the node (is gleaner-manager running?)
nodeslo        chk-c21-a, chk-c21-b and 4 more   ok        Applied: the agent applies every feature the NodeSLO turns on
`)
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

// TestCheckExitStatus: the process exits 1 when a check fails, after printing every check and the failed ones on
// stderr; warnings alone exit 0.
func TestCheckExitStatus(t *testing.T) {
	e := env.Start(t)
	createCheckedNodes(t, e)
	tests := []struct {
		name       string
		selector   string
		want       int
		wantErrOut string
		wantRows   int
	}{
		{"a failed check", "check=nodes", 1, "error: checks failed: architecture on 1 node, nodeslo on 1 node\n", 18},
		{"warnings only", "check=nodes,outcome=warning", 0, "", 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := Execute([]string{"--kubeconfig", e.Kubeconfig, "check", "-l", tt.selector}, Streams{Out: &out, ErrOut: &errOut})
			if got != tt.want || errOut.String() != tt.wantErrOut {
				t.Errorf("exit status %d, stderr %q; want %d, %q", got, errOut.String(), tt.want, tt.wantErrOut)
			}
			if rows := strings.Count(out.String(), "\n") - 1; rows != tt.wantRows {
				t.Errorf("%d rows, want %d:\n%s", rows, tt.wantRows, out.String())
			}
		})
	}
}

// TestCheckJSON: -o json has every node of a group, the scope and the same results; a failed check still exits 1.
func TestCheckJSON(t *testing.T) {
	e := env.Start(t)
	createCheckedNodes(t, e)
	gitVersion, _ := serverVersion(t, e)

	out, _, err := glean(t, "--kubeconfig", e.Kubeconfig, "check", "-l", "check=nodes", "-o", "json")
	if !errors.Is(err, errChecksFailed) {
		t.Errorf("err = %v, want the failed checks", err)
	}
	var got CheckReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(got.Checks) != 18 {
		t.Fatalf("%d checks, want 18:\n%s", len(got.Checks), out)
	}
	want := []Check{
		{Name: "kubernetes", Scope: "cluster", Result: CheckOK, Detail: gitVersion + "; Gleaner supports 1.32 to 1.36"},
		{Name: "crds", Scope: "cluster", Result: CheckOK, Detail: "installed: all 5 of slo.gleaner.sh and config.gleaner.sh"},
		{Name: "koordinator", Scope: "cluster", Result: CheckOK, Detail: "not found: no *.koordinator.sh API group, no koordlet DaemonSet"},
		{Name: "kernel", Scope: "node", Nodes: []string{"chk-old-kernel"}, Result: CheckWarning,
			Detail: "4.18.0-513.el8.x86_64 is older than 5.15 and has no cpu.idle: the NodeSLO condition CPUIdle (best-effort pods at SCHED_IDLE, on by default) will be Unsupported"},
		{Name: "kernel", Scope: "node", Nodes: []string{"chk-c17", "chk-c21-a", "chk-c21-b", "chk-c21-c", "chk-c21-d", "chk-crio", "chk-docker", "chk-s390x"},
			Result: CheckOK, Detail: "6.8.0-45-generic (cpu.idle needs 5.15)"},
	}
	if d := cmp.Diff(want, got.Checks[:5]); d != "" {
		t.Errorf("checks (-want +got):\n%s", d)
	}
	wantLast := []Check{
		{Name: "nodeslo", Scope: "node", Nodes: []string{"chk-old-kernel"}, Result: CheckFail,
			Detail: "NotApplied: not applied on this node: CPUIdle (Unsupported); each condition says why (kubectl glean explain NODE)"},
		{Name: "nodeslo", Scope: "node", Nodes: []string{"chk-c17"}, Result: CheckWarning,
			Detail: "the agent has not written its status (not running on the node, or older than this release)"},
		{Name: "nodeslo", Scope: "node", Nodes: []string{"chk-docker"}, Result: CheckWarning,
			Detail: "no NodeSLO: gleaner-manager has not created one for the node (is gleaner-manager running?)"},
		{Name: "nodeslo", Scope: "node", Nodes: []string{"chk-c21-a", "chk-c21-b", "chk-c21-c", "chk-c21-d", "chk-crio", "chk-s390x"},
			Result: CheckOK, Detail: "Applied: the agent applies every feature the NodeSLO turns on"},
	}
	if d := cmp.Diff(wantLast, got.Checks[14:]); d != "" {
		t.Errorf("nodeslo checks (-want +got):\n%s", d)
	}
	if !strings.Contains(out, `"check": "kubernetes",`) || strings.Contains(out, `"nodes": null`) {
		t.Errorf("want the check's key and no nodes on cluster checks:\n%s", out)
	}

	out, _, _ = glean(t, "--kubeconfig", e.Kubeconfig, "check", "-l", "check=nodes", "-o", "yaml")
	if !strings.Contains(out, "- check: architecture\n  detail: 'linux/s390x: ") {
		t.Errorf("-o yaml:\n%s", out)
	}
}

// TestCheckFindsKoordinator: a CRD of a *.koordinator.sh group and a koordlet DaemonSet are named in a warning
// that links the comparison with Koordinator; a selector that matches no node says so.
func TestCheckFindsKoordinator(t *testing.T) {
	e := env.Start(t)
	ctx := context.Background()
	koordCRD := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeslos.slo.koordinator.sh"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "slo.koordinator.sh",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "nodeslos", Singular: "nodeslo", Kind: "NodeSLO", ListKind: "NodeSLOList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := e.Client.Create(ctx, koordCRD); err != nil {
		t.Fatal(err)
	}
	d, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	served := func() bool {
		groups, err := d.ServerGroups()
		return err == nil && slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "slo.koordinator.sh" })
	}
	t.Cleanup(func() {
		_ = e.Client.Delete(context.Background(), koordCRD)
		// The package's other tests check the cluster too: the group must be gone before they run.
		testenv.Eventually(t, "slo.koordinator.sh is no longer served", func() error {
			if served() {
				return errors.New("still served")
			}
			return nil
		})
	})
	ensureNamespace(t, e, "koordinator-system")
	labels := map[string]string{"app": "koordlet"}
	koordlet := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "koordinator-system", Name: "koordlet"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "koordlet", Image: "koordinator-sh/koordlet:v1.8.0"}}}},
		},
	}
	if err := e.Client.Create(ctx, koordlet); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.Background(), koordlet) })
	testenv.Eventually(t, "slo.koordinator.sh is served", func() error {
		if !served() {
			return errors.New("not yet served")
		}
		return nil
	})
	gitVersion, _ := serverVersion(t, e)

	out, errOut, err := glean(t, "--kubeconfig", e.Kubeconfig, "check", "-l", "check=none")
	if err != nil || errOut != "" {
		t.Fatalf("err %v, stderr %q: warnings do not fail", err, errOut)
	}
	want := `CHECK         SCOPE     RESULT    DETAIL
kubernetes    cluster   ok        ` + gitVersion + `; Gleaner supports 1.32 to 1.36
crds          cluster   ok        installed: all 5 of slo.gleaner.sh and config.gleaner.sh
koordinator   cluster   warning   found API groups slo.koordinator.sh and DaemonSet koordinator-system/koordlet: the koordlet and gleaner-agent would both write the pods' cgroups; run one of them per node (docs/architecture.md#compared-with-koordinator)
nodes         cluster   warning   no node matches -l check=none: no node was checked
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestCheckErrors(t *testing.T) {
	e := env.Start(t)
	unreachable := filepath.Join(t.TempDir(), "unreachable")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unreachable API server", []string{"--kubeconfig", unreachable, "--request-timeout", "5s", "check"},
			`reading the API server's version: Get "https://127.0.0.1:1/version?timeout=5s": dial tcp 127.0.0.1:1: connect: connection refused (is the cluster reachable? check --kubeconfig and --context)`},
		{"bad output", []string{"--kubeconfig", e.Kubeconfig, "check", "-o", "wide"}, `-o "wide": want json, yaml, jsonpath=TEMPLATE (or nothing for the table)`},
		{"bad selector", []string{"--kubeconfig", e.Kubeconfig, "check", "-l", "a=(b"}, `-l "a=(b": `},
		{"a node name", []string{"--kubeconfig", e.Kubeconfig, "check", "node-1"}, `unknown command "node-1" for "kubectl glean check"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := glean(t, tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want one starting %q", err, tt.want)
			}
			if out != "" {
				t.Errorf("printed %q before the error", out)
			}
		})
	}
}

func TestCheckKubernetesVersion(t *testing.T) {
	tests := []struct {
		version string
		want    finding
	}{
		{"v1.31.9", finding{checkKubernetes, "", CheckFail, "v1.31.9: Gleaner needs 1.32 or later (ValidatingAdmissionPolicy, service-account tokens that name their node)"}},
		{"v1.32.0", finding{checkKubernetes, "", CheckOK, "v1.32.0; Gleaner supports 1.32 to 1.36"}},
		{"v1.36.9-eks-a737599", finding{checkKubernetes, "", CheckOK, "v1.36.9-eks-a737599; Gleaner supports 1.32 to 1.36"}},
		{"v1.37.0", finding{checkKubernetes, "", CheckWarning, "v1.37.0 is newer than 1.36, the newest Gleaner is tested on"}},
		{"", finding{checkKubernetes, "", CheckWarning, `cannot read the API server's version ""; Gleaner supports 1.32 to 1.36`}},
	}
	for _, tt := range tests {
		if got := checkKubernetesVersion(tt.version); got != tt.want {
			t.Errorf("%q: got %+v, want %+v", tt.version, got, tt.want)
		}
	}
}

func TestCheckKernelVersion(t *testing.T) {
	tests := []struct {
		kernel string
		result CheckResult
		detail string
	}{
		{"5.14.21-150400.24.46-default", CheckWarning, "5.14.21-150400.24.46-default is older than 5.15 and has no cpu.idle: the NodeSLO condition CPUIdle (best-effort pods at SCHED_IDLE, on by default) will be Unsupported"},
		{"5.15.0-91-generic", CheckOK, "5.15.0-91-generic (cpu.idle needs 5.15)"},
		{"6.18.44-fc-v782", CheckOK, "6.18.44-fc-v782 (cpu.idle needs 5.15)"},
		{"", CheckWarning, "the kubelet has not reported the node's kernel"},
		{"unknown", CheckWarning, `cannot read a version in the kernel "unknown": cpu.idle needs 5.15 or later`},
	}
	for _, tt := range tests {
		got := checkKernelVersion(tt.kernel)
		if got.result != tt.result || got.detail != tt.detail {
			t.Errorf("%q: got %s %q, want %s %q", tt.kernel, got.result, got.detail, tt.result, tt.detail)
		}
	}
}

func TestCheckContainerRuntime(t *testing.T) {
	fallback := "the runtime hook falls back to its reconciler, which sets batch and mid pods' cgroups after they start (docs/runtime-hook.md#what-happens-without-nri)"
	tests := []struct {
		runtime string
		result  CheckResult
		detail  string
	}{
		{"containerd://1.6.20", CheckWarning, "containerd://1.6.20 has no NRI (containerd 1.7, CRI-O 1.26 and later have it): " + fallback},
		{"containerd://1.7.0", CheckWarning, "containerd://1.7.0 has NRI, off by default before 2.0: enable NRI (docs/runtime-hook.md#enabling-nri-in-the-runtime), else " + fallback},
		{"containerd://v1.7.27-k3s1", CheckWarning, "containerd://v1.7.27-k3s1 has NRI, off by default before 2.0: enable NRI (docs/runtime-hook.md#enabling-nri-in-the-runtime), else " + fallback},
		{"containerd://2.0.0", CheckOK, "containerd://2.0.0: NRI, on by default"},
		{"containerd://2.1.4", CheckOK, "containerd://2.1.4: NRI, on by default"},
		{"cri-o://1.25.4", CheckWarning, "cri-o://1.25.4 has no NRI (containerd 1.7, CRI-O 1.26 and later have it): " + fallback},
		{"cri-o://1.26.0", CheckOK, "cri-o://1.26.0: NRI, where [crio.nri] enable_nri = true (docs/runtime-hook.md#enabling-nri-in-the-runtime)"},
		{"docker://24.0.7", CheckWarning, "docker://24.0.7 is neither containerd nor CRI-O, no NRI: " + fallback},
		{"containerd://main", CheckWarning, "cannot read the version of containerd://main: NRI needs containerd 1.7 or CRI-O 1.26; without it " + fallback},
		{"", CheckWarning, "the kubelet has not reported the node's container runtime"},
	}
	for _, tt := range tests {
		got := checkContainerRuntime(tt.runtime)
		if got.result != tt.result || got.detail != tt.detail {
			t.Errorf("%q: got %s %q, want %s %q", tt.runtime, got.result, got.detail, tt.result, tt.detail)
		}
	}
}

func TestCheckKubeletSkew(t *testing.T) {
	server := k8sversion.MustParseGeneric("v1.36.3")
	tests := []struct {
		kubelet string
		server  *k8sversion.Version
		result  CheckResult
		detail  string
	}{
		{"v1.36.3", server, CheckOK, "v1.36.3, within 3 minor versions of the API server (v1.36.3)"},
		{"v1.33.0", server, CheckOK, "v1.33.0, within 3 minor versions of the API server (v1.36.3)"},
		{"v1.32.7", server, CheckWarning, "v1.32.7 is 4 minor versions older than the API server (v1.36.3): Kubernetes supports 3"},
		{"v1.37.0", server, CheckWarning, "v1.37.0 is newer than the API server (v1.36.3): Kubernetes does not support a kubelet newer than its API server"},
		{"v1.30.1", nil, CheckOK, "v1.30.1 (the API server's version is unknown: skew not checked)"},
		{"", server, CheckWarning, "the kubelet has not reported its version"},
	}
	for _, tt := range tests {
		got := checkKubeletSkew(tt.kubelet, tt.server)
		if got.result != tt.result || got.detail != tt.detail {
			t.Errorf("%q: got %s %q, want %s %q", tt.kubelet, got.result, got.detail, tt.result, tt.detail)
		}
	}
}

func TestCheckNodePlatform(t *testing.T) {
	tests := []struct {
		os, arch string
		result   CheckResult
		detail   string
	}{
		{"linux", "amd64", CheckOK, "linux/amd64"},
		{"linux", "arm64", CheckOK, "linux/arm64"},
		{"linux", "ppc64le", CheckFail, "linux/ppc64le: Gleaner's images are built for amd64 and arm64 only, so gleaner-agent cannot start here (keep it off this node with the chart's agent.affinity on kubernetes.io/arch)"},
		{"windows", "amd64", CheckFail, "windows/amd64: gleaner-agent runs on Linux nodes only (keep it off this one with the chart's agent.affinity on kubernetes.io/os)"},
		{"", "", CheckWarning, "the kubelet has not reported the node's architecture"},
	}
	for _, tt := range tests {
		got := checkNodePlatform(tt.os, tt.arch)
		if got.result != tt.result || got.detail != tt.detail {
			t.Errorf("%s/%s: got %s %q, want %s %q", tt.os, tt.arch, got.result, got.detail, tt.result, tt.detail)
		}
	}
	// A Windows node gets no kernel or runtime check: what they say is of Linux.
	win := testutil.Node("win").Obj()
	win.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "windows", Architecture: "amd64", KernelVersion: "10.0.20348.2340",
		ContainerRuntimeVersion: "containerd://1.7.13", KubeletVersion: "v1.36.3"}
	var checks []string
	for _, f := range checkNode(win, k8sversion.MustParseGeneric("v1.36.3")) {
		checks = append(checks, f.check)
	}
	if d := cmp.Diff([]string{"architecture", "kubelet"}, checks); d != "" {
		t.Errorf("checks of a Windows node (-want +got):\n%s", d)
	}
}

// TestCheckGleanerCRDs: before an install none is there (info), after it all (ok), and a part is a warning naming
// what is missing.
func TestCheckGleanerCRDs(t *testing.T) {
	all := map[string]bool{}
	for _, name := range gleanerCRDs {
		all[name] = true
	}
	partial := map[string]bool{"nodemetrics.slo.gleaner.sh": true, "nodeslos.slo.gleaner.sh": true, "nodeallocations.slo.gleaner.sh": true}
	tests := []struct {
		name   string
		served map[string]bool
		want   finding
	}{
		{"before an install", map[string]bool{"pods.": true}, finding{checkCRDs, "", CheckInfo, "not installed: as expected before installing Gleaner (the chart brings them)"}},
		{"installed", all, finding{checkCRDs, "", CheckOK, "installed: all 5 of slo.gleaner.sh and config.gleaner.sh"}},
		{"an earlier release's", partial, finding{checkCRDs, "", CheckWarning, "colocationprofiles.config.gleaner.sh and noderesourceexplanations.slo.gleaner.sh not installed: " +
			"an incomplete install or an earlier release's CRDs (kubectl apply --server-side -f charts/gleaner/crds/)"}},
	}
	for _, tt := range tests {
		if got := checkGleanerCRDs(tt.served); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestGleanerCRDsAreTheTrees: the CRDs check looks for exactly those config/crd installs.
func TestGleanerCRDsAreTheTrees(t *testing.T) {
	objs, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if d := cmp.Diff(names, gleanerCRDs); d != "" {
		t.Errorf("gleanerCRDs (-config/crd +check.go):\n%s", d)
	}
}

// TestSupportedVersionsAreTheReadmes: the versions the kubernetes check supports are the README's requirements.
func TestSupportedVersionsAreTheReadmes(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Kubernetes %s or later (tested on %s)", oldestKubernetes, newestKubernetes)
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q", want)
	}
}

// TestArchitecturesAreTheImages: the architectures the check accepts are the platforms `make images` builds.
func TestArchitecturesAreTheImages(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, arch := range gleanerArchitectures {
		platforms = append(platforms, "linux/"+arch)
	}
	want := "\nIMAGE_PLATFORMS ?= " + strings.Join(platforms, " ") + "\n"
	if !strings.Contains(string(makefile), want) {
		t.Errorf("the Makefile does not say %q", want)
	}
}

func TestCheckNodeSLOStatus(t *testing.T) {
	slo := func(st slov1alpha1.NodeSLOStatus) *slov1alpha1.NodeSLO { return &slov1alpha1.NodeSLO{Status: st} }
	tests := []struct {
		name   string
		slo    *slov1alpha1.NodeSLO
		result CheckResult
		detail string
	}{
		{"applied", slo(appliedStatus(metav1.ConditionTrue, "Applied", "")), CheckOK, "Applied: the agent applies every feature the NodeSLO turns on"},
		{"not applied, a message on lines", slo(appliedStatus(metav1.ConditionFalse, "NotApplied", "not applied on this node:\n\tResctrl (Unsupported)")), CheckFail,
			"NotApplied: not applied on this node: Resctrl (Unsupported) (kubectl glean explain NODE)"},
		{"before the first round", slo(appliedStatus(metav1.ConditionUnknown, "Pending", "")), CheckWarning, "Applied is Unknown (Pending): the agent has not finished its first round"},
		{"no status", slo(slov1alpha1.NodeSLOStatus{}), CheckWarning, "the agent has not written its status (not running on the node, or older than this release)"},
		{"no NodeSLO", nil, CheckWarning, "no NodeSLO: gleaner-manager has not created one for the node (is gleaner-manager running?)"},
	}
	for _, tt := range tests {
		got := checkNodeSLOStatus(tt.slo)
		if got.result != tt.result || got.detail != tt.detail {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, got.result, got.detail, tt.result, tt.detail)
		}
	}
}

// TestCheckGroupsIdenticalNodes: 1,000 nodes that come out the same are one line, 1,000 names in -o json.
func TestCheckGroupsIdenticalNodes(t *testing.T) {
	var findings []finding
	for i := range 1000 {
		findings = append(findings, finding{check: checkKernel, node: fmt.Sprintf("node-%04d", 999-i), result: CheckOK, detail: "6.8.0 (cpu.idle needs 5.15)"})
	}
	findings = append(findings, finding{check: checkKernel, node: "node-old", result: CheckWarning, detail: "old"},
		finding{check: checkKubernetes, result: CheckOK, detail: "v1.36.3"})
	got := group(findings)
	if len(got) != 3 || len(got[2].Nodes) != 1000 || got[2].Nodes[0] != "node-0000" {
		t.Fatalf("groups: %d, want 3 (the cluster's, the old kernel, the 1,000)", len(got))
	}
	var out bytes.Buffer
	if err := printChecks(&out, got, output{}); err != nil {
		t.Fatal(err)
	}
	want := `CHECK        SCOPE                               RESULT    DETAIL
kubernetes   cluster                             ok        v1.36.3
kernel       node-old                            warning   old
kernel       node-0000, node-0001 and 998 more   ok        6.8.0 (cpu.idle needs 5.15)
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestScopeText(t *testing.T) {
	tests := []struct {
		nodes []string
		want  string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a and b"},
		{[]string{"a", "b", "c"}, "a, b and c"},
		{[]string{"a", "b", "c", "d"}, "a, b and 2 more"},
	}
	for _, tt := range tests {
		if got := scopeText(Check{Scope: scopeNode, Nodes: tt.nodes}); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.nodes, got, tt.want)
		}
	}
	if got := scopeText(Check{Scope: scopeCluster}); got != "cluster" {
		t.Errorf("a cluster check: %q", got)
	}
}
