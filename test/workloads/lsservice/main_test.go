package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	rec := newRecorder(10)
	rec.Add(4 * time.Millisecond)
	srv := httptest.NewServer(newHandler(time.Millisecond, rec))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Errorf("GET / = %s %q, want 200 \"ok\\n\"", resp.Status, body)
	}

	resp, err = http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var s Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("decoding /stats: %v", err)
	}
	if s.Count != 1 || s.Max != 4 {
		t.Errorf("/stats = %+v, want one sample of 4ms", s)
	}

	resp2, err := http.Get(srv.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing = %s, want 404", resp2.Status)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []options{{window: 0, qps: 1}, {window: 1, qps: -1}, {window: 1, work: -time.Second}} {
		if err := run(o); err == nil {
			t.Errorf("run(%+v) = nil, want an error", o)
		}
	}
}
