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
// history: at each batch's end (at most every reportEvery) and at the end.
type runReport struct {
	s         *Session
	pl        *Planned
	rec       *state.Record
	journal   *report.Journal
	mu        sync.Mutex
	base      report.History // as before this attempt
	lastSaved time.Time
	warned    bool
}

// reportEvery bounds how often a run writes its report during batches.
const reportEvery = 30 * time.Second

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
	return &runReport{s: s, pl: pl, rec: rec, base: base, journal: report.NewJournal(time.Now, batches)}
}

// progressed writes the report at a batch's end, now and then.
func (r *runReport) progressed(ctx context.Context, st plan.State) {
	if r == nil || st.Phase != plan.PhaseRecover || time.Since(r.lastSaved) < reportEvery {
		return
	}
	r.save(ctx, "running", nil)
}

// finish writes the report of the attempt that ended with err.
func (r *runReport) finish(ctx context.Context, err error) {
	if r == nil {
		return
	}
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
	r.save(ctx, outcome, finished)
}

func (r *runReport) save(ctx context.Context, outcome string, finished *time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.journal.Run()
	run.Outcome, run.FinishedAt, run.Strategy = outcome, finished, r.pl.Strategy
	run.Estimate = report.Duration(r.pl.EstimatedDuration())
	run.PairReplacements(r.replacements(ctx))
	h := report.History{Runs: append([]report.Run(nil), r.base.Runs...)}
	h.Add(r.rec.StartedAt, run)
	r.lastSaved = time.Now()
	if err := r.s.Store().SaveReports(ctx, r.pl.Request.RecordName(), &h); err != nil && !r.warned {
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
		rep.progressed(ctx, st)
		return onProgress(ctx, st, done)
	}
	return rep
}
