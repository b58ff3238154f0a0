package images

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Registry and Tag make the references of the images built here: gleaner.local/NAME:dev. The registry does not
// exist; pods use these images with imagePullPolicy Never or IfNotPresent.
const (
	Registry = "gleaner.local"
	Tag      = "dev"
)

// DefaultPackages are the Go packages whose commands get an image: every Gleaner binary and every test workload.
// A new directory under cmd/ or test/workloads/ gets its image with no change here.
func DefaultPackages() []string { return []string{"./cmd/...", "./test/workloads/..."} }

// Ref returns the reference of the image of the named binary.
func Ref(binary string) string { return Registry + "/" + binary + ":" + Tag }

// Image is a one-binary image.
type Image struct {
	// Binary is a static executable. It becomes /NAME in the image, NAME being its file name, and the entrypoint.
	Binary string
	// Refs are the references the image is tagged with; at least one.
	Refs []string
}

// BuildBinaries compiles the commands in pkgs (patterns relative to repoRoot) as static executables for this
// machine's architecture into dir and returns their paths, sorted.
func BuildBinaries(ctx context.Context, repoRoot, dir string, pkgs []string) ([]string, error) {
	return compile(ctx, repoRoot, dir, pkgs, runtime.GOARCH, "")
}

// compile builds the commands in pkgs as static Linux executables for goarch, linked with ldflags, into dir and
// returns their paths, sorted.
func compile(ctx context.Context, repoRoot, dir string, pkgs []string, goarch, ldflags string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	args := []string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the binaries in %s: %w", dir, err)
	}
	var bins []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			bins = append(bins, filepath.Join(dir, e.Name()))
		}
	}
	if len(bins) == 0 {
		return nil, fmt.Errorf("building %s produced no binaries in %s", strings.Join(pkgs, " "), dir)
	}
	return bins, nil
}

// ForBinaries returns one image per binary, tagged Ref(NAME) plus the extra references listed for NAME.
func ForBinaries(binaries []string, extraRefs map[string][]string) []Image {
	var out []Image
	for _, b := range binaries {
		n := filepath.Base(b)
		out = append(out, Image{Binary: b, Refs: append([]string{Ref(n)}, extraRefs[n]...)})
	}
	return out
}

// WriteTarball writes the images into one docker-archive tarball at path.
func WriteTarball(path string, imgs []Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, im := range imgs {
		img, err := build(im.Binary, runtime.GOARCH)
		if err != nil {
			return err
		}
		if len(im.Refs) == 0 {
			return fmt.Errorf("image of %s has no reference", im.Binary)
		}
		for _, r := range im.Refs {
			ref, err := name.ParseReference(r)
			if err != nil {
				return fmt.Errorf("image reference %q: %w", r, err)
			}
			refs[ref] = img
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	if err := tarball.MultiRefWriteToFile(path, refs); err != nil {
		return fmt.Errorf("writing the image tarball %s: %w", path, err)
	}
	return nil
}

// build makes the image of one binary for the architecture arch: a single layer holding /NAME (mode 0755) and
// /tmp, with /NAME as the entrypoint, in OCI media types. Timestamps are zero, so the same binary always gives the
// same image digest.
func build(binary, arch string) (v1.Image, error) {
	st, err := os.Stat(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary for an image: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", binary)
	}
	n := filepath.Base(binary)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(binary, n, st.Size()) },
		tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer of %s: %w", binary, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("making the image of %s: %w", binary, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the image of %s: %w", binary, err)
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Config.Entrypoint = []string{"/" + n}
	cf.Config.Env = []string{"PATH=/"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting the config of the image of %s: %w", binary, err)
	}
	return img, nil
}

// layerTar streams a tar holding the binary as /name and an empty /tmp.
func layerTar(binary, name string, size int64) (io.ReadCloser, error) {
	f, err := os.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", binary, err)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, Format: tar.FormatPAX})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: size, Format: tar.FormatPAX})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		err = errors.Join(err, tw.Close(), f.Close())
		pw.CloseWithError(err)
	}()
	return pr, nil
}
