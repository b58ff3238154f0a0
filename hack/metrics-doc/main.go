// Command metrics-doc writes docs/metrics.md (internal/metricsref), the reference of every metric gleaner-manager
// and gleaner-agent export, to standard output: `go run ./hack/metrics-doc > docs/metrics.md`.
package main

import (
	"fmt"
	"os"

	"github.com/gleaner-sh/gleaner/internal/metricsref"
)

func main() {
	fs, err := metricsref.Catalog()
	if err != nil {
		fmt.Fprintf(os.Stderr, "metrics-doc: %v\n", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(metricsref.Markdown(fs)); err != nil {
		fmt.Fprintf(os.Stderr, "metrics-doc: writing the page: %v\n", err)
		os.Exit(1)
	}
}
