package plugin

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
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

// VersionInfo is what "version -o json|yaml" prints.
type VersionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// NewCmdVersion prints the plugin version.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the version of kubectl nodeupgrade",
		Example: "  # Print the version\n  kubectl nodeupgrade version\n\n  # As JSON, with the Go version and platform\n  kubectl nodeupgrade version -o json",
		Args:    argsAtMost(0, "no arguments"),
		RunE: func(_ *cobra.Command, _ []string) error {
			info := VersionInfo{Version: version(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			if format == output.FormatTable {
				_, err := fmt.Fprintf(streams.Out, "kubectl-nodeupgrade %s\n", info.Version)
				return err
			}
			// A version names no object: -o name has nothing to print.
			if err := output.ValidateFormat(format); err != nil || format == output.FormatName {
				return usageErrorf("invalid --output %q: must be one of json, yaml, jsonpath=... or go-template=...", format)
			}
			return output.Print(streams.Out, format, info)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "Output format: json, yaml, jsonpath=... or go-template=... (default: one line)")
	return cmd
}
