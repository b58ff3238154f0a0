package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// RuncPath and CNIBinDir are where Debian's runc and containernetworking-plugins packages install their programs.
const (
	RuncPath  = "/usr/sbin/runc"
	CNIBinDir = "/usr/lib/cni"
)

// hostPackage is a Debian package the cluster needs, with a file whose presence shows it is installed.
type hostPackage struct {
	name string
	file string
}

// hostPackages are the Debian packages the cluster runs on. runc starts the containers; the CNI plugins (bridge,
// host-local, loopback) give pods their network. Debian's containerd (1.6, without NRI) is not used.
func hostPackages() []hostPackage {
	return []hostPackage{
		{name: "runc", file: RuncPath},
		{name: "containernetworking-plugins", file: CNIBinDir + "/bridge"},
	}
}

// runFunc runs a command to completion with its output going to out.
type runFunc func(ctx context.Context, out io.Writer, name string, args ...string) error

func runCommand(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %v: %w", name, args, err)
	}
	return nil
}

// ensurePackages installs with apt-get the packages whose file is missing. When the install fails (on a fresh
// machine the package lists may be missing or stale) it updates the lists once and tries again.
func ensurePackages(ctx context.Context, out io.Writer, pkgs []hostPackage, exists func(string) bool, run runFunc) error {
	var missing []string
	for _, p := range pkgs {
		if !exists(p.file) {
			missing = append(missing, p.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	fmt.Fprintf(out, "installing Debian packages %v\n", missing)
	install := append([]string{"install", "-y", "--no-install-recommends"}, missing...)
	if err := run(ctx, out, "apt-get", install...); err != nil {
		if err := run(ctx, out, "apt-get", "update"); err != nil {
			return fmt.Errorf("updating the package lists to install %v: %w", missing, err)
		}
		if err := run(ctx, out, "apt-get", install...); err != nil {
			return fmt.Errorf("installing %v (the local cluster needs them): %w", missing, err)
		}
	}
	for _, p := range pkgs {
		if !exists(p.file) {
			return fmt.Errorf("package %s is installed but %s is missing", p.name, p.file)
		}
	}
	return nil
}
