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
// run's lifecycle status (session.Describe), from the record and the lock.
const (
	StatusRunning     = string(state.StateRunning)        // a live process drives it
	StatusPausing     = string(session.StatusPausing)     // alive, asked by cancel to stop at its next safe point
	StatusPaused      = string(state.StatePaused)         // stopped by cancel; resume continues it
	StatusSoaking     = string(state.StateSoaking)        // blue/green soak: alive and waiting, or left soaking with --no-wait
	StatusSoakOver    = string(session.StatusSoakOver)    // left soaking with --no-wait, and the soak has ended: resume deletes blue
	StatusWaiting     = string(state.StateWaiting)        // alive, holding its next batch until a maintenance window opens (--window, --not-before)
	StatusWindowOver  = string(state.StateWindowClosed)   // stopped at --not-after with no window left: the same command with a later --not-after goes on
	StatusQuarantined = string(state.StateQuarantined)    // went on around nodes --undrainable cordon quarantined, and stopped with them left (NOTE names them): the same command replaces them
	StatusRollingBack = string(session.StatusRollingBack) // alive, undoing the upgrade
	StatusRolledBack  = string(state.StateRolledBack)     // the rollback finished
	StatusFinished    = string(state.StateFinished)       // the upgrade finished
	StatusAborted     = string(state.StateAborted)        // put back in service by the abort command before it finished
	StatusInterrupted = string(state.StateInterrupted)    // stopped by Ctrl-C, SIGTERM or a kill before it finished; run it again
	StatusFailed      = string(state.StateFailed)         // stopped by an error (LAST ERROR says why); fix it and run again
	StatusSubmitted   = string(state.StateSubmitted)      // handed to an in-cluster Job whose pod has not started it
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
	// Next are the commands the run takes now that move it on, in the
	// order an operator would reach for them (session.Run.Next).
	Next []string `json:"next,omitempty"`
	// Held are the pods and PDBs that hold the nodes a live run drains,
	// read as status -w looks (heldNow), or, where the service drains,
	// as the run following it recorded them.
	Held []HeldNow `json:"held,omitempty"`
	// Submitted is the Job a submitted run was handed to and its pod,
	// with why that pod has not started the run.
	Submitted *session.JobPod `json:"submitted,omitempty"`
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
	if err := connectClient(o.configFlags, &o.client); err != nil {
		return err
	}
	if o.Watch {
		return o.watch(ctx)
	}
	runs, err := o.look(ctx)
	if err != nil {
		return err
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

// look is the run of NODEGROUP, or every recorded run, through the
// session's lifecycle.
func (o *StatusOptions) look(ctx context.Context) ([]RunStatus, error) {
	sess := &session.Session{Client: o.client, StateNamespace: o.StateNamespace}
	var runs []*session.Run
	if o.NodeGroup != "" {
		run, err := sess.Look(ctx, o.NodeGroup)
		if err != nil {
			return nil, err
		}
		if run == nil {
			return nil, o.noRecord()
		}
		runs = append(runs, run)
	} else {
		var err error
		if runs, err = sess.Runs(ctx); err != nil {
			return nil, err
		}
	}
	var statuses []RunStatus
	for _, r := range runs {
		st := describeRun(r.Record, r.Alive, r.Request, o.now())
		st.Submitted = sess.Jobs().SubmittedPod(ctx, r.Record)
		statuses = append(statuses, st)
	}
	return statuses, nil
}

// describeRun is the run of r as status shows it: its lifecycle status
// (session.Describe), whether its lock is held by a live process, a
// pending request, and how long it ran.
func describeRun(r *state.Record, alive bool, request string, now time.Time) RunStatus {
	s := RunStatus{Record: r, Alive: alive, Request: request}
	v := session.Describe(r, alive, request, now)
	s.Status = string(v.Status)
	for _, cmd := range v.Next() {
		s.Next = append(s.Next, string(cmd))
	}
	end := now
	switch {
	case r.FinishedAt != nil:
		end = *r.FinishedAt
	case !alive && !r.UpdatedAt.IsZero():
		end = r.UpdatedAt // frozen at the run's last word
	}
	if !r.StartedAt.IsZero() && end.After(r.StartedAt) {
		s.ElapsedSeconds = int64(end.Sub(r.StartedAt) / time.Second)
	}
	if m := r.Managed; m != nil && alive && r.FinishedAt == nil {
		// The service drains: the run following it recorded what holds it.
		for _, h := range m.Held {
			s.Held = append(s.Held, HeldNow{Node: h.Node, Pod: h.Pod, PDB: h.PDB})
		}
	}
	return s
}

// interruptedError is what a run records as its last error when Ctrl-C or
// SIGTERM stopped it.
const interruptedError = session.InterruptedError

// lastErrorText is the recorded error as status shows it.
func lastErrorText(s RunStatus) string {
	if s.Status == StatusInterrupted && s.LastError != "" {
		return interruptedError // older versions recorded "context canceled"
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
		o.writeRunDetails(s, nodeCreated, now)
	}
	return nil
}

// writeRunDetails is what the table leaves out of one run: its group in
// the provider's words, the window it waits for, where it runs, its note
// and its next steps.
func (o *StatusOptions) writeRunDetails(s RunStatus, nodeCreated map[string]time.Time, now time.Time) {
	r := s.Record
	if r.Cloud != nil {
		fmt.Fprintln(o.Out, cloudLine(s, now))
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
	if s.Submitted != nil {
		fmt.Fprintf(o.Out, "%s: submitted to %s\n", r.NodeGroup, s.Submitted)
	}
	if where := inClusterWhere(s, o.StateNamespace); where != "" {
		fmt.Fprintf(o.Out, "%s: %s\n", r.NodeGroup, where)
	}
	writeGateLines(o.Out, r, now)
	writeSurgeLines(o.Out, r, s.Alive, now)
	if r.Note != "" {
		fmt.Fprintf(o.Out, "%s: note: %s\n", r.NodeGroup, r.Note)
	}
	if next := session.Describe(r, s.Alive, s.Request, now).Suggest(); next != "" && o.NodeGroup != "" {
		fmt.Fprintf(o.Out, "%s: next: %s\n", r.NodeGroup, next)
	}
}

// managedLine names the group of a run its service updates, what the
// update moves it to and the service's update.
// targetText is what the group launches, as the record knows it: the
// version the run set, or the plan's template where the run sets none (a
// Karpenter NodePool's NodeClass), or nothing.
// cloudLine names the run's group in the provider's words, what the group
// launches as the run left it, and the rest of its cloud record.
func cloudLine(s RunStatus, now time.Time) string {
	r, c := s.Record, s.Record.Cloud
	group, template := c.Kinds()
	rollback := s.Status == StatusRolledBack || plan.Phase(r.Phase) == plan.PhaseRollback
	line := fmt.Sprintf("%s: %s %q%s", r.NodeGroup, group, c.Group, targetText(c, template))
	switch {
	case s.Status == StatusAborted && c.TargetVersion != "":
		// Abort gives the group back its default of before (its note
		// says which): the version is where the run was going.
		line = fmt.Sprintf("%s: %s %q; the run was on its way to%s", r.NodeGroup, group, c.Group, strings.TrimPrefix(targetText(c, template), ","))
	case rollback && c.FromVersion != "" && c.TargetVersion != c.FromVersion:
		// The rollback takes the group back to the version it launched
		// before: the target is where the run was going, no longer used.
		back := *c
		back.TargetVersion = c.FromVersion
		line = fmt.Sprintf("%s: %s %q%s, back from%s", r.NodeGroup, group, c.Group, targetText(&back, template), strings.TrimPrefix(targetText(c, template), ","))
	}
	if c.Original != nil {
		line += fmt.Sprintf("; before the run %s, desired last set %d", c.Original, c.LastDesired)
	}
	if c.Shrinking != "" {
		line += fmt.Sprintf("; scale-down removing %q", c.Shrinking)
	}
	line += greenText(c, group, s.Status)
	if c.SoakUntil != nil && r.FinishedAt == nil && !rollback {
		if left := c.SoakUntil.Sub(now); left > 0 {
			line += fmt.Sprintf("; soaking until %s (%s left)", c.SoakUntil.Format(time.RFC3339), left.Round(time.Second))
		} else {
			line += "; soak over"
		}
	}
	return line
}

// greenText names a blue/green run's green group as it stands: one the
// rollback made by the run deleted is gone.
func greenText(c *state.CloudRecord, group, status string) string {
	switch {
	case c.Green == "":
		return ""
	case status == StatusRolledBack && c.GreenCreated:
		return fmt.Sprintf("; green %s %q deleted by the rollback", group, c.Green)
	case status == StatusRolledBack:
		return fmt.Sprintf("; green %s %q (given to the run) kept, drained", group, c.Green)
	}
	return fmt.Sprintf("; green %s %q", group, c.Green)
}

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
		cur, stopped, err := o.lookAtRun(ctx, &last)
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
func (o *StatusOptions) lookAtRun(ctx context.Context, last *string) (RunStatus, bool, error) {
	run, err := (&session.Session{Client: o.client, StateNamespace: o.StateNamespace}).Look(ctx, o.NodeGroup)
	if err != nil {
		return RunStatus{}, false, err
	}
	if run == nil {
		// As kubectl get -w: wait for the run to exist.
		if *last == "" {
			*last = "waiting"
			_, err = fmt.Fprintf(o.Out, "%s waiting for a run of %q (no record in namespace %q yet; check --state-namespace if one is running)\n", o.now().Format("15:04:05"), o.NodeGroup, o.StateNamespace)
		}
		return RunStatus{}, false, err
	}
	cur := describeRun(run.Record, run.Alive, run.Request, o.now())
	if cur.Held == nil {
		if cur.Held, err = o.heldNow(ctx, cur); err != nil {
			return cur, false, err
		}
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
	if surged := surgedText(r); surged != "" {
		parts = append(parts, surged)
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
// stopped, with the exit code run itself would have had, and the next
// steps its lifecycle takes.
func watchEnd(s RunStatus) error {
	g := s.NodeGroup
	v := session.Describe(s.Record, s.Alive, s.Request, time.Now())
	var msg string
	code := ExitPaused
	switch s.Status {
	case StatusFinished, StatusRolledBack, StatusAborted:
		return nil
	case StatusPaused:
		msg = fmt.Sprintf("the run on %q is paused %s", g, v.Where())
	case StatusSoaking, StatusSoakOver:
		msg = fmt.Sprintf("the run on %q was left soaking", g)
	case StatusWindowOver:
		msg = fmt.Sprintf("the run on %q stopped at its --not-after: %s", g, s.Note)
	case StatusQuarantined:
		msg = fmt.Sprintf("the run on %q stopped with nodes quarantined: %s", g, s.Note)
	case StatusFailed:
		msg, code = fmt.Sprintf("the run on %q failed: %s", g, output.OneLine(s.LastError, 0)), ExitFailure
	default:
		msg, code = fmt.Sprintf("the run on %q stopped before it finished (%s)", g, s.Status), ExitFailure
	}
	if next := v.Suggest(); next != "" {
		msg += "; " + next
	}
	return &watchEnded{msg, code}
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
