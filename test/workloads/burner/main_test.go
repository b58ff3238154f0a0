package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	tests := []struct {
		cores       float64
		wantWorkers int
		wantDuty    float64
	}{
		{cores: 0.25, wantWorkers: 1, wantDuty: 0.25},
		{cores: 1, wantWorkers: 1, wantDuty: 1},
		{cores: 1.5, wantWorkers: 2, wantDuty: 0.75},
		{cores: 2, wantWorkers: 2, wantDuty: 1},
	}
	for _, tt := range tests {
		w, d := plan(tt.cores)
		if w != tt.wantWorkers || d != tt.wantDuty {
			t.Errorf("plan(%v) = %d workers at %v, want %d at %v", tt.cores, w, d, tt.wantWorkers, tt.wantDuty)
		}
	}
}

func TestParseLoad(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{in: "500m", want: 0.5},
		{in: "1", want: 1},
		{in: "0.25", want: 0.25},
		{in: "0", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "half", wantErr: true},
		{in: "100000", wantErr: true}, // more than any machine's CPUs
		{in: "all", want: float64(runtime.NumCPU())},
	}
	for _, tt := range tests {
		got, err := parseLoad(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseLoad(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("parseLoad(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// The walk touches every line of the buffer once per pass, whatever its size: a prime stride over a line count it
// does not divide.
func TestThrasherTouchesEveryLine(t *testing.T) {
	for _, size := range []int64{1, 64, 100 * 64, stride * 64, 5000 * 64} {
		th := newThrasher(size)
		lines := len(th.buf) / cacheLine
		passes := 3
		for range lines * passes / 256 {
			th.step()
		}
		touched := 0
		for i := range lines {
			touched += int(th.buf[i*cacheLine])
		}
		if want := lines * passes / 256 * 256; touched != want {
			t.Errorf("size %d: %d touches, want %d", size, touched, want)
		}
		for i := range lines {
			if got := int(th.buf[i*cacheLine]); lines >= 256 && (got < passes-1 || got > passes+1) {
				t.Errorf("size %d: line %d touched %d times in about %d passes", size, i, got, passes)
				break
			}
		}
	}
}

// A worker counts its steps as units of work, and GET /work answers them with the CPU time used.
func TestBurnCountsWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var units atomic.Uint64
	burn(ctx, 0.5, 20*time.Millisecond, spinStep, &units)
	if units.Load() == 0 {
		t.Fatal("no units of work counted after 150ms of burning at half duty")
	}
	srv := httptest.NewServer(workHandler(&units))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/work")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var w Work
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		t.Fatalf("decoding /work: %v", err)
	}
	if w.Units != units.Load() || w.CPUSeconds <= 0 {
		t.Errorf("/work = %+v, want %d units and the CPU time used", w, units.Load())
	}
}
