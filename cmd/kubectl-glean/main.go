// Command kubectl-glean is Gleaner's kubectl plugin: put it on $PATH and run `kubectl glean`. See package
// github.com/gleaner-sh/gleaner/pkg/cli for its commands. Run as kubectl_complete-glean (a link to it), it answers
// kubectl's shell completion for `kubectl glean`.
package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gleaner-sh/gleaner/pkg/cli"
)

func main() {
	args := os.Args[1:]
	if strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == cli.CompletionCommand {
		args = append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	os.Exit(cli.Execute(args, cli.Streams{Out: os.Stdout, ErrOut: os.Stderr}))
}
