package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// StatusOptions are the flags of "status".
type StatusOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	NodeGroup      string
	StateNamespace string
	Output         string
}

const statusExample = `  # Progress of every recorded run
  kubectl nodeupgrade status

  # Progress of the run on node group "workers", as YAML
  kubectl nodeupgrade status workers -o yaml`

// NewCmdStatus builds "status".
func NewCmdStatus(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{configFlags: configFlags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:     "status [NODEGROUP]",
		Short:   "Show the progress of the current or last run on node groups",
		Example: statusExample,
		Args:    argsAtMost(1, "at most one NODEGROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.NodeGroup = args[0]
			}
			if err := output.ValidateFormat(o.Output); err != nil {
				return &usageError{err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the runs' records")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: a table)")
	return cmd
}

// Run prints the records.
func (o *StatusOptions) Run(ctx context.Context) error {
	po := &PlanOptions{configFlags: o.configFlags}
	if err := po.connect(); err != nil {
		return err
	}
	store := &state.Store{Client: po.client, Namespace: o.StateNamespace}
	var records []*state.Record
	if o.NodeGroup != "" {
		rec, err := store.Load(ctx, o.NodeGroup)
		if err != nil {
			return err
		}
		if rec == nil {
			return usageErrorf("no run recorded for node group %q in namespace %q; check --state-namespace", o.NodeGroup, o.StateNamespace)
		}
		records = append(records, rec)
	} else {
		var err error
		if records, err = store.List(ctx); err != nil {
			return err
		}
	}
	if o.Output != output.FormatTable {
		if o.NodeGroup != "" {
			return output.Print(o.Out, o.Output, records[0])
		}
		return output.Print(o.Out, o.Output, map[string]any{"records": records})
	}
	if len(records) == 0 {
		_, err := fmt.Fprintf(o.Out, "No runs recorded in namespace %q.\n", o.StateNamespace)
		return err
	}
	now := time.Now()
	t := output.NewTable(o.Out, "Node group", "Phase", "Batch", "Done", "Left", "In flight", "Running for", "Last error")
	for _, r := range records {
		phase, running := r.Phase, now.Sub(r.StartedAt)
		if r.FinishedAt != nil {
			phase, running = "Finished", r.FinishedAt.Sub(r.StartedAt)
		} else if r.LastError != "" {
			phase += " (stopped)"
		}
		if err := t.Append(r.NodeGroup, phase, fmt.Sprintf("%d/%d", min(r.Batch, r.Batches), r.Batches),
			fmt.Sprint(len(r.Done)), fmt.Sprint(r.Left()), output.OrNone(strings.Join(r.InFlight, ",")),
			duration.HumanDuration(running), output.OrNone(r.LastError)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	// Short-lived runs: which of the nodes left running are still there,
	// from one list of the nodes.
	nodeCreated := map[string]time.Time{}
	if slices.ContainsFunc(records, func(r *state.Record) bool { return len(r.LeftRunning) > 0 }) {
		nodes, err := po.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			nodeCreated[n.Name] = n.CreationTimestamp.Time
		}
	}
	for _, r := range records {
		if c := r.Cloud; c != nil {
			line := fmt.Sprintf("%s: Auto Scaling group %q, launch template version %s", r.NodeGroup, c.Group, output.OrNone(c.TargetVersion))
			if c.Original != nil {
				line += fmt.Sprintf("; before the run %s, desired last set %d", c.Original, c.LastDesired)
			}
			if c.Shrinking != "" {
				line += fmt.Sprintf("; scale-down removing %q", c.Shrinking)
			}
			if c.Green != "" {
				line += fmt.Sprintf("; green Auto Scaling group %q", c.Green)
			}
			if c.SoakUntil != nil && r.FinishedAt == nil {
				if left := c.SoakUntil.Sub(now); left > 0 {
					line += fmt.Sprintf("; soaking until %s (%s left)", c.SoakUntil.Format(time.RFC3339), left.Round(time.Second))
				} else {
					line += "; soak over"
				}
			}
			fmt.Fprintln(o.Out, line)
		}
		if len(r.LeftRunning) > 0 {
			fmt.Fprintln(o.Out, shortLivedLine(r, nodeCreated, now))
		}
		if r.Note != "" {
			fmt.Fprintf(o.Out, "%s: note: %s\n", r.NodeGroup, r.Note)
		}
	}
	return nil
}

// shortLivedLine says how many of the nodes a short-lived run left running
// are still there, the oldest, and how many are past --max-age.
func shortLivedLine(r *state.Record, nodeCreated map[string]time.Time, now time.Time) string {
	left, over := 0, 0
	var oldest time.Duration
	for _, n := range r.LeftRunning {
		created, ok := nodeCreated[n.Name]
		if !ok {
			continue
		}
		left++
		age := now.Sub(created)
		oldest = max(oldest, age)
		if age > r.MaxAge {
			over++
		}
	}
	if left == 0 {
		return fmt.Sprintf("%s: short-lived: all %d old nodes are gone", r.NodeGroup, len(r.LeftRunning))
	}
	return fmt.Sprintf("%s: short-lived: %d of %d old nodes still run; the oldest is %s old; %d older than --max-age %s",
		r.NodeGroup, left, len(r.LeftRunning), duration.HumanDuration(oldest), over, duration.HumanDuration(r.MaxAge))
}
