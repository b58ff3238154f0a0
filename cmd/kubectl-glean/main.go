// Command kubectl-glean is Gleaner's kubectl plugin: put it on $PATH and run `kubectl glean`. See package
// github.com/gleaner-sh/gleaner/pkg/cli for its commands.
package main

import (
	"os"

	"github.com/gleaner-sh/gleaner/pkg/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], cli.Streams{Out: os.Stdout, ErrOut: os.Stderr}))
}
