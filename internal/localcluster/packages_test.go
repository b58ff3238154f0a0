package localcluster

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
	pkgs := []hostPackage{{name: "runc", file: "/r"}, {name: "cni", file: "/c"}}
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
			wantErrSubstring: "installing [runc cni]",
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
			exists := func(p string) bool { return slices.Contains(files, p) }
			err := ensurePackages(context.Background(), io.Discard, pkgs, exists, run)
			if diff := cmp.Diff(tt.wantCommands, commands); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if tt.wantErrSubstring == "" && err != nil {
				t.Errorf("ensurePackages() = %v, want nil", err)
			}
			if tt.wantErrSubstring != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring)) {
				t.Errorf("ensurePackages() = %v, want an error saying %q", err, tt.wantErrSubstring)
			}
		})
	}
}
