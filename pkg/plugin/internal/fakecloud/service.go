package fakecloud

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// service is a group whose cloud service runs the update itself: the
// provider a run configures, starts and follows it with, with every
// control (cancel, resume, rollback, complete), and its planning side.
//
// The service has no clock: its update moves on each time it is read
// (Progress), by one step that changes nodes, so a run following it is
// woken by the change and reads again. A soak lasts until complete.
type service struct {
	*base
	soak string // --fake-soak, "" to keep the group's
}

func (*service) Describe() string { return "the fake service replaces the node" }

func (s *service) GroupName() string { return s.group }

// The service's strategies: a rolling update for eks and surge, and
// blue/green.
const (
	rolling       = "ROLLING"
	blueGreenMode = "BLUE_GREEN"
)

// Runs implements cloud.ServicePlanner.
func (*service) Runs(strategy plan.StrategyName) bool {
	return slices.Contains([]plan.StrategyName{plan.StrategyEKS, plan.StrategySurge, plan.StrategyBlueGreen}, strategy)
}

// Plan implements cloud.ServicePlanner: the settings from the request, the
// nodes added, the controls and the phases.
func (s *service) Plan(in plan.Input, nodes, _ int) (*plan.ManagedPlan, error) {
	g := s.lock()
	before := cloneSettings(g.settings)
	s.unlock()
	during := cloneSettings(before)
	during.Strategy, during.MaxUnavailable, during.MaxSurge = rolling, in.MaxUnavailable, nil
	controls, added := []string{"cancel", "resume", "rollback"}, int32(1)
	switch plan.StrategyName(in.Strategy) {
	case plan.StrategySurge:
		ms := in.MaxSurge
		during.MaxSurge = &ms
	case plan.StrategyBlueGreen:
		during.Strategy, during.MaxUnavailable = blueGreenMode, strconv.Itoa(max(in.BlueGreen.BatchNodes, 1))
		controls, added = append(controls, "complete"), int32(nodes)
	}
	if s.soak != "" {
		during.Other["soak"] = s.soak
	}
	return &plan.ManagedPlan{Service: "fake service", Before: before, During: during, ScaleUp: added,
		Target: "image " + s.w.versions[s.target], Controls: controls,
		Details: []plan.Detail{{Name: "group", Value: s.group}},
		Steps: []plan.Step{
			{Phase: string(plan.PhaseConfigure), Detail: "set " + during.String()},
			{Phase: string(plan.PhaseUpdate), Detail: fmt.Sprintf("the fake service updates %d nodes", nodes)},
			{Phase: string(plan.PhaseRestore), Detail: "put back " + before.String()},
		}}, nil
}

func cloneSettings(s plan.UpdateSettings) plan.UpdateSettings {
	s.Other = maps.Clone(s.Other)
	if s.Other == nil {
		s.Other = map[string]string{}
	}
	return s
}

func (s *service) Settings(context.Context) (plan.UpdateSettings, error) {
	g := s.lock()
	defer s.unlock()
	return cloneSettings(g.settings), nil
}

func (s *service) Configure(_ context.Context, set plan.UpdateSettings) error {
	g := s.lock()
	defer s.unlock()
	s.w.call("Configure %s", set)
	g.settings = cloneSettings(set)
	return nil
}

// update is one of the service's updates.
type update struct {
	id    string
	state cloud.UpdateState
	phase string
	// mode and batch are the settings it started with; version what it
	// moves the nodes to, from what they ran.
	mode          string
	batch         int
	version, from string
	soak          bool
	// todo are the machines left; drained blue's drained ones; replaced
	// the machines it launched; draining the one a hold stopped it on.
	todo, drained, replaced []string
	draining                string
	done, total             int
	hold                    int
}

// StartUpdate starts the update with the group's settings now, or
// returns the one in progress.
func (s *service) StartUpdate(context.Context, bool) (string, error) {
	g := s.lock()
	defer s.unlock()
	for id, u := range s.w.updates {
		if u.state == cloud.UpdateInProgress {
			return id, nil
		}
	}
	var todo []string
	for id, m := range g.machines {
		if m.version != s.target {
			todo = append(todo, id)
		}
	}
	slices.Sort(todo)
	batch, err := strconv.Atoi(g.settings.MaxUnavailable)
	if err != nil || batch < 1 {
		batch = 1
	}
	u := s.newUpdate(&update{mode: g.settings.Strategy, batch: batch, version: s.target, from: g.launches, todo: todo,
		soak: g.settings.Other["soak"] != "" && g.settings.Other["soak"] != "0s", hold: s.w.holdAfter})
	s.w.call("StartUpdate %s: %s", u.id, g.settings)
	g.launches = s.target
	if err := s.w.startLost; err != nil {
		s.w.startLost = nil
		return "", err
	}
	return u.id, nil
}

// RunningUpdate implements cloud.UpdateFinder: the update in progress,
// which StartUpdate would return.
func (s *service) RunningUpdate(context.Context) (string, error) {
	s.lock()
	defer s.unlock()
	for id, u := range s.w.updates {
		if u.state == cloud.UpdateInProgress {
			return id, nil
		}
	}
	return "", nil
}

// newUpdate registers u, in progress; w.mu is held.
func (s *service) newUpdate(u *update) *update {
	s.w.seq++
	u.id, u.state, u.total = fmt.Sprintf("upd-%d", s.w.seq), cloud.UpdateInProgress, len(u.todo)
	s.w.updates[u.id] = u
	return u
}

// Progress reads the update, which moves on by a step first.
func (s *service) Progress(ctx context.Context, id string) (cloud.UpdateProgress, error) {
	g := s.lock()
	defer s.unlock()
	u := s.w.updates[id]
	if u == nil {
		return cloud.UpdateProgress{}, fmt.Errorf("fake service: no update %q", id)
	}
	if u.state == cloud.UpdateInProgress {
		if err := s.advance(ctx, g, u); err != nil {
			return cloud.UpdateProgress{}, err
		}
	}
	return cloud.UpdateProgress{ID: u.id, State: u.state, Phase: u.phase, Done: u.done, Total: u.total}, nil
}

// advance moves the update on until a step changed nodes or it waits (a
// hold, a soak); w.mu is held.
func (s *service) advance(ctx context.Context, g *group, u *update) error {
	for u.state == cloud.UpdateInProgress {
		moved, err := s.step(ctx, g, u)
		if err != nil || moved {
			return err
		}
	}
	return nil
}

// step is one step of the update; moved says it changed nodes or waits.
func (s *service) step(ctx context.Context, g *group, u *update) (moved bool, err error) {
	switch {
	case u.mode == blueGreenMode:
		return s.blueGreenStep(ctx, g, u)
	case len(u.todo) == 0:
		u.state, u.phase = cloud.UpdateSucceeded, "done"
		return true, nil
	case u.hold > 0 && u.done >= u.hold:
		return true, s.holdOn(ctx, u)
	}
	u.phase = "replacing"
	for range min(u.batch, len(u.todo)) {
		old := u.todo[0]
		u.todo = u.todo[1:]
		if err := s.w.launch(ctx, g, u.version); err != nil {
			return false, err
		}
		u.replaced = append(u.replaced, s.lastLaunched(g))
		if err := s.w.drainNode(ctx, old); err != nil {
			return false, err
		}
		if err := s.w.terminate(ctx, g, old); err != nil {
			return false, err
		}
		u.done++
	}
	if len(u.todo) == 0 {
		u.state, u.phase = cloud.UpdateSucceeded, "done"
	}
	return true, nil
}

// holdOn is the update stopped on its next node, which it cordoned and
// cannot drain; w.mu is held.
func (s *service) holdOn(ctx context.Context, u *update) error {
	if u.draining != "" {
		return nil
	}
	u.draining, u.phase = u.todo[0], "held"
	return s.w.setUnschedulable(ctx, u.draining, true)
}

// lastLaunched is the group's newest machine; w.mu is held.
func (s *service) lastLaunched(g *group) string {
	return fmt.Sprintf("%s-%d", g.name, s.w.seq)
}

// blueGreenStep: green in full first, then blue drained a batch at a
// time, a soak (until complete), and blue deleted.
func (s *service) blueGreenStep(ctx context.Context, g *group, u *update) (bool, error) {
	switch {
	case u.phase == "":
		u.phase = "CreatingGreen"
		for range u.todo {
			if err := s.w.launch(ctx, g, u.version); err != nil {
				return false, err
			}
		}
	case len(u.todo) > 0:
		u.phase = "DrainingBlue"
		for range min(u.batch, len(u.todo)) {
			if err := s.w.drainNode(ctx, u.todo[0]); err != nil {
				return false, err
			}
			u.drained, u.todo, u.done = append(u.drained, u.todo[0]), u.todo[1:], u.done+1
		}
	case u.soak && u.phase != "Soaking":
		u.phase = "Soaking"
	case u.soak:
		// Until complete.
	default:
		return true, s.deleteBlue(ctx, g, u)
	}
	return true, nil
}

// deleteBlue ends a blue/green update; w.mu is held.
func (s *service) deleteBlue(ctx context.Context, g *group, u *update) error {
	for _, id := range u.drained {
		if err := s.w.terminate(ctx, g, id); err != nil {
			return err
		}
	}
	u.drained, u.state, u.phase = nil, cloud.UpdateSucceeded, "done"
	return nil
}

// CancelUpdate stops the update: the node it could not drain is given
// back to the scheduler.
func (s *service) CancelUpdate(ctx context.Context, id string) error {
	s.lock()
	defer s.unlock()
	s.w.call("CancelUpdate %s", id)
	u := s.w.updates[id]
	if u == nil || u.state != cloud.UpdateInProgress {
		return fmt.Errorf("fake service: update %q is not in progress", id)
	}
	u.state, u.phase = cloud.UpdateCancelled, "cancelled"
	if u.draining != "" {
		return s.w.setUnschedulable(ctx, u.draining, false)
	}
	return nil
}

// ResumeUpdate goes on with the machines a stopped update left.
func (s *service) ResumeUpdate(_ context.Context, id string) (string, error) {
	s.lock()
	defer s.unlock()
	old := s.w.updates[id]
	if old == nil || old.state == cloud.UpdateInProgress || old.state == cloud.UpdateSucceeded {
		return "", fmt.Errorf("fake service: update %q cannot be resumed", id)
	}
	u := s.newUpdate(&update{mode: old.mode, batch: old.batch, version: old.version, from: old.from, todo: slices.Clone(old.todo), soak: old.soak})
	s.w.call("ResumeUpdate %s: %s", id, u.id)
	return u.id, nil
}

// RollbackUpdate replaces the machines a stopped update launched with
// ones of the version before it.
func (s *service) RollbackUpdate(_ context.Context, id string) (string, error) {
	g := s.lock()
	defer s.unlock()
	old := s.w.updates[id]
	if old == nil || old.state == cloud.UpdateInProgress {
		return "", fmt.Errorf("fake service: update %q cannot be rolled back", id)
	}
	u := s.newUpdate(&update{mode: rolling, batch: old.batch, version: old.from, from: old.version, todo: slices.Clone(old.replaced)})
	g.launches = old.from
	s.w.call("RollbackUpdate %s: %s", id, u.id)
	return u.id, nil
}

// CompleteUpdate ends the soak: blue is deleted now.
func (s *service) CompleteUpdate(ctx context.Context, id string) error {
	g := s.lock()
	defer s.unlock()
	s.w.call("CompleteUpdate %s", id)
	u := s.w.updates[id]
	if u == nil || u.phase != "Soaking" {
		return fmt.Errorf("fake service: update %q is not soaking", id)
	}
	u.soak = false
	return s.deleteBlue(ctx, g, u)
}

// Phase is the phase of the cloud's update in progress, "" when none is.
func (w *World) Phase() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.updates {
		if u.state == cloud.UpdateInProgress {
			return u.phase
		}
	}
	return ""
}

// drainNode is the service's own drain, never the plugin's: cordon, then
// delete the node's pods; w.mu is held.
func (w *World) drainNode(ctx context.Context, node string) error {
	if err := w.setUnschedulable(ctx, node, true); err != nil {
		return err
	}
	pods, err := w.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node {
			continue
		}
		if err := w.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// setUnschedulable cordons a node or gives it back; w.mu is held.
func (w *World) setUnschedulable(ctx context.Context, node string, on bool) error {
	n, err := w.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Spec.Unschedulable = on
	_, err = w.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

var (
	_ cloud.ManagedUpdater   = (*service)(nil)
	_ cloud.UpdateCanceller  = (*service)(nil)
	_ cloud.UpdateResumer    = (*service)(nil)
	_ cloud.UpdateRollbacker = (*service)(nil)
	_ cloud.UpdateCompleter  = (*service)(nil)
	_ cloud.ServicePlanner   = (*service)(nil)
)
