package system

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/gleaner-sh/gleaner/test/ci"
)

// oomHelperEnv makes this test binary, started again with it set to "PID VALUE", write VALUE to
// /proc/PID/oom_score_adj through HostFS and exit, printing "ok" or the error: the agent's write, made by a process
// that holds only the capabilities it was started with.
const oomHelperEnv = "GLEANER_OOM_SCORE_ADJ_HELPER"

func init() {
	spec := os.Getenv(oomHelperEnv)
	if spec == "" {
		return
	}
	var pid, value int
	if _, err := fmt.Sscan(spec, &pid, &value); err != nil {
		fmt.Println("helper:", err)
		os.Exit(2)
	}
	if err := NewHostFS("/").WriteFile(filepath.Join("proc", strconv.Itoa(pid), "oom_score_adj"), strconv.Itoa(value)); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ok")
	os.Exit(0)
}

// TestOOMScoreAdjUnderTheDaemonSetsCapabilities writes the oom_score_adj of a process of another user (nobody, as
// pods run) from a root process holding only the capabilities the agent's DaemonSet grants, and only KILL, the set
// the agent was shipped with before. With KILL alone root may not even open the file (it belongs to the process's
// user: CAP_DAC_OVERRIDE); with the DaemonSet's set it raises the value; lowering it under the floor the kernel keeps
// (0 for a process nobody privileged has set) needs CAP_SYS_RESOURCE, and fails without it. That last success is
// checked only where this machine's bounding set has CAP_SYS_RESOURCE to give (this project's machine does not).
func TestOOMScoreAdjUnderTheDaemonSetsCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		ci.Skipf(t, "the capability test needs root, to start a process as nobody and to drop capabilities")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		ci.Skipf(t, "the capability test needs setpriv (util-linux): %v", err)
	}
	granted := daemonSetCapabilities(t)
	bounding := boundingSet(t)

	sleeper := exec.Command("sleep", "120")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := sleeper.Start(); err != nil {
		t.Fatalf("starting a process as nobody: %v", err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	file := filepath.Join("/proc", strconv.Itoa(pid), "oom_score_adj")

	// write runs the helper with only caps (lower case, without "cap_") and returns what it printed.
	write := func(caps []string, value int) string {
		t.Helper()
		set := "-all"
		for _, c := range caps {
			set += ",+" + c
		}
		cmd := exec.Command(setpriv, "--bounding-set", set, "--inh-caps", "-all", "--", os.Args[0])
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d", oomHelperEnv, pid, value))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running the helper under %s: %v\n%s", set, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}

	if got := write([]string{"kill"}, 500); !strings.Contains(got, fs.ErrPermission.Error()) {
		t.Errorf("with KILL alone, raising nobody's oom_score_adj: %q, want permission denied", got)
	}
	var usable, missing []string
	for _, c := range granted {
		if bounding[c] {
			usable = append(usable, c)
		} else {
			missing = append(missing, c)
		}
	}
	if !slices.Contains(usable, "dac_override") {
		t.Fatalf("the DaemonSet grants %v: without dac_override the agent cannot write a non-root pod's oom_score_adj", granted)
	}
	if got := write(usable, 500); got != "ok" || read() != "500" {
		t.Errorf("with the DaemonSet's %v, raising nobody's oom_score_adj to 500: %q, the file says %s", usable, got, read())
	}
	withoutResource := slices.DeleteFunc(slices.Clone(usable), func(c string) bool { return c == "sys_resource" })
	if got := write(withoutResource, -500); !strings.Contains(got, fs.ErrPermission.Error()) || read() != "500" {
		t.Errorf("without sys_resource, lowering nobody's oom_score_adj under 0: %q (the file says %s), want permission denied", got, read())
	}
	if !slices.Contains(granted, "sys_resource") {
		t.Errorf("the DaemonSet grants %v: without sys_resource negative oom_score_adj values (services first to live) cannot be set", granted)
	}
	if len(missing) > 0 {
		t.Logf("this machine's bounding set lacks %v of the DaemonSet's capabilities: lowering the value with them is not proven here", missing)
		return
	}
	if got := write(usable, -500); got != "ok" || read() != "-500" {
		t.Errorf("with the DaemonSet's %v, lowering nobody's oom_score_adj to -500: %q, the file says %s", usable, got, read())
	}
}

// daemonSetCapabilities are the capabilities config/agent/daemonset.yaml adds to the agent's container, lower case
// without "CAP_" (as setpriv names them).
func daemonSetCapabilities(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "agent", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{}
	if err := yaml.Unmarshal(b, ds); err != nil {
		t.Fatal(err)
	}
	sc := ds.Spec.Template.Spec.Containers[0].SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("the agent's DaemonSet sets no capabilities")
	}
	var caps []string
	for _, c := range sc.Capabilities.Add {
		caps = append(caps, strings.ToLower(strings.TrimPrefix(string(c), "CAP_")))
	}
	return caps
}

// boundingSet is this process's capability bounding set, by setpriv's names for the capabilities the agent may be
// granted.
func boundingSet(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bits := map[string]uint{"kill": 5, "dac_override": 1, "sys_resource": 24, "net_admin": 12, "sys_admin": 21, "sys_ptrace": 19}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]bool{}
			for name, bit := range bits {
				out[name] = mask&(1<<bit) != 0
			}
			return out
		}
	}
	t.Fatal("/proc/self/status has no CapBnd")
	return nil
}
