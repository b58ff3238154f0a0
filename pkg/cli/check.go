package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// The Kubernetes versions Gleaner supports: the oldest is README.md's requirements table, docs/install.md and
// docs/operations.md ("Kubernetes 1.32 or later": ValidatingAdmissionPolicy, service-account tokens that name their
// node); the newest tested is the README's "tested on 1.36", the envtest API server and client-go of go.mod. A test
// keeps the README's sentence and these numbers together.
var (
	oldestKubernetes = k8sversion.MajorMinor(1, 32)
	newestKubernetes = k8sversion.MajorMinor(1, 36)
)

// kubeletSkew is how many minor versions older than the API server a kubelet may be: Kubernetes' version skew
// policy (kubernetes.io/releases/version-skew-policy, since 1.28). A kubelet may never be newer.
const kubeletSkew = 3

// What the nodes need for what Gleaner enforces (README.md's requirements table, docs/runtime-hook.md):
var (
	// cpuIdleKernel: cpu.idle, the CPU idle QoS of best-effort pods (on by default), exists since Linux 5.15.
	cpuIdleKernel = k8sversion.MajorMinor(5, 15)
	// containerdNRI: containerd has NRI since 1.7, on by default since 2.0.
	containerdNRI, containerdNRIOn = k8sversion.MajorMinor(1, 7), k8sversion.MajorMinor(2, 0)
	// crioNRI: CRI-O has NRI since 1.26.
	crioNRI = k8sversion.MajorMinor(1, 26)
)

// gleanerArchitectures are the platforms of Gleaner's images (IMAGE_PLATFORMS in the Makefile).
var gleanerArchitectures = []string{"amd64", "arm64"}

// gleanerCRDs are the CustomResourceDefinitions an install brings (config/crd/bases), by name; a test keeps the
// list equal to the tree's.
var gleanerCRDs = []string{
	"colocationprofiles.config.gleaner.sh",
	"nodeallocations.slo.gleaner.sh",
	"nodemetrics.slo.gleaner.sh",
	"noderesourceexplanations.slo.gleaner.sh",
	"nodeslos.slo.gleaner.sh",
}

// koordinatorGroupSuffix ends the API groups of Koordinator's CRDs (slo.koordinator.sh, scheduling.koordinator.sh...).
const koordinatorGroupSuffix = ".koordinator.sh"

// Where the details send the reader.
const (
	enableNRIDoc   = "docs/runtime-hook.md#enabling-nri-in-the-runtime"
	withoutNRIDoc  = "docs/runtime-hook.md#what-happens-without-nri"
	koordinatorDoc = "docs/architecture.md#compared-with-koordinator"
)

// CheckResult is how a check came out, worst first: fail makes the command exit 1, the others do not.
type CheckResult string

// The results of a check.
const (
	// CheckFail: the cluster or the node cannot run what Gleaner enforces.
	CheckFail CheckResult = "fail"
	// CheckWarning: it can, with a part missing or not yet known.
	CheckWarning CheckResult = "warning"
	// CheckInfo: worth knowing, nothing to do.
	CheckInfo CheckResult = "info"
	// CheckOK: nothing to do.
	CheckOK CheckResult = "ok"
)

var resultOrder = []CheckResult{CheckFail, CheckWarning, CheckInfo, CheckOK}

// The checks, in the order they print: the cluster's, then each node's.
const (
	checkKubernetes   = "kubernetes"
	checkCRDs         = "crds"
	checkKoordinator  = "koordinator"
	checkNodes        = "nodes"
	checkKernel       = "kernel"
	checkRuntime      = "runtime"
	checkKubelet      = "kubelet"
	checkArchitecture = "architecture"
	checkNodeSLO      = "nodeslo"
)

var checkOrder = []string{checkKubernetes, checkCRDs, checkKoordinator, checkNodes, checkKernel, checkRuntime, checkKubelet,
	checkArchitecture, checkNodeSLO}

// Scopes of a Check.
const (
	scopeCluster = "cluster"
	scopeNode    = "node"
)

var scopeOrder = []string{scopeCluster, scopeNode}

// CheckReport is what `kubectl glean check -o json|yaml` prints.
type CheckReport struct {
	// Checks are the cluster's checks, then the nodes', grouped: nodes whose check came out with the same result
	// and detail share one entry.
	Checks []Check `json:"checks"`
}

// Check is one line of `kubectl glean check`.
type Check struct {
	// Name is the check: kubernetes, crds, koordinator, nodes (none matched) for the cluster; kernel, runtime,
	// kubelet, architecture, nodeslo for each node (nodeslo also for the cluster when NodeSLOs cannot be listed).
	Name string `json:"check"`
	// Scope is "cluster" or "node".
	Scope string `json:"scope"`
	// Nodes are the nodes, sorted, that the result and detail hold for; none for a cluster check.
	Nodes []string `json:"nodes,omitempty"`
	// Result is ok, info, warning or fail.
	Result CheckResult `json:"result"`
	// Detail says what was found and, unless the result is ok, what it means.
	Detail string `json:"detail"`
}

// errChecksFailed is what the command returns when a check fails, so that it exits 1 after printing them all.
var errChecksFailed = errors.New("checks failed")

// checkOptions are the flags of `kubectl glean check`.
type checkOptions struct {
	selector string
	output   outputFlags
}

func newCheckCommand(f *Factory) *cobra.Command {
	o := &checkOptions{output: outputFlags{table: true, plain: "the table"}}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Whether the cluster and its nodes can run what Gleaner enforces, before and after an install",
		Long: `Check, from what the API server shows (nothing runs on the nodes), whether the cluster can run what Gleaner
enforces, and why not. The cluster: the API server's version against the versions Gleaner supports, whether
Gleaner's CRDs are installed, whether Koordinator is there too (its *.koordinator.sh API groups or a koordlet
DaemonSet: two agents would write the same cgroups). Each node (or those matching -l): its kernel (cpu.idle needs
5.15), its container runtime (NRI for the runtime hook), its kubelet's version skew, its architecture (Gleaner's
images are amd64 and arm64) and, once the CRDs are installed, whether gleaner-agent applies its NodeSLO.

Nodes whose check comes out the same share one line. The exit status is 1 when a check fails, 0 otherwise:
warnings do not fail. It needs list on nodes, nodeslos and daemonsets (gleaner-glean-reader); discovery and the
version are open to every authenticated user.`,
		Example: `  kubectl glean check
  kubectl glean check -l node-role.kubernetes.io/worker=
  kubectl glean check -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.selector, "selector", "l", "", "node label selector, e.g. -l zone=a,tier!=infra")
	o.output.add(fl)
	o.output.complete(cmd)
	return cmd
}

func runCheck(ctx context.Context, f *Factory, o *checkOptions) error {
	out, err := o.output.parse()
	if err != nil {
		return err
	}
	if o.selector != "" {
		if _, err := metav1.ParseToLabelSelector(o.selector); err != nil {
			return fmt.Errorf("-l %q: %w", o.selector, err)
		}
	}
	cs, c, err := f.Clients()
	if err != nil {
		return err
	}
	in, err := readCheckInput(ctx, cs, c, o.selector)
	if err != nil {
		return err
	}
	report := CheckReport{Checks: evaluate(in, o.selector)}
	done, err := printStructured(f.Out, report, nil, out)
	if !done {
		err = printChecks(f.Out, report.Checks, out)
	}
	if err != nil {
		return err
	}
	return failures(report.Checks)
}

// checkInput is what the checks read from the API server.
type checkInput struct {
	// serverVersion is the API server's git version, "v1.36.3".
	serverVersion string
	// groups are the API groups discovery lists; served the resources it lists, as "plural.group".
	groups []string
	served map[string]bool
	// koordlets are the DaemonSets named koordlet, "namespace/name"; daemonSetsForbidden: they could not be
	// listed.
	koordlets           []string
	daemonSetsForbidden bool
	nodes               []corev1.Node
	// slos are the NodeSLOs by name: nil when the NodeSLO API is not served or sloForbidden.
	slos         map[string]*slov1alpha1.NodeSLO
	sloForbidden bool
}

func readCheckInput(ctx context.Context, cs kubernetes.Interface, c client.Client, selector string) (checkInput, error) {
	var in checkInput
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return in, reachable(fmt.Errorf("reading the API server's version: %w", err))
	}
	in.serverVersion = info.GitVersion
	if in.groups, in.served, err = discoverAPIs(cs.Discovery()); err != nil {
		return in, err
	}
	ds, err := cs.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "koordlet").String()})
	switch {
	case apierrors.IsForbidden(err):
		in.daemonSetsForbidden = true
	case err != nil:
		return in, reachable(fmt.Errorf("listing DaemonSets named koordlet: %w", err))
	default:
		for _, d := range ds.Items {
			in.koordlets = append(in.koordlets, d.Namespace+"/"+d.Name)
		}
	}
	if in.nodes, err = listNodes(ctx, cs, selector, nil); err != nil {
		return in, err
	}
	if in.served["nodeslos."+slov1alpha1.GroupVersion.Group] {
		in.slos, in.sloForbidden, err = listNodeSLOs(ctx, c)
	}
	return in, err
}

// discoverAPIs returns the API groups the API server serves, and their resources as "plural.group".
func discoverAPIs(d discovery.DiscoveryInterface) (groups []string, served map[string]bool, err error) {
	// A group whose aggregated API server does not answer (a metrics-server that is down) fails discovery of that
	// group only: the others are there, and none of the groups checked here is aggregated.
	apiGroups, resources, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, nil, reachable(fmt.Errorf("discovering the API groups: %w", err))
	}
	for _, g := range apiGroups {
		groups = append(groups, g.Name)
	}
	served = map[string]bool{}
	for _, list := range resources {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") { // not a subresource
				served[r.Name+"."+gv.Group] = true
			}
		}
	}
	return groups, served, nil
}

// listNodeSLOs returns the NodeSLOs by name, or forbidden when the user may not list them.
func listNodeSLOs(ctx context.Context, c client.Client) (slos map[string]*slov1alpha1.NodeSLO, forbidden bool, err error) {
	list := &slov1alpha1.NodeSLOList{}
	err = c.List(ctx, list)
	switch {
	case apierrors.IsForbidden(err):
		return nil, true, nil
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, false, nil // removed since discovery: as if it were not installed
	case err != nil:
		return nil, false, reachable(fmt.Errorf("listing NodeSLOs: %w", err))
	}
	slos = make(map[string]*slov1alpha1.NodeSLO, len(list.Items))
	for i := range list.Items {
		slos[list.Items[i].Name] = &list.Items[i]
	}
	return slos, false, nil
}

// finding is one check's outcome for the cluster (node "") or one node.
type finding struct {
	check, node string
	result      CheckResult
	detail      string
}

// evaluate runs every check on in and groups the nodes' findings.
func evaluate(in checkInput, selector string) []Check {
	server := parseVersion(in.serverVersion)
	findings := []finding{
		checkKubernetesVersion(in.serverVersion),
		checkGleanerCRDs(in.served),
		checkKoordinatorPresence(in.groups, in.koordlets, in.daemonSetsForbidden),
	}
	if len(in.nodes) == 0 {
		what := "the cluster has no node"
		if selector != "" {
			what = "no node matches -l " + selector
		}
		findings = append(findings, finding{check: checkNodes, result: CheckWarning, detail: what + ": no node was checked"})
	}
	for i := range in.nodes {
		findings = append(findings, checkNode(&in.nodes[i], server)...)
	}
	switch {
	case in.sloForbidden:
		findings = append(findings, finding{check: checkNodeSLO, result: CheckWarning,
			detail: "not checked: listing NodeSLOs is forbidden (bind the ClusterRole gleaner-glean-reader of this release, which grants list on nodeslos)"})
	case in.slos != nil:
		for _, n := range in.nodes {
			f := checkNodeSLOStatus(in.slos[n.Name])
			f.node = n.Name
			findings = append(findings, f)
		}
	}
	return group(findings)
}

// checkKubernetesVersion judges the API server's version against the versions Gleaner supports.
func checkKubernetesVersion(gitVersion string) finding {
	f := finding{check: checkKubernetes}
	v := parseVersion(gitVersion)
	supported := fmt.Sprintf("Gleaner supports %s to %s", oldestKubernetes, newestKubernetes)
	switch {
	case v == nil:
		f.result, f.detail = CheckWarning, fmt.Sprintf("cannot read the API server's version %q; %s", gitVersion, supported)
	case v.LessThan(oldestKubernetes):
		f.result, f.detail = CheckFail, fmt.Sprintf("%s: Gleaner needs %s or later (ValidatingAdmissionPolicy, service-account tokens that name their node)", gitVersion, oldestKubernetes)
	case newestKubernetes.LessThan(k8sversion.MajorMinor(v.Major(), v.Minor())):
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s is newer than %s, the newest Gleaner is tested on", gitVersion, newestKubernetes)
	default:
		f.result, f.detail = CheckOK, fmt.Sprintf("%s; %s", gitVersion, supported)
	}
	return f
}

// checkGleanerCRDs says whether Gleaner's CRDs are served: before an install none is, and that is fine.
func checkGleanerCRDs(served map[string]bool) finding {
	f := finding{check: checkCRDs}
	var missing []string
	for _, name := range gleanerCRDs {
		if !served[name] {
			missing = append(missing, name)
		}
	}
	switch len(missing) {
	case 0:
		f.result, f.detail = CheckOK, fmt.Sprintf("installed: all %d of slo.gleaner.sh and config.gleaner.sh", len(gleanerCRDs))
	case len(gleanerCRDs):
		f.result, f.detail = CheckInfo, "not installed: as expected before installing Gleaner (the chart brings them)"
	default:
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s not installed: an incomplete install or an earlier release's CRDs (kubectl apply --server-side -f charts/gleaner/crds/)", joinAnd(missing))
	}
	return f
}

// checkKoordinatorPresence warns when Koordinator runs in the cluster: its koordlet and gleaner-agent would both
// write the pods' cgroups.
func checkKoordinatorPresence(groups, koordlets []string, daemonSetsForbidden bool) finding {
	f := finding{check: checkKoordinator}
	var found []string
	var koordGroups []string
	for _, g := range groups {
		if strings.HasSuffix(g, koordinatorGroupSuffix) {
			koordGroups = append(koordGroups, g)
		}
	}
	slices.Sort(koordGroups)
	if len(koordGroups) > 0 {
		found = append(found, "API groups "+joinAnd(koordGroups))
	}
	if len(koordlets) > 0 {
		slices.Sort(koordlets)
		found = append(found, "DaemonSet "+joinAnd(koordlets))
	}
	switch {
	case len(found) > 0:
		f.result, f.detail = CheckWarning, fmt.Sprintf("found %s: the koordlet and gleaner-agent would both write the pods' cgroups; run one of them per node (%s)",
			strings.Join(found, " and "), koordinatorDoc)
	case daemonSetsForbidden:
		f.result, f.detail = CheckInfo, "no *.koordinator.sh API group; koordlet DaemonSets not looked for: listing DaemonSets is forbidden"
	default:
		f.result, f.detail = CheckOK, "not found: no *.koordinator.sh API group, no koordlet DaemonSet"
	}
	return f
}

// checkNode runs the checks of one node on what its kubelet reports in status.nodeInfo; server is the API
// server's version, nil when it could not be read.
func checkNode(n *corev1.Node, server *k8sversion.Version) []finding {
	info := n.Status.NodeInfo
	out := []finding{checkNodePlatform(info.OperatingSystem, info.Architecture)}
	// The kernel and runtime checks are of Linux nodes: on another system the platform check already fails.
	if info.OperatingSystem == "" || info.OperatingSystem == "linux" {
		out = append(out, checkKernelVersion(info.KernelVersion), checkContainerRuntime(info.ContainerRuntimeVersion))
	}
	out = append(out, checkKubeletSkew(info.KubeletVersion, server))
	for i := range out {
		out[i].node = n.Name
	}
	return out
}

func checkNodePlatform(goos, arch string) finding {
	f := finding{check: checkArchitecture}
	switch {
	case arch == "":
		f.result, f.detail = CheckWarning, "the kubelet has not reported the node's architecture"
	case goos != "" && goos != "linux":
		f.result, f.detail = CheckFail, fmt.Sprintf("%s/%s: gleaner-agent runs on Linux nodes only (keep it off this one with the chart's agent.affinity on kubernetes.io/os)", goos, arch)
	case !slices.Contains(gleanerArchitectures, arch):
		f.result, f.detail = CheckFail, fmt.Sprintf("linux/%s: Gleaner's images are built for %s only, so gleaner-agent cannot start here (keep it off this node with the chart's agent.affinity on kubernetes.io/arch)",
			arch, joinAnd(gleanerArchitectures))
	default:
		f.result, f.detail = CheckOK, "linux/"+arch
	}
	return f
}

func checkKernelVersion(kernel string) finding {
	f := finding{check: checkKernel}
	v := parseVersion(kernel)
	switch {
	case kernel == "":
		f.result, f.detail = CheckWarning, "the kubelet has not reported the node's kernel"
	case v == nil:
		f.result, f.detail = CheckWarning, fmt.Sprintf("cannot read a version in the kernel %q: cpu.idle needs %s or later", kernel, cpuIdleKernel)
	case v.LessThan(cpuIdleKernel):
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s is older than %s and has no cpu.idle: the NodeSLO condition %s (best-effort pods at SCHED_IDLE, on by default) will be %s",
			kernel, cpuIdleKernel, slov1alpha1.NodeSLOCPUIdle, slov1alpha1.NodeSLOReasonUnsupported)
	default:
		f.result, f.detail = CheckOK, fmt.Sprintf("%s (cpu.idle needs %s)", kernel, cpuIdleKernel)
	}
	return f
}

// checkContainerRuntime says whether the node's runtime offers NRI, through which the runtime hook sets batch and
// mid pods' cgroups at creation; without it the hook's reconciler sets them after the containers start.
func checkContainerRuntime(runtimeVersion string) finding {
	f := finding{check: checkRuntime}
	name, ver, _ := strings.Cut(runtimeVersion, "://")
	v := parseVersion(ver)
	fallback := fmt.Sprintf("the runtime hook falls back to its reconciler, which sets batch and mid pods' cgroups after they start (%s)", withoutNRIDoc)
	switch {
	case runtimeVersion == "":
		f.result, f.detail = CheckWarning, "the kubelet has not reported the node's container runtime"
	case (name == "containerd" || name == "cri-o") && v == nil:
		f.result, f.detail = CheckWarning, fmt.Sprintf("cannot read the version of %s: NRI needs containerd %s or CRI-O %s; without it %s", runtimeVersion, containerdNRI, crioNRI, fallback)
	case name == "containerd" && !v.LessThan(containerdNRIOn):
		f.result, f.detail = CheckOK, runtimeVersion+": NRI, on by default"
	case name == "containerd" && !v.LessThan(containerdNRI):
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s has NRI, off by default before %s: enable NRI (%s), else %s", runtimeVersion, containerdNRIOn, enableNRIDoc, fallback)
	case name == "cri-o" && !v.LessThan(crioNRI):
		f.result, f.detail = CheckOK, fmt.Sprintf("%s: NRI, where [crio.nri] enable_nri = true (%s)", runtimeVersion, enableNRIDoc)
	case name == "containerd" || name == "cri-o":
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s has no NRI (containerd %s, CRI-O %s and later have it): %s", runtimeVersion, containerdNRI, crioNRI, fallback)
	default:
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s is neither containerd nor CRI-O, no NRI: %s", runtimeVersion, fallback)
	}
	return f
}

func checkKubeletSkew(kubelet string, server *k8sversion.Version) finding {
	f := finding{check: checkKubelet}
	v := parseVersion(kubelet)
	switch {
	case kubelet == "":
		f.result, f.detail = CheckWarning, "the kubelet has not reported its version"
	case v == nil:
		f.result, f.detail = CheckWarning, fmt.Sprintf("cannot read the kubelet's version %q", kubelet)
	case server == nil:
		f.result, f.detail = CheckOK, kubelet+" (the API server's version is unknown: skew not checked)"
	case v.Major() != server.Major() || v.Minor() > server.Minor():
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s is newer than the API server (v%s): Kubernetes does not support a kubelet newer than its API server", kubelet, server)
	case server.Minor()-v.Minor() > kubeletSkew:
		f.result, f.detail = CheckWarning, fmt.Sprintf("%s is %d minor versions older than the API server (v%s): Kubernetes supports %d", kubelet, server.Minor()-v.Minor(), server, kubeletSkew)
	default:
		f.result, f.detail = CheckOK, fmt.Sprintf("%s, within %d minor versions of the API server (v%s)", kubelet, kubeletSkew, server)
	}
	return f
}

// checkNodeSLOStatus judges what gleaner-agent reports of the node's NodeSLO: its Applied condition.
func checkNodeSLOStatus(slo *slov1alpha1.NodeSLO) finding {
	f := finding{check: checkNodeSLO}
	if slo == nil {
		f.result, f.detail = CheckWarning, "no NodeSLO: gleaner-manager has not created one for the node (is gleaner-manager running?)"
		return f
	}
	applied := meta.FindStatusCondition(slo.Status.Conditions, slov1alpha1.NodeSLOApplied)
	switch {
	case applied == nil:
		f.result, f.detail = CheckWarning, "the agent has not written its status (not running on the node, or older than this release)"
	case applied.Status == metav1.ConditionTrue:
		f.result, f.detail = CheckOK, "Applied: the agent applies every feature the NodeSLO turns on"
	case applied.Status == metav1.ConditionFalse:
		f.result, f.detail = CheckFail, fmt.Sprintf("%s: %s (kubectl glean explain NODE)", applied.Reason, oneLine(applied.Message))
	default:
		f.result, f.detail = CheckWarning, fmt.Sprintf("Applied is %s (%s): the agent has not finished its first round", applied.Status, orDash(applied.Reason))
	}
	return f
}

// parseVersion reads the leading major.minor[.patch] of s ("v1.36.3", "6.8.0-45-generic", "1.7.27-k3s1"); nil
// when there is none.
func parseVersion(s string) *k8sversion.Version {
	v, err := k8sversion.ParseGeneric(s)
	if err != nil {
		return nil
	}
	return v
}

// group merges the nodes' findings that have the same check, result and detail into one Check, and orders the
// checks: the cluster's first, then by check, worst result first, then by the first node's name.
func group(findings []finding) []Check {
	type key struct {
		check  string
		result CheckResult
		detail string
	}
	var out []Check
	index := map[key]int{}
	for _, f := range findings {
		if f.node == "" {
			out = append(out, Check{Name: f.check, Scope: scopeCluster, Result: f.result, Detail: f.detail})
			continue
		}
		k := key{f.check, f.result, f.detail}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Check{Name: f.check, Scope: scopeNode, Result: f.result, Detail: f.detail})
		}
		out[i].Nodes = append(out[i].Nodes, f.node)
	}
	for i := range out {
		slices.Sort(out[i].Nodes)
	}
	slices.SortStableFunc(out, func(a, b Check) int {
		return cmp.Or(
			cmp.Compare(slices.Index(scopeOrder, a.Scope), slices.Index(scopeOrder, b.Scope)),
			cmp.Compare(slices.Index(checkOrder, a.Name), slices.Index(checkOrder, b.Name)),
			cmp.Compare(slices.Index(resultOrder, a.Result), slices.Index(resultOrder, b.Result)),
			cmp.Compare(first(a.Nodes), first(b.Nodes)),
		)
	})
	return out
}

func first(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// scopeText is a check's SCOPE column: "cluster", or its nodes, the first two named past three: "node-a, node-b
// and 998 more".
func scopeText(c Check) string {
	if c.Scope == scopeCluster {
		return scopeCluster
	}
	if len(c.Nodes) > 3 {
		return fmt.Sprintf("%s, %s and %d more", c.Nodes[0], c.Nodes[1], len(c.Nodes)-2)
	}
	return joinAnd(c.Nodes)
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func printChecks(w io.Writer, checks []Check, out output) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	out.header(tw, "CHECK\tSCOPE\tRESULT\tDETAIL")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, scopeText(c), c.Result, c.Detail)
	}
	return tw.Flush()
}

// failures returns errChecksFailed, naming the checks that failed and on how many nodes, or nil.
func failures(checks []Check) error {
	var failed []string
	nodes := map[string]int{}
	for _, c := range checks {
		if c.Result != CheckFail {
			continue
		}
		if _, seen := nodes[c.Name]; !seen {
			failed = append(failed, c.Name)
		}
		nodes[c.Name] += len(c.Nodes)
	}
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, name := range failed {
		switch n := nodes[name]; n {
		case 0:
			parts[i] = name
		case 1:
			parts[i] = name + " on 1 node"
		default:
			parts[i] = fmt.Sprintf("%s on %d nodes", name, n)
		}
	}
	return fmt.Errorf("%w: %s", errChecksFailed, strings.Join(parts, ", "))
}
