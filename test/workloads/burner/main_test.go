package main

import "testing"

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
