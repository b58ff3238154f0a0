package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// copyWithRegistry copies the chart in the directory src to dst with registry as its default image.registry: the
// line "  registry: ..." of the top-level "image:" block of values.yaml, the one place the chart names where its
// images come from. The rest of the file, comments included, stays as it is.
func copyWithRegistry(src, dst, registry string) error {
	// What makes a valid image reference is also a plain YAML scalar.
	if _, err := name.NewRepository(registry+"/gleaner-agent", name.StrictValidation); err != nil {
		return fmt.Errorf("image registry %q: want host[:port][/path]: %w", registry, err)
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return fmt.Errorf("copying the chart %s: %w", src, err)
	}
	values := filepath.Join(dst, "values.yaml")
	b, err := os.ReadFile(values)
	if err != nil {
		return fmt.Errorf("reading the chart's values: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	at, inImage := -1, false
	for i, l := range lines {
		switch {
		case l == "image:":
			inImage = true
		case inImage && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "#"):
			inImage = false
		case inImage && strings.HasPrefix(l, "  registry:"):
			at = i
		}
	}
	if at < 0 {
		return fmt.Errorf("%s has no image.registry line (\"  registry: ...\" under \"image:\")", filepath.Join(src, "values.yaml"))
	}
	lines[at] = "  registry: " + registry
	return os.WriteFile(values, []byte(strings.Join(lines, "\n")), 0o644)
}
