package session

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// LoadPlanFile reads --plan-file, whose settings replace the planning
// flags; without one it does nothing.
func (r *Request) LoadPlanFile() error {
	if r.PlanFile == "" {
		return nil
	}
	p, savedWait, err := readPlanFile(r.PlanFile)
	if err != nil {
		return err
	}
	r.SavedPlan = p
	// The record keeps the path for resume and rollback, which may be
	// typed in another directory.
	if abs, err := filepath.Abs(r.PlanFile); err == nil {
		r.PlanFile = abs
	}
	r.fromPlan(p)
	// The reviewed plan's hooks and options run; others given now would
	// be ignored.
	for _, name := range []string{"pre-drain-hook", "post-drain-hook", "pre-terminate-hook", "hook-timeout"} {
		if r.Given[name] {
			return Usagef("--%s cannot be used with --plan-file: the hooks of the plan run; give it to \"plan\" instead", name)
		}
	}
	if p.Options != nil {
		for _, name := range plan.OptionFlags {
			if r.Given[name] {
				return Usagef("--%s cannot be used with --plan-file: the plan's options run; give it to \"plan\" instead", name)
			}
		}
		p.Options.Apply(&r.Request)
	}
	r.Hooks = plan.Hooks{}
	if p.Hooks != nil {
		r.Hooks = *p.Hooks
	}
	// The reviewed plan's waits run, as its estimates counted them, unless
	// given again now. A request from a record (resume) already holds what
	// the first run settled, a wait given then included.
	if r.Given != nil {
		if !r.Given["post-drain-wait"] && savedWait {
			r.PostDrainWait = time.Duration(p.PostDrainWait)
		}
		if !r.Given["deregistration-timeout"] && p.DeregistrationTimeout > 0 {
			r.DeregistrationTimeout = time.Duration(p.DeregistrationTimeout)
		}
	}
	return nil
}

// readPlanFile reads a plan saved with "plan -o json"; savedWait says it
// carries a post-drain wait (plans saved before they did have none).
func readPlanFile(path string) (p *plan.Plan, savedWait bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, Usagef("cannot read --plan-file %q: %v", path, err)
	}
	// postDrainWait shadows the plan's own field, so that one parse also
	// tells a plan saved before plans carried the wait (it has none to give).
	var file struct {
		plan.Plan
		PostDrainWait *plan.Duration `json:"postDrainWait"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, false, Usagef("cannot read --plan-file %q: not a plan saved with \"plan -o json\": %v", path, err)
	}
	p = &file.Plan
	if file.PostDrainWait != nil {
		p.PostDrainWait = *file.PostDrainWait
	}
	if p.APIVersion != plan.APIVersion || p.Kind != plan.Kind {
		return nil, false, Usagef("cannot read --plan-file %q: apiVersion %q kind %q, want %s %s", path, p.APIVersion, p.Kind, plan.APIVersion, plan.Kind)
	}
	return p, file.PostDrainWait != nil, nil
}

// fromPlan takes the request the saved plan was made for.
func (r *Request) fromPlan(p *plan.Plan) {
	r.NodeGroup, r.NodeGroupLabel, r.Selector = p.NodeGroup, p.NodeGroupLabel, p.Selector
	r.MaxUnavailable, r.Taint, r.Seed, r.Provider, r.Order = p.MaxUnavailableInput, p.Taint, p.Seed, p.Provider, p.Order
	r.Request.Strategy, r.MaxSurge = p.Strategy, p.MaxSurge
	if r.Order == plan.OrderByZone {
		r.Order = "" // the surge strategy's own, not an --order value
	}
	if c := p.Cloud; c != nil {
		r.Cloud.Group, r.Cloud.Image, r.Cloud.Version = c.Group, "", ""
		// The provider's own settings: the plan's, and those given again.
		opts := maps.Clone(c.Options)
		if opts == nil && len(r.Cloud.Options) > 0 {
			opts = map[string]string{}
		}
		maps.Copy(opts, r.Cloud.Options)
		r.Cloud.Options = opts
		if c.TargetVersion == plan.NewVersion {
			r.Cloud.Image = c.TargetImage
		} else {
			r.Cloud.Version = c.TargetVersion
		}
	}
	r.fromPlanWindows(p.Window)
	r.TargetLabels = nil
	for k, v := range p.TargetLabels {
		r.TargetLabels = append(r.TargetLabels, k+"="+v)
	}
	slices.Sort(r.TargetLabels)
}

// fromPlanWindows takes the maintenance windows the plan was made with,
// where the command gives none again: a saved plan (an in-cluster Job's
// among them) runs inside the windows that were reviewed.
func (r *Request) fromPlanWindows(w *plan.WindowPlan) {
	if w == nil {
		return
	}
	if len(r.Windows) == 0 {
		r.Windows = slices.Clone(w.Windows)
	}
	if r.NotBefore == "" && w.NotBefore != nil {
		r.NotBefore = w.NotBefore.Format(time.RFC3339)
	}
	if r.NotAfter == "" && w.NotAfter != nil {
		r.NotAfter = w.NotAfter.Format(time.RFC3339)
	}
}

// fromSavedPlan is the saved plan checked against p, the cluster now,
// without the nodes an interrupted run of it already removed: those are
// not staleness, the same command finishes it.
func (s *Session) fromSavedPlan(ctx context.Context, r *Request, p *plan.Plan) (*plan.Plan, error) {
	done, err := s.doneOfSaved(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := compareSaved(r.SavedPlan, p, r.PlanFile, done); err != nil {
		return nil, err
	}
	if err := plan.StaleRevision(r.SavedPlan, p); err != nil {
		return nil, Usagef("--plan-file %q is stale: %v", r.PlanFile, err)
	}
	saved := withoutDone(r.SavedPlan, p, done)
	currentChecks(saved, p)
	return saved, nil
}

// currentChecks puts on p, the saved plan, what a run with its options
// checks before it starts, as fresh finds it now: the audit's findings
// (the gates' verdicts and --make-room's lowered blockers among them),
// the gates' verdicts and --make-room's surges. The plan file's are what
// was when it was saved: a reviewed plan is refused, and printed, as a
// run given the same flags would be.
func currentChecks(p, fresh *plan.Plan) {
	p.Findings, p.MakeRoom = fresh.Findings, fresh.MakeRoom
	if p.Waves == nil {
		return
	}
	w := *p.Waves
	w.Preflight = nil
	if fresh.Waves != nil {
		w.Preflight = fresh.Waves.Preflight
	}
	p.Waves = &w
}

// doneOfSaved are the nodes an unfinished run of the saved plan already
// replaced, by name. A record that cannot be read is an error: taken as
// none, a done node would be refused as gone.
func (s *Session) doneOfSaved(ctx context.Context, r *Request) (map[string]bool, error) {
	rec, err := s.store().Load(ctx, r.RecordName())
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	if rec != nil && rec.FinishedAt == nil {
		for _, n := range rec.Done {
			done[n] = true
		}
	}
	return done, nil
}

// refuseChangedNodes refuses a saved plan one of whose nodes is gone from
// nodes (the cluster now) or is another machine by the same name, as soon
// as the nodes are listed: planning would otherwise first wait for the
// group's machines that are not nodes, a deleted node's among them.
func (s *Session) refuseChangedNodes(ctx context.Context, r *Request, nodes []corev1.Node) error {
	if r.SavedPlan == nil {
		return nil
	}
	done, err := s.doneOfSaved(ctx, r)
	if err != nil {
		return err
	}
	return changedNode(r.SavedPlan, r.PlanFile, nodes, done)
}

// changedNode is the refusal of the first planned node, not done, that is
// no node of nodes, or one with another machine (provider ID) or created
// since the plan was saved (deleted and registered again).
func changedNode(saved *plan.Plan, file string, nodes []corev1.Node, done map[string]bool) error {
	byName := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	for _, want := range saved.Outdated() {
		if done[want.Name] {
			continue
		}
		n, ok := byName[want.Name]
		switch {
		case !ok:
			return Usagef("--plan-file %q is stale: node %q is gone from the cluster; run plan again", file, want.Name)
		case want.ProviderID != "" && n.Spec.ProviderID != want.ProviderID:
			return Usagef("--plan-file %q is stale: node %q is machine %q now, not %q; run plan again", file, want.Name, n.Spec.ProviderID, want.ProviderID)
		case !want.Created.IsZero() && !n.CreationTimestamp.Time.Equal(want.Created):
			return Usagef("--plan-file %q is stale: node %q was registered again at %s, after the plan; run plan again", file, want.Name, n.CreationTimestamp.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// compareSaved refuses a plan file that no longer describes the cluster;
// planned nodes a run of it already did are expected to be gone.
func compareSaved(saved, fresh *plan.Plan, file string, done map[string]bool) error {
	want, got := saved.OutdatedNames(), fresh.OutdatedNames()
	for _, n := range want {
		if !slices.Contains(got, n) && !done[n] {
			return Usagef("--plan-file %q is stale: node %q is no longer an outdated node of the group; run plan again", file, n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			return Usagef("--plan-file %q is stale: node %q is outdated but not in the plan; run plan again", file, n)
		}
	}
	// A rollback's scale-down removes the nodes the plan deferred, some of
	// them already where a run of it got that far.
	want = saved.DeferredNames()
	for _, n := range fresh.DeferredNames() {
		if !slices.Contains(want, n) {
			return Usagef("--plan-file %q is stale: node %q is outdated but not in the plan's scale-down; run plan again", file, n)
		}
	}
	return nil
}

// withoutDone is the saved plan minus the nodes already done, with the
// fresh plan's view of the cloud group (which knows an interrupted run's
// recorded sizes).
func withoutDone(saved, fresh *plan.Plan, done map[string]bool) *plan.Plan {
	p := *saved
	p.Cloud, p.Nodes, p.Deferred = fresh.Cloud, fresh.Nodes, fresh.Deferred
	p.Batches = nil
	for _, b := range saved.Batches {
		var left []plan.PlannedNode
		for _, n := range b.Nodes {
			if !done[n.Name] {
				left = append(left, n)
			}
		}
		if len(left) > 0 {
			p.Batches = append(p.Batches, plan.Batch{Number: len(p.Batches) + 1, Nodes: left})
		}
	}
	return &p
}
