package hostpkg

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnsurePackages(t *testing.T) {
	pkgs := []Package{{Name: "runc", File: "/r"}, {Name: "cni", File: "/c"}}
	tests := []struct {
		name string
		// present are the files there before; install and update say whether those commands succeed.
		present          []string
		installWorksAt   int // the install attempt (1 or 2) that succeeds; 0 never
		updateFails      bool
		installedAnyway  bool // an install "succeeds" without creating the files
		wantCommands     []string
		wantErrSubstring string
	}{
		{name: "all there", present: []string{"/r", "/c"}},
		{
			name: "one missing", present: []string{"/r"}, installWorksAt: 1,
			wantCommands: []string{"apt-get install -y --no-install-recommends cni"},
		},
		{
			name: "stale package lists", installWorksAt: 2,
			wantCommands: []string{
				"apt-get install -y --no-install-recommends runc cni", "apt-get update",
				"apt-get install -y --no-install-recommends runc cni",
			},
		},
		{
			name: "no network", updateFails: true,
			wantCommands:     []string{"apt-get install -y --no-install-recommends runc cni", "apt-get update"},
			wantErrSubstring: "updating the package lists",
		},
		{
			name: "install fails twice",
			wantCommands: []string{
				"apt-get install -y --no-install-recommends runc cni", "apt-get update",
				"apt-get install -y --no-install-recommends runc cni",
			},
			wantErrSubstring: "installing runc cni",
		},
		{
			name: "installed but the file is missing", installWorksAt: 1, installedAnyway: true,
			wantCommands:     []string{"apt-get install -y --no-install-recommends runc cni"},
			wantErrSubstring: "is installed but /r is missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := slices.Clone(tt.present)
			var commands []string
			installs := 0
			run := func(_ context.Context, _ io.Writer, name string, args ...string) error {
				commands = append(commands, name+" "+strings.Join(args, " "))
				if args[0] == "update" {
					if tt.updateFails {
						return errors.New("no network")
					}
					return nil
				}
				installs++
				if installs != tt.installWorksAt {
					return errors.New("exit status 100")
				}
				if !tt.installedAnyway {
					files = append(files, "/r", "/c")
				}
				return nil
			}
			h := Host{Exists: func(p string) bool { return slices.Contains(files, p) }, Run: run, Root: true}
			err := h.Ensure(context.Background(), io.Discard, pkgs)
			if diff := cmp.Diff(tt.wantCommands, commands); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if tt.wantErrSubstring == "" && err != nil {
				t.Errorf("Ensure() = %v, want nil", err)
			}
			if tt.wantErrSubstring != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring)) {
				t.Errorf("Ensure() = %v, want an error saying %q", err, tt.wantErrSubstring)
			}
		})
	}
}

// TestEnsureWithoutRoot: a non-root run installs nothing and says what is missing and how to install it.
func TestEnsureWithoutRoot(t *testing.T) {
	var commands int
	h := Host{
		Exists: func(p string) bool { return p == "/r" },
		Run:    func(context.Context, io.Writer, string, ...string) error { commands++; return nil },
	}
	err := h.Ensure(context.Background(), io.Discard, []Package{{Name: "runc", File: "/r"}, {Name: "iptables", File: "/i"}})
	if !errors.Is(err, ErrNotRoot) || !strings.Contains(err.Error(), "apt-get install iptables") {
		t.Errorf("Ensure() = %v, want ErrNotRoot naming apt-get install iptables", err)
	}
	if commands != 0 {
		t.Errorf("ran %d commands without root, want none", commands)
	}
	if err := h.Ensure(context.Background(), io.Discard, []Package{{Name: "runc", File: "/r"}}); err != nil {
		t.Errorf("nothing missing: Ensure() = %v, want nil", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Package
		wantErr    string
	}{
		{
			name: "comments and blank lines",
			text: "# a comment\n\nrunc\t/usr/sbin/runc\trun,e2e\tcontainers\n",
			want: []Package{{Name: "runc", File: "/usr/sbin/runc", NeededBy: []string{"run", "e2e"}, Why: "containers"}},
		},
		{name: "three columns", text: "runc\t/usr/sbin/runc\trun\n", wantErr: "line 1: want 4 tab-separated columns"},
		{name: "spaces instead of tabs", text: "runc /usr/sbin/runc run why\n", wantErr: "want 4 tab-separated columns"},
		{name: "relative file", text: "runc\tsbin/runc\trun\twhy\n", wantErr: `the file "sbin/runc" is not an absolute path`},
		{name: "twice", text: "runc\t/a\trun\twhy\nrunc\t/b\trun\twhy\n", wantErr: "line 2: package runc is listed twice"},
		{name: "empty target", text: "runc\t/a\trun,\twhy\n", wantErr: "an empty target"},
		{name: "bad name", text: "run c\t/a\trun\twhy\n", wantErr: "is not a Debian package name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.text))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse() = %v, want an error saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTheList: the embedded list parses, every package names the targets it is needed by from the known ones, and
// the local cluster's packages (runc, the CNI plugins, iptables) are there for the run target.
func TestTheList(t *testing.T) {
	known := []string{Run, E2E, Unit, CgroupV2, NodeV2, Peer}
	for _, p := range All() {
		for _, n := range p.NeededBy {
			if !slices.Contains(known, n) {
				t.Errorf("package %s is needed by %q, which is none of %v", p.Name, n, known)
			}
		}
	}
	var run []string
	for _, p := range For(Run) {
		run = append(run, p.Name)
	}
	for _, want := range []string{"runc", "containernetworking-plugins", "iptables"} {
		if !slices.Contains(run, want) {
			t.Errorf("For(Run) = %v, want it to include %s", run, want)
		}
	}
}
