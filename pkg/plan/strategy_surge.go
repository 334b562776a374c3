package plan

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// MaxInFlight caps maxSurge + maxUnavailable of the surge strategy, as GKE
// does.
const MaxInFlight = 20

// OrderByZone is the surge strategy's order: one zone at a time.
const OrderByZone = "zone-by-zone"

// surge is GKE's surge upgrade: one zone at a time, per batch maxSurge new
// nodes first, then the batch's old nodes cordoned, drained and removed.
type surge struct{}

func (surge) Name() StrategyName { return StrategySurge }

func (surge) Help() string {
	return "GKE's: one zone at a time, per node a surge node first; profiles: --max-surge 1 --max-unavailable 0 balanced (the default), 0/20 fast without extra nodes, 20/0 fast and gentle, 0/1 slow without extra nodes"
}

func (surge) Flags() []string { return []string{"max-surge", "max-unavailable"} }

// Needs a group only for surge nodes: with --max-surge 0 nodes are only
// removed.
func (surge) Needs(in Input) Capability {
	if in.MaxSurge > 0 {
		return CapResize
	}
	return CapRemoveNodes
}

// NeedsWhy says that surge nodes need a provider that creates them, and
// what to do without one.
func (surge) NeedsWhy(in Input, provider string) string {
	instead := "use --max-surge 0 and --max-unavailable N"
	if in.Cloud == nil {
		instead = "use the --provider of the cloud whose group keeps the nodes, or --max-surge 0 and --max-unavailable N"
	}
	return fmt.Sprintf("--max-surge %d needs a provider that creates nodes, not --provider %s; %s", in.MaxSurge, provider, instead)
}

func (surge) Validate(in Input, _ int) (int, error) {
	return ParseSurge(in.MaxSurge, in.MaxUnavailable)
}

// ParseSurge checks the surge strategy's per-zone settings: whole numbers
// from 0, not both 0, and at most MaxInFlight nodes in flight.
func ParseSurge(maxSurge int, maxUnavailable string) (int, error) {
	mu, err := strconv.Atoi(maxUnavailable)
	if err != nil || mu < 0 {
		return 0, inputErrorf("invalid --max-unavailable %q: with --strategy surge it is a number of nodes per zone, from 0", maxUnavailable)
	}
	switch {
	case maxSurge < 0:
		return 0, inputErrorf("invalid --max-surge %d: must not be negative", maxSurge)
	case maxSurge == 0 && mu == 0:
		return 0, inputErrorf("--max-surge and --max-unavailable are both 0: nothing could be upgraded; raise one of them")
	case maxSurge+mu > MaxInFlight:
		return 0, inputErrorf("--max-surge %d plus --max-unavailable %d is %d nodes in flight, above the limit of %d; lower them", maxSurge, mu, maxSurge+mu, MaxInFlight)
	}
	return mu, nil
}

func (surge) Plan(c *Planning) ([][]PlannedNode, error) {
	p := c.Plan
	p.Order = OrderByZone
	// Surge adds its nodes a window at a time, not up front.
	if cp := p.Cloud; resizes(cp) && !cp.Resumed && len(c.Outdated) > 0 {
		cp.During.Desired += int32(p.MaxSurge)
		cp.During.Max += int32(p.MaxSurge)
	}
	return surgeBatches(c.Outdated, p.MaxSurge+p.MaxUnavailable, c.Input.Seed), nil
}

// surgeBatches upgrades one zone at a time: per zone, windows of
// maxSurge+maxUnavailable nodes, in a seeded random order within the zone.
func surgeBatches(outdated []PlannedNode, window int, seed int64) [][]PlannedNode {
	byZone := map[string][]PlannedNode{}
	for _, n := range outdated {
		byZone[n.Zone] = append(byZone[n.Zone], n)
	}
	zones := zonesOf(outdated)
	sort.Strings(zones)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5bd1e995))
	var batches [][]PlannedNode
	for _, z := range zones {
		nodes := byZone[z]
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		batches = append(batches, fixedBatches(nodes, window)...)
	}
	return batches
}

func (surge) Steps(p *Plan) []Step {
	var s steps
	s.setup(p)
	nodes, batches := map[string]int{}, map[string]int{}
	var zones []string
	for _, b := range p.Batches {
		z := b.Nodes[0].Zone
		if _, ok := nodes[z]; !ok {
			zones = append(zones, z)
		}
		nodes[z] += len(b.Nodes)
		batches[z]++
	}
	for _, z := range zones {
		d := time.Duration(batches[z]) * perBatchEstimate(p)
		if p.MaxSurge > 0 {
			d += time.Duration(batches[z]) * p.JoinTime()
		}
		s.add("Surge", fmt.Sprintf("zone %s: +%d node(s) at a time, %d nodes %d at a time (%d batches)", orNone(z), min(p.MaxSurge, nodes[z]), nodes[z], p.MaxSurge+p.MaxUnavailable, batches[z]), d)
	}
	return s
}

func (surge) Summary(p *Plan) string {
	return fmt.Sprintf("surge: max surge %d, max unavailable %d, per zone, one zone at a time", p.MaxSurge, p.MaxUnavailable)
}

func (surge) Traits() Traits {
	// GKE honours PDBs for up to an hour here, then deletes.
	return Traits{DefaultMaxUnavailable: "0", DrainTimeout: time.Hour, DeleteAtTimeout: true, ScalesGroup: true, Rollback: RollbackInPlace}
}

func (surge) First(f Flow) Phase {
	switch {
	case f.CloudGroup:
		return PhaseSetup
	case f.Batches > 0:
		return PhaseRoom
	}
	return PhaseDone
}

func (surge) Next(s State, f Flow) State {
	end, start := State{Phase: PhaseDone, Batch: s.Batch}, PhaseRoom
	if f.CloudGroup {
		end.Phase, start = PhaseScaleDown, PhaseSurge
	}
	if next, ok := batchNext(s, f, start, end); ok {
		return next
	}
	switch s.Phase {
	case PhaseSetup:
		if f.Batches > 0 {
			return State{Phase: start}
		}
		return end
	case PhaseSurge:
		return State{Phase: PhaseRoom, Batch: s.Batch}
	}
	return State{Phase: PhaseDone, Batch: s.Batch}
}

func (surge) ResumeAt(recorded Phase, f Flow) Phase { return eks{}.ResumeAt(recorded, f) }
