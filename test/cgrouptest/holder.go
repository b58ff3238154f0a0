package cgrouptest

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// The environment that makes a test binary a process holding memory instead of running tests (HoldIfAsked):
// holdEnv MiB at once, then, once the file growAfterEnv names exists, growEnv MiB more every 50 ms, forever.
const (
	holdEnv      = "GLEANER_TEST_HOLD_MIB"
	growEnv      = "GLEANER_TEST_GROW_MIB"
	growAfterEnv = "GLEANER_TEST_GROW_AFTER"
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
	step, after := mib(os.Getenv(growEnv)), os.Getenv(growAfterEnv)
	for ; ; time.Sleep(50 * time.Millisecond) {
		if after != "" {
			if _, err := os.Stat(after); err != nil {
				continue
			}
			after = ""
		}
		if step > 0 {
			held = append(held, touch(step)) // held stays live: the collector must not give the memory back
		}
	}
}

// HolderArgv is the command line, for Sandbox.Start, of the test binary holding hold MiB and growing by grow MiB
// every 50 ms; the binary's TestMain must call HoldIfAsked. With growAfter, a path, the growth waits until a file
// is there: what a test does before the growth (set a process's OOM score, say) is then done before the memory runs
// out however slow the machine is (an emulated CPU takes seconds for what takes milliseconds on a real one). A file,
// not a signal: a signal sent before the holder listens for it is lost, and a test cannot see when that is.
func HolderArgv(hold, grow int, growAfter string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the test binary: %w", err)
	}
	return []string{"/usr/bin/env", fmt.Sprintf("%s=%d", holdEnv, hold), fmt.Sprintf("%s=%d", growEnv, grow),
		growAfterEnv + "=" + growAfter, self, "-test.run=^$"}, nil
}
