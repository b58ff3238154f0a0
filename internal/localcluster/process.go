package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is one process the cluster started, identified by its PID and its start time so that a PID the kernel has
// given to another process since is never taken for it.
type Process struct {
	// Name is the component's name: "etcd", "kubelet"...
	Name string `json:"name"`
	// PID is the process ID.
	PID int `json:"pid"`
	// StartTime is the process's start time in clock ticks after boot (field 22 of /proc/PID/stat).
	StartTime uint64 `json:"startTime"`
	// Command is the command line it was started with, for people reading cluster.json.
	Command []string `json:"command"`
}

// startProcess starts a component in its own session (so a Ctrl-C in the terminal reaches only the command that
// supervises it, which then stops everything in order), with stdout and stderr appended to logPath.
func startProcess(name, binary string, args []string, logPath string) (Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Process{}, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	defer func() { _ = logFile.Close() }() // the child has its own descriptor
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	// Reap it when it exits while this process still runs; once this process exits, init inherits it.
	go func() { _ = cmd.Wait() }()
	p := Process{Name: name, PID: cmd.Process.Pid, Command: append([]string{binary}, args...)}
	st, err := procStat(p.PID)
	if err != nil {
		return p, fmt.Errorf("reading the start time of %s (pid %d), which exited at once? see %s: %w", name, p.PID, logPath, err)
	}
	p.StartTime = st.Starttime
	return p, nil
}

func procStat(pid int) (procfs.ProcStat, error) {
	proc, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStat{}, err
	}
	return proc.Stat()
}

// Alive reports whether the process still runs: the PID exists, has the recorded start time and is not a zombie.
func (p Process) Alive() bool {
	st, err := procStat(p.PID)
	if err != nil {
		return false
	}
	return st.Starttime == p.StartTime && st.State != "Z" && st.State != "X"
}

// RSS is the process's resident memory in bytes, or 0 when it is gone.
func (p Process) RSS() uint64 {
	if !p.Alive() {
		return 0
	}
	return ProcessRSS(p.PID)
}

// stop sends SIGTERM, waits up to grace for the process to exit, then sends SIGKILL and waits again. A process that
// is already gone, or whose PID now belongs to another process, is left alone.
func (p Process) stop(ctx context.Context, grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if p.waitGone(ctx, grace) == nil {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	if err := p.waitGone(ctx, 10*time.Second); err != nil {
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL: %w", p.Name, p.PID, err)
	}
	return nil
}

func (p Process) waitGone(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return !p.Alive(), nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("still running after %s", timeout)
	}
	return err
}

// ProcessRSS is the resident memory of any process in bytes, or 0 when it is gone.
func ProcessRSS(pid int) uint64 {
	st, err := procStat(pid)
	if err != nil {
		return 0
	}
	return uint64(st.ResidentMemory())
}

// ContainerPIDs returns the processes of every pod: those in the kubepods cgroup tree (of the memory hierarchy on
// cgroup v1).
func ContainerPIDs() ([]int, error) {
	dir := filepath.Join(HostCgroupRoot, "memory", "kubepods")
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join(HostCgroupRoot, "kubepods")
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading the pods' cgroups: %w", err)
	}
	return cgroupTreeProcs(dir), nil
}
