package manager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// TestStopLoggerQuietsTheReleasedLease: controller-runtime's "leader election lost" after a requested stop is an info
// line; the same error while running, and every other error, is logged as an error still.
func TestStopLoggerQuietsTheReleasedLease(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	log := StopLogger(ctx, base).WithName("mgr").WithValues("k", "v")
	lost := errors.New("leader election lost")

	log.Error(lost, stopSequenceMsg)
	log.Error(errors.New("cache sync failed"), stopSequenceMsg)
	cancel()
	log.Error(lost, stopSequenceMsg)
	log.Error(errors.New("cache sync failed"), stopSequenceMsg)

	if len(lines) != 4 {
		t.Fatalf("want 4 lines, got %d: %q", len(lines), lines)
	}
	for i, want := range []string{`"error"="leader election lost"`, `"error"="cache sync failed"`,
		`"msg"="released the leader lease on stop"`, `"error"="cache sync failed"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"k"="v"`) {
			t.Errorf("line %d = %s, want it to contain %s and the logger's values", i, lines[i], want)
		}
	}
	if strings.Contains(lines[2], `"error"`) {
		t.Errorf("the released lease must not be logged as an error: %s", lines[2])
	}
}
