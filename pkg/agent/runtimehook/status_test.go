package runtimehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// The mode is 1 in the gauge for exactly one mode, follows the connection, and is served as JSON.
func TestStatusFollowsTheConnection(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	st, err := NewStatus("nri", "/run/nri/nri.sock", reg, clk)
	if err != nil {
		t.Fatal(err)
	}
	expectGauge := func(want Mode) {
		t.Helper()
		for _, m := range []Mode{ModeNRI, ModeReconciler, ModeOff} {
			v := 0.0
			if m == want {
				v = 1
			}
			if got := testutil.ToFloat64(st.modeGauge.WithLabelValues(string(m))); got != v {
				t.Errorf("gleaner_agent_runtime_hook_mode{mode=%q} = %v, want %v", m, got, v)
			}
		}
	}
	expectGauge(ModeReconciler) // until the plugin connects
	ctx := context.Background()
	clk.Step(time.Second)
	st.connected(ctx, "containerd v2.4.2")
	expectGauge(ModeNRI)
	clk.Step(time.Second)
	st.disconnected(ctx, errors.New("EOF"), true)
	expectGauge(ModeReconciler)

	rec := httptest.NewRecorder()
	st.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/debug/runtimehook", nil))
	var got StatusInfo
	if err := json.NewDecoder(rec.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Mode != ModeReconciler || got.Configured != "nri" || got.Connects != 1 || got.LastNRIError != "EOF" || !got.Since.Equal(time.Unix(1002, 0)) {
		t.Errorf("served status %+v", got)
	}

	off, err := NewStatus("off", "/run/nri/nri.sock", prometheus.NewRegistry(), clk)
	if err != nil {
		t.Fatal(err)
	}
	if off.Mode() != ModeOff || off.Info().NRISocket != "" {
		t.Errorf("a hook switched off reports %+v", off.Info())
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	bad := Options{Mode: "docker", PodWait: -time.Second}
	err := bad.Validate()
	for _, want := range []string{"--runtime-hook must be nri, reconciler or off", "--nri-pod-wait", "--runtime-reconcile-interval"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want it to name %q", bad, err, want)
		}
	}
	if err := (Options{Mode: "nri", ReconcileInterval: time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "--nri-socket") {
		t.Errorf("nri without a socket: %v", err)
	}
}

// TestStatusCondition: the runtime hook's condition in the NodeSLO status follows the connection and the
// reconciler's last round; a hook switched off has none.
func TestStatusCondition(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	st, err := NewStatus("nri", "/run/nri/nri.sock", prometheus.NewRegistry(), clk)
	if err != nil {
		t.Fatal(err)
	}
	show := func() string {
		c := st.NodeSLOCondition()
		return string(c.Status) + "/" + c.Reason + ": " + c.Message
	}
	ctx := context.Background()
	noSocket := errors.New("dial unix /run/nri/nri.sock: connect: no such file or directory")
	denied := fmt.Errorf("writing oom_score_adj: %w", fs.ErrPermission)
	steps := []struct {
		do   func()
		want string
	}{
		{func() {}, "Unknown/Pending: the NRI plugin has not tried to connect to /run/nri/nri.sock yet"},
		{func() { st.disconnected(ctx, noSocket, false) }, "False/NRIUnavailable: the NRI plugin is not connected to /run/nri/nri.sock (" + noSocket.Error() + ")"},
		{func() { st.connected(ctx, "containerd v2.4.2") }, "True/Applied: the NRI plugin is connected to containerd v2.4.2"},
		{func() { st.reconciled(3, denied) }, "False/PermissionDenied: the reconciler's last round: writing oom_score_adj: permission denied"},
		{func() { st.reconciled(3, nil) }, "True/Applied: the NRI plugin is connected to containerd v2.4.2"},
	}
	for i, s := range steps {
		s.do()
		if got := show(); !strings.HasPrefix(got, s.want) {
			t.Errorf("step %d: %q, want it to begin %q", i, got, s.want)
		}
	}
	rec, err := NewStatus("reconciler", "", prometheus.NewRegistry(), clk)
	if err != nil {
		t.Fatal(err)
	}
	if c := rec.NodeSLOCondition(); c == nil || c.Status != "True" || !strings.Contains(c.Message, "--runtime-hook=reconciler") {
		t.Errorf("reconciler only: %+v, want True naming the setting", c)
	}
	off, err := NewStatus("off", "", prometheus.NewRegistry(), clk)
	if err != nil {
		t.Fatal(err)
	}
	if c := off.NodeSLOCondition(); c != nil {
		t.Errorf("a hook switched off has the condition %+v, want none", c)
	}
}
