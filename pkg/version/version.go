package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is set by the linker (-X, see the package documentation) and empty in a binary built without it. Nothing
// writes it at run time: it is a variable only because -X sets nothing else.
var version string

// DevVersion is the version of a binary that was linked without one and whose build recorded no version of the
// main module either.
const DevVersion = "v0.0.0-dev"

// Info describes the build of a binary.
type Info struct {
	// Version is the version the binary was built as: the linker's (v0.3.0, v0.3.0-4-g68c422d-dirty, or a bare
	// abbreviated commit before the first tag), else the one Go recorded for the main module (a pseudo-version such
	// as v0.0.0-20261202041121-68c422d1ea2d+dirty), else DevVersion.
	Version string `json:"version"`
	// Commit is the full hash of the git commit the binary was built from; empty when the build recorded none.
	Commit string `json:"commit"`
	// Modified is true when the work tree it was built from differed from Commit, untracked files included (git
	// status as go build reads it).
	Modified bool `json:"modified"`
	// GoVersion is the Go toolchain that built the binary, such as go1.26.8.
	GoVersion string `json:"goVersion"`
	// Platform is the operating system and architecture the binary runs on, such as linux/amd64.
	Platform string `json:"platform"`
}

// Get returns the running binary's build.
func Get() Info {
	bi, _ := debug.ReadBuildInfo() // nil in a binary built without module support: the linker's version still holds
	return fromBuildInfo(version, bi)
}

// fromBuildInfo is the Info of a binary linked with the version linked (empty when none) whose build recorded bi
// (nil when none).
func fromBuildInfo(linked string, bi *debug.BuildInfo) Info {
	i := Info{Version: linked, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			i.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
		// go build records "(devel)" for a main module it has no version of; go test records nothing.
		if i.Version == "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
	}
	if i.Version == "" {
		i.Version = DevVersion
	}
	return i
}

// String is the one line every Gleaner binary prints after its own name, for example
//
//	v0.3.0 (commit 68c422d1ea2d07b4531755ce4568b431048b3ee9, go1.26.8, linux/amd64)
//	v0.3.0-4-g68c422d-dirty (commit 68c422d1ea2d07b4531755ce4568b431048b3ee9, modified, go1.26.8, linux/amd64)
//	v0.0.0-dev (commit unknown, go1.26.8, linux/amd64)
func (i Info) String() string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	parts := []string{"commit " + commit}
	if i.Modified {
		parts = append(parts, "modified")
	}
	parts = append(parts, i.GoVersion, i.Platform)
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}
