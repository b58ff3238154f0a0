package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gleaner-manager, deployed from config/local with the RBAC of config/rbac, becomes available, leads (its
// leader-election permissions are enough), and serves its probes and metrics on 127.0.0.1.
func TestManagerFromManifestsIsReady(t *testing.T) {
	e := suite.Env(t)
	var dep appsv1.Deployment
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: GleanerNamespace, Name: "gleaner-manager"}, &dep); err != nil {
			return false, err.Error()
		}
		return dep.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", dep.Status.AvailableReplicas)
	})

	var lease coordinationv1.Lease
	e.Eventually(time.Minute, func(ctx context.Context) (bool, string) {
		key := client.ObjectKey{Namespace: GleanerNamespace, Name: "gleaner-manager.slo.gleaner.sh"}
		if err := e.Client.Get(ctx, key, &lease); err != nil {
			return false, err.Error()
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", "lease has no holder"
	})

	for _, c := range []struct{ url, want string }{
		{"http://127.0.0.1:10281/readyz", "ok"},
		{"http://127.0.0.1:10281/healthz", "ok"},
		{"http://127.0.0.1:10280/metrics", "leader_election_master_status"},
	} {
		body, err := get(e.Ctx, c.url)
		if err != nil {
			t.Errorf("GET %s: %v", c.url, err)
			continue
		}
		if !strings.Contains(body, c.want) {
			t.Errorf("GET %s does not contain %q:\n%.500s", c.url, c.want, body)
		}
	}
}

// get reads url, giving the server 15 s to answer (ctx may end it sooner).
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), err
}
