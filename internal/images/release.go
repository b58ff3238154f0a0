package images

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ReleasePackages are the commands a release ships as images: the ones the chart and config/default run.
// kubectl-glean is a plugin on the user's machine, released as archives (hack/release), not as an image.
func ReleasePackages() []string { return []string{"./cmd/gleaner-manager", "./cmd/gleaner-agent"} }

// archName is a Go architecture name (GOARCH), which the OCI image spec uses as is.
var archName = regexp.MustCompile(`^[a-z0-9]+$`)

// Index is one command's multi-platform image: an OCI image index with one image per architecture.
type Index struct {
	// Name is the command's name, the repository's last element.
	Name string
	v1.ImageIndex
}

// BuildIndexes compiles the commands in pkgs for Linux on each of arches (static, -trimpath, linked with ldflags)
// into dir/ARCH/ and returns one Index per command, sorted by name, its images in the order of arches. The same
// commit, toolchain and ldflags give the same digests.
func BuildIndexes(ctx context.Context, repoRoot, dir string, pkgs, arches []string, ldflags string) ([]Index, error) {
	if len(arches) == 0 {
		return nil, fmt.Errorf("no architectures to build %v for", pkgs)
	}
	addenda := map[string][]mutate.IndexAddendum{}
	for _, arch := range arches {
		if !archName.MatchString(arch) {
			return nil, fmt.Errorf("architecture %q: want a GOARCH such as amd64 or arm64", arch)
		}
		bins, err := compile(ctx, repoRoot, filepath.Join(dir, arch), pkgs, arch, ldflags)
		if err != nil {
			return nil, err
		}
		for _, b := range bins {
			img, err := build(b, arch)
			if err != nil {
				return nil, err
			}
			n := filepath.Base(b)
			addenda[n] = append(addenda[n], mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "linux", Architecture: arch},
			}})
		}
	}
	var out []Index
	for _, n := range slices.Sorted(maps.Keys(addenda)) {
		out = append(out, Index{Name: n, ImageIndex: mutate.AppendManifests(empty.Index, addenda[n]...)})
	}
	return out, nil
}

// WriteLayout writes the indexes into an OCI image layout at dir (what `crane`, `skopeo` and `oras` read), each
// annotated with its reference name NAME:tag; what was in dir before is removed.
func WriteLayout(dir, tag string, idx []Index) error {
	if _, err := name.NewTag("gleaner.local/image:" + tag); err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the earlier layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the image layout %s: %w", dir, err)
	}
	for _, ix := range idx {
		ref := ix.Name + ":" + tag
		if err := p.AppendIndex(ix.ImageIndex, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
			return fmt.Errorf("writing %s into the image layout %s: %w", ref, dir, err)
		}
	}
	return nil
}

// Pushed is an index as a registry holds it.
type Pushed struct {
	// Ref is REGISTRY/NAME:tag, Digest the index's digest: the reference REGISTRY/NAME@Digest pins it.
	Ref    string
	Digest v1.Hash
}

// Push pushes each index to registry/NAME:tag, with the credentials of the user's Docker config (docker login,
// credential helpers) and whatever opts add. A registry on a loopback or private address, or localhost, is spoken
// to over plain HTTP (go-containerregistry's rule, which containerd shares for loopback).
func Push(ctx context.Context, registry, tag string, idx []Index, opts ...remote.Option) ([]Pushed, error) {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	var out []Pushed
	for _, ix := range idx {
		ref, err := name.NewTag(registry + "/" + ix.Name + ":" + tag)
		if err != nil {
			return out, fmt.Errorf("image reference for %s in registry %q: %w", ix.Name, registry, err)
		}
		if err := remote.WriteIndex(ref, ix.ImageIndex, opts...); err != nil {
			return out, fmt.Errorf("pushing %s: %w", ref, err)
		}
		d, err := ix.Digest()
		if err != nil {
			return out, fmt.Errorf("the digest of %s: %w", ref, err)
		}
		out = append(out, Pushed{Ref: ref.String(), Digest: d})
	}
	return out, nil
}
