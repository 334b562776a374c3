package plugin

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Version is set at build time with -ldflags "-X .../pkg/plugin.Version=v1.2.3".
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

// NewCmdVersion prints the plugin version.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of kubectl nodeupgrade",
		Example: "  # Print the version\n  kubectl nodeupgrade version",
		Args:    argsAtMost(0, "no arguments"),
		RunE: func(_ *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(streams.Out, "kubectl-nodeupgrade %s\n", version())
			return err
		},
	}
}
