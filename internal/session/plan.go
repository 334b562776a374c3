package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Planned is a plan and what runs it: the request it was made for, and
// the provider that changes the group (nil: provider none's).
type Planned struct {
	*plan.Plan
	Request  *Request
	Provider cloud.Provider
}

// Plan lists the cluster once, reads the cloud group (never changing it),
// and plans r, which Validate accepted. With a saved plan (--plan-file)
// it returns the saved one, checked against the cluster now.
func (s *Session) Plan(ctx context.Context, r *Request) (*Planned, error) {
	pl, err := s.plan(ctx, r)
	if err != nil {
		return pl, err
	}
	if r.SavedPlan != nil {
		if pl.Plan, err = s.fromSavedPlan(ctx, r, pl.Plan); err != nil {
			return nil, err
		}
	}
	if err := scheduleIn(pl, time.Now()); err != nil {
		return nil, err
	}
	return pl, nil
}

func (s *Session) plan(ctx context.Context, r *Request) (*Planned, error) {
	defer collectLessWhilePlanning()()
	snap, err := snapshot.Take(ctx, s.Client, func(nodes []corev1.Node) error { return s.refuseOnNodes(ctx, r, nodes) })
	if err != nil {
		return nil, err
	}
	in, err := s.groupInput(ctx, r, snap)
	if err != nil {
		return nil, err
	}
	last := s.lastRecord(ctx, r)
	rec := unfinished(last)
	nodes, err := s.groupNodes(ctx, r, snap, rec, &in)
	if err != nil {
		return nil, err
	}
	pl := &Planned{Request: r}
	opened, err := s.openGroupCloud(ctx, r, pl, snap, rec, &in, &nodes)
	if err != nil {
		return nil, err
	}
	if err := r.refuseForeignFlags(); err != nil {
		return nil, err // the strategy is known now: the group's own, or the default
	}
	notes := opened.notes
	notes = append(notes, keptBlueNotes(last, pl, time.Now())...)
	if err := FindStartedUpdate(ctx, pl.Provider, rec); err != nil {
		return nil, err
	}
	if in.Cloud != nil && in.Cloud.Managed != nil {
		in.Resume.Following = followedUpdate(r, rec)
	}
	note, again, err := s.joining(ctx, r, in)
	switch {
	case err != nil:
		return nil, err
	case again:
		return s.plan(ctx, r)
	case note != "":
		notes = append(notes, note)
	}
	pl.Plan, err = plan.Build(snap, in)
	if pl.Plan != nil {
		pl.Options = plan.OptionsOf(r.Request)
		pl.Notes = append(pl.Notes, notes...)
		if opened.cloud == nil && !opened.askedCloud {
			pl.AddFindings(s.Clouds().machinesLeftRunning(ctx, r, pl.Plan, nodes)...)
		}
		pl.AddFindings(s.permissionFindings(ctx, r, pl.Provider, in, pl.Plan)...)
		if err := proveCapacity(ctx, pl.Provider, pl.Plan); err != nil {
			return nil, err
		}
		pl.Cost = plan.Costs(pl.Plan, plan.CostInput{Prices: r.Prices, BatchSoak: r.BlueGreen.BatchSoak, NodePoolSoak: r.BlueGreen.NodePoolSoak})
		if err := s.makeRoom(ctx, r, pl.Plan, &snap); err != nil {
			return nil, err
		}
		err = gatePreflight(ctx, r, pl.Plan, rec != nil)
	}
	return pl, err
}

// joining waits for the group's machines that are not nodes yet where
// --node-ready-timeout allows (again: plan anew), else notes them. The
// machines of a service's update under way are its own new nodes, which
// the run does not wait for.
func (s *Session) joining(ctx context.Context, r *Request, in plan.Input) (note string, again bool, err error) {
	if in.Cloud == nil || in.Resume.Following != nil {
		return "", false, nil
	}
	joining := in.Cloud.Joining()
	switch {
	case len(joining) == 0:
		return "", false, nil
	case r.JoinTimeout > 0:
		return "", true, s.awaitJoining(ctx, r, in.Cloud, joining)
	}
	return in.Cloud.JoiningNote(joining), false, nil
}

// followedUpdate is the service's update rec's run started, which a run
// of r follows to its end (see startPhase), as the record has it; nil
// without one, or where a run older than the record's nodes started it.
func followedUpdate(r *Request, rec *state.Record) *plan.ServiceUpdate {
	if rec == nil || rec.Managed == nil || rec.Managed.UpdateID == "" || len(rec.Managed.Nodes) == 0 || r.Rollback {
		return nil
	}
	return &plan.ServiceUpdate{Nodes: rec.Managed.Nodes, Sizes: rec.Managed.Sizes}
}

// FindStartedUpdate gives rec the ID of the service's update its run
// started but was killed before it recorded: the record says the run set
// out to start it (its phase, the nodes it replaces) and the service has
// one under way, which the run would follow (StartUpdate never starts a
// second). Without it, the next run plans the service's new nodes and
// audits its drain.
func FindStartedUpdate(ctx context.Context, p cloud.Provider, rec *state.Record) error {
	f, ok := p.(cloud.UpdateFinder)
	if !ok || !StartedUnheard(rec) {
		return nil
	}
	id, err := f.RunningUpdate(ctx)
	rec.Managed.UpdateID = id
	return err
}

// StartedUnheard reports whether rec's unfinished run set out to start
// the service's update (or its rollback) and recorded no ID: it may have
// started one.
func StartedUnheard(rec *state.Record) bool {
	if rec == nil || rec.FinishedAt != nil || rec.Managed == nil || rec.Managed.UpdateID != "" {
		return false
	}
	return ManagedRollingBack(rec) || len(rec.Managed.Nodes) > 0 && plan.Phase(rec.Phase) == plan.PhaseUpdate
}

// ManagedRollingBack reports whether rec's unfinished run set out to have
// the service roll its update back: every command that goes on with the
// run finishes that rollback.
func ManagedRollingBack(rec *state.Record) bool {
	return rec != nil && rec.FinishedAt == nil && rec.Managed != nil && rec.Managed.RollingBackFrom != "" && plan.Phase(rec.Phase) == plan.PhaseRollback
}

// awaitJoining waits, once, for the group's machines that are not nodes
// yet (the replacement of a node an interrupted run removed, say): a
// machine left out of the plan would be left un-upgraded.
func (s *Session) awaitJoining(ctx context.Context, r *Request, cg *plan.CloudGroup, joining []plan.Machine) error {
	fmt.Fprintf(s.ErrOut, "waiting up to %s for %d %ss of %s %q to join as nodes before planning\n", r.JoinTimeout, len(joining), cg.MachineKind, cg.GroupKind, cg.Group)
	if err := cloud.AwaitJoined(ctx, s.Client, joining, r.JoinTimeout); err != nil {
		return err
	}
	r.JoinTimeout = 0
	return nil
}

// openGroupCloud opens the cloud of the group's nodes. Where an
// interrupted blue/green run's blue group is gone while its nodes still
// leave, the run goes on on green's, as it does once they are gone: in
// and nodes become green's.
func (s *Session) openGroupCloud(ctx context.Context, r *Request, pl *Planned, snap snapshot.Cluster, rec *state.Record, in *plan.Input, nodes *[]corev1.Node) (openedCloud, error) {
	opened, err := s.Clouds().openCloudOf(ctx, r, pl, in, *nodes, rec)
	var gone *blueGoneError
	if !errors.As(err, &gone) || in.NodeGroup == gone.green {
		return opened, err
	}
	if *in, err = s.inputOf(r, snap, gone.green); err != nil {
		return openedCloud{}, err
	}
	if *nodes, err = s.groupNodes(ctx, r, snap, rec, in); err != nil {
		return openedCloud{}, err
	}
	return s.Clouds().openCloudOf(ctx, r, pl, in, *nodes, rec)
}

// groupNodes completes in with what rec's run recorded and the group's
// pace, and returns the group's nodes.
func (s *Session) groupNodes(ctx context.Context, r *Request, snap snapshot.Cluster, rec *state.Record, in *plan.Input) ([]corev1.Node, error) {
	if rec != nil {
		in.Recovering = rec.Recovering
	}
	in.Waves, in.WavesDone = wavesInput(r, rec)
	nodes, err := plan.GroupNodes(snap.Nodes, *in)
	if err != nil {
		return nil, err
	}
	in.Pace = s.Reports().pace(ctx, r, nodes)
	return nodes, nil
}

// groupInput is the planning input for the node group, or for green
// where the group's unfinished run deleted blue, whose name no node
// carries any more (a managed group's green goes by its own). The record
// is read only then.
func (s *Session) groupInput(ctx context.Context, r *Request, snap snapshot.Cluster) (plan.Input, error) {
	in, err := s.inputOf(r, snap, r.NodeGroup)
	if err == nil || r.Selector != "" {
		return in, err
	}
	if green := greenAfterBlue(s.unfinishedRecord(ctx, r)); green != "" {
		if gin, gerr := s.inputOf(r, snap, green); gerr == nil {
			return gin, nil
		}
	}
	return in, err
}

// greenAfterBlue is the green group of an unfinished blue/green run that
// was deleting blue, or "".
func greenAfterBlue(rec *state.Record) string {
	if rec == nil || rec.Cloud == nil || plan.Phase(rec.Phase) != plan.PhaseDeleteBlue {
		return ""
	}
	return rec.Cloud.Green
}

// Input is the planning input for the node group named group, or for
// r's selector; it resolves the node-group label from the nodes.
func (s *Session) Input(r *Request, nodes []corev1.Node) (plan.Input, error) {
	return s.inputOf(r, snapshot.Cluster{Nodes: nodes}, r.NodeGroup)
}

func (s *Session) inputOf(r *Request, snap snapshot.Cluster, group string) (plan.Input, error) {
	in := plan.Input{
		Context:        s.KubeContext,
		NodeGroup:      group,
		Selector:       r.Selector,
		TargetLabels:   r.targetLabels,
		MaxUnavailable: r.MaxUnavailable,
		Provider:       r.Provider,
		Seed:           r.Seed,
		Order:          r.Order,
		Namespace:      r.Namespace,
		Force:          r.Force,
		DeleteEmptyDir: r.DeleteEmptyDirData,
		Strategy:       plan.StrategyName(r.Request.Strategy),
		MaxSurge:       r.MaxSurge,
		BlueGreen:      r.BlueGreen,
		PostDrainWait:  r.PostDrainWait,
		Hooks:          r.Hooks,
		// plan and check have no --terminate-timeout of their own: the
		// notes then speak of its default.
		TerminateTimeout:      cmp.Or(r.TerminateTimeout, upgrade.DefaultTerminateTimeout),
		DeregistrationTimeout: r.DeregistrationTimeout,
	}
	if r.Selector == "" {
		key, err := plan.ResolveNodeGroupLabel(snap.Nodes, group, r.NodeGroupLabel, cloud.NodeGroupLabels())
		if err != nil {
			return in, err
		}
		in.NodeGroupLabel = key
	}
	in.Taint = r.taintOf(in.NodeGroupLabel)
	return in, nil
}

// taintOf is the taint the run puts on outdated nodes: --taint, else one
// keyed by the node-group label.
func (r *Request) taintOf(nodeGroupLabel string) corev1.Taint {
	if r.taint != nil {
		return *r.taint
	}
	key := cmp.Or(nodeGroupLabel, "nodeupgrade.dev/nodegroup")
	return corev1.Taint{Key: key, Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}
}

// refuseOnNodes refuses, once the nodes are listed and before the pods
// are, what Plan would refuse from the nodes alone: a saved plan whose
// nodes changed, a node group no node carries, a --selector no node
// matches, and no target where the nodes are of no cloud the plugin knows.
func (s *Session) refuseOnNodes(ctx context.Context, r *Request, nodes []corev1.Node) error {
	if err := s.refuseChangedNodes(ctx, r, nodes); err != nil {
		return err
	}
	in, err := s.groupInput(ctx, r, snapshot.Cluster{Nodes: nodes})
	if err != nil {
		return err
	}
	group, err := plan.GroupNodes(nodes, in)
	if err != nil {
		return err
	}
	c, err := r.cloudFor(group)
	if err != nil || c != nil {
		return err
	}
	in.Provider = cloud.NoneName
	return r.refuseNoTarget(in)
}

// unfinishedRecord is the record of the node group's unfinished run, or
// nil. One that cannot be read is taken as none here: run reads it
// again under the group's lock and stops on the error.
func (s *Session) unfinishedRecord(ctx context.Context, r *Request) *state.Record {
	return unfinished(s.lastRecord(ctx, r))
}

// lastRecord is the group's record, nil when none can be read: a plan
// needs no access to the state namespace.
func (s *Session) lastRecord(ctx context.Context, r *Request) *state.Record {
	rec, err := s.store().Load(ctx, r.RecordName())
	if err != nil {
		return nil
	}
	return rec
}

// unfinished is rec when its run has not finished, else nil.
func unfinished(rec *state.Record) *state.Record {
	if rec == nil || rec.FinishedAt != nil {
		return nil
	}
	return rec
}

// planningGCPercent is the garbage collector's GOGC while a plan is built.
// The snapshot keeps most of what it allocates (a 150,000-pod plan
// allocates about 400 MB and keeps about 230 until the plan is built), so
// a collection at the default's pace (GOGC=100: whenever the heap doubles)
// marks the snapshot's pods again and frees little. At that scale the
// collector took 120 ms of CPU at the default and 70 ms at 400
// (GODEBUG=gctrace=1), for no more peak memory: the plan allocates little
// beyond what it keeps, and five times the live heap still bounds what is
// left uncollected on a cluster larger still.
const planningGCPercent = 400

// collectLessWhilePlanning raises GOGC to planningGCPercent until the
// returned func is called, unless the user set GOGC: the run that follows
// a plan holds its informers' objects for hours, at the default.
func collectLessWhilePlanning() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(planningGCPercent)
	return func() { debug.SetGCPercent(old) }
}
