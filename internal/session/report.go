package session

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/report"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// runReport keeps this attempt's journal in the node group's report
// history: soon after each change a report shows (coalesced: at most one
// write every flushEvery), and at the end, so that a run killed loses at
// most the last flushEvery of its journal. Each write puts the attempt
// whole in place of its last one over the history as it was before the
// attempt: writing it again changes nothing.
type runReport struct {
	s        *Session
	pl       *Planned
	started  time.Time     // the run's start, its key in the history
	attempt  state.Attempt // the record's attempt this one is
	journal  *report.Journal
	base     report.History // as before this attempt; never changed
	ctx      context.Context
	every    time.Duration
	now      func() time.Time
	strategy string
	estimate report.Duration
	soak     report.Duration // of estimate, the node-pool soak

	mu     sync.Mutex // one write at a time
	ended  bool       // the attempt's last report is written
	warned bool

	tmu       sync.Mutex // the coalescing of writes
	timer     *time.Timer
	lastSaved time.Time
	closed    bool
}

// flushEvery bounds how often a run writes its report: the ConfigMap is
// written at most this often however fast its nodes move.
const flushEvery = 3 * time.Second

// startReport begins the report of the attempt under way of rec's run;
// nil (and a warning) when the history cannot be read: the run goes on
// without.
func (s Reports) startReport(ctx context.Context, pl *Planned, rec *state.Record) *runReport {
	base, err := s.store().LoadReports(ctx, pl.Request.RecordName())
	if err != nil {
		fmt.Fprintf(s.ErrOut, "warning: %v; this run keeps no report\n", err)
		return nil
	}
	r := &runReport{s: s.Session, pl: pl, started: rec.StartedAt, attempt: rec.CurrentAttempt(), base: base, ctx: ctx, every: flushEvery, now: time.Now,
		strategy: pl.Strategy, estimate: report.Duration(pl.EstimatedDuration()), soak: report.Duration(pl.SoakEstimate())}
	if r.attempt.StartedAt.IsZero() {
		r.attempt.StartedAt = time.Now().UTC() // a record written without attempts
	}
	r.journal = report.NewJournal(func() time.Time { return r.now() })
	r.journal.OnChange(r.changed)
	return r
}

// changed schedules a write of the report: at once when the last one is
// flushEvery old, else when it will be; a write scheduled takes every
// change until it happens.
func (r *runReport) changed() {
	if r == nil {
		return
	}
	r.tmu.Lock()
	defer r.tmu.Unlock()
	if r.closed || r.timer != nil {
		return
	}
	r.timer = time.AfterFunc(max(r.every-time.Since(r.lastSaved), 0), func() {
		r.tmu.Lock()
		r.timer, r.lastSaved = nil, time.Now()
		r.tmu.Unlock()
		r.save(r.ctx, nil)
	})
}

// finish ends the attempt under way in rec, as rec says it ended, and
// writes its report (err is what stopped it): always, even when ctx was
// cancelled, and nothing after it. r may be nil: a run without a report
// still ends its attempt.
func (r *runReport) finish(ctx context.Context, rec *state.Record, err error) {
	clock := time.Now
	if r != nil {
		clock = r.now
	}
	now := clock()
	outcome := Outcome(rec, false, "", now)
	rec.EndAttempt(now, outcome)
	if r == nil {
		return
	}
	r.tmu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.tmu.Unlock()
	end := &attemptEnd{outcome: outcome, finished: rec.FinishedAt, gates: gatesReported(rec)}
	if err != nil {
		end.err = output.OneLine(err.Error(), 300)
	}
	r.save(ctx, end)
}

// attemptEnd is how an attempt ended: in status's words, the error that
// stopped it, when the run finished (nil: it did not), and its gates'
// verdicts, kept in the history for when its record is gone.
type attemptEnd struct {
	outcome, err string
	finished     *time.Time
	gates        []report.GateVerdict // the run's, as its record has them at the end
}

// save writes the history with this attempt as far as it got; end, when
// set, says how it ended: the attempt's last write, after which no other
// is made.
func (r *runReport) save(ctx context.Context, end *attemptEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = end != nil
	a := r.journal.Attempt()
	a.Kind, a.Pod, a.StartedAt = string(r.attempt.Kind), r.attempt.Pod, r.attempt.StartedAt
	a.Fresh = r.replacements(ctx)
	run := report.Run{StartedAt: r.started, UpdatedAt: a.LastSeen, Strategy: r.strategy, Estimate: r.estimate, Soak: r.soak}
	if end != nil {
		a.EndedAt, a.Outcome, a.Error = &a.LastSeen, end.outcome, end.err
		run.Outcome, run.FinishedAt, run.Gates = end.outcome, end.finished, end.gates
	}
	h := r.base.With(run, a)
	if err := r.s.store().SaveReports(ctx, r.pl.Request.RecordName(), h); err != nil && !r.warned && ctx.Err() == nil {
		r.warned = true
		fmt.Fprintf(r.s.ErrOut, "warning: %v (the upgrade goes on)\n", err)
	}
}

// beginAttempt adds to rec the attempt this run of pl, by holder, is.
func beginAttempt(rec *state.Record, pl *Planned, holder string) {
	kind, pod := state.AttemptRerun, ""
	if p, ok := JobOfHolder(pl.Request.RecordName(), holder); ok {
		kind, pod = state.AttemptInCluster, p
	}
	switch {
	case pl.Request.Rollback || rollsBackInPlace(rec, pl.Request.Request):
		// blue/green's rollback, or an eks or surge run sent back to the
		// version the group launched before
		kind = state.AttemptRollback
	case kind == state.AttemptInCluster:
	case len(rec.Attempts) == 0 && rec.Phase == "" && len(rec.Done) == 0:
		kind = state.AttemptRun // a new record: the run's first
	case pl.Request.Given == nil:
		kind = state.AttemptResume // the recorded request, repeated
	}
	rec.BeginAttempt(kind, pod, time.Now())
}

// replacements are the group's nodes that joined since the run started,
// with when each became Ready.
func (r *runReport) replacements(ctx context.Context) []report.Replacement {
	selector := r.pl.Selector
	if selector == "" {
		selector = r.pl.NodeGroupLabel + "=" + r.pl.NodeGroup
	}
	nodes, err := r.s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil // the timelines stand without them
	}
	var out []report.Replacement
	for _, n := range nodes.Items {
		if n.CreationTimestamp.Time.Before(r.started) {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, report.Replacement{Name: n.Name, Ready: c.LastTransitionTime.Time})
			}
		}
	}
	return out
}

// withReport starts the attempt's report and has cfg feed its journal.
func (s Reports) withReport(ctx context.Context, pl *Planned, rec *state.Record, cfg *upgrade.Config) *runReport {
	rep := s.startReport(ctx, pl, rec)
	if rep == nil {
		return nil
	}
	cfg.Journal = rep.journal
	cfg.Events.Observe(rep.journal.NodeEvent)
	onProgress := cfg.OnProgress
	cfg.OnProgress = func(ctx context.Context, st plan.State, done []string) error {
		rep.changed() // a new node's Ready is read when the report is written
		return onProgress(ctx, st, done)
	}
	return rep
}

// Report is the report of group's last runs (runs of them; 0: every one
// kept): as its runs wrote them, the newest as its record, its lock and a
// request not taken yet say it stands now (what status says of it).
func (s Reports) Report(ctx context.Context, group string, runs int) (report.Report, error) {
	h, err := s.store().LoadReports(ctx, group)
	if err != nil {
		return report.Report{}, err
	}
	// The lock before the record: a run writes its last record, then
	// gives the lock up, so a record read after the lock was seen free is
	// final.
	lock := &state.Lock{Client: s.Client, Namespace: s.StateNamespace, Group: group, Holder: "report/probe", Duration: LockDuration}
	alive, err := lock.Held(ctx)
	if err != nil {
		return report.Report{}, err
	}
	rec, err := s.store().Load(ctx, group)
	if err != nil {
		return report.Report{}, err
	}
	if rec != nil {
		request, err := s.Requests(group).Pending(ctx)
		if err != nil {
			return report.Report{}, err
		}
		h = withRecord(h, rec, alive, request, time.Now())
	}
	if runs > 0 && len(h.Runs) > runs {
		h.Runs = h.Runs[:runs]
	}
	return report.Of(group, h), nil
}

// withRecord is h with its run of rec as rec says it stands: its outcome,
// its end (now while alive), and the attempts rec has that wrote no
// report.
func withRecord(h report.History, rec *state.Record, alive bool, request string, now time.Time) report.History {
	i := slices.IndexFunc(h.Runs, func(r report.Run) bool { return r.StartedAt.Equal(rec.StartedAt) })
	if i < 0 {
		if len(rec.Attempts) == 0 {
			return h // a record of a version before attempts, whose report is gone
		}
		h.Runs = append([]report.Run{{StartedAt: rec.StartedAt, Strategy: rec.Strategy}}, h.Runs...)
		i = 0
	}
	h.Runs = slices.Clone(h.Runs)
	run := h.Runs[i]
	// Timed as status times it: to its end, else now while alive, else
	// the record's last word.
	run.Outcome, run.FinishedAt, run.UpdatedAt = Outcome(rec, alive, request, now), rec.FinishedAt, rec.UpdatedAt
	if alive && rec.FinishedAt == nil {
		run.UpdatedAt = now
	}
	run.Attempts = slices.Clone(run.Attempts)
	for _, ra := range rec.Attempts {
		k := slices.IndexFunc(run.Attempts, func(a report.Attempt) bool { return a.StartedAt.Equal(ra.StartedAt) })
		if k < 0 {
			run.Attempts = append(run.Attempts, report.Attempt{Kind: string(ra.Kind), Pod: ra.Pod, StartedAt: ra.StartedAt,
				EndedAt: ra.EndedAt, LastSeen: ra.StartedAt, Outcome: ra.Outcome})
			continue
		}
		if run.Attempts[k].Outcome == "" {
			run.Attempts[k].Outcome = ra.Outcome
		}
	}
	slices.SortStableFunc(run.Attempts, func(a, b report.Attempt) int { return a.StartedAt.Compare(b.StartedAt) })
	run.Surges, run.Gates = surgesReported(rec), gatesReported(rec)
	h.Runs[i] = run
	return h
}
