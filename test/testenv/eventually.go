package testenv

import (
	"testing"
	"time"
)

// Eventually calls f every 50ms until it returns nil, and fails t with f's last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %v", timeout, err)
		}
	}
}

// Consistently calls f every 50ms for d and fails t as soon as it returns an error.
func Consistently(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := f(); err != nil {
			t.Fatalf("stopped being true: %v", err)
		}
	}
}
