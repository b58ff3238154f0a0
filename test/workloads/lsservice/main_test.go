package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

func TestHandler(t *testing.T) {
	rec := newRecorder(10)
	rec.Add(4 * time.Millisecond)
	srv := httptest.NewServer(newHandler(time.Millisecond, nil, rec))
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

// With a working set, a request reads a piece of the file; a file that cannot be read fails the request.
func TestHandlerReadsTheWorkingSet(t *testing.T) {
	data, err := newWorkingSet(filepath.Join(t.TempDir(), "ws"), 2, 256)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := data.f.Stat(); err != nil || fi.Size() != 2<<20 {
		t.Fatalf("the working set file: %v, %v; want 2 MiB", fi, err)
	}
	srv := httptest.NewServer(newHandler(0, data, newRecorder(10)))
	defer srv.Close()
	get := func() int {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for range 20 {
		if code := get(); code != http.StatusOK {
			t.Fatalf("GET / = %d with a working set", code)
		}
	}
	_ = data.Close()
	if code := get(); code != http.StatusInternalServerError {
		t.Errorf("GET / = %d after the working set was closed, want 500", code)
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []options{{window: 0, qps: 1, readKiB: 1}, {window: 1, qps: -1, readKiB: 1}, {window: 1, work: -time.Second, readKiB: 1},
		{window: 1, readKiB: 0}, {window: 1, dataMiB: -1, readKiB: 1}, {window: 1, dataMiB: 1, readKiB: 2048}} {
		if err := run(o); err == nil {
			t.Errorf("run(%+v) = nil, want an error", o)
		}
	}
}
