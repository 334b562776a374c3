package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// NewCmdFleet builds "fleet" and its commands.
func NewCmdFleet(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Roll an upgrade out over the node groups of many clusters, a stage at a time",
		Long: `Run the node groups of many clusters (kubeconfig contexts) in the ordered
stages of a fleet plan file (kind FleetPlan): a stage's targets at most
maxConcurrency at once, then its soak, gates and approval before the next
stage. Each target is an ordinary run in its own cluster, with its record and
lock there; the fleet's own decisions (stages entered, soaks, gate verdicts,
approvals, the plan's hash) live in one ConfigMap in --record-context. A
failed or paused target starts no new target; the ones in flight run to their
end. Running the fleet again goes on from its record and retries the failed
targets. See docs/fleet.md.`,
		Args: unknownCommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	// Every subcommand starts from the same connection and streams.
	base := fleetOptions{configFlags: configFlags, IOStreams: streams}
	cmd.AddCommand(
		newCmdFleetPlan(base),
		newCmdFleetRun("run", base),
		newCmdFleetRun("resume", base),
		newCmdFleetStatus(base),
		newCmdFleetApprove(base),
		newCmdFleetFanOut("cancel", base),
		newCmdFleetFanOut("abort", base),
		newCmdFleetExport(base),
	)
	return cmd
}

// fleetOptions are what every fleet command reads: the file, its targets
// resolved against the kubeconfig, and where the fleet's record is.
type fleetOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	File           string
	RecordContext  string
	StateNamespace string

	file  *fleet.File
	fleet *fleet.Fleet
	// data is the file as read: an in-cluster coordinator's ConfigMap.
	data []byte
	// dir is the file's directory: its exec gates run there, whichever
	// directory the command is typed in.
	dir string
	// exe is the plugin binary each target's command runs as.
	exe string
	// recordClient is set by tests; else from --record-context.
	recordClient kubernetes.Interface
}

// fleetFileCommand is a fleet command of -f FILE and no arguments, with
// help {Short, Long, Example}; o's -f is bound.
func fleetFileCommand(verb string, help [3]string, o interface {
	completer
	addFileFlag(*pflag.FlagSet)
}) *cobra.Command {
	cmd := &cobra.Command{
		Use:     verb + " -f FILE",
		Short:   help[0],
		Long:    help[1],
		Example: help[2],
		Args:    argsAtMost(0, "no arguments (the fleet is -f)"),
		RunE:    runE(o),
	}
	o.addFileFlag(cmd.Flags())
	return cmd
}

// validateFleetOutput checks -o of the commands that print tables by
// default: json or yaml.
func validateFleetOutput(format string) error {
	if format != "" && format != output.FormatJSON && format != output.FormatYAML {
		return usageErrorf("unknown -o %q: want json or yaml", format)
	}
	return nil
}

func (o *fleetOptions) addFileFlag(f *pflag.FlagSet) {
	f.StringVarP(&o.File, "filename", "f", "", "The fleet plan file (kind FleetPlan); - reads standard input")
}

func (o *fleetOptions) addRecordFlags(f *pflag.FlagSet) {
	f.StringVar(&o.RecordContext, "record-context", "", "The kubeconfig context whose cluster keeps the fleet's record (default: the current context)")
	f.StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the fleet's record in --record-context")
}

// load reads and resolves the file: a bad one is a usage error naming
// the key and value, before any cluster is asked.
func (o *fleetOptions) load() error {
	if o.File == "" {
		return usageErrorf("missing -f: give the fleet plan file")
	}
	data, err := o.readFile()
	if err != nil {
		return err
	}
	o.data = data
	if o.file, err = fleet.Parse(data); err != nil {
		return usageErrorf("%s: %v", o.File, err)
	}
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return usageErrorf("cannot read the kubeconfig: %v", err)
	}
	contexts := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		contexts = append(contexts, name)
	}
	slices.Sort(contexts)
	if o.RecordContext == "" {
		o.RecordContext = raw.CurrentContext
	}
	if o.fleet, err = fleet.Resolve(o.file, fleet.Options{Contexts: contexts, CheckRun: o.checkRun}); err != nil {
		return usageErrorf("%s: %v", o.File, err)
	}
	return o.findExe()
}

func (o *fleetOptions) readFile() ([]byte, error) {
	if o.File == "-" {
		o.dir, _ = os.Getwd()
		return io.ReadAll(o.In)
	}
	data, err := os.ReadFile(o.File)
	if err != nil {
		return nil, usageErrorf("cannot read -f %q: %v", o.File, err)
	}
	o.dir, _ = filepath.Abs(filepath.Dir(o.File))
	return data, nil
}

// fleetSetFlags are the flags the fleet gives each target's command
// itself: a target's run flags may not.
var fleetSetFlags = []string{"context", "kubeconfig", "yes", "plan-file", "output", "dry-run", "filename"}

// checkRun parses a target's run flags with run's own flag set, so a
// misspelt flag is refused before any cluster is asked.
func (o *fleetOptions) checkRun(args []string) error {
	cmd, _ := newCmdRun(genericclioptions.NewConfigFlags(true), genericiooptions.IOStreams{In: o.In, Out: io.Discard, ErrOut: io.Discard})
	genericclioptions.NewConfigFlags(true).AddFlags(cmd.PersistentFlags())
	if err := cmd.ParseFlags(args); err != nil {
		return err
	}
	for _, name := range fleetSetFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("--%s is the fleet's to set, not a target's", name)
		}
	}
	return nil
}

// findExe is the plugin's own binary: each target runs as a process of
// it, with its own lock, record and signals, as when typed by hand.
func (o *fleetOptions) findExe() error {
	if o.exe != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the plugin's own binary to run the targets: %w", err)
	}
	o.exe = exe
	return nil
}

// recordStore is the fleet's record in --record-context.
func (o *fleetOptions) recordStore(name string) (*fleet.Store, error) {
	if o.recordClient == nil {
		c, err := o.clientOf(o.RecordContext, "--record-context")
		if err != nil {
			return nil, err
		}
		o.recordClient = c
	}
	return &fleet.Store{Client: o.recordClient, Namespace: o.StateNamespace, Name: name}, nil
}

// loadRecord is the fleet's record in --record-context, nil when it has
// none, and the store it is kept in.
func (o *fleetOptions) loadRecord(ctx context.Context, name string) (*fleet.Store, *fleet.Record, error) {
	store, err := o.recordStore(name)
	if err != nil {
		return nil, nil, err
	}
	rec, err := store.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	return store, rec, nil
}

// clientOf is a client of the kubeconfig's context name, which flag names.
func (o *fleetOptions) clientOf(name, flag string) (kubernetes.Interface, error) {
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, usageErrorf("cannot read the kubeconfig: %v", err)
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot reach %s %q: %w", flag, name, err)
	}
	return kubernetes.NewForConfig(rc)
}

// targetsOf are the fleet's targets, of one stage when stage is not "".
func (o *fleetOptions) targetsOf(stage string) ([]fleet.Target, error) {
	var out []fleet.Target
	for _, st := range o.fleet.Stages {
		if stage == "" || st.Name == stage {
			out = append(out, st.Targets...)
		}
	}
	if len(out) == 0 {
		names := make([]string, 0, len(o.fleet.Stages))
		for _, st := range o.fleet.Stages {
			names = append(names, st.Name)
		}
		return nil, usageErrorf("unknown --stage %q: fleet %q has stages %s", stage, o.fleet.Name, fmt.Sprintf("%q", names))
	}
	return out, nil
}

// fleetExit is a fleet command's error with its exit code.
type fleetExit struct {
	code int
	msg  string
}

func (e *fleetExit) Error() string { return e.msg }
func (e *fleetExit) exitCode() int { return e.code }
