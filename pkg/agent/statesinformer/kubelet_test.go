package statesinformer

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gleaner-sh/gleaner/test/testutil"
)

// fakeKubelet serves /pods like a kubelet: a PodList to a caller with the right token.
type fakeKubelet struct {
	mu     sync.Mutex
	pods   []corev1.Pod
	status int
	body   string
	served int
}

func (k *fakeKubelet) requests() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.served
}

func (k *fakeKubelet) set(status int, body string, pods ...*corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status, k.body, k.pods = status, body, nil
	for _, p := range pods {
		k.pods = append(k.pods, *p)
	}
}

func (k *fakeKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.served++
	if r.URL.Path != "/pods" || r.Header.Get("Authorization") != "Bearer agent-token" {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	if k.status != http.StatusOK {
		http.Error(w, k.body, k.status)
		return
	}
	if k.body != "" {
		_, _ = w.Write([]byte(k.body))
		return
	}
	_ = json.NewEncoder(w).Encode(corev1.PodList{Items: k.pods})
}

func newKubelet(t *testing.T) (*fakeKubelet, *KubeletPods, *clocktesting.FakeClock) {
	t.Helper()
	fk := &fakeKubelet{}
	srv := httptest.NewTLSServer(fk)
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	kp, err := NewKubeletPods(KubeletConfig{URL: srv.URL, Interval: 10 * time.Second, CAFile: ca}, &rest.Config{BearerToken: "agent-token"}, clk)
	if err != nil {
		t.Fatal(err)
	}
	return fk, kp, clk
}

func TestKubeletList(t *testing.T) {
	fk, kp, _ := newKubelet(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		status  int
		body    string
		pods    []*corev1.Pod
		want    []string
		wantErr string
	}{
		{name: "pods", status: 200, pods: []*corev1.Pod{testutil.Pod("a").Obj(), testutil.Pod("b").Obj()}, want: []string{"a", "b"}},
		{name: "empty list", status: 200, wantErr: "listed no pods"},
		{name: "server error", status: 500, body: "boom", wantErr: "500 Internal Server Error: boom"},
		{name: "garbage", status: 200, body: "{not json", wantErr: "decoding the pod list"},
		// 40 MB of pods: refused after reading 32 MiB of it, not decoded whole.
		{name: "too large", status: 200, body: hugePodList(40 << 20), wantErr: "decoding the pod list: file too large: larger than 33554432 bytes, not read"},
		{name: "a pod without UID", status: 200, body: `{"items":[{"metadata":{"name":"a","namespace":"default"}}]}`, wantErr: `pod 1 of 1 has no name, namespace or UID ("default"/"a", "")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fk.set(tt.status, tt.body, tt.pods...)
			pods, err := kp.List(ctx)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("pods = %v, want %v", got, tt.want)
			}
		})
	}

	// Without the token the kubelet refuses.
	noToken, err := NewKubeletPods(KubeletConfig{URL: strings.TrimSuffix(kp.url, "/pods"), Interval: time.Second, InsecureSkipTLSVerify: true}, nil, clocktesting.NewFakeClock(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noToken.List(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: want 401, got %v", err)
	}
	if _, err := NewKubeletPods(KubeletConfig{}, nil, nil); err == nil {
		t.Error("an empty config was accepted")
	}
}

// TestKubeletRunKeepsLastList: a failing or empty read keeps the pods of the last good one.
func TestKubeletRunKeepsLastList(t *testing.T) {
	fk, kp, clk := newKubelet(t)
	fk.set(200, "", testutil.Pod("a").Obj())
	s := NewStore()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- kp.Run(ctx, s) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if !kp.WaitForFirstList(waitCtx) {
		t.Fatal("no first list")
	}
	tick := func() {
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(10 * time.Second)
	}
	for _, step := range []struct {
		name   string
		status int
		pods   []*corev1.Pod
		want   string
	}{
		{"kubelet down", 503, nil, "a"},
		{"kubelet restarted, no pods yet", 200, nil, "a"},
		{"recovered", 200, []*corev1.Pod{testutil.Pod("b").Obj()}, "b"},
	} {
		fk.set(step.status, "", step.pods...)
		before := fk.requests()
		tick()
		eventually(t, step.name+": read", func() error {
			if fk.requests() == before {
				return errors.New("no request yet")
			}
			return nil
		})
		time.Sleep(20 * time.Millisecond) // the store update follows the response
		eventually(t, step.name, func() error { return wantPods(s, step.want)() })
	}
}

// hugePodList is a pod list of at least size bytes of JSON.
func hugePodList(size int) string {
	p, err := json.Marshal(testutil.Pod("p").Obj())
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for b.Len() < size {
		b.Write(p)
		b.WriteByte(',')
	}
	b.Write(p)
	b.WriteString("]}")
	return b.String()
}

// FuzzParsePodList: whatever the kubelet (or something in its place) answers gives pods the Store can key, or an
// error; never a panic.
func FuzzParsePodList(f *testing.F) {
	list, err := json.Marshal(corev1.PodList{Items: []corev1.Pod{*testutil.Pod("a").Obj(), *testutil.Pod("b").Namespace("x").Obj()}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(list), "", "{}", "null", `{"items":[]}`, `{"items":[{}]}`, `{"items":[null]}`, `{"items":{}}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pods, err := parsePodList(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(pods) == 0 {
			t.Fatalf("parsePodList(%q) accepted an empty list", b)
		}
		for _, p := range pods {
			if p == nil || p.Name == "" || p.Namespace == "" || p.UID == "" || p.ManagedFields != nil {
				t.Fatalf("parsePodList(%q) accepted %+v", b, p)
			}
		}
	})
}
