package plan

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// UpdateSettings are a cloud service's settings for the updates it runs
// on a group (EKS: a managed node group's updateConfig; GKE: a node
// pool's upgradeSettings). A run sets them for its span and puts back the
// ones it found.
type UpdateSettings struct {
	// MaxUnavailable is a number of nodes or a percentage ("25%").
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
	// MaxSurge is the nodes added per zone, where the service has it.
	MaxSurge *int `json:"maxSurge,omitempty"`
	// Strategy is the service's own name of its update strategy (EKS:
	// DEFAULT or MINIMAL; GKE: SURGE or BLUE_GREEN).
	Strategy string `json:"strategy,omitempty"`
	// Other are the service's further settings, by its field names.
	Other map[string]string `json:"other,omitempty"`
}

func (s UpdateSettings) String() string {
	if s.IsZero() {
		return "none set (the service's defaults)"
	}
	var parts []string
	if s.Strategy != "" {
		parts = append(parts, "strategy "+s.Strategy)
	}
	if s.MaxUnavailable != "" {
		parts = append(parts, "maxUnavailable "+s.MaxUnavailable)
	}
	if s.MaxSurge != nil {
		parts = append(parts, fmt.Sprintf("maxSurge %d", *s.MaxSurge))
	}
	for _, k := range sortedKeys(s.Other) {
		parts = append(parts, k+" "+s.Other[k])
	}
	return strings.Join(parts, ", ")
}

// IsZero reports whether nothing is set: the service uses its defaults.
func (s UpdateSettings) IsZero() bool {
	return s.Strategy == "" && s.MaxUnavailable == "" && s.MaxSurge == nil && len(s.Other) == 0
}

// Equal reports whether both set the same.
func (s UpdateSettings) Equal(o UpdateSettings) bool { return s.String() == o.String() }

// Detail is one line of a group as its service sees it.
type Detail struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Service is the planner's view of a group whose cloud service runs the
// update itself: what the provider says of its service (the contract is
// cloud.ServicePlanner; cloud.ServiceOf makes this view of it), asked by
// the planner, which stays neutral.
type Service struct {
	// Runs reports whether the service runs strategy itself; the other
	// strategies are built by the run from the provider's other
	// capabilities, or refused.
	Runs func(strategy StrategyName) bool
	// Plan derives what the service will do for the input over nodes
	// nodes in zones zones: the settings for the run (refusing, as an
	// input error, what the service would refuse), the nodes it adds, the
	// phases with estimates.
	Plan func(in Input, nodes, zones int) (*ManagedPlan, error)
	// Own is the group's own update strategy, with its settings, that the
	// service runs when asked for none (GKE: the node pool's
	// upgradeSettings): a run without --strategy takes it, as the
	// service's own upgrade would. nil where the group has none.
	Own *GroupStrategy
}

// GroupStrategy is a group's own update strategy in the flags' terms.
type GroupStrategy struct {
	Strategy       StrategyName
	MaxSurge       int
	MaxUnavailable string
	BlueGreen      BlueGreenInput
	// From says whose strategy it is, for the plan ("the pool's own
	// upgrade strategy").
	From string
}

// ManagedPlan is a plan's side of an update the cloud's service runs.
type ManagedPlan struct {
	// Service names the service and its group ("EKS managed node group").
	Service string `json:"service"`
	// Details are the group as the service sees it.
	Details []Detail `json:"details"`
	// Before are the update settings now, put back at the end; During
	// those the run sets; ScaleUp the nodes the service adds.
	Before  UpdateSettings `json:"before"`
	During  UpdateSettings `json:"during"`
	ScaleUp int32          `json:"scaleUp"`
	// MaxScaleUp is how far the service raises the group's maximum size
	// for the run (EKS: as far as the desired size); 0 leaves it to the
	// desired size.
	MaxScaleUp int32 `json:"maxScaleUp,omitempty"`
	// Target says in the service's words what the update moves to.
	Target string `json:"target"`
	// Force is passed to the service (EKS: delete pods a PDB holds).
	Force bool `json:"force,omitempty"`
	// Controls are the commands the service's update offers (cancel,
	// resume, rollback, complete); NoStop says what can be done where it
	// cannot be stopped.
	Controls []string `json:"controls"`
	NoStop   string   `json:"noStop,omitempty"`
	// EvictionLimit is how long the service tries to evict a node's pods
	// before it fails (EKS: 15 minutes) or forces them out (GKE: the
	// pool's PDB timeout); 0 when unknown.
	EvictionLimit Duration `json:"evictionLimit,omitempty"`
	// ForcesOut says the service deletes the pods a PDB still holds once
	// EvictionLimit passes (GKE) rather than failing (EKS): the plan
	// names them as blockers (check forced-past-pdb).
	ForcesOut bool `json:"forcesOut,omitempty"`
	// WriteFinishes says the service takes any write to the group after
	// its update stopped (cancelled or failed) as the order to finish it
	// (AKS): abort writes nothing there, so it cannot put the run's
	// settings back, and no message offers it for that.
	WriteFinishes bool `json:"writeFinishes,omitempty"`
	// Revision is the group's revision the plan was made on (GKE: the
	// node pool's etag); a run of a saved plan whose group has another
	// is refused.
	Revision string `json:"revision,omitempty"`
	// Steps are the service's phases with estimates.
	Steps []Step `json:"-"`
}

// Pausable reports whether the service's update can be paused and
// resumed (its cancel and its resume), so a maintenance window that closes
// holds it; where not, once started it runs to its end.
func (mp *ManagedPlan) Pausable() bool {
	return slices.Contains(mp.Controls, "cancel") && slices.Contains(mp.Controls, "resume")
}

// managedPlan plans the update the group's service runs, when it runs the
// strategy: the plan keeps the strategy's batches for the audit (the
// service drains as many nodes at once), and takes the service's phases.
func managedPlan(p *Plan, in Input, strategy Strategy) error {
	if in.Cloud == nil || in.Cloud.Managed == nil || !in.Cloud.Managed.Runs(strategy.Name()) {
		return nil
	}
	if in.Waves.Any() {
		// The service drains in an order and at a pace of its own: no
		// wave boundary exists at which to hold it and read a gate.
		return inputErrorf("cannot gate the update of %s %q in waves (--waves, --gate): its service paces the batches itself; %s", in.Cloud.GroupKind, in.Cloud.Group, pacedAdvice(in))
	}
	mp, err := in.Cloud.Managed.Plan(in, p.Nodes.Outdated, len(p.Zones))
	if err != nil {
		return err
	}
	p.Managed = mp
	p.Steps = mp.Steps
	if p.Cloud != nil {
		p.Cloud.ScaleUp = mp.ScaleUp
		p.Cloud.During = p.Cloud.Before
		p.Cloud.During.Desired += mp.ScaleUp
		p.Cloud.During.Max = max(p.Cloud.During.Max+mp.MaxScaleUp, p.Cloud.During.Desired)
	}
	return nil
}

// writeManaged prints the service's view of the group, what it will do,
// and what the run does meanwhile.
func writeManaged(w io.Writer, p *Plan) {
	m := p.Managed
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\nThe update is run by the %s's service:\n", m.Service)
	for _, d := range m.Details {
		fmt.Fprintf(w, "  %-16s %s\n", d.Name+":", d.Value)
	}
	fmt.Fprintf(w, "  %-16s %s\n", "target:", m.Target)
	if m.Before.Equal(m.During) {
		fmt.Fprintf(w, "  %-16s %s (unchanged)\n", "update settings:", m.During)
	} else {
		fmt.Fprintf(w, "  %-16s %s for the run, then back to %s\n", "update settings:", m.During, m.Before)
	}
	fmt.Fprintf(w, "  %-16s %d\n", "nodes added:", m.ScaleUp)
	fmt.Fprintf(w, "  %-16s %s\n", "replaces:", fmt.Sprintf("the %s below, as many at once as its update settings allow, in an order of its own (none promised)", Count(len(p.Outdated()), "outdated node")))
	fmt.Fprintf(w, "  %-16s %s\n", "meanwhile:", "the run follows the update to its end, naming each pod and PodDisruptionBudget that holds a node's drain; it drains, taints and removes no node itself")
	controls := "none"
	if len(m.Controls) > 0 {
		controls = strings.Join(m.Controls, ", ")
	}
	fmt.Fprintf(w, "  %-16s %s\n", "controls:", controls)
	if m.NoStop != "" {
		fmt.Fprintf(w, "  %-16s %s\n", "note:", m.NoStop)
	}
}

// The phases of a run whose update the cloud's service carries out.
const (
	// PhaseConfigure sets the service's update settings for the run (the
	// ones before recorded first).
	PhaseConfigure Phase = "Configure"
	// PhaseUpdate starts the service's update, or finds the one in
	// progress, and follows it to its end.
	PhaseUpdate Phase = "Update"
	// PhaseRestore puts the update settings from before the run back.
	PhaseRestore Phase = "RestoreSettings"
)

// serviceRun is a strategy the group's service carries out: the run only
// configures, starts and follows it, so its phases are the service's.
type serviceRun struct{ Strategy }

func (serviceRun) First(Flow) Phase { return PhaseConfigure }

func (serviceRun) Next(s State, _ Flow) State {
	switch s.Phase {
	case PhaseConfigure:
		return State{Phase: PhaseUpdate}
	case PhaseUpdate:
		return State{Phase: PhaseRestore}
	}
	return State{Phase: PhaseDone}
}

// ResumeAt goes on where the last run stopped: a re-run follows the same
// update and puts the same settings back.
func (serviceRun) ResumeAt(recorded Phase, _ Flow) Phase {
	switch recorded {
	case PhaseConfigure, PhaseUpdate, PhaseRestore:
		return recorded
	}
	return ""
}

// RunStrategy is the strategy a run of p executes: the plan's own, or,
// where the group's service runs it, the service's update.
func (p *Plan) RunStrategy() (Strategy, error) {
	s, err := LookupStrategy(p.Strategy)
	if err != nil || p.Managed == nil {
		return s, err
	}
	return serviceRun{s}, nil
}

// forcedOut are the pods of the outdated nodes that a service which
// forces pods out (ManagedPlan.ForcesOut) would delete once its
// EvictionLimit passes: those whose PDB allows no disruption now. One
// blocker per PDB names its pods; --ignore-check forced-past-pdb accepts
// them.
func forcedOut(p *Plan, snap snapshot.Cluster, podsByNode map[string][]*corev1.Pod, outdated []string) []check.Finding {
	mp := p.Managed
	if mp == nil || !mp.ForcesOut {
		return nil
	}
	idx := drain.NewPDBIndex(snap.PDBs)
	held := map[string]*check.Finding{}
	var order []string
	for _, node := range outdated {
		for _, pod := range podsByNode[node] {
			for _, pdb := range idx.ForPod(pod) {
				if pdb.Status.DisruptionsAllowed > 0 {
					continue
				}
				key := pdb.Namespace + "/" + pdb.Name
				f := held[key]
				if f == nil {
					f = &check.Finding{Check: check.CheckForcedPastPDB, Severity: check.Blocker, Kind: "PodDisruptionBudget", Namespace: pdb.Namespace, Name: pdb.Name}
					held[key], order = f, append(order, key)
				}
				f.Message += fmt.Sprintf("%q on %q, ", pod.Namespace+"/"+pod.Name, node)
				if !slices.Contains(f.Nodes, node) {
					f.Nodes = append(f.Nodes, node)
				}
			}
		}
	}
	out := make([]check.Finding, 0, len(order))
	for _, key := range order {
		f := held[key]
		f.Message = fmt.Sprintf("the %s deletes pod(s) %s once its PDB timeout of %s passes: PodDisruptionBudget %q allows no disruption now", mp.Service, strings.TrimSuffix(f.Message, ", "), FormatDuration(time.Duration(mp.EvictionLimit)), key)
		f.Fix = "let the PDB allow a disruption (scale the workload up or relax the budget) before the run, or accept the deletion with --ignore-check " + check.CheckForcedPastPDB
		out = append(out, *f)
	}
	return out
}

// StaleRevision refuses a saved plan whose group has changed since it was
// made, as the service would refuse the update (GKE: the etag).
func StaleRevision(saved, fresh *Plan) error {
	if saved.Managed == nil || fresh.Managed == nil || saved.Managed.Revision == fresh.Managed.Revision {
		return nil
	}
	return inputErrorf("the %s changed since the plan was made (revision %q, now %q): run plan again", saved.Managed.Service, saved.Managed.Revision, fresh.Managed.Revision)
}

// pacedAdvice says what takes waves on in's group instead of its service's
// update: the strategies whose batches the run paces there (PacedStrategies),
// or none. Only what planning would accept is named.
func pacedAdvice(in Input) string {
	names := PacedStrategies(in)
	if len(names) == 0 {
		return "no strategy whose batches the run paces runs on this group: upgrade it without --waves and --gate"
	}
	for i, n := range names {
		names[i] = "--strategy " + n
	}
	return "use " + strings.Join(names, " or ") + ", whose batches the run paces"
}

// PacedStrategies are the strategies the run carries out itself on in's
// group, batch by batch: not the service's own, within what the provider
// can do there, draining nodes.
func PacedStrategies(in Input) []string {
	var out []string
	for _, name := range order {
		s := strategies[name]
		if in.Cloud != nil && in.Cloud.Managed != nil && in.Cloud.Managed.Runs(name) || s.Traits().LeavesRunning {
			continue
		}
		if checkCapability(s, in) == nil {
			out = append(out, string(name))
		}
	}
	return out
}
