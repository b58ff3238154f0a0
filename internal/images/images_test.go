package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// readImage loads one tagged image back from a tarball the way an importer does.
func readImage(t *testing.T, path, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("reading %s from %s: %v", ref, path, err)
	}
	return img
}

// files lists the entries of the image's only layer with their modes, and returns the content of the binary.
func files(t *testing.T, img v1.Image, binary string) (map[string]int64, []byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d (%v), want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	modes := map[string]int64{}
	var content []byte
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
		if h.Name == binary {
			content, _ = io.ReadAll(tr)
		}
	}
	return modes, content
}

func TestWriteTarball(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pause")
	want := []byte("#!/bin/true\nnot really a binary\n")
	if err := os.WriteFile(bin, want, 0o700); err != nil {
		t.Fatal(err)
	}
	imgs := ForBinaries([]string{bin}, map[string][]string{"pause": {"registry.k8s.io/pause:3.10"}})
	if diff := cmp.Diff([]Image{{Binary: bin, Refs: []string{"gleaner.local/pause:dev", "registry.k8s.io/pause:3.10"}}}, imgs); diff != "" {
		t.Fatalf("ForBinaries (-want +got):\n%s", diff)
	}
	out := filepath.Join(dir, "out", "images.tar")
	if err := WriteTarball(out, imgs); err != nil {
		t.Fatal(err)
	}
	var digests []v1.Hash
	for _, ref := range imgs[0].Refs {
		img := readImage(t, out, ref)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cmp.Equal(cf.Config.Entrypoint, []string{"/pause"}) {
			t.Errorf("%s config: os %s arch %s entrypoint %v", ref, cf.OS, cf.Architecture, cf.Config.Entrypoint)
		}
		modes, content := files(t, img, "pause")
		if diff := cmp.Diff(map[string]int64{"tmp/": 0o1777, "pause": 0o755}, modes); diff != "" {
			t.Errorf("%s layer entries (-want +got):\n%s", ref, diff)
		}
		if !bytes.Equal(content, want) {
			t.Errorf("%s: the binary in the image differs from the file", ref)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("the two references name different images: %v", digests)
	}

	// The same binary gives the same image, so an unchanged binary never makes a new image.
	again := filepath.Join(dir, "again.tar")
	if err := WriteTarball(again, imgs); err != nil {
		t.Fatal(err)
	}
	d2, err := readImage(t, again, "gleaner.local/pause:dev").Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d2 != digests[0] {
		t.Errorf("rebuilding gave digest %s, first build %s", d2, digests[0])
	}
}

func TestWriteTarballErrors(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "b")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		imgs []Image
		want string
	}{
		{"missing binary", []Image{{Binary: filepath.Join(dir, "nope"), Refs: []string{Ref("nope")}}}, "reading the binary"},
		{"a directory", []Image{{Binary: dir, Refs: []string{Ref("d")}}}, "not a regular file"},
		{"no reference", []Image{{Binary: bin}}, "has no reference"},
		{"bad reference", []Image{{Binary: bin, Refs: []string{"Not A Ref!"}}}, "image reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteTarball(filepath.Join(dir, "out.tar"), tt.imgs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteTarball = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// BuildBinaries builds real commands of this repository as static executables: nothing in an image provides a
// dynamic loader or libc.
func TestBuildBinariesStatic(t *testing.T) {
	dir := t.TempDir()
	bins, err := BuildBinaries(t.Context(), filepath.Join("..", ".."), dir, []string{"./test/workloads/pause"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "pause")}, bins); diff != "" {
		t.Fatalf("binaries (-want +got):\n%s", diff)
	}
	f, err := elf.Open(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not a static binary", bins[0])
		}
	}
	if _, err := BuildBinaries(t.Context(), filepath.Join("..", ".."), dir, []string{"./no/such/package"}); err == nil {
		t.Error("building a missing package succeeded")
	}
}
