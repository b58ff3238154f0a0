// Package version is what a Gleaner binary knows about its own build: the version it was built as, the commit and
// whether the work tree had changes, and the Go toolchain. All three binaries show it in one form (Info.String):
// gleaner-manager and gleaner-agent with --version, kubectl-glean with `kubectl glean version`; the manager and the
// agent also export it as the gleaner_build_info gauge on their /metrics (NewCollector).
//
// The version comes from the linker:
//
//	go build -ldflags "-X github.com/gleaner-sh/gleaner/pkg/version.version=v0.3.0" ./cmd/...
//
// which `make build` sets from `git describe --tags --always --dirty`. The commit and the modified flag come from
// what `go build` records in every binary it builds inside a git checkout (runtime/debug.ReadBuildInfo's
// vcs.revision and vcs.modified), so a binary built without the flag, such as the local cluster's images, still
// names its commit; its version is then the pseudo-version Go derives from that commit, and DevVersion where Go
// recorded none (go test, go run, a tree without git).
package version
