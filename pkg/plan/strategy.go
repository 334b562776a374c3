package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// Strategy is one way of replacing a group's nodes. It is the only place
// that knows its own flags, batches, sizes, phases and what its provider
// must be able to do; the engine runs the phases it declares with the
// steps the strategy registers there (internal/upgrade: its own file, over a
// toolkit of batch steps every strategy shares). A new strategy is a type
// in its own file here, a line in the registry below, and its steps.
type Strategy interface {
	// Name is what --strategy takes.
	Name() StrategyName
	// Help is the strategy's part of the --strategy help.
	Help() string
	// Flags are the flags that only some strategies take and this one
	// does; such a flag given with a strategy that does not take it is
	// refused rather than ignored.
	Flags() []string
	// Needs is what the provider must be able to do for this input.
	Needs(in Input) Capability
	// Validate checks the input's settings and returns how many nodes a
	// batch takes at most, for a group of groupSize nodes.
	Validate(in Input, groupSize int) (int, error)
	// Plan puts the outdated nodes (shuffled by the seed) into batches and
	// sets the strategy's side of the plan, its cloud sizes included.
	Plan(c *Planning) ([][]PlannedNode, error)
	// Steps are the phases as the reviewer reads them, with estimates.
	Steps(p *Plan) []Step
	// Summary is the plan's one-line description of the strategy.
	Summary(p *Plan) string
	// Traits say how the engine's shared steps behave for it.
	Traits() Traits
	// First is the phase a run starts in; Next the transition table.
	First(f Flow) Phase
	Next(s State, f Flow) State
	// ResumeAt is where a re-run starts when the last run stopped in
	// recorded with nothing left to drain; "" starts from First.
	ResumeAt(recorded Phase, f Flow) Phase
}

// Capability is a set of things a provider can do. A provider declares
// them by the interfaces it implements (see cloud.Capabilities); a strategy
// says which it needs (Strategy.Needs), and the planner refuses the pair
// in one place (checkCapability) before anything changes.
type Capability uint

const (
	// CapRemoveNodes: remove a drained node (every provider, none too).
	CapRemoveNodes Capability = 1 << iota
	// CapResize: resize a group of machines that launches the target.
	CapResize
	// CapNewGroups: create a second group beside one and delete one.
	CapNewGroups
	// CapManagedUpdate: the cloud's own service runs the update of the
	// group (EKS managed node groups, GKE node pools); the run starts it,
	// follows it and offers the service's controls.
	CapManagedUpdate
)

// Has reports whether every capability of need is in c.
func (c Capability) Has(need Capability) bool { return c&need == need }

// Missing is what need asks for that c lacks, in words, for the message
// that refuses a strategy.
func (c Capability) Missing(need Capability) string {
	var words []string
	for _, bit := range []Capability{CapRemoveNodes, CapResize, CapNewGroups, CapManagedUpdate} {
		if need&bit != 0 && c&bit == 0 {
			words = append(words, capabilityText[bit])
		}
	}
	return strings.Join(words, " and ")
}

// What a capability means, for the message that refuses a strategy.
var capabilityText = map[Capability]string{
	CapRemoveNodes:   "removes nodes",
	CapResize:        "launches the new configuration",
	CapNewGroups:     "creates node groups",
	CapManagedUpdate: "runs the update itself",
}

// Rollback is how a strategy's run is undone.
type Rollback int

const (
	// RollbackNone: it cannot be rolled back.
	RollbackNone Rollback = iota
	// RollbackInPlace: the same strategy runs towards the previous
	// version once the run is stopped.
	RollbackInPlace
	// RollbackGreen: blue back in service, green drained; a live run
	// turns around at its next safe point.
	RollbackGreen
)

// Traits are a strategy's answers to the questions the shared steps ask.
type Traits struct {
	// DefaultMaxUnavailable is --max-unavailable when not given.
	DefaultMaxUnavailable string
	// DrainTimeout is --drain-timeout when not given.
	DrainTimeout time.Duration
	// DeleteAtTimeout deletes the pods still there at the drain timeout
	// (GKE does), instead of failing with PodEvictionFailure.
	DeleteAtTimeout bool
	// MaxGrace caps the pods' termination grace; 0 leaves it.
	MaxGrace time.Duration
	// OutdatedHeldOff: while batches run, no outdated node takes new pods
	// (tainted or cordoned), so a batch's pods must fit on the others.
	OutdatedHeldOff bool
	// WholeGroup: every node of the group is replaced whatever it runs
	// (blue is deleted at the end).
	WholeGroup bool
	// GreenFromZero: green starts empty and the autoscaler grows it while
	// blue may shrink to zero.
	GreenFromZero bool
	// LeavesRunning: nothing is drained; old nodes go away on their own.
	LeavesRunning bool
	// ScalesGroup: the run raises the group's sizes and restores the
	// recorded ones at the end, so an interrupted run's are shown.
	ScalesGroup bool
	Rollback    Rollback
}

// strategies is the registry of --strategy values; order is the order
// of registration, which help and completion keep.
var (
	strategies = map[StrategyName]Strategy{}
	order      []StrategyName
)

func register(s Strategy) {
	strategies[s.Name()] = s
	order = append(order, s.Name())
}

func init() {
	register(eks{})
	register(surge{})
	register(blueGreen{})
	register(autoscaledBlueGreen{})
	register(shortLived{})
}

// StrategyName is a --strategy value: the key of the planner's registry
// here and of the engine's steps (internal/upgrade), and what a provider
// whose service runs strategies itself is asked about
// (cloud.ManagedUpdater).
type StrategyName string

// The strategies' names.
const (
	StrategyEKS                 StrategyName = "eks"
	StrategySurge               StrategyName = "surge"
	StrategyBlueGreen           StrategyName = "blue-green"
	StrategyAutoscaledBlueGreen StrategyName = "autoscaled-blue-green"
	StrategyShortLived          StrategyName = "short-lived"
)

// DefaultStrategy is --strategy when not given: the EKS update.
const DefaultStrategy = StrategyEKS

// LookupStrategy returns the strategy --strategy names ("" for the default).
func LookupStrategy(name string) (Strategy, error) {
	if name == "" {
		name = string(DefaultStrategy)
	}
	if s, ok := strategies[StrategyName(name)]; ok {
		return s, nil
	}
	return nil, inputErrorf("invalid --strategy %q: must be one of %s", name, strings.Join(StrategyNames(), ", "))
}

// StrategyNames lists what --strategy takes, the default first.
func StrategyNames() []string {
	names := make([]string, len(order))
	for i, n := range order {
		names[i] = string(n)
	}
	return names
}

// RollbackStrategies are the strategies whose runs can be rolled back,
// sorted.
func RollbackStrategies() []string {
	var names []string
	for _, n := range order {
		if strategies[n].Traits().Rollback != RollbackNone {
			names = append(names, string(n))
		}
	}
	slices.Sort(names)
	return names
}

// StrategyHelp is the help of --strategy: every strategy's own.
func StrategyHelp() string {
	var parts []string
	for _, n := range order {
		parts = append(parts, string(n)+" ("+strategies[n].Help()+")")
	}
	return "How to replace the nodes: " + strings.Join(parts, "; ")
}

// StrategyFlags maps each flag that only some strategies take to them.
func StrategyFlags() map[string][]string {
	out := map[string][]string{}
	for _, n := range order {
		for _, f := range strategies[n].Flags() {
			out[f] = append(out[f], string(n))
		}
	}
	return out
}

// Planning is what a strategy plans from.
type Planning struct {
	Snapshot   snapshot.Cluster
	Input      Input
	PodsByNode map[string][]*corev1.Pod
	// Outdated are the nodes to replace, shuffled by the seed.
	Outdated []PlannedNode
	// Plan is the plan so far: counts, zones, the cloud side, the order.
	Plan *Plan
}

// fixedBatches cuts nodes into batches of size in their order.
func fixedBatches(nodes []PlannedNode, size int) [][]PlannedNode {
	var batches [][]PlannedNode
	for start := 0; size > 0 && start < len(nodes); start += size {
		batches = append(batches, nodes[start:min(start+size, len(nodes))])
	}
	return batches
}

// keepSizes is the cloud side of a strategy that does not scale the group
// up front.
func keepSizes(p *Plan) {
	if p.Cloud != nil && !p.Cloud.Resumed {
		p.Cloud.ScaleUp, p.Cloud.During = 0, p.Cloud.Before
	}
}

// Step is one phase of the plan as the reviewer reads it.
type Step struct {
	Phase  string `json:"phase"`
	Detail string `json:"detail"`
	// Estimate is a rough duration (see Plan.EstimateAssumptions).
	Estimate Duration `json:"estimate"`
}

// steps collects a plan's steps.
type steps []Step

func (s *steps) add(phase, detail string, d time.Duration) {
	*s = append(*s, Step{Phase: phase, Detail: detail, Estimate: Duration(d)})
}

// stepsAfter is s from the step after the one named phase on; s whole
// when none is.
func stepsAfter(s []Step, phase string) []Step {
	for i, st := range s {
		if st.Phase == phase {
			return s[i+1:]
		}
	}
	return s
}

// resizes reports whether a run points the cloud group at the target and
// resizes it, as the engine does with a cloud.Scaler only.
func resizes(c *CloudPlan) bool { return c != nil && !c.RemovesOnly }

// setup is the Setup of a strategy that points the group at the target.
func (s *steps) setup(p *Plan) {
	c := p.Cloud
	if !resizes(c) {
		return
	}
	target := "version " + c.TargetVersion
	if c.TargetVersion == NewVersion {
		target = "a new version with image " + c.TargetImage
	}
	s.add("Setup", fmt.Sprintf("point %s %s at %s %s %s", c.GroupKind, c.Group, c.TemplateKind, c.Template, target), 0)
}

// Duration marshals as a Go duration string ("1m30s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// What the estimates assume where nothing measured the group's pace (see
// Pace): a new cloud node is Ready in NodeLaunchEstimate, a batch drains in
// DrainEstimate, then the run waits the plan's --post-drain-wait.
const (
	NodeLaunchEstimate = 3 * time.Minute
	DrainEstimate      = time.Minute
)

// SettingsUpdateEstimate is the estimate of a cloud service's call that
// launches, drains and terminates nothing (a node group's or pool's
// update settings, a launch template version). No service publishes a
// figure; they change no machine, so they take seconds, not the minutes
// of a node's join or a drain. A minute each made the estimate of a small
// group's update mostly these (the eks-managed demo: 6m43s estimated,
// 3m40s run).
const SettingsUpdateEstimate = 15 * time.Second

// EstimateAssumptions says what the plan's estimates assume.
func (p *Plan) EstimateAssumptions() string {
	if p.Managed != nil {
		return p.paceText() + p.settingsText() // the service's drains: no post-drain wait of the run's
	}
	s := fmt.Sprintf("%s, post-drain wait %s", p.paceText(), FormatDuration(time.Duration(p.PostDrainWait)))
	if d := deregistrationEstimate(p); d > 0 {
		s += ", deregistration " + FormatDuration(d)
	}
	return s
}

// settingsText says where the estimate of the service's settings updates
// comes from, where the plan has one.
func (p *Plan) settingsText() string {
	if !slices.ContainsFunc(p.Managed.Steps, func(st Step) bool { return serviceSteps[st.Phase] }) {
		return ""
	}
	s := ", a settings update in " + FormatDuration(p.SettingsTime())
	if p.Pace != nil && p.Pace.Settings > 0 {
		s += fmt.Sprintf(" (from %s)", p.Pace.SettingsFrom)
	}
	return s
}

// perBatchEstimate is a drain per round of evictions (DrainRounds), the
// post-drain wait, and the wait for the load balancers to let go of the
// batch's machines; and a join for each
// machine of the batch where a removal awaits its replacement.
func perBatchEstimate(p *Plan) time.Duration {
	d := time.Duration(max(p.DrainRounds, 1))*p.DrainTime() + time.Duration(p.PostDrainWait) + deregistrationEstimate(p)
	if p.Cloud != nil && p.Cloud.AwaitsReplacement {
		d += time.Duration(max(p.MaxUnavailable, 1)) * p.JoinTime()
	}
	return d
}

// scaleDownEstimate is the scale-down of n nodes, one at a time: each
// waits the post-drain wait and the deregistration; only a node that
// holds pods waits a drain, one round (one node at a time), and the pods
// it can hold are those the batches moved and the deferred nodes' own;
// nothing replaces a node removed with the desired size lowered. A
// batch's time per node made the e2e demos' scale-down of 6 nodes, most
// of them empty, 54s planned for 31s run (and the in-run ETA 49s for 33s).
func scaleDownEstimate(p *Plan, n int) time.Duration {
	pods := 0
	for _, b := range p.Batches {
		for _, nd := range b.Nodes {
			pods += len(nd.Pods)
		}
	}
	for _, nd := range p.Deferred {
		pods += max(len(nd.Pods), 1)
	}
	each := time.Duration(p.PostDrainWait) + deregistrationEstimate(p)
	return time.Duration(n)*each + time.Duration(min(n, pods))*p.DrainTime()
}

// deregistrationEstimate is the longest deregistration delay of the
// group's load balancers, which every removal waits out (the timeout
// stops the run sooner).
func deregistrationEstimate(p *Plan) time.Duration {
	if p.Cloud == nil {
		return 0
	}
	d := LongestDelay(p.Cloud.LoadBalancers)
	if t := time.Duration(p.DeregistrationTimeout); t > 0 {
		d = min(d, t)
	}
	return d
}

// EstimatedDuration sums the steps' estimates.
func (p *Plan) EstimatedDuration() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		d += time.Duration(s.Estimate)
	}
	return d
}

// SoakEstimate is the part of EstimatedDuration that is the node-pool
// soak: a wait the user chose, known to the second, which "complete" ends
// early. The plan and the report state it apart from the work around it.
func (p *Plan) SoakEstimate() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		if s.Phase == string(PhaseSoak) {
			d += time.Duration(s.Estimate)
		}
	}
	return d
}

// EstimateText is the estimate in the plan's words: the work, and the
// node-pool soak apart from it.
func EstimateText(total, soak time.Duration) string {
	if soak <= 0 {
		return FormatDuration(total)
	}
	return fmt.Sprintf("%s plus the node-pool soak of %s, which \"complete\" ends early", FormatDuration(total-soak), FormatDuration(soak))
}

// batchSteps are the steps whose estimates are the batches': a run
// measures those and corrects its ETA by them.
var batchSteps = map[string]bool{"Upgrade": true, "Surge": true, "DrainBlue": true}

// BatchStep reports whether the step of phase is the batches'.
func BatchStep(phase string) bool { return batchSteps[phase] }

// BatchEstimate is the part of EstimatedDuration the batches take.
func (p *Plan) BatchEstimate() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		if batchSteps[s.Phase] {
			d += time.Duration(s.Estimate)
		}
	}
	return d
}

// Traits are the plan's strategy's traits.
func (p *Plan) Traits() Traits {
	s, err := LookupStrategy(p.Strategy)
	if err != nil {
		return Traits{}
	}
	return s.Traits()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// zonesOf returns the distinct zones of nodes, in order of appearance.
func zonesOf(nodes []PlannedNode) []string {
	var zones []string
	for _, n := range nodes {
		if !slices.Contains(zones, n.Zone) {
			zones = append(zones, n.Zone)
		}
	}
	return zones
}
