package session

import (
	"context"
	"errors"
	"fmt"
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
// most the last flushEvery of its journal.
type runReport struct {
	s       *Session
	pl      *Planned
	rec     *state.Record
	journal *report.Journal
	base    report.History // as before this attempt
	ctx     context.Context
	every   time.Duration

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

// startReport begins the report of the attempt of rec's run; nil (and a
// warning) when the history cannot be read: the run goes on without.
func (s *Session) startReport(ctx context.Context, pl *Planned, rec *state.Record) *runReport {
	base, err := s.Store().LoadReports(ctx, pl.Request.RecordName())
	if err != nil {
		fmt.Fprintf(s.ErrOut, "warning: %v; this run keeps no report\n", err)
		return nil
	}
	var batches [][]string
	for _, b := range pl.Batches {
		var names []string
		for _, n := range b.Nodes {
			names = append(names, n.Name)
		}
		batches = append(batches, names)
	}
	r := &runReport{s: s, pl: pl, rec: rec, base: base, ctx: ctx, every: flushEvery, journal: report.NewJournal(time.Now, batches)}
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
		r.save(r.ctx, "running", nil, false)
	})
}

// finish writes the report of the attempt that ended with err: always,
// even when ctx was cancelled, and nothing after it.
func (r *runReport) finish(ctx context.Context, err error) {
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
	outcome := "finished"
	var finished *time.Time
	switch {
	case err == nil:
		now := time.Now().UTC().Truncate(time.Second)
		finished = &now
	case errors.Is(err, context.Canceled):
		outcome = InterruptedError
	default:
		outcome = output.OneLine(err.Error(), 300)
	}
	r.save(ctx, outcome, finished, true)
}

// save writes the history with this attempt as far as it got; last says
// it is the attempt's last write, after which no other is made.
func (r *runReport) save(ctx context.Context, outcome string, finished *time.Time, last bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = last
	run := r.journal.Run()
	run.Outcome, run.FinishedAt, run.Strategy = outcome, finished, r.pl.Strategy
	run.Estimate = report.Duration(r.pl.EstimatedDuration())
	run.PairReplacements(r.replacements(ctx))
	h := report.History{Runs: append([]report.Run(nil), r.base.Runs...)}
	h.Add(r.rec.StartedAt, run)
	if err := r.s.Store().SaveReports(ctx, r.pl.Request.RecordName(), &h); err != nil && !r.warned && ctx.Err() == nil {
		r.warned = true
		fmt.Fprintf(r.s.ErrOut, "warning: %v (the upgrade goes on)\n", err)
	}
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
		if n.CreationTimestamp.Time.Before(r.rec.StartedAt) {
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
func (s *Session) withReport(ctx context.Context, pl *Planned, rec *state.Record, cfg *upgrade.Config) *runReport {
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
