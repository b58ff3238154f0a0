package runtimehook

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// capSysResource is CAP_SYS_RESOURCE's bit in a capability set (linux/capability.h).
const capSysResource = 24

// RuntimeCanLowerOOMScores reports whether the container runtime on this node can give a container an
// oom_score_adj below 0: whether CAP_SYS_RESOURCE is in the bounding set of the host's init (/proc/1/status under
// procRoot, the host's /proc with the agent's host PID namespace), which bounds every process on the host, the runtime
// and the runc it starts included. Without it the kernel refuses a process's lowering of its score below what it was
// given (on the local cluster's machine, "echo -997 > /proc/self/oom_score_adj" fails even for root), and runc fails
// the container's start when its spec asks for a negative value: the hook then gives negative values through the
// reconciler only. An error (no /proc/1/status, no CapBnd line) is the caller's to treat as "cannot".
func RuntimeCanLowerOOMScores(procRoot string) (bool, error) {
	file := filepath.Join(procRoot, "1", "status")
	b, err := os.ReadFile(file)
	if err != nil {
		return false, fmt.Errorf("reading the host init's capabilities: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapBnd:")
		if !ok {
			continue
		}
		set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return false, fmt.Errorf("%s: CapBnd %q is not a hexadecimal capability set", file, strings.TrimSpace(v))
		}
		return set&(1<<capSysResource) != 0, nil
	}
	return false, fmt.Errorf("%s has no CapBnd line", file)
}
