package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gleaner-sh/gleaner/pkg/version"
)

// Versions is what `kubectl glean version -o json|yaml` prints. The key is kubectl version's for the client, which
// leaves room for the server's beside it.
type Versions struct {
	// ClientVersion is this kubectl-glean binary's build.
	ClientVersion version.Info `json:"clientVersion"`
}

func newVersionCommand(f *Factory) *cobra.Command {
	output := &outputFlags{plain: "one line"}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-glean",
		Long: `Print the version kubectl-glean was built as, the git commit it was built from (and whether the work tree
had changes), the Go version that built it and its platform: the line gleaner-manager --version and
gleaner-agent --version print for themselves. It asks the cluster nothing; what runs there is on the manager's
and the agents' /metrics as gleaner_build_info.`,
		Example: `  kubectl glean version
  kubectl glean version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runVersion(f, output)
		},
	}
	output.add(cmd.Flags())
	output.complete(cmd)
	return cmd
}

func runVersion(f *Factory, flags *outputFlags) error {
	out, err := flags.parse()
	if err != nil {
		return err
	}
	build := version.Get()
	if done, err := printStructured(f.Out, Versions{ClientVersion: build}, nil, out); done {
		return err
	}
	_, err = fmt.Fprintln(f.Out, "kubectl-glean", build)
	return err
}
