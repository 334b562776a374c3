// Package plan computes what an upgrade of one node group will do, from a
// single snapshot of the cluster (listed by package snapshot), with pure
// functions so that the plan shown to a reviewer is exactly the plan that
// runs.
package plan

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

const (
	// APIVersion and Kind identify a saved plan file.
	APIVersion = "nodeupgrade.dev/v1alpha1"
	Kind       = "UpgradePlan"

	// StateLabel marks nodes the tool has finished with but left in place
	// (provider none with --delete-node=false), so a re-run skips them.
	StateLabel = "nodeupgrade.dev/state"
	// StateDone is the StateLabel value of a drained, cordoned node.
	StateDone = "done"
)

// ZoneLabel is the well-known topology label of a node's zone.
const ZoneLabel = "topology.kubernetes.io/zone"

// Plan is the typed result of planning; `plan -o json` prints it and
// `run --plan-file` reads it back.
type Plan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	Context        string            `json:"context,omitempty"`
	NodeGroup      string            `json:"nodeGroup,omitempty"`
	NodeGroupLabel string            `json:"nodeGroupLabel,omitempty"`
	Selector       string            `json:"selector,omitempty"`
	TargetLabels   map[string]string `json:"targetLabels"`
	Strategy       string            `json:"strategy"`
	// StrategyFrom says where Strategy came from when --strategy did not
	// name it ("the pool's own upgrade strategy"); "" when it did.
	StrategyFrom string `json:"strategyFrom,omitempty"`
	Provider     string `json:"provider"`
	// Cloud is the provider's side (its group, template versions,
	// scale-up); nil with provider none.
	Cloud *CloudPlan `json:"cloud,omitempty"`
	// Managed is the update the cloud's service runs; nil when the run
	// does the work itself.
	Managed *ManagedPlan `json:"managed,omitempty"`

	// MaxUnavailableInput is what the user asked for (e.g. "25%"),
	// MaxUnavailable the resolved number of nodes per batch.
	MaxUnavailableInput string `json:"maxUnavailableInput"`
	MaxUnavailable      int    `json:"maxUnavailable"`
	// MaxSurge is the surge strategy's extra nodes per zone.
	MaxSurge int `json:"maxSurge,omitempty"`
	// ShortLived lists the outdated nodes the short-lived strategy leaves
	// running.
	ShortLived []PlannedNode `json:"shortLived,omitempty"`
	// BlueGreen is the blue/green strategy's side.
	BlueGreen *BlueGreenPlan `json:"blueGreen,omitempty"`
	Taint     string         `json:"taint"`
	Seed      int64          `json:"seed"`
	// Order is how nodes were put into batches: random or zone-balanced.
	Order string `json:"order"`
	// PostDrainWait is the wait after each drained batch the estimates
	// count (run's --post-drain-wait).
	PostDrainWait Duration `json:"postDrainWait"`
	// DeregistrationTimeout bounds the wait for the cloud's load
	// balancers to let go of a removed node (Cloud.LoadBalancers).
	DeregistrationTimeout Duration `json:"deregistrationTimeout,omitempty"`
	// Pace is what was measured of the group's join, drain and settings
	// update times, which the estimates take (see Pace); nil when
	// nothing was.
	Pace *Pace `json:"pace,omitempty"`
	// DrainRounds is the most evictions one after another a batch's
	// drain takes where a PDB lets fewer of a workload's pods go at once
	// than the batch holds (each waits for a replacement Ready); the
	// estimates count a drain per round. 0 or 1: one.
	DrainRounds int `json:"drainRounds,omitempty"`

	Nodes   NodeCounts `json:"nodes"`
	Zones   []string   `json:"zones"`
	Batches []Batch    `json:"batches"`
	// Deferred are outdated nodes no batch replaces: a rollback's
	// scale-down removes them, as the sizes recorded before the rolled
	// back run have no room for them (see deferSurplus).
	Deferred []PlannedNode `json:"deferred,omitempty"`
	// Done lists nodes a previous run drained and left in place.
	Done []string `json:"done,omitempty"`
	// Findings is the workload audit of the outdated nodes; blockers first.
	Findings []check.Finding `json:"findings"`
	// Steps are the phases in order with rough durations.
	Steps []Step `json:"steps"`
	// Hooks are the command hooks the run runs and their timeout (nil
	// when neither is given);
	// HookedNodes the group's nodes with annotation hooks when planned.
	Hooks       *Hooks       `json:"hooks,omitempty"`
	HookedNodes []HookedNode `json:"hookedNodes,omitempty"`
	// Window is when batches may start (--window, --not-before,
	// --not-after); nil when any time.
	Window *WindowPlan `json:"window,omitempty"`
	// Waves are the run's waves and the gates between them (--waves,
	// --gate); nil when neither was asked for.
	Waves *WavePlan `json:"waves,omitempty"`
	// Notes say where the plan could not do what was asked (e.g. a batch
	// that takes more replicas than a PDB allows).
	Notes []string `json:"notes,omitempty"`
	// MakeRoom is what --make-room surges around each batch (nil
	// without it).
	MakeRoom []makeroom.Batch `json:"makeRoom,omitempty"`
	// Capacity is what the run needs of the cloud's shared limits and
	// what was free (nil where the provider reads none).
	Capacity *CapacityPlan `json:"capacity,omitempty"`
	// Options are the run's options that run --plan-file takes from the
	// plan (options.go); nil in plans saved before they were carried.
	Options *Options `json:"options,omitempty"`
	// Cost is what the added nodes of eks, surge and blue/green cost
	// (nil where the run has no cloud group).
	Cost *CostPlan `json:"cost,omitempty"`
}

// AddFindings puts findings made outside the planner (by what only the
// command knows, a cloud's answer say) among the plan's: blockers first,
// warnings after the planner's, and names them on their nodes.
func (p *Plan) AddFindings(fs ...check.Finding) {
	if len(fs) == 0 {
		return
	}
	var blockers, warnings []check.Finding
	for _, f := range fs {
		if f.Severity == check.Blocker {
			blockers = append(blockers, f)
		} else {
			warnings = append(warnings, f)
		}
	}
	p.Findings = append(append(blockers, p.Findings...), warnings...)
	p.markFindings()
}

// Blockers returns the findings that stop a run.
func (p *Plan) Blockers() []check.Finding {
	var out []check.Finding
	for _, f := range p.Findings {
		if f.Severity == check.Blocker {
			out = append(out, f)
		}
	}
	return out
}

// NodeCounts summarises the group.
type NodeCounts struct {
	Total int `json:"total"`
	// Outdated counts the nodes the batches replace; Deferred the outdated
	// nodes the scale-down removes instead (Plan.Deferred).
	Outdated int `json:"outdated"`
	Deferred int `json:"deferred,omitempty"`
	Current  int `json:"current"`
	Done     int `json:"done"`
}

// Batch is a set of nodes drained at the same time.
type Batch struct {
	Number int           `json:"number"`
	Nodes  []PlannedNode `json:"nodes"`
}

// PlannedNode is one outdated node and what draining it means.
type PlannedNode struct {
	Name       string `json:"name"`
	Zone       string `json:"zone,omitempty"`
	ProviderID string `json:"providerID,omitempty"`
	// MachineID is the cloud's ID of the node's machine (an EC2 or
	// Compute Engine instance); "instanceID" in JSON, as scripts read it.
	MachineID string    `json:"instanceID,omitempty"`
	Created   time.Time `json:"created"`
	Tainted   bool      `json:"tainted,omitempty"`
	Cordoned  bool      `json:"cordoned,omitempty"`
	// Quarantined: the last run left the node quarantined (labelled
	// check.LabelUpgradeStatus); this one takes it first.
	Quarantined bool        `json:"quarantined,omitempty"`
	Outdated    []LabelDiff `json:"outdated"`
	Pods        []string    `json:"pods"`
	// Blockers and Warnings name the checks that found something on the node.
	Blockers []string `json:"blockers,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// LabelDiff is a target label the node lacks or carries with another value.
type LabelDiff struct {
	Key     string `json:"key"`
	Current string `json:"current"` // empty when the label is missing
	Target  string `json:"target"`
}

// Input is everything planning needs besides the snapshot.
type Input struct {
	Context        string
	NodeGroup      string
	NodeGroupLabel string // resolved before planning, empty with Selector
	Selector       string
	TargetLabels   map[string]string
	MaxUnavailable string // "2" or "25%"
	Taint          corev1.Taint
	Provider       string
	Seed           int64
	// Order is random, zone-balanced, or empty for zone-balanced when the
	// group spans several zones.
	Order          string
	Force          bool
	DeleteEmptyDir bool
	// Namespace limits the audit's findings; empty means all namespaces.
	Namespace string
	// Strategy is what --strategy names (see LookupStrategy); MaxSurge the
	// surge strategy's extra nodes per zone.
	Strategy  StrategyName
	MaxSurge  int
	BlueGreen BlueGreenInput
	// StrategyFrom says where Strategy came from when --strategy did not
	// name it (Plan.StrategyFrom).
	StrategyFrom string
	// PostDrainWait is run's --post-drain-wait, which the estimates count
	// after each drained batch.
	PostDrainWait time.Duration
	// DeregistrationTimeout is run's --deregistration-timeout.
	DeregistrationTimeout time.Duration
	// Pace is what the command measured of the group's join and drain
	// times (its last run, its pods); Build adds its nodes' join times
	// where it measured none.
	Pace *Pace
	// TerminateTimeout is run's --terminate-timeout, which the notes
	// compare with the group's hooks on leaving machines.
	TerminateTimeout time.Duration
	Hooks            Hooks
	// Cloud is the provider's view of the group; nil with provider none,
	// where the target labels alone say which nodes are outdated.
	Cloud *CloudGroup
	// Resume is what the unfinished run's record says of the cloud side;
	// zero without one.
	Resume Resume
	// Recovering is what the unfinished run's record lists as evicted and
	// maybe not Ready again yet (see check.Input).
	Recovering []check.Controller
	// Waves are --waves and the gates; WavesDone the nodes earlier
	// attempts of the run replaced (the run's first waves).
	Waves     Waves
	WavesDone int
}

// Batch orders.
const (
	OrderRandom       = "random"
	OrderZoneBalanced = "zone-balanced"
)

// Outdated returns every node the run replaces: those of the batches, and
// blue/green's undrained ones.
func (p *Plan) Outdated() []PlannedNode {
	var nodes []PlannedNode
	for _, b := range p.Batches {
		nodes = append(nodes, b.Nodes...)
	}
	if p.BlueGreen != nil {
		nodes = append(nodes, p.BlueGreen.Undrained...)
	}
	return nodes
}

// OutdatedNames returns the names of the nodes Outdated returns.
func (p *Plan) OutdatedNames() []string {
	var names []string
	for _, n := range p.Outdated() {
		names = append(names, n.Name)
	}
	return names
}

// DeferredNames returns the names of the nodes the scale-down removes
// instead of a batch (Plan.Deferred).
func (p *Plan) DeferredNames() []string {
	names := make([]string, 0, len(p.Deferred))
	for _, n := range p.Deferred {
		names = append(names, n.Name)
	}
	return names
}

// GroupSelector selects the nodes of the group, new ones included.
func (p *Plan) GroupSelector() (labels.Selector, error) {
	if p.Selector != "" {
		return labels.Parse(p.Selector)
	}
	return labels.SelectorFromSet(labels.Set{p.NodeGroupLabel: p.NodeGroup}), nil
}

// OutdatedZones returns the zones of the nodes planned for a drain, sorted.
func (p *Plan) OutdatedZones() []string {
	var zones []string
	for _, b := range p.Batches {
		for _, n := range b.Nodes {
			if n.Zone != "" && !slices.Contains(zones, n.Zone) {
				zones = append(zones, n.Zone)
			}
		}
	}
	slices.Sort(zones)
	return zones
}

// ResourceRefs names the nodes the plan replaces, for -o name: node/NAME.
func (p *Plan) ResourceRefs() []output.ResourceRef {
	refs := []output.ResourceRef{}
	for _, n := range p.Outdated() {
		refs = append(refs, output.ResourceRef{Kind: "Node", Name: n.Name})
	}
	return refs
}
