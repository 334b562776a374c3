package plan

import (
	"cmp"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// MaxSoak caps the soak times of blue/green in total, as GKE does.
const MaxSoak = 7 * 24 * time.Hour

// BlueGreenInput are the blue/green settings: the batch size as a count
// (BatchNodes >= 0) or a fraction of blue (BatchPercent in (0, 1], used when
// BatchNodes < 0), the soak after each batch and after the last one.
type BlueGreenInput struct {
	BatchNodes   int           `json:"batchNodes"`
	BatchPercent float64       `json:"batchPercent,omitempty"`
	BatchSoak    time.Duration `json:"batchSoak,omitempty"`
	NodePoolSoak time.Duration `json:"nodePoolSoak,omitempty"`
	// GreenGroup names a green group someone else made, or GreenSelector
	// selects its nodes (not a cloud group: the run neither scales nor
	// deletes it); both empty means the run creates green.
	GreenGroup    string `json:"greenGroup,omitempty"`
	GreenSelector string `json:"greenSelector,omitempty"`
	// WaitPeriod is autoscaled blue/green's time for the autoscaler to
	// remove under-used blue nodes before the rest is drained.
	WaitPeriod time.Duration `json:"waitPeriod,omitempty"`
	// KeepBlue keeps blue scaled to zero for this long after the run
	// instead of deleting it (--keep-blue): a rollback within it scales
	// blue back up rather than building a group again.
	KeepBlue time.Duration `json:"keepBlue,omitempty"`
	// Kept says GreenGroup is the blue a finished run kept (KeepBlue):
	// the run scales it up to blue's sizes, and scales it back to zero
	// where a rollback or abort would delete a green it made.
	Kept bool `json:"kept,omitempty"`
}

// BlueGreenPlan is the blue/green side of a plan.
type BlueGreenPlan struct {
	BatchSize    int      `json:"batchSize"`
	BatchSoak    Duration `json:"batchSoak"`
	NodePoolSoak Duration `json:"nodePoolSoak"`
	// Green is the green group, or GreenSelector selects the green nodes;
	// Create says the run makes green.
	Green         string `json:"green,omitempty"`
	GreenSelector string `json:"greenSelector,omitempty"`
	Create        bool   `json:"create"`
	// GreenLabel is CloudGroup.GreenLabel: the run selects the nodes of
	// the green it creates by GreenLabel=<green's name>.
	GreenLabel string `json:"greenLabel,omitempty"`
	// KeepBlue is BlueGreenInput.KeepBlue, and Kept BlueGreenInput.Kept.
	KeepBlue Duration `json:"keepBlue,omitempty"`
	Kept     bool     `json:"kept,omitempty"`
	// Undrained are blue's nodes when no batch drains them (batch size
	// 0): they are cordoned, soaked and deleted with their pods all the
	// same.
	Undrained []PlannedNode `json:"undrained,omitempty"`
}

// GreenGroupFlag stands, in a strategy's Flags, for the flag of the
// provider that names an existing group as green (aws: --green-asg; see
// cloud.Flags.GreenGroup): the provider names and binds it.
const GreenGroupFlag = "<green group>"

// ValidateBlueGreen checks the blue/green settings.
func ValidateBlueGreen(in BlueGreenInput) error {
	switch {
	case in.BatchNodes < 0 && (in.BatchPercent <= 0 || in.BatchPercent > 1):
		return inputErrorf("invalid --batch-percent %g: must be above 0 and at most 1", in.BatchPercent)
	case in.GreenGroup != "" && in.GreenSelector != "":
		return inputErrorf("a green group (the provider's flag) and --green-selector cannot be used together")
	case in.BatchSoak < 0:
		return inputErrorf("invalid --batch-soak %s: must not be negative", FormatDuration(in.BatchSoak))
	case in.NodePoolSoak < 0:
		return inputErrorf("invalid --node-pool-soak %s: must not be negative", FormatDuration(in.NodePoolSoak))
	case in.KeepBlue < 0 || in.KeepBlue > MaxSoak:
		return inputErrorf("invalid --keep-blue %s: must be from 0 to 7 days (7d)", FormatDuration(in.KeepBlue))
	case in.WaitPeriod < 0 || in.WaitPeriod > MaxSoak:
		return inputErrorf("invalid --wait-period %s: must be from 0 to 7 days (7d)", FormatDuration(in.WaitPeriod))
	}
	if in.GreenSelector != "" {
		if _, err := labels.Parse(in.GreenSelector); err != nil {
			return inputErrorf("invalid --green-selector %q: %v", in.GreenSelector, err)
		}
	}
	return nil
}

// blueGreen is GKE's blue/green upgrade: a green group beside blue, blue
// cordoned and drained in batches with soaks, the pool soaked, blue deleted.
type blueGreen struct{}

func (blueGreen) Name() StrategyName { return StrategyBlueGreen }

func (blueGreen) Help() string {
	return "a green group beside blue, blue cordoned and drained in batches, soaked, then deleted"
}

func (blueGreen) Flags() []string {
	return []string{"batch-node-count", "batch-percent", "batch-soak", "node-pool-soak", GreenGroupFlag, "green-selector", "keep-blue", "no-wait"}
}

func (blueGreen) Needs(Input) Capability { return CapNewGroups }

func (blueGreen) Validate(in Input, _ int) (int, error) { return 0, ValidateBlueGreen(in.BlueGreen) }

func (blueGreen) Plan(c *Planning) ([][]PlannedNode, error) {
	in := c.Input.BlueGreen
	size := in.BatchNodes
	if size < 0 {
		// A fraction of blue, rounded down, at least one node.
		size = max(int(in.BatchPercent*float64(len(c.Outdated))), 1)
	}
	planGreen(c, size, in.BatchSoak, in.NodePoolSoak)
	batches := fixedBatches(c.Outdated, size)
	if size == 0 {
		c.Plan.BlueGreen.Undrained = c.Outdated
	}
	if total := time.Duration(max(len(batches)-1, 0))*in.BatchSoak + in.NodePoolSoak; total > MaxSoak {
		return nil, inputErrorf("the soaks add up to %s (--batch-soak between %d batches, then --node-pool-soak), above the limit of %s; lower them", FormatDuration(total), len(batches), FormatDuration(MaxSoak))
	}
	return batches, nil
}

// planGreen sets the blue/green side of the plan: green is given, or made
// from blue's name and the target version.
func planGreen(c *Planning, size int, batchSoak, poolSoak time.Duration) {
	p, in := c.Plan, c.Input.BlueGreen
	p.BlueGreen = &BlueGreenPlan{BatchSize: size, BatchSoak: Duration(batchSoak), NodePoolSoak: Duration(poolSoak), Green: in.GreenGroup, GreenSelector: in.GreenSelector, KeepBlue: Duration(in.KeepBlue), Kept: in.Kept}
	if cg := c.Input.Cloud; in.GreenGroup == "" && in.GreenSelector == "" && cg != nil {
		version := cg.TargetVersion
		if version == NewVersion {
			// Its number comes when the run makes it: "-vnew" would read
			// as a name.
			version = "<new version>"
		}
		p.BlueGreen.Green, p.BlueGreen.Create = cmp.Or(cg.Green, cg.Group+"-v"+version), true
		p.BlueGreen.GreenLabel = cg.GreenLabel
	}
	p.MaxUnavailable = size
	keepSizes(p)
}

// prepareStep is the Setup of blue/green: the target version is made, but
// blue keeps launching its own.
func (s *steps) prepare(p *Plan) {
	if c := p.Cloud; c != nil && c.TargetVersion == NewVersion {
		s.add("Setup", fmt.Sprintf("create a version of %s %s with image %s; blue keeps its version", c.TemplateKind, c.Template, c.TargetImage), 0)
	}
}

func (blueGreen) Steps(p *Plan) []Step {
	var s steps
	s.prepare(p)
	bg, kind := p.BlueGreen, "group"
	if p.Cloud != nil {
		kind = p.Cloud.GroupKind
	}
	green := "a new " + kind + " " + bg.Green
	switch {
	case bg.GreenSelector != "":
		green = "the nodes selected by " + bg.GreenSelector + " (given)"
	case bg.Kept:
		green = fmt.Sprintf("%s %s (the blue a finished run kept at 0 nodes) scaled back up", kind, bg.Green)
	case !bg.Create:
		green = kind + " " + bg.Green + " (given)"
	}
	if bg.GreenLabel != "" && bg.Create {
		green += fmt.Sprintf(" (its nodes labelled %s=%s)", bg.GreenLabel, bg.Green)
	}
	s.add("CreateGreen", fmt.Sprintf("%s with %d nodes of the target; blue is pinned at its size", green, p.Nodes.Outdated), p.JoinTime())
	s.add("CordonBlue", fmt.Sprintf("cordon the %d blue nodes", p.Nodes.Outdated), 0)
	if len(p.Batches) > 0 {
		soaks := time.Duration(len(p.Batches)-1) * time.Duration(bg.BatchSoak)
		s.add("DrainBlue", fmt.Sprintf("%s of up to %s, %s soak between batches", Count(len(p.Batches), "batch"), Count(bg.BatchSize, "node"), FormatDuration(time.Duration(bg.BatchSoak))), time.Duration(len(p.Batches))*p.DrainTime()+soaks)
	} else {
		s.add("DrainBlue", "batch size 0: nothing drained, straight to the soak", 0)
	}
	s.add("Soak", fmt.Sprintf("%s; \"complete\" ends it early", FormatDuration(time.Duration(bg.NodePoolSoak))), time.Duration(bg.NodePoolSoak))
	s.add("DeleteBlue", deleteBlueStep(bg, kind), p.DrainTime())
	return s
}

// deleteBlueStep says what the end of the run does with blue: deleted,
// or kept at 0 nodes for --keep-blue.
func deleteBlueStep(bg *BlueGreenPlan, kind string) string {
	if bg.KeepBlue > 0 {
		return fmt.Sprintf("delete the pods left on blue (not evicted; grace at most 60m), then scale the blue %s to 0 nodes, kept %s for a rollback that scales it back up (--keep-blue); the next run after that deletes it", kind, FormatDuration(time.Duration(bg.KeepBlue)))
	}
	return fmt.Sprintf("delete the pods left on blue (not evicted; grace at most 60m), then the blue %s%s", kind, renamed(bg, kind))
}

// renamed says, where green's nodes go by green's own name, that the
// node group does too once blue is deleted.
func renamed(bg *BlueGreenPlan, kind string) string {
	if bg.GreenLabel == "" || !bg.Create {
		return ""
	}
	return fmt.Sprintf("; the node group is %s %q from then on (nodes %s=%s): rename it where infrastructure as code declares it", kind, bg.Green, bg.GreenLabel, bg.Green)
}

func (blueGreen) Summary(p *Plan) string { return p.Strategy }

func (blueGreen) Traits() Traits {
	return Traits{DefaultMaxUnavailable: "1", DrainTimeout: 15 * time.Minute, OutdatedHeldOff: true, WholeGroup: true, Rollback: RollbackGreen}
}

func (blueGreen) First(Flow) Phase { return PhasePrepareTarget }

func (blueGreen) Next(s State, f Flow) State {
	switch s.Phase {
	case PhasePrepareTarget:
		return State{Phase: PhaseCreateGreen}
	case PhaseCreateGreen:
		return State{Phase: PhaseCordonBlue}
	case PhaseCordonBlue:
		if f.Batches > 0 {
			return State{Phase: PhaseRoom}
		}
		return State{Phase: PhaseSoak}
	case PhaseRoom:
		return State{Phase: PhaseDrain, Batch: s.Batch}
	case PhaseDrain:
		// Blue's nodes stay, cordoned, until DeleteBlue.
		return State{Phase: PhaseRecover, Batch: s.Batch}
	case PhaseRecover:
		if s.Batch+1 < f.Batches {
			return State{Phase: PhaseBatchSoak, Batch: s.Batch}
		}
		return State{Phase: PhaseSoak, Batch: s.Batch}
	case PhaseBatchSoak:
		return State{Phase: PhaseRoom, Batch: s.Batch + 1}
	case PhaseSoak:
		return State{Phase: PhaseDeleteBlue, Batch: s.Batch}
	}
	return State{Phase: PhaseDone, Batch: s.Batch}
}

// ResumeAt goes on from the soak or the deletion of blue: blue is drained.
// Killed with green made and blue being cordoned or drained, the run
// starts again, unless no blue node is left to drain (the autoscaler
// removed them): then it goes on to the soak, which leads to blue's
// deletion.
func (blueGreen) ResumeAt(recorded Phase, f Flow) Phase {
	switch recorded {
	case PhaseSoak, PhaseDeleteBlue:
		return recorded
	case PhaseCordonBlue, PhaseRoom, PhaseDrain, PhaseRecover, PhaseBatchSoak:
		if f.Batches == 0 {
			return PhaseSoak
		}
	}
	return ""
}
