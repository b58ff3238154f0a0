package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	// semVer is SemVer 2.0.0 without the leading v: the regular expression semver.org gives.
	semVer = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	// afterTag is what `git describe --tags --dirty` prints N commits after a release tag vX.Y.Z:
	// v0.1.0-3-g68c422d, v0.1.0-3-g68c422d-dirty.
	afterTag = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)-([1-9]\d*)-g([0-9a-f]+)(-dirty)?$`)
	// bareCommit is what `git describe --always --dirty` prints before the first tag: 68c422d, 68c422d-dirty.
	bareCommit = regexp.MustCompile(`^([0-9a-f]{4,40})(-dirty)?$`)
	// fileSafe is what a version may hold to be part of the archives' names and their URLs as it is.
	fileSafe = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._+-]*$`)
)

// chartVersion is the SemVer the Helm chart and the Krew manifest carry (Krew's with a leading v) for the Makefile's
// VERSION, which is usually `git describe --tags --always --dirty`:
//
//	v1.2.3, v1.3.0-rc.1                 SemVer with a v: without it (1.2.3, 1.3.0-rc.1)
//	v0.1.0-3-g68c422d[-dirty]           N commits after the tag: a pre-release of the next patch, which sorts after
//	                                    the tag and before any later release (0.1.1-dev.3.g68c422d[.dirty])
//	68c422d[-dirty]                     a commit before the first tag: 0.0.0-dev.g68c422d[.dirty]
//
// Any other VERSION is an error: the chart and the plugin manifest need a version that orders.
func chartVersion(version string) (string, error) {
	if m := afterTag.FindStringSubmatch(version); m != nil {
		patch, err := strconv.ParseUint(m[3], 10, 64)
		if err != nil {
			return "", fmt.Errorf("version %q: patch number: %w", version, err)
		}
		v := fmt.Sprintf("%s.%s.%d-dev.%s.g%s", m[1], m[2], patch+1, m[4], m[5])
		if m[6] != "" {
			v += ".dirty"
		}
		return v, nil
	}
	if v := strings.TrimPrefix(version, "v"); semVer.MatchString(v) {
		return v, nil
	}
	if m := bareCommit.FindStringSubmatch(version); m != nil {
		v := "0.0.0-dev.g" + m[1]
		if m[2] != "" {
			v += ".dirty"
		}
		return v, nil
	}
	return "", fmt.Errorf("version %q is neither SemVer (v1.2.3) nor what git describe prints (v1.2.3-4-g68c422d, 68c422d, either with -dirty): set VERSION=vX.Y.Z", version)
}
