package cgrouptest

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// The environment that makes a test binary a process holding memory instead of running tests (HoldIfAsked):
// holdEnv MiB at once, then growEnv MiB more every 50 ms, forever.
const (
	holdEnv = "GLEANER_TEST_HOLD_MIB"
	growEnv = "GLEANER_TEST_GROW_MIB"
)

// HoldIfAsked turns the test binary into a memory holder when HolderArgv started it; call it first in TestMain. A
// test needs a process that holds anonymous memory in a cgroup, and the test binary itself is the one program every
// machine that runs the test has.
func HoldIfAsked() {
	hold := os.Getenv(holdEnv)
	if hold == "" {
		return
	}
	mib := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil && s != "" {
			fmt.Fprintf(os.Stderr, "holding memory: %v\n", err)
			os.Exit(2)
		}
		return n
	}
	touch := func(n int) []byte {
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return b
	}
	held := [][]byte{touch(mib(hold))}
	for step := mib(os.Getenv(growEnv)); ; time.Sleep(50 * time.Millisecond) {
		if step > 0 {
			held = append(held, touch(step))
		}
	}
}

// HolderArgv is the command line, for Sandbox.Start, of the test binary holding hold MiB and growing by grow MiB
// every 50 ms; the binary's TestMain must call HoldIfAsked.
func HolderArgv(hold, grow int) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the test binary: %w", err)
	}
	return []string{"/usr/bin/env", fmt.Sprintf("%s=%d", holdEnv, hold), fmt.Sprintf("%s=%d", growEnv, grow), self, "-test.run=^$"}, nil
}
