package system

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxKidledPeriodBytes bounds /sys/kernel/mm/kidled/scan_period_in_seconds, one number.
const maxKidledPeriodBytes = 64

// KidledScanPeriod reads the scan period of kidled (the idle page tracker of Anolis-like kernels) under sysRoot, the
// node's /sys; a kernel without kidled, or a kidled that does not scan, is
// ErrUnsupported saying what the host has instead.
func KidledScanPeriod(sysRoot string) (time.Duration, error) {
	mm := filepath.Join(sysRoot, "kernel", "mm")
	b, err := ReadFile(filepath.Join(mm, "kidled", "scan_period_in_seconds"), maxKidledPeriodBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, perr := os.Stat(filepath.Join(mm, "page_idle")); perr == nil {
			return 0, fmt.Errorf("cold memory per pod needs kidled (Anolis-like kernels); this kernel has only %s/page_idle, whose per-page bitmap the agent does not walk: %w",
				mm, ErrUnsupported)
		}
		return 0, fmt.Errorf("cold memory needs kidled (%s/kidled, Anolis-like kernels); this kernel has neither it nor page_idle: %w", mm, ErrUnsupported)
	case err != nil:
		return 0, fmt.Errorf("reading kidled's scan period: %w", err)
	}
	s, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parsing %s/kidled/scan_period_in_seconds: %w", mm, err)
	}
	if s == 0 {
		return 0, fmt.Errorf("kidled does not scan (%s/kidled/scan_period_in_seconds is 0; write a period, e.g. 120, to turn it on): %w", mm, ErrUnsupported)
	}
	return time.Duration(s) * time.Second, nil
}
