package localcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
)

// The cluster's fixed names and addresses. Every port listens on Host only.
const (
	// Host is the address every component listens on.
	Host = "127.0.0.1"
	// APIServerPort is kube-apiserver's secure port.
	APIServerPort = 6443
	// EtcdClientPort and EtcdPeerPort are etcd's ports (plain HTTP, loopback only).
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
	// KubeletPort is the kubelet's API; KubeletHealthzPort its /healthz.
	KubeletPort        = 10250
	KubeletHealthzPort = 10248
	// ControllerManagerPort and SchedulerPort are the secure ports of kube-controller-manager and kube-scheduler.
	ControllerManagerPort = 10257
	SchedulerPort         = 10259

	// NodeName is the name of the only node (the kubelet's --hostname-override).
	NodeName = "localhost"
	// PodCIDR is the pods' network on the CNI bridge; BridgeName the bridge, BridgeIP its (gateway) address.
	PodCIDR    = "10.244.0.0/24"
	BridgeName = "gleaner0"
	BridgeIP   = "10.244.0.1"
	// ServiceCIDR is the range of ClusterIPs; APIServerServiceIP the first, taken by the kubernetes Service.
	ServiceCIDR        = "10.96.0.0/16"
	APIServerServiceIP = "10.96.0.1"
	// PauseImage is the sandbox image containerd is pinned to; Gleaner's image builder tags its pause as this.
	PauseImage = "registry.k8s.io/pause:3.10"
	// NRISocket is where containerd serves NRI plugins: the default path, so an NRI plugin needs no setting.
	NRISocket = "/var/run/nri/nri.sock"
	// K8sNamespace is containerd's namespace for the kubelet's containers and images.
	K8sNamespace = "k8s.io"
)

// Config says where the cluster keeps its state and how it is built.
type Config struct {
	// StateDir is the state directory (see Layout). Default DefaultStateDir.
	StateDir string
	// RepoRoot is Gleaner's source tree: hack/kube-build.sh there builds the cluster's binaries, and its commands
	// (images.DefaultPackages) become the images imported before the kubelet starts. Required by Up.
	RepoRoot string
	// Out receives one line per step. Default os.Stderr.
	Out io.Writer
	// Clock stamps the state file and the certificates. Default the real clock.
	Clock clock.PassiveClock
	// NodeReadyTimeout bounds how long Up waits for the node to become Ready. Default 3 minutes.
	NodeReadyTimeout time.Duration
	// ImagesTarball, when set, is an images tarball built beforehand (BuildImages' file, ImagesTarball): Up imports
	// it instead of building the images. A machine that is slow to compile (the cgroup v2 node of
	// hack/cgroupv2-node.sh, whose CPUs are emulated) starts from images built on the host.
	ImagesTarball string
}

// withDefaults returns the config with every empty field set to its default.
func (c Config) withDefaults() Config {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.Out == nil {
		c.Out = os.Stderr
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.NodeReadyTimeout == 0 {
		c.NodeReadyTimeout = 3 * time.Minute
	}
	return c
}

// validate reports every invalid field at once.
func (c Config) validate() error {
	var errs []error
	if err := (Layout{Dir: c.StateDir}).validate(); err != nil {
		errs = append(errs, err)
	}
	if c.RepoRoot != "" {
		if _, err := os.Stat(filepath.Join(c.RepoRoot, "hack", "kube-build.sh")); err != nil {
			errs = append(errs, fmt.Errorf("repository root %q has no hack/kube-build.sh: %w", c.RepoRoot, err))
		}
	}
	if c.NodeReadyTimeout < 0 {
		errs = append(errs, fmt.Errorf("node-ready timeout must not be negative, got %s", c.NodeReadyTimeout))
	}
	return errors.Join(errs...)
}
