//go:build !nvml || !cgo

package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/gleaner-sh/gleaner/pkg/agent/system"
)

// The default build has no NVML: Init says so, how to build with it, and that it is unsupported, not an error.
func TestBuildWithoutNVML(t *testing.T) {
	err := NewNVML().Init()
	if !errors.Is(err, ErrNoDriver) || !errors.Is(err, system.ErrUnsupported) || !strings.Contains(err.Error(), "-tags nvml") {
		t.Errorf("Init = %v, want ErrNoDriver saying how to build with NVML", err)
	}
	if HasNVML() {
		t.Error("HasNVML is true in a build without NVML")
	}
}
