package upgrade

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// evenZones leaves the group balanced across its zones before the run
// lets the cloud rebalance it again (cloud.Rebalancer). A Shrink lowers
// the desired size in the zone of the node it removes while the cloud put
// each new machine where it chose (AWS: in a zone with the fewest, ties
// its own pick), so a run can end with zones two machines apart; resumed,
// AZRebalance would launch in the emptiest zone and terminate a machine
// nobody drained in the fullest. The run does the same, drained: one
// machine more, which the cloud launches in the emptiest zone, then the
// scale-down's removal, which takes a node of the fullest. A round that
// evens nothing (the cloud launched elsewhere: no capacity in the empty
// zone) ends it, with the rebalancing left suspended and the note saying
// how to resume it.
func (s *shrinker) evenZones(ctx context.Context, cr *state.CloudRecord, orig plan.Sizes) error {
	r, ok := s.pool.(cloud.Rebalancer)
	if !ok || !cr.RebalanceHeld {
		return nil // the run lets nothing rebalance that was not before it
	}
	zones, err := r.RebalanceZones(ctx)
	if err != nil || len(zones) < 2 {
		return err
	}
	lastUneven := -1
	for {
		count, _, err := s.machinesPerZone(ctx, zones)
		if err != nil {
			return err
		}
		if spread(count) <= 1 {
			return nil
		}
		if lastUneven >= 0 && unevenness(count) >= lastUneven {
			return s.leaveRebalanceHeld(ctx, r, &cr.Holds, zones, count)
		}
		lastUneven = unevenness(count)
		sizes, err := s.pool.Sizes(ctx)
		if err != nil {
			return err
		}
		s.logf("zones of %s %q are uneven (%s): one machine more, which the cloud launches in the emptiest zone, then one drained off the fullest, before %s resumes",
			s.words.groupKind(), s.pool.GroupName(), zoneCounts(zones, count), r.RebalanceName())
		// Recorded first: the raise is the run's, not the autoscaler's.
		want := sizes.Desired + 1
		cr.LastDesired = want
		if err := s.save(ctx); err != nil {
			return err
		}
		if err := r.SetDesiredAndMax(ctx, want, max(sizes.Max, want)); err != nil {
			return err
		}
		if err := s.awaitMachines(ctx, int(want), orig); err != nil {
			return err
		}
		autoscaled, err := s.shrinkToOriginal(ctx, &cr.ScaleRecord, orig)
		if err != nil || autoscaled {
			return err
		}
	}
}

// leaveRebalanceHeld hands the suspended rebalancing over to the operator:
// the run cannot even the zones out, and resumed it would terminate a node
// nobody drained.
func (s *shrinker) leaveRebalanceHeld(ctx context.Context, r cloud.Rebalancer, holds *state.Holds, zones []string, count map[string]int) error {
	holds.RebalanceHeld, s.rebalanceHeld = false, false
	s.tally.note = joinNote(s.tally.note, fmt.Sprintf("%s of %s %q stays suspended: its zones are uneven (%s) and the machine added to even them did not go to the emptiest zone, so resumed it would terminate a node nobody drained; drain a node of the fullest zone and resume %s when the zones are even",
		r.RebalanceName(), s.words.groupKind(), s.pool.GroupName(), zoneCounts(zones, count), r.RebalanceName()))
	s.logf("%s", s.cfg.Color.Yellow(s.tally.note))
	return s.save(ctx)
}

// machinesPerZone counts the group's machines that are not leaving, by
// zone, and those of them with a Ready node.
func (s *shrinker) machinesPerZone(ctx context.Context, zones []string) (map[string]int, int, error) {
	nodes, err := s.nodes.groupNodes()
	if err != nil {
		return nil, 0, err
	}
	byNode, pending, err := s.pool.Machines(ctx, nodes)
	if err != nil {
		return nil, 0, err
	}
	count := make(map[string]int, len(zones))
	for _, z := range zones {
		count[z] = 0
	}
	ready := 0
	for _, n := range nodes {
		if m, ok := byNode[n.Name]; ok && !m.Leaving() {
			count[m.Zone]++
			if capacity.NodeReady(n) {
				ready++
			}
		}
	}
	for _, m := range pending {
		if !m.Leaving() {
			count[m.Zone]++
		}
	}
	return count, ready, nil
}

// awaitMachines waits, up to --node-ready-timeout, until the group runs
// wanted machines with a Ready node, whatever version they launched.
func (s *shrinker) awaitMachines(ctx context.Context, wanted int, orig plan.Sizes) error {
	launched := 0
	return s.arrivals.awaitNodes(ctx, func(ctx context.Context) (bool, error) {
		count, ready, err := s.machinesPerZone(ctx, nil)
		if err != nil {
			return false, err
		}
		launched = 0
		for _, n := range count {
			launched += n
		}
		s.progress.waitingFor(fmt.Sprintf("%d/%d machines with a Ready node", ready, wanted))
		return ready >= wanted, nil
	}, func() *NodeCreationFailure {
		return &NodeCreationFailure{Group: s.pool.GroupName(), GroupKind: s.words.groupKind(), Timeout: s.cfg.NodeReadyTimeout, Launched: launched, Wanted: wanted, Original: orig}
	})
}

// spread is how many machines the fullest zone has over the emptiest.
func spread(count map[string]int) int {
	lo, hi, first := 0, 0, true
	for _, n := range count {
		if first {
			lo, hi, first = n, n, false
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi - lo
}

// unevenness falls with every machine moved from a fuller zone to an
// emptier one by two or more (the sum of squares), where the spread may
// not (3/3/0/0 to 2/3/1/0).
func unevenness(count map[string]int) int {
	s := 0
	for _, n := range count {
		s += n * n
	}
	return s
}

// zoneCounts says how many machines each zone has, in the zones' order.
func zoneCounts(zones []string, count map[string]int) string {
	parts := make([]string, len(zones))
	for i, z := range zones {
		parts[i] = fmt.Sprintf("%s %d", z, count[z])
	}
	return strings.Join(parts, ", ")
}
