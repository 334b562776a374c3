package plugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// The words of status's STATUS column and of "status" in its JSON: the
// run as the operator thinks of it, from the record and the lock.
const (
	StatusRunning     = "running"            // a live process drives it
	StatusPausing     = "pausing"            // alive, asked by cancel to stop at its next safe point
	StatusPaused      = "paused"             // stopped by cancel; resume continues it
	StatusSoaking     = "soaking"            // blue/green soak: alive and waiting, or left soaking with --no-wait
	StatusSoakOver    = "soak over"          // left soaking with --no-wait, and the soak has ended: resume deletes blue
	StatusWaiting     = "waiting for window" // alive, holding its next batch until a maintenance window opens (--window, --not-before)
	StatusWindowOver  = "window closed"      // stopped at --not-after with no window left: the same command with a later --not-after goes on
	StatusRollingBack = "rolling back"       // alive, undoing the upgrade
	StatusRolledBack  = "rolled back"        // the rollback finished
	StatusFinished    = "finished"           // the upgrade finished
	StatusAborted     = "aborted"            // put back in service by the abort command before it finished
	StatusInterrupted = "interrupted"        // stopped by Ctrl-C, SIGTERM or a kill before it finished; run it again
	StatusFailed      = "failed"             // stopped by an error (LAST ERROR says why); fix it and run again
)

// RunStatus is one recorded run as status shows it: the record, and what
// it means now. It decodes as a state.Record.
type RunStatus struct {
	*state.Record
	// Status is the word of the table's STATUS column.
	Status string `json:"status"`
	// Alive says a live process holds the run's lock.
	Alive bool `json:"alive"`
	// ElapsedSeconds is how long the run has run: until now while it is
	// alive, until its last record otherwise.
	ElapsedSeconds int64 `json:"elapsedSeconds"`
	// Request is a request from another terminal the run has not taken
	// yet (cancel, complete, rollback).
	Request string `json:"request,omitempty"`
	// Held are the pods and PDBs that hold the nodes a live run drains,
	// read as status -w looks (heldNow).
	Held []HeldNow `json:"held,omitempty"`
}

// ResourceRefs names the run's node group for -o name.
func (s RunStatus) ResourceRefs() []output.ResourceRef {
	return []output.ResourceRef{{APIVersion: plan.APIVersion, Kind: "NodeGroup", Name: s.NodeGroup}}
}

// RunStatusList is what status prints for every recorded run.
type RunStatusList struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []RunStatus `json:"items"`
}

// ResourceRefs names every run's node group for -o name.
func (l RunStatusList) ResourceRefs() []output.ResourceRef {
	var refs []output.ResourceRef
	for _, s := range l.Items {
		refs = append(refs, s.ResourceRefs()...)
	}
	return refs
}

// StatusOptions are the flags of "status".
type StatusOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	NodeGroup      string
	StateNamespace string
	Output         string
	AllGroups      bool
	Watch          bool

	client kubernetes.Interface
	now    func() time.Time
	// recheck is how often -w looks at the lock between events: a killed
	// run's lock expires without any event.
	recheck time.Duration
}

const statusExample = `  # Every recorded run in --state-namespace
  kubectl nodeupgrade status -A

  # The run on node group "demo", as YAML (the full last error)
  kubectl nodeupgrade status demo -o yaml

  # Follow the run on "demo" from another terminal until it stops
  kubectl nodeupgrade status demo -w

  # The groups whose run is not finished
  kubectl nodeupgrade status -o jsonpath='{range .items[?(@.status!="finished")]}{.nodeGroup}{"\n"}{end}'`

// NewCmdStatus builds "status".
func NewCmdStatus(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd, _ := newCmdStatus(configFlags, streams)
	return cmd
}

func newCmdStatus(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) (*cobra.Command, *StatusOptions) {
	o := &StatusOptions{configFlags: configFlags, IOStreams: streams, now: time.Now, recheck: 5 * time.Second}
	cmd := &cobra.Command{
		Use:   "status [NODEGROUP | -A]",
		Short: "Show the progress of the current or last run on node groups",
		Long: `Show the recorded run of NODEGROUP, or of every node group with -A (the
default without NODEGROUP). STATUS says what the run is doing or how it ended:

  running, pausing, rolling back   a live process drives it
  soaking                          blue/green soak (alive, or left with --no-wait)
  soak over                        left soaking and the soak has ended: resume
  waiting for window               alive, its next batch held until a window opens
  window closed                    stopped at --not-after: run again with a later one
  paused                           stopped by cancel: resume continues it
  interrupted                      stopped by Ctrl-C or a kill: run it again
  failed                           stopped by an error, LAST ERROR says why
  finished, rolled back            done
  aborted                          put back in service by "abort", not upgraded

ELAPSED stops with the run. BATCH is shown in the phases that work on a
batch. LAST ERROR is cut to one line; -o yaml or json has all of it. With -w,
status prints a line at each change of the run until it stops, and exits
as the run did: 0 finished, rolled back or aborted, 8 paused, soaking or
window closed, 4
failed or interrupted. Ctrl-C stops the watching, not the run, and exits 0.`,
		Example: statusExample,
		Args:    argsAtMost(1, "at most one NODEGROUP"),
		RunE:    runE(o),
	}
	cmd.Flags().StringVar(&o.StateNamespace, "state-namespace", state.DefaultNamespace, "Namespace of the runs' records")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: wide, json, yaml, name, jsonpath=... or go-template=... (default: a table)")
	cmd.Flags().BoolVarP(&o.AllGroups, "all", "A", false, "Every recorded node group in --state-namespace (the default without NODEGROUP)")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Follow the run of NODEGROUP: a line at each change, until the run stops; before one starts, wait for it")
	return cmd, o
}

// Complete reads the node group.
func (o *StatusOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.NodeGroup = args[0]
	}
	return nil
}

// Validate checks the flags before the cluster is touched.
func (o *StatusOptions) Validate() error {
	if err := output.ValidateTableFormat(o.Output); err != nil {
		return &usageError{err: err}
	}
	switch {
	case o.AllGroups && o.NodeGroup != "":
		return usageErrorf("both NODEGROUP %q and -A given: use one", o.NodeGroup)
	case o.Watch && o.NodeGroup == "":
		return usageErrorf("-w follows one run: give its NODEGROUP")
	}
	return nil
}

// Run prints the records, or follows one with -w.
func (o *StatusOptions) Run(ctx context.Context) error {
	if o.client == nil {
		po := &PlanOptions{configFlags: o.configFlags}
		if err := po.connect(); err != nil {
			return err
		}
		o.client = po.client
	}
	if o.Watch {
		return o.watch(ctx)
	}
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	var records []*state.Record
	if o.NodeGroup != "" {
		rec, err := store.Load(ctx, o.NodeGroup)
		if err != nil {
			return err
		}
		if rec == nil {
			return o.noRecord()
		}
		records = append(records, rec)
	} else {
		var err error
		if records, err = store.List(ctx); err != nil {
			return err
		}
	}
	var runs []RunStatus
	for _, r := range records {
		s, err := o.statusOf(ctx, r)
		if err != nil {
			return err
		}
		runs = append(runs, s)
	}
	if !output.IsTable(o.Output) {
		if o.NodeGroup != "" {
			return output.Print(o.Out, o.Output, runs[0])
		}
		list := RunStatusList{APIVersion: plan.APIVersion, Kind: "RunStatusList", Items: runs}
		if list.Items == nil {
			list.Items = []RunStatus{}
		}
		return output.Print(o.Out, o.Output, list)
	}
	if len(runs) == 0 {
		_, err := fmt.Fprintf(o.Out, "No runs recorded in namespace %q.\n", o.StateNamespace)
		return err
	}
	if err := writeStatusTable(o.Out, runs, o.Output == output.FormatWide, o.now()); err != nil {
		return err
	}
	return o.writeDetails(ctx, runs)
}

func (o *StatusOptions) noRecord() error {
	return usageErrorf("no run recorded for node group %q in namespace %q; check --state-namespace", o.NodeGroup, o.StateNamespace)
}

// statusOf reads what the record alone does not say: whether a live process
// holds the lock, and a pending request.
func (o *StatusOptions) statusOf(ctx context.Context, r *state.Record) (RunStatus, error) {
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	lock := &state.Lock{Client: o.client, Namespace: o.StateNamespace, Group: r.NodeGroup, Holder: "status/probe", Duration: lockDuration}
	alive, err := lock.Held(ctx)
	if err != nil {
		return RunStatus{}, err
	}
	if !alive && r.FinishedAt == nil {
		// r was read before the lock: the run may have written its last
		// record and given the lock up in between (it does so in that
		// order), so a record read now is its last word. Without this a
		// run that finished reads as stopped in its last phase.
		again, err := store.Load(ctx, r.NodeGroup)
		if err != nil {
			return RunStatus{}, err
		}
		if again != nil {
			r = again
		}
	}
	request, err := (&state.Requests{Store: store, Group: r.NodeGroup}).Pending(ctx)
	if err != nil {
		return RunStatus{}, err
	}
	return describeRun(r, alive, request, o.now()), nil
}

// describeRun names the state of a run from its record, whether its lock is
// held by a live process, and a pending request.
func describeRun(r *state.Record, alive bool, request string, now time.Time) RunStatus {
	s := RunStatus{Record: r, Alive: alive, Request: request}
	end := now
	phase := plan.Phase(r.Phase)
	switch {
	case r.FinishedAt != nil:
		end = *r.FinishedAt
		s.Status = StatusFinished
		if rolledBack(r) {
			s.Status = StatusRolledBack
		}
		if r.AbortedAt != nil {
			s.Status = StatusAborted
		}
	// The run clears LastError when it starts and writes it when it stops,
	// before it gives the lock up: an error means the run is over.
	case r.LastError != "":
		s.Status = StatusFailed
		if interrupted(r.LastError) {
			s.Status = StatusInterrupted
		}
	case alive:
		switch {
		case request == state.RequestCancel:
			s.Status = StatusPausing
		case phase == plan.PhaseRollback || request == state.RequestRollback || rolledBack(r):
			s.Status = StatusRollingBack
		case phase == plan.PhaseSoak || phase == plan.PhaseBatchSoak:
			s.Status = StatusSoaking
		case r.WaitingForWindow != nil:
			s.Status = StatusWaiting
		default:
			s.Status = StatusRunning
		}
	case request == state.RequestCancel || strings.HasPrefix(r.Note, "paused by cancel"):
		s.Status = StatusPaused
	case strings.Contains(r.Note, windowClosedNote):
		s.Status = StatusWindowOver
	case r.Cloud != nil && r.Cloud.SoakUntil != nil && (phase == plan.PhaseSoak || strings.HasPrefix(r.Note, "soaking until")):
		s.Status = StatusSoaking
		if !now.Before(*r.Cloud.SoakUntil) {
			s.Status = StatusSoakOver
		}
	default:
		// Neither finished nor stopped by an error, and no process holds the
		// lock: killed (kill -9, a lost machine) before it could say why.
		s.Status = StatusInterrupted
	}
	if r.FinishedAt == nil && !alive && !r.UpdatedAt.IsZero() {
		end = r.UpdatedAt // frozen at the run's last word
	}
	if !r.StartedAt.IsZero() && end.After(r.StartedAt) {
		s.ElapsedSeconds = int64(end.Sub(r.StartedAt) / time.Second)
	}
	return s
}

// rolledBack reports whether the record is of a rollback: blue/green's, or
// an eks or surge run sent back to the launch template version the group
// launched before (the rollback command's recorded request).
func rolledBack(r *state.Record) bool {
	if plan.Phase(r.Phase) == plan.PhaseRollback || strings.HasPrefix(r.Note, "rolled back") {
		return true
	}
	c := r.Cloud
	return c != nil && c.FromVersion != "" && c.TargetVersion == c.FromVersion &&
		r.Request != nil && r.Request.Cloud.Version == c.FromVersion
}

// interruptedError is what a run records as its last error when Ctrl-C or
// SIGTERM stopped it.
const interruptedError = session.InterruptedError

// interrupted reports whether a recorded error is an interruption (Ctrl-C,
// SIGTERM) rather than a failure; older versions recorded "context canceled".
func interrupted(lastError string) bool {
	return lastError == context.Canceled.Error() || strings.HasPrefix(lastError, "interrupted")
}

// lastErrorText is the recorded error as status shows it.
func lastErrorText(s RunStatus) string {
	if interrupted(s.LastError) {
		return interruptedError
	}
	return s.LastError
}

// lastErrorCell is the LAST ERROR cell: one line, cut to fit unless wide.
func lastErrorCell(s RunStatus, wide bool) string {
	msg := lastErrorText(s)
	limit := 60
	if wide {
		limit = 0
	}
	return output.OrNone(output.OneLine(msg, limit))
}

// batchCell is "n/m" in the phases that work on a batch, "-" elsewhere.
func batchCell(r *state.Record) string {
	if r.FinishedAt != nil || !plan.BatchPhase(plan.Phase(r.Phase)) || r.Batches == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", min(r.Batch, r.Batches), r.Batches)
}

// inFlightCell names the nodes in flight: the first two and a count of the
// others, or all of them when wide.
func inFlightCell(nodes []string, wide bool) string {
	if wide || len(nodes) <= 2 {
		return output.OrNone(strings.Join(nodes, ","))
	}
	return fmt.Sprintf("%s +%d more", strings.Join(nodes[:2], ","), len(nodes)-2)
}

func writeStatusTable(w io.Writer, runs []RunStatus, wide bool, now time.Time) error {
	header := []any{"Node group", "Status", "Phase", "Batch", "Done", "Left", "In flight", "Elapsed", "Last error"}
	if wide {
		header = append(header, "Strategy", "Target", "Holder", "Updated")
	}
	t := output.NewTable(w, header...)
	for _, s := range runs {
		r := s.Record
		row := []any{r.NodeGroup, s.Status, output.OrNone(r.Phase), batchCell(r), fmt.Sprint(len(r.Counted())), fmt.Sprint(r.Left()),
			inFlightCell(r.InFlight, wide), duration.HumanDuration(time.Duration(s.ElapsedSeconds) * time.Second), lastErrorCell(s, wide)}
		if wide {
			holder := "<none>"
			if s.Alive {
				holder = output.OrNone(r.Holder)
			}
			updated := "<unknown>"
			if !r.UpdatedAt.IsZero() {
				updated = duration.HumanDuration(now.Sub(r.UpdatedAt)) + " ago"
			}
			row = append(row, output.OrNone(r.Strategy), targetCell(r), holder, updated)
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

func targetCell(r *state.Record) string {
	var parts []string
	if r.Cloud != nil && r.Cloud.TargetVersion != "" {
		_, template := r.Cloud.Kinds()
		parts = append(parts, template+" version "+r.Cloud.TargetVersion)
	} else if r.Managed != nil && r.Managed.Target != "" {
		parts = append(parts, r.Managed.Target)
	}
	keys := make([]string, 0, len(r.Target))
	for k := range r.Target {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+r.Target[k])
	}
	return output.OrNone(strings.Join(parts, ","))
}

// writeDetails prints, under the table, the cloud side of each run, what a
// short-lived run left running, and notes.
func (o *StatusOptions) writeDetails(ctx context.Context, runs []RunStatus) error {
	now := o.now()
	// Short-lived runs: which of the nodes left running are still there,
	// from one list of the nodes.
	nodeCreated := map[string]time.Time{}
	if slices.ContainsFunc(runs, func(s RunStatus) bool { return len(s.LeftRunning) > 0 }) {
		nodes, err := o.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, n := range nodes.Items {
			nodeCreated[n.Name] = n.CreationTimestamp.Time
		}
	}
	for _, s := range runs {
		r := s.Record
		if c := r.Cloud; c != nil {
			group, template := c.Kinds()
			line := fmt.Sprintf("%s: %s %q%s", r.NodeGroup, group, c.Group, targetText(c, template))
			if c.Original != nil {
				line += fmt.Sprintf("; before the run %s, desired last set %d", c.Original, c.LastDesired)
			}
			if c.Shrinking != "" {
				line += fmt.Sprintf("; scale-down removing %q", c.Shrinking)
			}
			if c.Green != "" {
				line += fmt.Sprintf("; green %s %q", group, c.Green)
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
		if m := r.Managed; m != nil && r.Cloud == nil && m.Service != "" {
			fmt.Fprintln(o.Out, managedLine(r.NodeGroup, m))
		}
		if len(r.LeftRunning) > 0 {
			fmt.Fprintln(o.Out, shortLivedLine(r, nodeCreated, now))
		}
		if w := r.WaitingForWindow; w != nil && s.Alive {
			fmt.Fprintf(o.Out, "%s: waiting for window until %s (in %s)\n", r.NodeGroup, w.Format(time.RFC3339), w.Sub(now).Round(time.Second))
		}
		if where := inClusterWhere(s, o.StateNamespace); where != "" {
			fmt.Fprintf(o.Out, "%s: %s\n", r.NodeGroup, where)
		}
		if r.Note != "" {
			fmt.Fprintf(o.Out, "%s: note: %s\n", r.NodeGroup, r.Note)
		}
	}
	return nil
}

// managedLine names the group of a run its service updates, what the
// update moves it to and the service's update.
// targetText is what the group launches, as the record knows it: the
// version the run set, or the plan's template where the run sets none (a
// Karpenter NodePool's NodeClass), or nothing.
func targetText(c *state.CloudRecord, template string) string {
	switch {
	case c.TargetVersion != "":
		return ", " + plan.TemplateText(template, c.Template, c.TargetVersion)
	case c.Template != "":
		return fmt.Sprintf(", %s %s", template, c.Template)
	}
	return ""
}

func managedLine(nodeGroup string, m *state.ManagedRecord) string {
	line := fmt.Sprintf("%s: %s %q, to %s", nodeGroup, m.Service, m.Group, output.OrNone(m.Target))
	if m.UpdateID != "" {
		line += fmt.Sprintf("; update %s", m.UpdateID)
	}
	return line
}

// watch follows one run: a line at each change of its record or lock, until
// the run stops; the exit code says how it stopped. Ctrl-C stops the
// watching, not the run: it exits 0 and suggests nothing.
func (o *StatusOptions) watch(ctx context.Context) error {
	err := o.follow(ctx)
	if ctx.Err() != nil {
		fmt.Fprintf(o.ErrOut, "stopped watching %q; the run, if any, goes on\n", o.NodeGroup)
		return nil
	}
	return err
}

// follow prints the run's lines until it stops or ctx ends.
func (o *StatusOptions) follow(ctx context.Context) error {
	store := &state.Store{Client: o.client, Namespace: o.StateNamespace}
	// Watch before the first look, so no change falls between the two.
	w := &runWatch{o: o, opts: metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", state.ObjectName(o.NodeGroup)).String()}}
	if err := w.start(ctx); err != nil {
		return err
	}
	defer w.stop()
	ticker := time.NewTicker(o.recheck)
	defer ticker.Stop()
	var last string
	for {
		cur, stopped, err := o.lookAtRun(ctx, store, &last)
		if err != nil {
			return err
		}
		if stopped {
			return watchEnd(cur)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		case _, ok := <-w.records.ResultChan():
			if !ok { // the API server ends watches now and then: start again
				w.records = nil
			}
		case _, ok := <-w.locks.ResultChan():
			if !ok {
				w.locks = nil
			}
		}
		if err := w.start(ctx); err != nil {
			return err
		}
	}
}

// lookAtRun prints a line when the run's status reads otherwise than last,
// and reports whether the run has stopped.
func (o *StatusOptions) lookAtRun(ctx context.Context, store *state.Store, last *string) (RunStatus, bool, error) {
	rec, err := store.Load(ctx, o.NodeGroup)
	if err != nil {
		return RunStatus{}, false, err
	}
	if rec == nil {
		// As kubectl get -w: wait for the run to exist.
		if *last == "" {
			*last = "waiting"
			_, err = fmt.Fprintf(o.Out, "%s waiting for a run of %q (no record in namespace %q yet; check --state-namespace if one is running)\n", o.now().Format("15:04:05"), o.NodeGroup, o.StateNamespace)
		}
		return RunStatus{}, false, err
	}
	cur, err := o.statusOf(ctx, rec)
	if err != nil {
		return cur, false, err
	}
	if cur.Held, err = o.heldNow(ctx, cur); err != nil {
		return cur, false, err
	}
	if line := o.watchLine(cur); line != *last {
		if err := o.printWatched(cur, line); err != nil {
			return cur, false, err
		}
		*last = line
	}
	return cur, !cur.Alive || cur.FinishedAt != nil, nil
}

// runWatch wakes status -w at each change of a run's record or lock.
type runWatch struct {
	o              *StatusOptions
	opts           metav1.ListOptions
	records, locks watch.Interface
}

// start opens the watches not open (at first, or ended by the API server).
func (w *runWatch) start(ctx context.Context) error {
	var err error
	if w.records == nil {
		if w.records, err = w.o.client.CoreV1().ConfigMaps(w.o.StateNamespace).Watch(ctx, w.opts); err != nil {
			return fmt.Errorf("cannot watch the record of %q: %w", w.o.NodeGroup, err)
		}
	}
	if w.locks == nil {
		if w.locks, err = w.o.client.CoordinationV1().Leases(w.o.StateNamespace).Watch(ctx, w.opts); err != nil {
			return fmt.Errorf("cannot watch the lock of %q: %w", w.o.NodeGroup, err)
		}
	}
	return nil
}

func (w *runWatch) stop() {
	for _, wi := range []watch.Interface{w.records, w.locks} {
		if wi != nil {
			wi.Stop()
		}
	}
}

// watchLine is one line of -w: what changed is read from it.
func (o *StatusOptions) watchLine(s RunStatus) string {
	r := s.Record
	parts := []string{s.Status}
	if r.Phase != "" {
		parts = append(parts, "phase "+r.Phase)
	}
	if b := batchCell(r); b != "-" {
		parts = append(parts, "batch "+b)
	}
	parts = append(parts, fmt.Sprintf("%d of %d nodes done", len(r.Counted()), r.NodesTotal))
	if len(r.InFlight) > 0 {
		parts = append(parts, "in flight "+strings.Join(r.InFlight, ","))
	}
	if w := r.WaitingForWindow; w != nil && s.Alive {
		parts = append(parts, "waiting for window until "+w.Format(time.RFC3339))
	}
	if len(s.Held) > 0 {
		parts = append(parts, heldText(s.Held))
	}
	if where := inClusterWhere(s, o.StateNamespace); where != "" {
		parts = append(parts, where)
	}
	if r.LastError != "" {
		parts = append(parts, "last error: "+output.OneLine(lastErrorText(s), 200))
	}
	return r.NodeGroup + ": " + strings.Join(parts, ", ")
}

func (o *StatusOptions) printWatched(s RunStatus, line string) error {
	if !output.IsTable(o.Output) {
		return output.Print(o.Out, o.Output, s)
	}
	_, err := fmt.Fprintf(o.Out, "%s %s\n", o.now().Format("15:04:05"), line)
	return err
}

// watchEnded is how a followed run stopped, as an exit code.
type watchEnded struct {
	msg  string
	code int
}

func (e *watchEnded) Error() string { return e.msg }
func (e *watchEnded) exitCode() int { return e.code }

// watchEnd is nil for a run that finished, else an error saying how it
// stopped, with the exit code run itself would have had.
func watchEnd(s RunStatus) error {
	g := s.NodeGroup
	switch s.Status {
	case StatusFinished, StatusRolledBack, StatusAborted:
		return nil
	case StatusPaused:
		return &watchEnded{fmt.Sprintf("the run on %q is paused; continue it with \"kubectl nodeupgrade resume %s\"", g, g), ExitPaused}
	case StatusSoaking, StatusSoakOver:
		return &watchEnded{fmt.Sprintf("the run on %q was left soaking; resume it after the soak, or end the soak with \"kubectl nodeupgrade complete %s\"", g, g), ExitPaused}
	case StatusWindowOver:
		return &watchEnded{fmt.Sprintf("the run on %q stopped at its --not-after: %s", g, s.Note), ExitPaused}
	case StatusFailed:
		return &watchEnded{fmt.Sprintf("the run on %q failed: %s", g, output.OneLine(s.LastError, 0)), ExitFailure}
	}
	return &watchEnded{fmt.Sprintf("the run on %q stopped before it finished (%s); run the same command again or \"kubectl nodeupgrade resume %s\", or put the group back in service with \"kubectl nodeupgrade abort %s\"", g, s.Status, g, g), ExitFailure}
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

// windowClosedNote is in the note of a run stopped at --not-after
// (upgrade.WindowClosedError).
const windowClosedNote = "no maintenance window opens before --not-after"
