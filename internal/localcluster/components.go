package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// component is one program of the cluster: how to start it and how to tell it is ready.
type component struct {
	// name is the component's name: its log file, its entry in cluster.json.
	name string
	// program is the key of its executable in binaries.
	program string
	args    []string
	// ready returns nil once the component serves; it is polled.
	ready func(ctx context.Context) error
}

// components returns the cluster's components in start order; Down stops them in reverse. Each flag here was
// needed or is the safe choice; LOCAL-CLUSTER.md in the shared design notes records why.
func components(l Layout, p *pki) []component {
	pkiFile := func(name string) string { return filepath.Join(l.PKIDir(), name) }
	local := func(port int) string { return net.JoinHostPort(Host, strconv.Itoa(port)) }
	caPool := x509.NewCertPool()
	caPool.AddCert(p.ca.cert)
	return []component{
		{
			name: "etcd", program: "etcd",
			args: []string{
				"--name=local",
				"--data-dir=" + l.Path("etcd"),
				"--listen-client-urls=http://" + local(EtcdClientPort),
				"--advertise-client-urls=http://" + local(EtcdClientPort),
				"--listen-peer-urls=http://" + local(EtcdPeerPort),
				"--initial-advertise-peer-urls=http://" + local(EtcdPeerPort),
				"--initial-cluster=local=http://" + local(EtcdPeerPort),
				// A throwaway cluster: losing the last writes on a crash is fine, waiting on fsync is not.
				"--unsafe-no-fsync=true",
			},
			ready: httpReady("http://"+local(EtcdClientPort)+"/health", nil, "", `"health":"true"`),
		},
		{
			name: "kube-apiserver", program: "kube-apiserver",
			args: []string{
				"--etcd-servers=http://" + local(EtcdClientPort),
				"--bind-address=" + Host,
				"--secure-port=" + strconv.Itoa(APIServerPort),
				"--tls-cert-file=" + pkiFile(apiServerCertName+".crt"),
				"--tls-private-key-file=" + pkiFile(apiServerCertName+".key"),
				"--client-ca-file=" + pkiFile(caCertFile),
				"--token-auth-file=" + pkiFile(tokenFile),
				"--authorization-mode=Node,RBAC",
				"--enable-admission-plugins=NodeRestriction",
				"--service-cluster-ip-range=" + ServiceCIDR,
				"--service-account-issuer=https://kubernetes.default.svc",
				"--service-account-key-file=" + pkiFile(serviceAccountPub),
				"--service-account-signing-key-file=" + pkiFile(serviceAccountKey),
				// The kubelet serves on 127.0.0.1 as "localhost"; its InternalIP is the host's address.
				"--kubelet-preferred-address-types=Hostname,InternalIP",
				"--kubelet-client-certificate=" + pkiFile(kubeletClientName+".crt"),
				"--kubelet-client-key=" + pkiFile(kubeletClientName+".key"),
				"--allow-privileged=true",
				// No kube-proxy here: ClusterIPs lead nowhere. With this the API server reaches webhook and
				// aggregated API Services at their endpoints' pod IPs (on the bridge, reachable from the host).
				"--enable-aggregator-routing=true",
				"--profiling=false",
			},
			ready: httpReady("https://"+local(APIServerPort)+"/readyz", caPool, p.tokens[adminUser], "ok"),
		},
		{
			// It removes the node's not-ready taint, runs the ReplicaSets behind Deployments and collects garbage
			// (owner references), which envtest never does.
			name: "kube-controller-manager", program: "kube-controller-manager",
			args: []string{
				"--kubeconfig=" + componentKubeconfig(l, "kube-controller-manager"),
				"--bind-address=" + Host,
				"--secure-port=" + strconv.Itoa(ControllerManagerPort),
				"--tls-cert-file=" + pkiFile(controllerMgrCrtName+".crt"),
				"--tls-private-key-file=" + pkiFile(controllerMgrCrtName+".key"),
				// Each controller acts as its own service account, which the bootstrap RBAC policy grants exactly
				// what that controller needs.
				"--use-service-account-credentials=true",
				"--service-account-private-key-file=" + pkiFile(serviceAccountKey),
				"--root-ca-file=" + pkiFile(caCertFile),
				"--service-cluster-ip-range=" + ServiceCIDR,
				"--leader-elect=false",
				"--flex-volume-plugin-dir=" + l.Path("volume-plugins"),
				"--profiling=false",
			},
			ready: httpReady("https://"+local(ControllerManagerPort)+"/healthz", caPool, "", "ok"),
		},
		{
			name: "kube-scheduler", program: "kube-scheduler",
			args: []string{
				"--kubeconfig=" + componentKubeconfig(l, "kube-scheduler"),
				"--bind-address=" + Host,
				"--secure-port=" + strconv.Itoa(SchedulerPort),
				"--tls-cert-file=" + pkiFile(schedulerCertName+".crt"),
				"--tls-private-key-file=" + pkiFile(schedulerCertName+".key"),
				"--leader-elect=false",
				"--profiling=false",
			},
			ready: httpReady("https://"+local(SchedulerPort)+"/healthz", caPool, "", "ok"),
		},
		{
			name: "containerd", program: "containerd",
			args:  []string{"--config=" + filepath.Join(l.ConfigDir(), containerdConfigFile)},
			ready: socketReady(l.ContainerdSocket()),
		},
		{
			name: "kubelet", program: "kubelet",
			args: []string{
				"--config=" + filepath.Join(l.ConfigDir(), kubeletConfigFile),
				"--kubeconfig=" + componentKubeconfig(l, "kubelet"),
				"--root-dir=" + l.KubeletDir(),
				"--cert-dir=" + filepath.Join(l.KubeletDir(), "pki"),
				// The node is "localhost" and the API server reaches the kubelet by that name on 127.0.0.1. Do not
				// set --node-ip=127.0.0.1: the kubelet rejects a loopback node IP.
				"--hostname-override=" + NodeName,
			},
			ready: httpReady("http://"+local(KubeletHealthzPort)+"/healthz", nil, "", "ok"),
		},
	}
}

// httpReady is ready once url answers 200 with a body containing want. A nil pool means plain HTTP.
func httpReady(url string, pool *x509.CertPool, token, want string) func(context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	if pool != nil {
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// socketReady is ready once the unix socket accepts a connection.
func socketReady(path string) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := os.Stat(path); err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}
