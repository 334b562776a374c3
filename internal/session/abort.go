package session

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// AbortTarget is the group to put back in service: its record key, the
// unfinished run's record (nil: none), the last run's when it is over,
// and, with no request recorded, how the run found its nodes and which
// taint it put (the flags; the finished run's record fills in the rest).
type AbortTarget struct {
	NodeGroup, Selector string
	Unfinished          *state.Record
	Finished            *state.Record
	NodeGroupLabel      string
	Taint               string
}

// Abort puts the target's group back in service under its lock, with the
// engine's abort, marks its run aborted, and keeps the record of a
// failure.
func (s Controls) Abort(ctx context.Context, t AbortTarget) error {
	group := RecordName(t.NodeGroup, t.Selector)
	cleanupCtx := context.WithoutCancel(ctx)
	ctx, holder, release, err := s.HoldLock(ctx, group)
	if err != nil {
		return err
	}
	defer release()
	if err := s.takeOver(ctx, t.Unfinished, group, holder); err != nil {
		return err
	}
	cfg, err := s.abortConfig(ctx, t)
	if err != nil {
		return err
	}
	if h := cfg.Plan.Hooks; h != nil && h.Any() && s.HookKubeconfig != nil {
		// The scale-down drains and removes nodes: their hooks run.
		path, remove, err := s.HookKubeconfig()
		if err != nil {
			return err
		}
		defer remove()
		cfg.Kubeconfig = path
	}
	rec := t.Unfinished
	// A run stopped after the service started its update, before it
	// recorded the ID: abort must see that update as the next run would,
	// or it puts the settings of before back under it.
	if err := FindStartedUpdate(ctx, cfg.Provider, rec); err != nil {
		return err
	}
	if rec != nil {
		cfg.Record, cfg.Save = rec, func(ctx context.Context) error { return s.store().Save(ctx, rec) }
	} else {
		cfg.Record = &state.Record{NodeGroup: group} // not saved: there is nothing to mark
	}
	engine, err := upgrade.New(cfg)
	if err != nil {
		return err
	}
	if err := CauseOf(ctx, engine.Abort(ctx)); err != nil {
		if rec != nil {
			rec.State, rec.LastError = state.StateFailed, "abort: "+err.Error()
			rec.EndAttempt(time.Now(), string(state.StateFailed))
			_ = s.store().Save(cleanupCtx, rec)
		}
		return fmt.Errorf("%w; the group is not fully back in service: fix the cause and run \"kubectl nodeupgrade abort %s\" again", err, group)
	}
	// Marked under the lock still: status -w never sees the run stopped
	// and not marked.
	return s.MarkAborted(cleanupCtx, t.Unfinished, group, engine.Note())
}

// takeOver makes abort the run's attempt under way (nil rec: no run
// recorded): a submitted Job is deleted first (its pod, should it start
// now, finds the lock held), and the record names the new holder, so
// status -w and an in-cluster abort's follower see the abort under way
// and report lists it.
func (s Controls) takeOver(ctx context.Context, rec *state.Record, group, holder string) error {
	if rec != nil && rec.State == state.StateSubmitted {
		if err := s.Jobs().deleteSubmittedJob(ctx, group); err != nil {
			return err
		}
	}
	if rec == nil || rec.Holder == holder {
		return nil
	}
	rec.Holder = holder
	rec.BeginAttempt(state.AttemptAbort, "", time.Now())
	return s.store().Save(ctx, rec)
}

// abortConfig is the configuration abort runs the engine with: the plan
// made again from the recorded request (as resume and rollback do), or,
// with no request recorded, just the group's nodes and the run's taint.
func (s Controls) abortConfig(ctx context.Context, t AbortTarget) (upgrade.Config, error) {
	rec := t.Unfinished
	if rec == nil || rec.Request == nil {
		return s.unrecordedAbortConfig(ctx, t)
	}
	pl, err := s.Replan(ctx, rec, "abort")
	if err != nil {
		return upgrade.Config{}, err
	}
	if rec.Cloud != nil && cloud.GroupName(pl.Provider) != rec.Cloud.Group {
		return upgrade.Config{}, fmt.Errorf("cannot abort: the run recorded %s group %q, which the nodes of %q no longer lead to; its sizes cannot be restored", rec.Cloud.Provider, rec.Cloud.Group, pl.Request.RecordName())
	}
	return s.EngineConfig(pl.Plan, pl.Request.Request, s.providerOf(pl))
}

// unrecordedAbortConfig is abort's configuration where no request was
// recorded (a first run killed before it wrote one): the group's nodes
// and the run's taint, from the flags or the last finished run's record.
func (s Controls) unrecordedAbortConfig(ctx context.Context, t AbortTarget) (upgrade.Config, error) {
	r := &Request{Request: plan.Request{NodeGroup: t.NodeGroup, Selector: t.Selector, NodeGroupLabel: t.NodeGroupLabel, Taint: t.Taint}}
	if f := t.Finished; f != nil && f.Request != nil {
		if r.NodeGroupLabel == "" {
			r.NodeGroupLabel = f.Request.NodeGroupLabel
		}
		if r.Taint == "" {
			r.Taint = f.Request.Taint
		}
	}
	if r.Taint != "" {
		taint, err := plan.ParseTaint(r.Taint)
		if err != nil {
			return upgrade.Config{}, err
		}
		r.taint = &taint
	}
	nodes, err := s.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return upgrade.Config{}, fmt.Errorf("error when listing nodes: %w", err)
	}
	in, err := s.Input(r, nodes.Items)
	if err != nil {
		return upgrade.Config{}, err
	}
	p := &plan.Plan{NodeGroup: in.NodeGroup, NodeGroupLabel: in.NodeGroupLabel, Selector: in.Selector, Strategy: string(plan.DefaultStrategy), Taint: plan.TaintString(in.Taint)}
	if t.Unfinished != nil && t.Unfinished.Strategy != "" {
		p.Strategy = t.Unfinished.Strategy
	}
	req := plan.Request{DrainTimeout: 15 * time.Minute, PostDrainWait: 60 * time.Second, NodeReadyTimeout: 15 * time.Minute}
	return s.EngineConfig(p, req, &cloud.None{Client: s.Client})
}

// MarkAborted ends rec's run as aborted, with what the engine noted, and
// says the group is back in service; with no record, it says only that.
func (s Controls) MarkAborted(ctx context.Context, rec *state.Record, group, note string) error {
	if rec == nil {
		if note != "" {
			fmt.Fprintln(s.Out, note)
		}
		fmt.Fprintf(s.Out, "node group %q is back in service; no run was recorded, so no size was changed\n", group)
		return nil
	}
	where := Describe(rec, false, "", time.Now()).Where()
	now := time.Now().UTC().Truncate(time.Second)
	rec.State, rec.AbortedAt, rec.FinishedAt, rec.InFlight, rec.LastError = state.StateAborted, &now, &now, nil, ""
	rec.Note = "aborted " + where
	rec.EndAttempt(now, string(state.StateAborted))
	if note != "" {
		rec.Note += ": " + note
	}
	if err := s.clear(ctx, group); err != nil {
		return err
	}
	if err := s.store().Save(ctx, rec); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "node group %q is back in service; its run is marked aborted (%s)\n", group, rec.Note)
	return nil
}
