package statesinformer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// +kubebuilder:rbac:groups="",resources=nodes/pods,verbs=get

// KubeletConfig configures reading pods from the kubelet instead of watching the API server.
type KubeletConfig struct {
	// URL is the kubelet's HTTPS endpoint, such as https://127.0.0.1:10250 (with hostNetwork).
	URL string
	// Interval is how often the pod list is read.
	Interval time.Duration
	// CAFile verifies the kubelet's serving certificate; empty means the system roots.
	CAFile string
	// InsecureSkipTLSVerify accepts any serving certificate (kubelets with self-signed certificates).
	InsecureSkipTLSVerify bool
}

// KubeletPods reads the kubelet's pod list (GET /pods) every interval into a Store. The agent authenticates with
// its own credentials (its service account token); the kubelet authorizes the request as get on nodes/pods
// (fine-grained kubelet authorization, on by default since Kubernetes 1.33) or nodes/proxy on older clusters.
type KubeletPods struct {
	url      string
	client   *http.Client
	interval time.Duration
	clock    clock.WithTicker

	first     chan struct{}
	firstOnce sync.Once
}

// NewKubeletPods returns a KubeletPods that authenticates like auth (bearer token or client certificate).
func NewKubeletPods(cfg KubeletConfig, auth *rest.Config, clk clock.WithTicker) (*KubeletPods, error) {
	if cfg.URL == "" || cfg.Interval <= 0 {
		return nil, fmt.Errorf("reading pods from the kubelet: need a URL and a positive interval, got %q and %s", cfg.URL, cfg.Interval)
	}
	rc := &rest.Config{Host: cfg.URL}
	if auth != nil {
		rc.BearerToken, rc.BearerTokenFile = auth.BearerToken, auth.BearerTokenFile
		rc.CertFile, rc.KeyFile, rc.CertData, rc.KeyData = auth.CertFile, auth.KeyFile, auth.CertData, auth.KeyData
	}
	rc.CAFile, rc.Insecure = cfg.CAFile, cfg.InsecureSkipTLSVerify
	c, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("reading pods from the kubelet at %s: %w", cfg.URL, err)
	}
	c.Timeout = max(cfg.Interval, 5*time.Second)
	return &KubeletPods{
		url: strings.TrimSuffix(cfg.URL, "/") + "/pods", client: c, interval: cfg.Interval, clock: clk,
		first: make(chan struct{}),
	}, nil
}

// List reads the kubelet's pod list once. An empty list is an error: the agent's own pod is always on its node,
// so an empty list means a kubelet that has just restarted and not recovered its pods yet.
func (k *KubeletPods) List(ctx context.Context) ([]*corev1.Pod, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("listing pods from the kubelet at %s: %w", k.url, err)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing pods from the kubelet at %s: %w", k.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("listing pods from the kubelet at %s: %s: %s", k.url, resp.Status, strings.TrimSpace(string(body)))
	}
	pods, err := parsePodList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("listing pods from the kubelet at %s: %w", k.url, err)
	}
	return pods, nil
}

var errEmptyPodList = errors.New("the kubelet listed no pods (it may have just restarted); keeping the last list")

// maxPodListBytes bounds the kubelet's pod list. A pod in it is typically 5 to 20 KB (spec, status and managed
// fields); 250 pods, over twice the kubelet's default --max-pods, of 64 KB each are 16 MB. Decoding takes a few
// times the body's size, and the agent's memory limit is 256 MiB: a larger body is refused unread rather than
// decoded (the last list stays).
const maxPodListBytes = 32 << 20

// parsePodList decodes the kubelet's GET /pods body, reading at most maxPodListBytes, and returns its pods slimmed
// (slimPod). A list without pods is errEmptyPodList; a pod without a name, namespace or UID (which the Store keys
// pods by) makes the whole list an error, as a list cut short or garbled would.
func parsePodList(r io.Reader) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := json.NewDecoder(system.LimitReader(r, maxPodListBytes)).Decode(&list); err != nil {
		return nil, fmt.Errorf("decoding the pod list: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, errEmptyPodList
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		if p.Name == "" || p.Namespace == "" || p.UID == "" {
			return nil, fmt.Errorf("decoding the pod list: pod %d of %d has no name, namespace or UID (%q/%q, %q)", i+1, len(list.Items), p.Namespace, p.Name, p.UID)
		}
		_, _ = slimPod(p)
		pods[i] = p
	}
	return pods, nil
}

// Run reads the pod list now and every interval into s until ctx ends. A failed read keeps the last list.
func (k *KubeletPods) Run(ctx context.Context, s *Store) error {
	log := klog.FromContext(ctx)
	t := k.clock.NewTicker(k.interval)
	defer t.Stop()
	for {
		pods, err := k.List(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error(err, "reading pods from the kubelet")
		case err == nil:
			s.ReplacePods(pods)
			k.firstOnce.Do(func() { close(k.first) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// WaitForFirstList blocks until the first successful read (true) or ctx ends (false).
func (k *KubeletPods) WaitForFirstList(ctx context.Context) bool {
	select {
	case <-k.first:
		return true
	case <-ctx.Done():
		return false
	}
}
