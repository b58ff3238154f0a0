// Command chart-schema writes charts/gleaner/values.schema.json (internal/chart) to standard output; `make
// generate` runs it.
package main

import (
	"fmt"
	"os"

	"github.com/gleaner-sh/gleaner/internal/chart"
)

func main() {
	out, err := chart.Schema()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chart-schema: %v\n", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fmt.Fprintf(os.Stderr, "chart-schema: writing the schema: %v\n", err)
		os.Exit(1)
	}
}
