package testenv

import (
	"testing"
	"time"
)

// Consistently calls f every 50ms for d and fails t as soon as it returns an error.
func Consistently(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := f(); err != nil {
			t.Fatalf("stopped being true: %v", err)
		}
	}
}
