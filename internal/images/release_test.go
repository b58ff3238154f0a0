package images

import (
	"debug/elf"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// machines are the ELF machines of the architectures the test builds for.
var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// buildPause builds the multi-platform index of the pause workload (the smallest command) for amd64 and arm64.
func buildPause(t *testing.T) Index {
	t.Helper()
	idx, err := BuildIndexes(t.Context(), filepath.Join("..", ".."), t.TempDir(), []string{"./test/workloads/pause"},
		[]string{"amd64", "arm64"}, "-X main.unused=1")
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) != 1 || idx[0].Name != "pause" {
		t.Fatalf("indexes %+v, want one named pause", idx)
	}
	return idx[0]
}

// An index holds one image per architecture, in order, each with its platform, its config's architecture and a
// binary built for that machine; a second build gives the same digest.
func TestBuildIndexes(t *testing.T) {
	ix := buildPause(t)
	m, err := ix.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := ix.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != d.Platform.Architecture {
			t.Errorf("image %s: config says %s/%s", d.Platform, cf.OS, cf.Architecture)
		}
		_, content := files(t, img, "pause")
		f, err := elf.NewFile(strings.NewReader(string(content)))
		if err != nil {
			t.Fatalf("image %s: /pause is not an ELF file: %v", d.Platform, err)
		}
		if want := machines[d.Platform.Architecture]; f.Machine != want {
			t.Errorf("image %s: /pause is built for %s, want %s", d.Platform, f.Machine, want)
		}
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}

	again := buildPause(t)
	d1, err1 := ix.Digest()
	d2, err2 := again.Digest()
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Errorf("two builds of one commit: digests %s (%v) and %s (%v), want one", d1, err1, d2, err2)
	}
}

// Pushed to a real registry (go-containerregistry's, over HTTP on loopback), the index is pulled back whole: same
// digest by tag, and the image a client of either architecture resolves is that architecture's. The layout holds
// the same index under its reference name.
func TestPushAndLayout(t *testing.T) {
	ix := buildPause(t)
	want, err := ix.Digest()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	reg := u.Host + "/gleaner"

	pushed, err := Push(t.Context(), reg, "v0.1.0", []Index{ix})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Pushed{{Ref: reg + "/pause:v0.1.0", Digest: want}}, pushed); diff != "" {
		t.Errorf("pushed (-want +got):\n%s", diff)
	}
	ref, err := name.ParseReference(reg + "/pause:v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != want || !desc.MediaType.IsIndex() {
		t.Errorf("the registry holds %s (%s), want the index %s", desc.Digest, desc.MediaType, want)
	}
	m, err := ix.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		img, err := remote.Image(ref, remote.WithContext(t.Context()), remote.WithPlatform(*d.Platform))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := img.Digest(); got != d.Digest {
			t.Errorf("a %s client pulls %s, want %s", d.Platform, got, d.Digest)
		}
	}

	dir := filepath.Join(t.TempDir(), "oci")
	if err := WriteLayout(dir, "v0.1.0", []Index{ix}); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := lp.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(lm.Manifests) != 1 || lm.Manifests[0].Digest != want || lm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "pause:v0.1.0" {
		t.Errorf("the layout's index %+v, want %s named pause:v0.1.0", lm.Manifests, want)
	}
}

// Bad input fails with what was wrong: an architecture that is no GOARCH, a tag a reference cannot carry, a registry
// name that is not one, a registry that does not answer.
func TestReleaseErrors(t *testing.T) {
	if _, err := BuildIndexes(t.Context(), filepath.Join("..", ".."), t.TempDir(), []string{"./test/workloads/pause"}, []string{"x86-64"}, ""); err == nil || !strings.Contains(err.Error(), `"x86-64"`) {
		t.Errorf("architecture x86-64: %v", err)
	}
	if _, err := BuildIndexes(t.Context(), filepath.Join("..", ".."), t.TempDir(), []string{"./test/workloads/pause"}, nil, ""); err == nil {
		t.Error("no architectures: no error")
	}
	ix := Index{Name: "pause", ImageIndex: empty.Index}
	if err := WriteLayout(t.TempDir(), "a tag", []Index{ix}); err == nil || !strings.Contains(err.Error(), `"a tag"`) {
		t.Errorf("tag with a space: %v", err)
	}
	if _, err := Push(t.Context(), "Not A Registry", "v1", []Index{ix}); err == nil || !strings.Contains(err.Error(), "Not A Registry") {
		t.Errorf("registry name with spaces: %v", err)
	}
	srv := httptest.NewServer(registry.New())
	host := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	if _, err := Push(t.Context(), host+"/gleaner", "v1", []Index{ix}); err == nil || !strings.Contains(err.Error(), host+"/gleaner/pause:v1") {
		t.Errorf("registry that is gone: %v", err)
	}
}
