package plugin

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// FleetStatusOptions are the flags of "fleet status".
type FleetStatusOptions struct {
	fleetOptions
	Output string
	Watch  bool
	every  time.Duration
}

// FleetStatus is what "fleet status -o json|yaml" prints: the fleet's
// record and every target's row, read from its own cluster.
type FleetStatus struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Name       string        `json:"name"`
	Record     *fleet.Record `json:"record,omitempty"`
	Targets    []fleet.Row   `json:"targets"`
}

func newCmdFleetStatus(base fleetOptions) *cobra.Command {
	o := &FleetStatusOptions{fleetOptions: base, every: 2 * time.Second}
	cmd := fleetFileCommand("status", [3]string{"Show every target of a fleet, from its own cluster's record", `Show one row per target of the fleet of -f: its stage, cluster, group, and
the status, phase and nodes done and left of its run, read from the target's
own cluster (a cluster that does not answer shows "unknown"; a target the
fleet found already at its target shows "skipped"); then what the
fleet's record in --record-context says of each stage. -w prints the table
again whenever it changes, until every target is finished (exit 0) or the
fleet stopped: a target failed or paused and none runs (exit 8).`, `  # Where the fleet is
  kubectl nodeupgrade fleet status -f fleet.yaml

  # Follow it from another terminal
  kubectl nodeupgrade fleet status -f fleet.yaml -w`}, o)
	o.addRecordFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: a table)")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Print the table again whenever it changes, until the fleet finishes or stops")
	return cmd
}

// Complete reads the fleet file.
func (o *FleetStatusOptions) Complete(*cobra.Command, []string) error { return o.load() }

// Validate checks -o.
func (o *FleetStatusOptions) Validate() error {
	return validateFleetOutput(o.Output)
}

// Run prints the fleet's status, once or until it ends.
func (o *FleetStatusOptions) Run(ctx context.Context) error {
	var last *FleetStatus
	for {
		s, err := o.printChanged(ctx, last)
		if err != nil {
			return err
		}
		last = s
		if !o.Watch {
			return nil
		}
		if done, err := fleetEnded(s); done {
			return err
		}
		if err := transport.Sleep(ctx, o.every); err != nil {
			return err
		}
	}
}

// printChanged looks at the fleet and prints it where it is not last.
func (o *FleetStatusOptions) printChanged(ctx context.Context, last *FleetStatus) (*FleetStatus, error) {
	s, err := o.look(ctx)
	if err != nil {
		return nil, err
	}
	if last == nil || !reflect.DeepEqual(s, last) {
		return s, o.print(s)
	}
	return s, nil
}

func (o *FleetStatusOptions) look(ctx context.Context) (*FleetStatus, error) {
	_, rec, err := o.loadRecord(ctx, o.fleet.Name)
	if err != nil {
		return nil, err
	}
	x := o.targets()
	rows := fleet.Rows(ctx, o.fleet, func(ctx context.Context, t fleet.Target) (fleet.Row, bool, error) {
		st, ok, err := x.lookStatus(ctx, t)
		if !ok || err != nil {
			return fleet.Row{}, ok, err
		}
		return fleet.Row{Status: st.Status, Alive: st.Alive, Phase: st.Phase, Done: len(st.Done), Left: max(st.NodesTotal-len(st.Done), 0)}, true, nil
	})
	rec.MarkSkipped(rows)
	return &FleetStatus{APIVersion: fleet.APIVersion, Kind: "FleetStatus", Name: o.fleet.Name, Record: rec, Targets: rows}, nil
}

// fleetEnded says whether -w is over: no target's run is alive, and
// every target finished (exit 0) or one stopped short of it (exit 8).
func fleetEnded(s *FleetStatus) (bool, error) {
	finished, stopped := 0, ""
	for _, r := range s.Targets {
		switch {
		case r.Alive:
			return false, nil
		case r.Status == StatusFinished || r.Status == fleet.StatusSkipped:
			finished++
		case r.Status != fleet.StatusNotStarted && r.Status != fleet.StatusUnknown && stopped == "":
			stopped = fmt.Sprintf("%s/%s (%s)", r.Cluster, r.Group, r.Status)
		}
	}
	if finished == len(s.Targets) {
		return true, nil
	}
	if stopped != "" {
		return true, &fleetExit{code: ExitPaused, msg: fmt.Sprintf("fleet %q stopped: target %s did not finish and no target runs; \"fleet resume\" goes on", s.Name, stopped)}
	}
	return false, nil
}

func (o *FleetStatusOptions) print(s *FleetStatus) error {
	if o.Output != "" {
		return output.Print(o.Out, o.Output, s)
	}
	if o.Watch {
		fmt.Fprintf(o.Out, "%s\n", time.Now().UTC().Format(time.RFC3339))
	}
	t := output.NewTable(o.Out, "STAGE", "CLUSTER", "GROUP", "STATUS", "PHASE", "DONE", "LEFT")
	for _, r := range s.Targets {
		status := r.Status
		if r.Error != "" {
			status += " (" + output.OneLine(r.Error, 80) + ")"
		}
		if err := t.Append(r.Stage, r.Cluster, r.Group, status, dash(r.Phase), r.Done, r.Left); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	printStages(o.Out, s)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printStages says what the fleet's record holds of each stage.
func printStages(w io.Writer, s *FleetStatus) {
	if s.Record == nil {
		fmt.Fprintf(w, "\nFleet %q has not started (no record)\n", s.Name)
		return
	}
	fmt.Fprintln(w)
	for _, st := range s.Record.Stages {
		fmt.Fprintf(w, "Stage %q: %s\n", st.Name, stageState(st))
	}
}

func stageState(st fleet.StageRecord) string {
	at := func(t *time.Time) string { return t.UTC().Format(time.RFC3339) }
	var parts []string
	switch {
	case st.Entered == nil:
		return "not entered"
	case st.TargetsDone == nil:
		parts = append(parts, "entered "+at(st.Entered))
	default:
		parts = append(parts, "targets done "+at(st.TargetsDone))
	}
	if st.SoakFrom != nil && st.GatesPassed == nil {
		parts = append(parts, "soaking from "+at(st.SoakFrom))
	}
	for _, v := range st.Verdicts {
		parts = append(parts, "gate "+v.String())
	}
	if st.GatesPassed != nil {
		parts = append(parts, "gates passed "+at(st.GatesPassed))
	}
	if st.Approved != nil {
		parts = append(parts, fmt.Sprintf("approved by %s %s", st.ApprovedBy, at(st.Approved)))
	}
	return strings.Join(parts, "; ")
}
