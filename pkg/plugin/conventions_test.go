package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func subcommand(t *testing.T, root *cobra.Command, name string) *cobra.Command {
	t.Helper()
	c, _, err := root.Find([]string{name})
	if err != nil || c.Name() != name {
		t.Fatalf("no %s command: %v", name, err)
	}
	return c
}

// TestPlanTakesEveryRunFlag: a reviewed "plan" command line runs by
// changing the word, and the other way round.
func TestPlanTakesEveryRunFlag(t *testing.T) {
	root := NewCmdNodeUpgrade(genericiooptions.NewTestIOStreamsDiscard())
	planCmd, runCmd := subcommand(t, root, "plan"), subcommand(t, root, "run")
	tests := []struct {
		name     string
		from, to *cobra.Command
	}{
		{"run's flags in plan", runCmd, planCmd},
		{"plan's flags in run", planCmd, runCmd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.from.Flags().VisitAll(func(f *pflag.Flag) {
				if tc.to.Flags().Lookup(f.Name) == nil {
					t.Errorf("--%s of %s is not a flag of %s", f.Name, tc.from.Name(), tc.to.Name())
				}
			})
		})
	}
	var hidden []string
	planCmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			hidden = append(hidden, f.Name)
		}
	})
	slices.Sort(hidden)
	want := slices.Sorted(slices.Values(runOnlyFlags))
	if !slices.Equal(hidden, want) {
		t.Errorf("plan hides %v, want the run-only flags %v", hidden, want)
	}
}

func TestDryRunValues(t *testing.T) {
	tgt := "--target-label=a=b"
	tests := []struct {
		name    string
		plan    bool
		args    []string
		want    string
		wantErr string
	}{
		{"run: not given", false, []string{"ng", tgt, "--yes"}, dryRunNone, ""},
		{"run: bare --dry-run is client", false, []string{"--dry-run", "ng", tgt}, dryRunClient, ""},
		{"run: client", false, []string{"ng", tgt, "--dry-run=client"}, dryRunClient, ""},
		{"run: none needs a terminal or --yes", false, []string{"ng", tgt, "--dry-run=none"}, dryRunNone, "use --yes"},
		{"run: server refused", false, []string{"ng", tgt, "--dry-run=server"}, dryRunServer, `invalid --dry-run "server": a server-side dry run is not supported`},
		{"run: unknown", false, []string{"ng", tgt, "--dry-run=true"}, "true", `invalid --dry-run "true": must be none, client or server`},
		{"plan: always client", true, []string{"ng", tgt}, dryRunClient, ""},
		{"plan: run's --yes and --dry-run=none change nothing", true, []string{"ng", tgt, "--yes", "--dry-run=none"}, dryRunClient, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, o := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			o.planOnly = tc.plan
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := o.Complete(cmd, cmd.Flags().Args()); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if o.DryRun != tc.want {
				t.Errorf("--dry-run %q, want %q", o.DryRun, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr != "" && ExitCode(err) != ExitUsage:
				t.Errorf("exit %d, want %d", ExitCode(err), ExitUsage)
			}
		})
	}
}

func TestDurationFlagsTakeDays(t *testing.T) {
	tests := []struct {
		args []string
		get  func(o *RunOptions) time.Duration
		want time.Duration
	}{
		{[]string{"--post-drain-wait", "1d"}, func(o *RunOptions) time.Duration { return o.PostDrainWait }, 24 * time.Hour},
		{[]string{"--drain-timeout", "1d12h"}, func(o *RunOptions) time.Duration { return o.DrainTimeout }, 36 * time.Hour},
		{[]string{"--node-ready-timeout", "90m"}, func(o *RunOptions) time.Duration { return o.NodeReadyTimeout }, 90 * time.Minute},
		{[]string{"--max-age", "30d"}, func(o *RunOptions) time.Duration { return o.MaxAge }, 720 * time.Hour},
		{[]string{"--wait-period", "3d"}, func(o *RunOptions) time.Duration { return o.BlueGreen.WaitPeriod }, 72 * time.Hour},
		{[]string{"--node-pool-soak", "2d"}, func(o *RunOptions) time.Duration { return o.BlueGreen.NodePoolSoak }, 48 * time.Hour},
		{[]string{"--batch-soak", "0.5d"}, func(o *RunOptions) time.Duration { return o.BlueGreen.BatchSoak }, 12 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd, o := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := tc.get(o); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Defaults show in the units they are given in.
	cmd, _ := newCmdRun(genericclioptions.NewConfigFlags(false), genericiooptions.NewTestIOStreamsDiscard())
	for name, want := range map[string]string{"max-age": "7d", "wait-period": "3d", "drain-timeout": "15m", "post-drain-wait": "1m"} {
		if got := cmd.Flags().Lookup(name).DefValue; got != want {
			t.Errorf("--%s default shown as %q, want %q", name, got, want)
		}
	}
}
