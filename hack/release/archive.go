package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"
	"time"
)

// pluginName is the plugin's binary without the .exe Windows needs; kubectl runs it as `kubectl glean`.
const pluginName = "kubectl-glean"

// platform is one operating system and architecture the plugin is built for, as GOOS and GOARCH name them (which is
// also how Krew's selectors name them).
type platform struct {
	OS, Arch string
}

func (p platform) String() string { return p.OS + "/" + p.Arch }

// goName is a GOOS or GOARCH value.
var goName = regexp.MustCompile(`^[a-z0-9]+$`)

// parsePlatforms reads a list of os/arch pairs separated by spaces or commas: "linux/amd64 darwin/arm64".
func parsePlatforms(s string) ([]platform, error) {
	var ps []platform
	seen := map[platform]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' }) {
		goos, goarch, ok := strings.Cut(f, "/")
		if !ok || !goName.MatchString(goos) || !goName.MatchString(goarch) {
			return nil, fmt.Errorf("platform %q is not os/arch (linux/amd64)", f)
		}
		p := platform{OS: goos, Arch: goarch}
		if seen[p] {
			return nil, fmt.Errorf("platform %s is listed twice", p)
		}
		seen[p] = true
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("no platforms in %q", s)
	}
	return ps, nil
}

// binaryName is the plugin's file name on p: kubectl-glean, kubectl-glean.exe on Windows.
func binaryName(p platform) string {
	if p.OS == "windows" {
		return pluginName + ".exe"
	}
	return pluginName
}

// archiveName is the name of the plugin's archive for p: kubectl-glean_v1.2.3_linux_amd64.tar.gz, a .zip for
// Windows, whose users have no tar.
func archiveName(version string, p platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", pluginName, version, p.OS, p.Arch, ext)
}

// member is a file in an archive.
type member struct {
	Name string
	Mode fs.FileMode // permission bits
	Data []byte
}

// writeArchive writes the members, in their order, as p's archive: a zip for Windows, a gzipped tar otherwise.
func writeArchive(w io.Writer, p platform, members []member, mtime time.Time) error {
	if p.OS == "windows" {
		return writeZip(w, members, mtime)
	}
	return writeTarGz(w, members, mtime)
}

// writeTarGz writes the members, in their order, as a gzipped tar whose bytes depend only on the members and mtime:
// every file has mtime, its own mode, owner and group 0 without names, and the gzip header names no file and no time.
func writeTarGz(w io.Writer, members []member, mtime time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, m := range members {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     m.Name,
			Mode:     int64(m.Mode.Perm()),
			Size:     int64(len(m.Data)),
			ModTime:  mtime.UTC().Truncate(time.Second),
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing the tar header of %s: %w", m.Name, err)
		}
		if _, err := tw.Write(m.Data); err != nil {
			return fmt.Errorf("writing %s into the tar: %w", m.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("closing the tar: %w", err)
	}
	return gz.Close()
}

// zipEpoch is the earliest time a zip's MS-DOS date can hold.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// writeZip writes the members, in their order, as a zip whose bytes depend only on the members and mtime (no
// earlier than 1980, the first year a zip can date).
func writeZip(w io.Writer, members []member, mtime time.Time) error {
	mtime = mtime.UTC().Truncate(time.Second)
	if mtime.Before(zipEpoch) {
		mtime = zipEpoch
	}
	zw := zip.NewWriter(w)
	for _, m := range members {
		h := &zip.FileHeader{Name: m.Name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(m.Mode.Perm())
		f, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("writing the zip header of %s: %w", m.Name, err)
		}
		if _, err := f.Write(m.Data); err != nil {
			return fmt.Errorf("writing %s into the zip: %w", m.Name, err)
		}
	}
	return zw.Close()
}
