package localcluster

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/template"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

//go:embed templates/*.tmpl
var templates embed.FS

// configValues are what the configuration templates (templates/*.tmpl) fill in.
type configValues struct {
	Host               string
	KubeletPort        int
	KubeletHealthzPort int
	ContainerdSocket   string
	ContainerdRoot     string
	ContainerdState    string
	ShimSocketDir      string
	PodLogsDir         string
	VolumePluginDir    string
	CAFile             string
	PauseImage         string
	Runc               string
	RuncRoot           string
	CNIBinDir          string
	CNIConfDir         string
	CNIDataDir         string
	NRISocket          string
	NRIPluginDir       string
	NRIPluginConfigDir string
	BridgeName         string
	BridgeIP           string
	PodCIDR            string
	// ClusterDNS is the kubelet's clusterDNS: the host's nameservers (clusterDNSServers), or none.
	ClusterDNS []string
	// CgroupV1 is whether the host is cgroup v1, which the kubelet refuses unless told otherwise; on cgroup v2 it
	// runs with its defaults.
	CgroupV1 bool
}

func newConfigValues(l Layout) configValues {
	return configValues{
		Host:               Host,
		KubeletPort:        KubeletPort,
		KubeletHealthzPort: KubeletHealthzPort,
		ContainerdSocket:   l.ContainerdSocket(),
		ContainerdRoot:     l.Path("containerd", "root"),
		ContainerdState:    l.Path("containerd", "state"),
		ShimSocketDir:      l.ShimSocketDir(),
		PodLogsDir:         l.Path("pod-logs"),
		VolumePluginDir:    l.Path("volume-plugins"),
		CAFile:             filepath.Join(l.PKIDir(), caCertFile),
		PauseImage:         PauseImage,
		Runc:               RuncPath,
		RuncRoot:           l.Path("run", "runc"),
		CNIBinDir:          CNIBinDir,
		CNIConfDir:         l.CNIConfDir(),
		CNIDataDir:         l.Path("cni"),
		NRISocket:          NRISocket,
		NRIPluginDir:       l.Path("config", "nri", "plugins"),
		NRIPluginConfigDir: l.Path("config", "nri", "conf.d"),
		BridgeName:         BridgeName,
		BridgeIP:           BridgeIP,
		PodCIDR:            PodCIDR,
	}
}

// The configuration files Up writes, relative to the config directory, and the template each comes from.
const (
	kubeletConfigFile    = "kubelet.yaml"
	containerdConfigFile = "containerd.toml"
	// cniConfigFile is in the CNI directory: containerd takes the first file there, and must find it before it
	// starts or the node stays NotReady.
	cniConfigFile = "10-gleaner.conflist"
)

// renderTemplate fills the named template with v.
func renderTemplate(name string, v configValues) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").ParseFS(templates, "templates/"+name)
	if err != nil {
		return nil, fmt.Errorf("parsing template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, name, v); err != nil {
		return nil, fmt.Errorf("filling template %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// writeConfigs writes the kubelet, containerd and CNI configuration and one kubeconfig per identity; clusterDNS is
// the kubelet's clusterDNS, cgroupV1 whether the host is cgroup v1.
func writeConfigs(l Layout, p *pki, clusterDNS []string, cgroupV1 bool) error {
	v := newConfigValues(l)
	v.ClusterDNS = clusterDNS
	v.CgroupV1 = cgroupV1
	for _, d := range []string{l.ConfigDir(), l.CNIConfDir(), v.NRIPluginDir, v.NRIPluginConfigDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	for _, f := range []struct{ template, path string }{
		{"kubelet.yaml.tmpl", filepath.Join(l.ConfigDir(), kubeletConfigFile)},
		{"containerd.toml.tmpl", filepath.Join(l.ConfigDir(), containerdConfigFile)},
		{"cni.conflist.tmpl", filepath.Join(l.CNIConfDir(), cniConfigFile)},
	} {
		b, err := renderTemplate(f.template, v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.path, b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	for path, user := range map[string]string{
		l.Kubeconfig():                                    adminUser,
		componentKubeconfig(l, "kubelet"):                 kubeletUser,
		componentKubeconfig(l, "kube-scheduler"):          schedulerUser,
		componentKubeconfig(l, "kube-controller-manager"): controllerManagerUser,
	} {
		if err := writeKubeconfig(path, p.ca.certPEM(), user, p.tokens[user]); err != nil {
			return err
		}
	}
	return nil
}

// componentKubeconfig is the kubeconfig file of a component.
func componentKubeconfig(l Layout, component string) string {
	return filepath.Join(l.ConfigDir(), component+".kubeconfig")
}

// APIServerURL is the address of the API server.
func APIServerURL() string { return "https://" + Host + ":" + strconv.Itoa(APIServerPort) }

// writeKubeconfig writes a kubeconfig that trusts the cluster's CA and authenticates with a bearer token.
func writeKubeconfig(path string, caPEM []byte, user, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["gleaner-local"] = &clientcmdapi.Cluster{Server: APIServerURL(), CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["gleaner-local"] = &clientcmdapi.Context{Cluster: "gleaner-local", AuthInfo: user}
	cfg.CurrentContext = "gleaner-local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
