package awsfake

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The scaling processes of an Auto Scaling group that SuspendProcesses and
// ResumeProcesses take, as the API reference lists them.
var scalingProcesses = []string{"Launch", "Terminate", "AddToLoadBalancer", "AlarmNotification", "AZRebalance", "HealthCheck", "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions"}

// AZRebalance is the process that evens a group out across its zones.
const AZRebalance = "AZRebalance"

// Rebalance is one round of AZRebalance: the instance it launched in the
// emptiest zone and the one it then terminated in the fullest, of its own
// accord (nobody drained it).
type Rebalance struct {
	Group, Launched, Terminated string
	At                          time.Time
}

// ProcessChange is a process of a group suspended or resumed.
type ProcessChange struct {
	Group, Process string
	Suspended      bool
	At             time.Time
}

// ProcessChanges returns every suspension and resumption so far that
// changed something, oldest first.
func (s *Server) ProcessChanges() []ProcessChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.processChanges)
}

// processesArg reads ScalingProcesses; none means every process.
func processesArg(f form) ([]string, error) {
	procs := f.list("ScalingProcesses.member")
	if len(procs) == 0 {
		return slices.Clone(scalingProcesses), nil
	}
	for _, p := range procs {
		if !slices.Contains(scalingProcesses, p) {
			return nil, validation("Unknown scaling process: %s", p)
		}
	}
	return procs, nil
}

// suspendLocked suspends (on) or resumes processes of a group; repeating
// either changes nothing, as in AWS.
func (s *Server) suspendLocked(name string, procs []string, on bool) error {
	g, err := s.mutableGroup(name)
	if err != nil {
		return err
	}
	if g.suspended == nil {
		g.suspended = map[string]time.Time{}
	}
	for _, p := range procs {
		_, was := g.suspended[p]
		if was == on {
			continue
		}
		now := time.Now().UTC()
		if on {
			g.suspended[p] = now
		} else {
			delete(g.suspended, p)
		}
		s.processChanges = append(s.processChanges, ProcessChange{Group: g.Name, Process: p, Suspended: on, At: now})
	}
	s.notify()
	return nil
}

// Suspend suspends processes of a group, as SuspendProcesses does.
func (s *Server) Suspend(name string, procs ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspendLocked(name, procs, true)
}

// Suspended returns the group's suspended processes, sorted.
func (s *Server) Suspended(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.groups[name]; g != nil {
		return slices.Sorted(maps.Keys(g.suspended))
	}
	return nil
}

// Rebalances returns every round of AZRebalance so far, oldest first.
func (s *Server) Rebalances() []Rebalance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rebalances)
}

func (s *Server) suspendedProcesses(g *group) *node {
	var items []*node
	for _, p := range slices.Sorted(maps.Keys(g.suspended)) {
		items = append(items, el("member", txt("ProcessName", p), txt("SuspensionReason", fmt.Sprintf("User suspended at %s", g.suspended[p].Format(time.RFC3339)))))
	}
	return el("SuspendedProcesses", items...)
}

// rebalanceLocked models AZRebalance on a group at its desired capacity
// with no launch under way: where its zones differ by more than one
// instance it launches one in the emptiest zone and, once that is
// InService, terminates one in the fullest (AWS launches before it
// terminates). It reports whether the group is mid-rebalance, so the
// reconcile loop leaves it alone meanwhile.
func (s *Server) rebalanceLocked(g *group) bool {
	if !s.opts.AZRebalance || g.deleting || len(g.Zones) < 2 {
		return false
	}
	if g.rebalancing != "" {
		in := s.instances[g.rebalancing]
		switch {
		case in == nil || !active(in):
			g.rebalancing = "" // its launch failed: try again from scratch
		case in.Lifecycle == LifecyclePending:
			return true
		default:
			victim := s.fullestLocked(g, in.ID)
			g.rebalancing = ""
			if victim != nil {
				s.rebalances = append(s.rebalances, Rebalance{Group: g.Name, Launched: in.ID, Terminated: victim.ID, At: time.Now().UTC()})
				s.logf("awsfake: AZRebalance of %s: launched %s in %s, terminating %s in %s", g.Name, in.ID, in.Zone, victim.ID, victim.Zone)
				s.terminateLocked(victim)
			}
			return false
		}
	}
	if _, held := g.suspended[AZRebalance]; held {
		return false
	}
	perZone := map[string]int{}
	n := int32(0)
	for _, id := range g.members {
		in := s.instances[id]
		if in.Lifecycle == LifecyclePending {
			return false // not settled yet
		}
		if active(in) {
			perZone[in.Zone]++
			n++
		}
	}
	if n != g.Desired || n == 0 || n >= g.Max+max(1, g.Max/10) {
		return false
	}
	emptiest, fullest := g.Zones[0], g.Zones[0]
	for _, z := range g.Zones[1:] {
		if perZone[z] < perZone[emptiest] {
			emptiest = z
		}
		if perZone[z] > perZone[fullest] {
			fullest = z
		}
	}
	if perZone[fullest]-perZone[emptiest] <= 1 {
		return false
	}
	g.rebalancing = s.launchLocked(g, emptiest).ID
	return true
}

// fullestLocked picks AZRebalance's victim: the oldest instance of the zone
// with the most InService instances, other than keep.
func (s *Server) fullestLocked(g *group, keep string) *instance {
	perZone := map[string][]*instance{}
	for _, id := range g.members {
		if in := s.instances[id]; id != keep && in.Lifecycle == LifecycleInService {
			perZone[in.Zone] = append(perZone[in.Zone], in)
		}
	}
	zone := ""
	for _, z := range g.Zones {
		if zone == "" || len(perZone[z]) > len(perZone[zone]) {
			zone = z
		}
	}
	if len(perZone[zone]) == 0 {
		return nil
	}
	return slices.MinFunc(perZone[zone], func(a, b *instance) int { return a.LaunchTime.Compare(b.LaunchTime) })
}
