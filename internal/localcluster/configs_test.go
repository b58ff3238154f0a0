package localcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// hostPathsAllowed are the only absolute paths outside the state directory that the configuration and the command
// lines may name: the Debian packages' programs, the host's resolver and the NRI socket (at its default on purpose).
func hostPathsAllowed() []string {
	return []string{RuncPath, CNIBinDir, "/etc/resolv.conf", NRISocket}
}

// absPath matches an absolute path, not the "//host" of a URL.
var absPath = regexp.MustCompile(`(?:^|[\s='":])(/[A-Za-z0-9._-][A-Za-z0-9._/-]*)`)

// outsideState returns the absolute paths in text, comments (#) left out, that are neither under dir nor allowed.
func outsideState(text, dir string) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			lines = append(lines, line)
		}
	}
	var out []string
	for _, m := range absPath.FindAllStringSubmatch(strings.Join(lines, "\n"), -1) {
		p := m[1]
		if p == "/" || strings.HasPrefix(p, dir+"/") || slices.Contains(hostPathsAllowed(), p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func writeTestConfigs(t *testing.T) (Layout, *pki) {
	t.Helper()
	l := Layout{Dir: t.TempDir()}
	p, err := writePKI(l.PKIDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConfigs(l, p, []string{"10.255.255.53", "fd00::53"}, true); err != nil {
		t.Fatal(err)
	}
	return l, p
}

func TestConfigsStayInTheStateDirectory(t *testing.T) {
	l, _ := writeTestConfigs(t)
	for _, f := range []string{
		filepath.Join(l.ConfigDir(), kubeletConfigFile),
		filepath.Join(l.ConfigDir(), containerdConfigFile),
		filepath.Join(l.CNIConfDir(), cniConfigFile),
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "{{") || strings.Contains(string(b), "<no value>") {
			t.Errorf("%s has an unfilled template field", f)
		}
		if out := outsideState(string(b), l.Dir); len(out) > 0 {
			t.Errorf("%s names host paths %v; everything the cluster writes belongs in the state directory", filepath.Base(f), out)
		}
	}
}

func TestKubeletConfig(t *testing.T) {
	l, _ := writeTestConfigs(t)
	b, err := os.ReadFile(filepath.Join(l.ConfigDir(), kubeletConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("kubelet config is not YAML: %v", err)
	}
	// The settings each of which was needed on these hosts (LOCAL-CLUSTER.md).
	for key, want := range map[string]any{
		"kind":                     "KubeletConfiguration",
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               "/",
		"cgroupsPerQOS":            true,
		"failSwapOn":               false,
		"address":                  Host,
		"healthzBindAddress":       Host,
		"readOnlyPort":             float64(0),
		"containerRuntimeEndpoint": "unix://" + l.ContainerdSocket(),
		// No iptables chains of the kubelet's in the host's firewall (firewall.go).
		"makeIPTablesUtilChains": false,
		"resolvConf":             HostResolvConf,
	} {
		if cfg[key] != want {
			t.Errorf("kubelet config %s = %v, want %v", key, cfg[key], want)
		}
	}
	// The host's nameservers stand in for the cluster DNS, so the kubelet does not warn MissingClusterDNS.
	if diff := cmp.Diff([]any{"10.255.255.53", "fd00::53"}, cfg["clusterDNS"]); diff != "" {
		t.Errorf("kubelet config clusterDNS (-want +got):\n%s", diff)
	}
}

// renderKubeletConfig writes the configuration with clusterDNS on a cgroup v1 host or not, and returns the kubelet's.
func renderKubeletConfig(t *testing.T, clusterDNS []string, cgroupV1 bool) map[string]any {
	t.Helper()
	l := Layout{Dir: t.TempDir()}
	p, err := writePKI(l.PKIDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConfigs(l, p, clusterDNS, cgroupV1); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(l.ConfigDir(), kubeletConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("kubelet config is not YAML: %v", err)
	}
	return cfg
}

func TestKubeletConfigWithoutNameservers(t *testing.T) {
	if v, ok := renderKubeletConfig(t, nil, true)["clusterDNS"]; ok {
		t.Errorf("clusterDNS %v with no nameservers, want none", v)
	}
}

// On a cgroup v2 host the kubelet keeps its default failCgroupV1 (true): the local cluster runs as a current
// distribution's kubelet does.
func TestKubeletConfigOnCgroupV2(t *testing.T) {
	cfg := renderKubeletConfig(t, nil, false)
	if v, ok := cfg["failCgroupV1"]; ok {
		t.Errorf("failCgroupV1 %v on a cgroup v2 host, want the kubelet's default", v)
	}
	if cfg["cgroupDriver"] != "cgroupfs" {
		t.Errorf("cgroupDriver %v, want cgroupfs", cfg["cgroupDriver"])
	}
}

func TestNameservers(t *testing.T) {
	tests := []struct {
		name       string
		resolvConf string
		want       []string
	}{
		{name: "one", resolvConf: "nameserver 10.255.255.53\n", want: []string{"10.255.255.53"}},
		{name: "comments, search and options around them",
			resolvConf: "# from DHCP\nsearch example.com\nnameserver 192.0.2.53\noptions ndots:2\nnameserver fd00::53\n",
			want:       []string{"192.0.2.53", "fd00::53"}},
		{name: "a zone or a name is no address the kubelet takes",
			resolvConf: "nameserver fe80::1%eth0\nnameserver dns.example.com\nnameserver 127.0.0.53\n",
			want:       []string{"127.0.0.53"}},
		{name: "at most three, as in a pod's resolv.conf",
			resolvConf: "nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\n",
			want:       []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}},
		{name: "none", resolvConf: "search example.com\nnameserver\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, nameservers([]byte(tt.resolvConf))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCNIConfig(t *testing.T) {
	l, _ := writeTestConfigs(t)
	b, err := os.ReadFile(filepath.Join(l.CNIConfDir(), cniConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				DataDir string `json:"dataDir"`
				Ranges  [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("CNI config is not JSON: %v", err)
	}
	if len(cfg.Plugins) != 1 {
		t.Fatalf("CNI plugins %+v, want the bridge only", cfg.Plugins)
	}
	p := cfg.Plugins[0]
	// No masquerading: it needs iptables rules in the host, which Down would have to find and remove.
	if p.Type != "bridge" || p.Bridge != BridgeName || p.IPMasq || p.IPAM.Ranges[0][0].Subnet != PodCIDR || p.IPAM.DataDir != l.Path("cni") {
		t.Errorf("CNI bridge config %+v", p)
	}
}

func TestKubeconfigs(t *testing.T) {
	l, p := writeTestConfigs(t)
	for path, user := range map[string]string{
		l.Kubeconfig():                                    adminUser,
		componentKubeconfig(l, "kubelet"):                 kubeletUser,
		componentKubeconfig(l, "kube-scheduler"):          schedulerUser,
		componentKubeconfig(l, "kube-controller-manager"): controllerManagerUser,
	} {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if cfg.Host != APIServerURL() || cfg.BearerToken != p.tokens[user] || len(cfg.CAData) == 0 {
			t.Errorf("%s: host %s, token of %s %t, CA %d bytes", path, cfg.Host, user, cfg.BearerToken == p.tokens[user], len(cfg.CAData))
		}
	}
}

// Every component listens on 127.0.0.1 only and keeps its files in the state directory.
func TestComponentsListenLocallyAndStayInTheStateDirectory(t *testing.T) {
	l, p := writeTestConfigs(t)
	comps := components(l, p)
	var names []string
	for _, c := range comps {
		names = append(names, c.name)
		for _, a := range c.args {
			flag, value, _ := strings.Cut(a, "=")
			if strings.HasSuffix(flag, "address") && !strings.Contains(flag, "advertise") && value != Host {
				t.Errorf("%s %s: want %s", c.name, a, Host)
			}
			if strings.Contains(flag, "urls") && !strings.Contains(value, "://"+Host+":") {
				t.Errorf("%s %s: want %s", c.name, a, Host)
			}
			if out := outsideState(a, l.Dir); len(out) > 0 {
				t.Errorf("%s %s names host paths %v", c.name, a, out)
			}
		}
	}
	want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet"}
	if !slices.Equal(names, want) {
		t.Errorf("start order %v, want %v", names, want)
	}
}
