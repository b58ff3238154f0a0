package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildComponents are the names passed to `hack/kube-build.sh bin`.
func buildComponents() []string {
	return []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl",
		"containerd"}
}

// programs are the executables the cluster runs, found in the directories kube-build.sh prints.
func programs() []string {
	return []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl",
		"containerd", "containerd-shim-runc-v2", "ctr"}
}

// binaries maps a program name to its path.
type binaries map[string]string

// buildBinaries runs `hack/kube-build.sh bin ...`, which builds what is not in the cache yet (minutes on a fresh
// machine, instant afterwards), and finds every program in the directories it prints. Its progress goes to
// progress.
func buildBinaries(ctx context.Context, repoRoot string, progress io.Writer) (binaries, error) {
	script := filepath.Join(repoRoot, "hack", "kube-build.sh")
	cmd := exec.CommandContext(ctx, script, append([]string{"bin"}, buildComponents()...)...)
	cmd.Dir = repoRoot
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the cluster's binaries with %s (its output is above): %w", script, err)
	}
	var dirs []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if d := strings.TrimSpace(sc.Text()); d != "" {
			dirs = append(dirs, d)
		}
	}
	return findPrograms(dirs, programs())
}

// findPrograms looks each name up in dirs, in order, and fails naming every program it cannot find.
func findPrograms(dirs, names []string) (binaries, error) {
	found := binaries{}
	var missing []string
	for _, name := range names {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				found[name] = p
				break
			}
		}
		if found[name] == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no executable %s in %s", strings.Join(missing, ", "), strings.Join(dirs, ", "))
	}
	return found, nil
}
