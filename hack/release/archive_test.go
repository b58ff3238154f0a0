package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is a file read back from an archive.
type entry struct {
	Name  string
	Mode  fs.FileMode
	MTime time.Time
	Data  string
}

// readArchive reads the files of a .tar.gz or .zip, in their order.
func readArchive(t *testing.T, name string, b []byte) []entry {
	t.Helper()
	var entries []entry
	if strings.HasSuffix(name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, entry{Name: f.Name, Mode: f.Mode(), MTime: f.Modified.UTC(), Data: string(data)})
		}
		return entries
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s is type %c, owner %d:%d (%q:%q), want a regular file of 0:0 without names",
				name, h.Name, h.Typeflag, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{Name: h.Name, Mode: fs.FileMode(h.Mode), MTime: h.ModTime.UTC(), Data: string(data)})
	}
}

var testMembers = []member{
	{Name: "kubectl-glean", Mode: 0o755, Data: []byte("\x7fELF a binary")},
	{Name: "LICENSE", Mode: 0o644, Data: []byte("Apache License\nVersion 2.0\n")},
}

func TestArchivesAreReproducible(t *testing.T) {
	commit := time.Date(2026, 12, 2, 4, 11, 21, 0, time.UTC)
	for _, p := range []platform{{"linux", "amd64"}, {"windows", "amd64"}} {
		t.Run(p.String(), func(t *testing.T) {
			write := func(mtime time.Time) []byte {
				var b bytes.Buffer
				if err := writeArchive(&b, p, testMembers, mtime); err != nil {
					t.Fatal(err)
				}
				return b.Bytes()
			}
			first := write(commit)
			// The same instant in another zone, with a fraction of a second: the same bytes.
			if again := write(commit.In(time.FixedZone("UTC+9", 9*3600)).Add(400 * time.Millisecond)); !bytes.Equal(first, again) {
				t.Error("two archives of the same files and time differ")
			}
			if later := write(commit.Add(time.Hour)); bytes.Equal(first, later) {
				t.Error("archives with different file times are equal: the time is not in the archive")
			}
		})
	}
}

func TestArchiveContent(t *testing.T) {
	commit := time.Date(2026, 12, 2, 4, 11, 21, 0, time.UTC)
	want := []entry{
		{Name: "kubectl-glean", Mode: 0o755, MTime: commit, Data: "\x7fELF a binary"},
		{Name: "LICENSE", Mode: 0o644, MTime: commit, Data: "Apache License\nVersion 2.0\n"},
	}
	for _, p := range []platform{{"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
		t.Run(p.String(), func(t *testing.T) {
			var b bytes.Buffer
			if err := writeArchive(&b, p, testMembers, commit); err != nil {
				t.Fatal(err)
			}
			name := archiveName("v1.2.3", p)
			if diff := cmp.Diff(want, readArchive(t, name, b.Bytes())); diff != "" {
				t.Errorf("%s (-want +got):\n%s", name, diff)
			}
			if p.OS == "windows" {
				return
			}
			// The gzip header: no file name (FLG.FNAME, bit 3) and no time (MTIME, bytes 4-7).
			if h := b.Bytes()[:10]; h[3]&0x08 != 0 || !bytes.Equal(h[4:8], []byte{0, 0, 0, 0}) {
				t.Errorf("gzip header %x names a file or a time", h)
			}
		})
	}
}

// TestZipBefore1980: a zip cannot date a file before 1980 (SOURCE_DATE_EPOCH=0 where git has no commit): its files
// get the first day it can.
func TestZipBefore1980(t *testing.T) {
	var b bytes.Buffer
	if err := writeZip(&b, testMembers, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	for _, e := range readArchive(t, "x.zip", b.Bytes()) {
		if !e.MTime.Equal(zipEpoch) {
			t.Errorf("%s is dated %s, want %s", e.Name, e.MTime, zipEpoch)
		}
	}
}

func TestArchiveNames(t *testing.T) {
	tests := []struct {
		p                 platform
		wantBin, wantName string
	}{
		{platform{"linux", "amd64"}, "kubectl-glean", "kubectl-glean_v1.2.3_linux_amd64.tar.gz"},
		{platform{"darwin", "arm64"}, "kubectl-glean", "kubectl-glean_v1.2.3_darwin_arm64.tar.gz"},
		{platform{"windows", "amd64"}, "kubectl-glean.exe", "kubectl-glean_v1.2.3_windows_amd64.zip"},
	}
	for _, tt := range tests {
		if got := binaryName(tt.p); got != tt.wantBin {
			t.Errorf("binaryName(%s) = %q, want %q", tt.p, got, tt.wantBin)
		}
		if got := archiveName("v1.2.3", tt.p); got != tt.wantName {
			t.Errorf("archiveName(v1.2.3, %s) = %q, want %q", tt.p, got, tt.wantName)
		}
	}
}

func TestParsePlatforms(t *testing.T) {
	tests := []struct {
		in      string
		want    []platform
		wantErr bool
	}{
		{in: "linux/amd64", want: []platform{{"linux", "amd64"}}},
		{in: " linux/amd64  darwin/arm64,windows/amd64 ", want: []platform{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}}},
		{in: "", wantErr: true},
		{in: "linux", wantErr: true},
		{in: "linux/amd64/v3", wantErr: true},
		{in: "Linux/amd64", wantErr: true},
		{in: "linux/amd64 linux/amd64", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parsePlatforms(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parsePlatforms(%q): error %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parsePlatforms(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// readFile is the content of a file the test needs.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
