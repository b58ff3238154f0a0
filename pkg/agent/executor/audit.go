package executor

import (
	"encoding/json"
	"net/http"
	"time"
)

// Record is one write in the audit trail.
type Record struct {
	// Time is when it was written.
	Time time.Time `json:"time"`
	// Owner is who asked for the value: a QoS plugin, the runtime hook, the reconciler.
	Owner string `json:"owner"`
	// Dir is the cgroup, relative to the hierarchy root.
	Dir string `json:"dir"`
	// Resource is the file.
	Resource Resource `json:"resource"`
	// Value is what was written.
	Value string `json:"value"`
	// Reason is the owner's reason.
	Reason string `json:"reason,omitempty"`
	// Result is one of the Result constants.
	Result string `json:"result"`
	// Error is the write's error, if any.
	Error string `json:"error,omitempty"`
}

// ring keeps the last len(records) records.
type ring struct {
	records []Record
	next    int
	full    bool
}

func (r *ring) add(rec Record) {
	r.records[r.next] = rec
	r.next = (r.next + 1) % len(r.records)
	if r.next == 0 {
		r.full = true
	}
}

// list returns the records, oldest first.
func (r *ring) list() []Record {
	if !r.full {
		return append([]Record(nil), r.records[:r.next]...)
	}
	return append(append([]Record(nil), r.records[r.next:]...), r.records[:r.next]...)
}

// Audit returns the audit trail, oldest first: at most Options.AuditSize records.
func (e *Executor) Audit() []Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.audit.list()
}

// AuditHandler serves the audit trail as JSON, newest last.
func (e *Executor) AuditHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(e.Audit())
	})
}
