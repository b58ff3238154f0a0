package localcluster

import (
	"fmt"
	"path/filepath"
)

// DefaultStateDir is where the local cluster keeps its state unless told otherwise. It is machine-wide on purpose:
// only one local cluster can run on a machine.
const DefaultStateDir = "/var/lib/gleaner-local"

// maxSocketPath is the longest path a unix socket may have on Linux (sun_path is 108 bytes with the NUL).
const maxSocketPath = 107

// shimSocketName is as long as the names containerd gives its shim sockets (a sha256 in hex).
const shimSocketName = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Layout names every path inside the state directory. It is the one place that knows the directory's shape.
//
//	cluster.json        what runs: components, PIDs, the host paths Up created (State)
//	lock                held while Up or Down runs
//	kubeconfig          the admin kubeconfig for people and tests
//	bin/                kubectl, ctr and Gleaner's binaries (kubectl plugins are found here)
//	pki/                CA, serving and client certificates, service-account key, tokens.csv
//	config/             kubelet, containerd and CNI configuration, one kubeconfig per component
//	logs/               one log per component
//	etcd/ containerd/ kubelet/ pod-logs/ cni/ images/   the components' data
//	kubectl-cache/      kubectl's discovery cache for the commands gleaner-local runs (not ~/.kube/cache)
//	helm/               helm's configuration, cache and release data for InstallChart (not ~/.config/helm)
//	run/                sockets, runc's state, shim sockets, network namespaces
type Layout struct {
	// Dir is the state directory itself.
	Dir string
}

// Path joins elem under the state directory.
func (l Layout) Path(elem ...string) string {
	return filepath.Join(append([]string{l.Dir}, elem...)...)
}

// StateFile is the record of the running cluster.
func (l Layout) StateFile() string { return l.Path("cluster.json") }

// LockFile is held (flock) while Up or Down changes the cluster.
func (l Layout) LockFile() string { return l.Path("lock") }

// Kubeconfig is the admin kubeconfig.
func (l Layout) Kubeconfig() string { return l.Path("kubeconfig") }

// BinDir holds kubectl, ctr and Gleaner's binaries; put it first on PATH to use them.
func (l Layout) BinDir() string { return l.Path("bin") }

// PKIDir holds certificates, keys and the token file.
func (l Layout) PKIDir() string { return l.Path("pki") }

// ConfigDir holds the components' configuration files.
func (l Layout) ConfigDir() string { return l.Path("config") }

// CNIConfDir is the directory containerd reads CNI network configurations from.
func (l Layout) CNIConfDir() string { return l.Path("config", "cni") }

// LogDir holds one log file per component.
func (l Layout) LogDir() string { return l.Path("logs") }

// Log is the log file of the named component.
func (l Layout) Log(component string) string { return l.Path("logs", component+".log") }

// ImagesDir holds the image tarball imported into containerd.
func (l Layout) ImagesDir() string { return l.Path("images") }

// RunDir holds sockets and other runtime state.
func (l Layout) RunDir() string { return l.Path("run") }

// ContainerdSocket is containerd's gRPC socket, the kubelet's container runtime endpoint.
func (l Layout) ContainerdSocket() string { return l.Path("run", "containerd.sock") }

// ShimSocketDir is where containerd's shims put their sockets.
func (l Layout) ShimSocketDir() string { return l.Path("run", "s") }

// KubeletDir is the kubelet's --root-dir.
func (l Layout) KubeletDir() string { return l.Path("kubelet") }

// dataDirs are the directories Up creates and Down removes; logs/ is kept so a failed run can be read afterwards.
func (l Layout) dataDirs() []string {
	return []string{
		l.Path("bin"), l.PKIDir(), l.ConfigDir(), l.Path("etcd"), l.Path("containerd"), l.KubeletDir(),
		l.Path("pod-logs"), l.Path("cni"), l.ImagesDir(), l.RunDir(), l.Path("volume-plugins"), l.Path("kubectl-cache"),
		l.Path("helm"),
	}
}

// validate rejects a state directory whose sockets would not fit in a unix socket address.
func (l Layout) validate() error {
	if !filepath.IsAbs(l.Dir) {
		return fmt.Errorf("state directory %q must be an absolute path", l.Dir)
	}
	if p := filepath.Join(l.ShimSocketDir(), shimSocketName); len(p) > maxSocketPath {
		return fmt.Errorf("state directory %q is too long: containerd's shim sockets under it would be %d bytes, "+
			"more than the %d a unix socket path may have; choose a shorter one", l.Dir, len(p), maxSocketPath)
	}
	return nil
}
