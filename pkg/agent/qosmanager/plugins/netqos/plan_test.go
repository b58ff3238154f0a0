package netqos

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
	tu "github.com/gleaner-sh/gleaner/test/testutil"
)

func TestBandwidth(t *testing.T) {
	const total = 10_000_000_000 // 10 Gbit/s
	tests := []struct {
		name    string
		v       *intstr.IntOrString
		want    uint64
		wantErr string
	}{
		{name: "unset gives the default", v: nil, want: 7},
		{name: "an integer is a percentage", v: ptr.To(intstr.FromInt32(30)), want: 3_000_000_000},
		{name: "a percentage string", v: ptr.To(intstr.FromString("5%")), want: 500_000_000},
		{name: "a quantity is bits per second", v: ptr.To(intstr.FromString("100M")), want: 100_000_000},
		{name: "binary suffixes too", v: ptr.To(intstr.FromString("1Ki")), want: 1024},
		{name: "a percentage above 100", v: ptr.To(intstr.FromInt32(101)), wantErr: "101 is not a percentage in 0..100"},
		{name: "a negative percentage", v: ptr.To(intstr.FromString("-1%")), wantErr: "-1 is not a percentage"},
		{name: "a percentage that is no number", v: ptr.To(intstr.FromString("x%")), wantErr: `"x%" is not a percentage`},
		{name: "no quantity", v: ptr.To(intstr.FromString("fast")), wantErr: `"fast" is neither a percentage nor a bandwidth`},
		{name: "a negative quantity", v: ptr.To(intstr.FromString("-5M")), wantErr: "-5M is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := slov1alpha1.Bandwidth(tt.v, total, 7)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("bandwidth = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func netQOS(enable bool, request, limit string) *slov1alpha1.ResourceQOS {
	n := &slov1alpha1.NetworkQOSCfg{Enable: ptr.To(enable)}
	if request != "" {
		n.EgressRequest = ptr.To(intstr.Parse(request))
	}
	if limit != "" {
		n.EgressLimit = ptr.To(intstr.Parse(limit))
	}
	return &slov1alpha1.ResourceQOS{NetworkQOS: n}
}

func TestClassConfigs(t *testing.T) {
	const total = 1_000_000_000
	tests := []struct {
		name     string
		strategy slov1alpha1.ResourceQOSStrategy
		want     [numClasses]classConfig
		wantErr  []string
	}{
		{name: "nothing configured"},
		{
			name:     "a class that is off is not configured",
			strategy: slov1alpha1.ResourceQOSStrategy{BEClass: netQOS(false, "10", "20")},
		},
		{
			name:     "defaults: no request, the total as the limit",
			strategy: slov1alpha1.ResourceQOSStrategy{BEClass: netQOS(true, "", "")},
			want:     [numClasses]classConfig{classBE: {enabled: true, request: 0, ceil: total}},
		},
		{
			name: "percentages and quantities",
			strategy: slov1alpha1.ResourceQOSStrategy{
				SystemClass: netQOS(true, "40", ""), LSClass: netQOS(true, "300M", "100"), BEClass: netQOS(true, "10", "20%")},
			want: [numClasses]classConfig{
				classSystem: {enabled: true, request: 400_000_000, ceil: total},
				classLS:     {enabled: true, request: 300_000_000, ceil: total},
				classBE:     {enabled: true, request: 100_000_000, ceil: 200_000_000},
			},
		},
		{
			name:     "a limit above the total",
			strategy: slov1alpha1.ResourceQOSStrategy{BEClass: netQOS(true, "", "2G")},
			wantErr:  []string{"resourceQOSStrategy.beClass.networkQOS.egressLimit: 2Gbit/s is above the node's total 1Gbit/s"},
		},
		{
			name:     "a limit of nothing",
			strategy: slov1alpha1.ResourceQOSStrategy{BEClass: netQOS(true, "", "0")},
			wantErr:  []string{"egressLimit: 0 would stop the class's traffic"},
		},
		{
			name:     "a request above the limit",
			strategy: slov1alpha1.ResourceQOSStrategy{LSClass: netQOS(true, "50", "10")},
			wantErr:  []string{"lsClass.networkQOS.egressRequest: 500Mbit/s is above its egressLimit 100Mbit/s"},
		},
		{
			name:     "requests that do not fit",
			strategy: slov1alpha1.ResourceQOSStrategy{LSClass: netQOS(true, "60", ""), BEClass: netQOS(true, "50", "")},
			wantErr:  []string{"egressRequests add up to 1100Mbit/s, above the node's total 1Gbit/s"},
		},
		{
			name:     "lsrClass may not set it",
			strategy: slov1alpha1.ResourceQOSStrategy{LSRClass: netQOS(true, "", "")},
			wantErr:  []string{"lsrClass.networkQOS: LSR pods share the LS class's bandwidth"},
		},
		{
			name: "every bad value is named",
			strategy: slov1alpha1.ResourceQOSStrategy{BEClass: &slov1alpha1.ResourceQOS{NetworkQOS: &slov1alpha1.NetworkQOSCfg{
				Enable: ptr.To(true), NetworkQOS: slov1alpha1.NetworkQOS{
					EgressRequest: ptr.To(intstr.FromInt32(200)), IngressLimit: ptr.To(intstr.FromString("lots"))}}}},
			wantErr: []string{"beClass.networkQOS.egressRequest: 200 is not a percentage", `beClass.networkQOS.ingressLimit: "lots"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := classConfigs(&slov1alpha1.NodeSLOSpec{ResourceQOSStrategy: &tt.strategy}, total)
			if len(tt.wantErr) > 0 {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v, want one containing %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(classConfig{})); diff != "" {
				t.Errorf("classConfigs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTree(t *testing.T) {
	const total = 1_000_000_000
	tests := []struct {
		name string
		cfg  [numClasses]classConfig
		want []htbClass
	}{
		{
			name: "only BE on: the system class, the default, gets what BE's request leaves and may use everything",
			cfg:  [numClasses]classConfig{classBE: {enabled: true, request: 100_000_000, ceil: 200_000_000}},
			want: []htbClass{
				{minor: 0x1, rate: total, ceil: total},
				{minor: 0x2, parent: 0x1, rate: 900_000_000, ceil: total}, {minor: 0x20, parent: 0x2, rate: 900_000_000, ceil: total},
				{minor: 0x4, parent: 0x1, rate: 100_000_000, ceil: 200_000_000}, {minor: 0x40, parent: 0x4, rate: 100_000_000, ceil: 200_000_000},
			},
		},
		{
			name: "a class without a request is guaranteed 1 % of the total",
			cfg: [numClasses]classConfig{
				classSystem: {enabled: true, request: 0, ceil: 500_000_000},
				classLS:     {enabled: true, request: 0, ceil: total},
			},
			want: []htbClass{
				{minor: 0x1, rate: total, ceil: total},
				{minor: 0x2, parent: 0x1, rate: 10_000_000, ceil: 500_000_000}, {minor: 0x20, parent: 0x2, rate: 10_000_000, ceil: 500_000_000},
				{minor: 0x3, parent: 0x1, rate: 10_000_000, ceil: total}, {minor: 0x30, parent: 0x3, rate: 10_000_000, ceil: total},
			},
		},
		{
			name: "a limit under 1 % of the total is kept: the floor is never above the limit",
			cfg:  [numClasses]classConfig{classBE: {enabled: true, request: 0, ceil: 2_000_000}},
			want: []htbClass{
				{minor: 0x1, rate: total, ceil: total},
				{minor: 0x2, parent: 0x1, rate: total, ceil: total}, {minor: 0x20, parent: 0x2, rate: total, ceil: total},
				{minor: 0x4, parent: 0x1, rate: 2_000_000, ceil: 2_000_000}, {minor: 0x40, parent: 0x4, rate: 2_000_000, ceil: 2_000_000},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tree(tt.cfg, total), cmp.AllowUnexported(htbClass{})); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildPlanClassifiesPodsByAddress(t *testing.T) {
	const total = 1_000_000_000
	cfg := [numClasses]classConfig{classLS: {enabled: true, ceil: total}, classBE: {enabled: true, ceil: 300_000_000}}
	withIPs := func(p *corev1.Pod, ips ...string) *corev1.Pod {
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		return p
	}
	hostNet := withIPs(tu.Pod("hostnet").UID("hostnet").Label(slov1alpha1.LabelQoSClass, "BE").Obj(), "192.0.2.10")
	hostNet.Spec.HostNetwork = true
	store := statesinformer.NewStore()
	for _, p := range []*corev1.Pod{
		withIPs(tu.Pod("batch").UID("batch").PriorityClass("gleaner-batch").Obj(), "10.0.0.9", "fd00::9"),
		withIPs(tu.Pod("capped").UID("capped").Label(slov1alpha1.LabelQoSClass, "BE").Obj(), "10.0.0.3"),
		withIPs(tu.Pod("service").UID("service").Label(slov1alpha1.LabelQoSClass, "LSR").Obj(), "10.0.0.5"),
		withIPs(tu.Pod("mid").UID("mid").Label(slov1alpha1.LabelPriorityClass, "mid").Requests("cpu", "1").Obj(), "10.0.0.6"),
		withIPs(tu.Pod("system").UID("system").Label(slov1alpha1.LabelQoSClass, "SYSTEM").Obj(), "10.0.0.7"),
		hostNet,
	} {
		store.SetPod(p)
	}
	alloc := newMinors()
	got := buildPlan(cfg, total, store.GetAllPods(), podLimits{"capped": 50_000_000}, alloc)
	wantRules := []podRule{
		{ip: mustAddr("10.0.0.3"), minor: 0x100}, // its own leaf
		{ip: mustAddr("10.0.0.5"), minor: 0x30},  // LSR shares LS
		{ip: mustAddr("10.0.0.6"), minor: 0x30},  // the mid tier is not best-effort
		{ip: mustAddr("10.0.0.9"), minor: 0x40},
		{ip: mustAddr("fd00::9"), minor: 0x40},
	}
	if diff := cmp.Diff(wantRules, got.rules, cmp.AllowUnexported(podRule{}), cmp.Comparer(func(a, b interface{ String() string }) bool {
		return a.String() == b.String()
	})); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	last := got.classes[len(got.classes)-1]
	// BE's rate (1 % of the total: no request) is shared by its leaves: half for the capped pod, half for the rest.
	if want := (htbClass{minor: 0x100, parent: 0x4, rate: 5_000_000, ceil: 50_000_000}); last != want {
		t.Errorf("the capped pod's leaf is %+v, want %+v (after every inner class)", last, want)
	}
	for i, c := range got.classes[1:] {
		if depth(c) < depth(got.classes[i]) {
			t.Errorf("class %x comes after its children: %+v", c.minor, got.classes)
		}
	}
	// The pod keeps its leaf when another one takes one, and it is freed when the pod needs none.
	if m, _ := alloc.get("other"); m != 0x101 {
		t.Errorf("the next pod's leaf is %x, want 0x101", m)
	}
	alloc.keep(podLimits{"other": 1})
	if m, _ := alloc.get("capped"); m != 0x100 {
		t.Errorf("after the capped pod's leaf was freed, it got %x again, want 0x100", m)
	}
}

// Pods with limits of their own share their class's rate with its other pods: twenty best-effort pods capped at 50M
// each under a class limit of 50M on 1G are guaranteed 50M together, not 20 x 1 % of the total on top of the class.
func TestPodLeavesStayInsideTheirClass(t *testing.T) {
	const total = 1_000_000_000
	cfg := [numClasses]classConfig{classBE: {enabled: true, ceil: 50_000_000}}
	store := statesinformer.NewStore()
	own := podLimits{}
	for i := range 20 {
		uid := fmt.Sprintf("capped-%02d", i)
		p := tu.Pod(uid).UID(uid).Label(slov1alpha1.LabelQoSClass, "BE").Obj()
		p.Status.PodIPs = []corev1.PodIP{{IP: fmt.Sprintf("10.0.1.%d", i+1)}}
		store.SetPod(p)
		own[p.UID] = 50_000_000
	}
	got := buildPlan(cfg, total, store.GetAllPods(), own, newMinors())
	var innerRate, leaves uint64
	n := 0
	for _, c := range got.classes {
		switch {
		case c.minor == classBE.inner():
			innerRate = c.rate
			if c.rate > c.ceil {
				t.Errorf("BE's inner class is guaranteed %d, above its limit %d", c.rate, c.ceil)
			}
		case c.parent == classBE.inner():
			leaves += c.rate
			n++
			if c.rate == 0 || c.rate > c.ceil {
				t.Errorf("leaf %x: rate %d, ceil %d", c.minor, c.rate, c.ceil)
			}
		}
	}
	if n != 21 || leaves != innerRate || innerRate != 10_000_000 {
		t.Errorf("%d leaves guaranteed %d together under BE's %d; want 21 leaves sharing 10000000 (1 %% of the total, under the 50M limit)", n, leaves, innerRate)
	}
}

func TestPodLimit(t *testing.T) {
	const total, classCeil = 1_000_000_000, 300_000_000
	tests := []struct {
		name, key, value string
		want             uint64
		wantOK           bool
		wantPartly       string // a part of what is left out; "": nothing is
		wantErr          string
	}{
		{name: "no annotation"},
		{name: "Koordinator's", key: slov1alpha1.AnnotationNetworkQOSAlias, value: `{"ingressLimit": "10M", "egressLimit": "20M"}`, want: 20_000_000, wantOK: true},
		{name: "gleaner.sh's, a percentage", key: slov1alpha1.AnnotationNetworkQOS, value: `{"egressLimit": 10}`, want: 100_000_000, wantOK: true},
		{name: "ingress only", key: slov1alpha1.AnnotationNetworkQOS, value: `{"ingressLimit": "10M"}`},
		{name: "above the class's", key: slov1alpha1.AnnotationNetworkQOS, value: `{"egressLimit": "400M"}`, wantErr: "egressLimit 400Mbit/s is above the class's 300Mbit/s"},
		{name: "zero", key: slov1alpha1.AnnotationNetworkQOS, value: `{"egressLimit": "0"}`, wantErr: "egressLimit 0 would stop"},
		{name: "unknown field", key: slov1alpha1.AnnotationNetworkQOS, value: `{"egressRequest": "10M"}`, wantErr: `unknown field "egressRequest"`},
		{name: "Koordinator's, with fields Gleaner lacks", key: slov1alpha1.AnnotationNetworkQOSAlias, value: `{"egressRequest": "10M", "egressLimit": "20M"}`,
			want: 20_000_000, wantOK: true, wantPartly: "annotation koordinator.sh/networkQOS: Gleaner does not read egressRequest, ignored"},
		{name: "not JSON", key: slov1alpha1.AnnotationNetworkQOSAlias, value: `20M`, wantErr: "is not a network QoS configuration"},
		{name: "Koordinator's empty: nothing asked, as in Koordinator", key: slov1alpha1.AnnotationNetworkQOSAlias, value: ``},
		{name: "Gleaner's empty", key: slov1alpha1.AnnotationNetworkQOS, value: ``, wantErr: "is not a network QoS configuration"},
		{name: "trailing", key: slov1alpha1.AnnotationNetworkQOS, value: `{"egressLimit": "20M"} {}`, wantErr: "more follows"},
		{name: "bad ingress", key: slov1alpha1.AnnotationNetworkQOS, value: `{"ingressLimit": "lots", "egressLimit": "20M"}`, wantErr: "ingressLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tu.Pod("p")
			if tt.key != "" {
				b = b.Annotation(tt.key, tt.value)
			}
			got, ok, partly, err := podLimit(b.Obj(), total, classCeil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.wantOK || got != tt.want {
				t.Fatalf("podLimit = %d, %v, %v; want %d, %v", got, ok, err, tt.want, tt.wantOK)
			}
			if (partly == "") != (tt.wantPartly == "") || !strings.Contains(partly, tt.wantPartly) {
				t.Errorf("left out %q, want %q", partly, tt.wantPartly)
			}
		})
	}
	// The gleaner.sh annotation wins over Koordinator's.
	p := tu.Pod("p").Annotation(slov1alpha1.AnnotationNetworkQOS, `{"egressLimit": "5M"}`).
		Annotation(slov1alpha1.AnnotationNetworkQOSAlias, `{"egressLimit": "7M"}`).Obj()
	if got, _, _, _ := podLimit(p, total, classCeil); got != 5_000_000 {
		t.Errorf("with both annotations the limit is %d, want gleaner.sh's 5000000", got)
	}
}

func TestTotalNetworkBandwidthRoundTrips(t *testing.T) {
	q := resource.MustParse("10G")
	p := &Plugin{}
	got, err := p.total(&slov1alpha1.NodeSLOSpec{SystemStrategy: &slov1alpha1.SystemStrategy{TotalNetworkBandwidth: &q}}, nil)
	if err != nil || got != 10_000_000_000 {
		t.Fatalf("total = %d, %v; want 10000000000", got, err)
	}
	zero := resource.MustParse("0")
	if _, err := p.total(&slov1alpha1.NodeSLOSpec{SystemStrategy: &slov1alpha1.SystemStrategy{TotalNetworkBandwidth: &zero}}, nil); err == nil {
		t.Error("a total of 0 was accepted")
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
