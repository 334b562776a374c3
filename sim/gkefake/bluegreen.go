package gkefake

import (
	"context"
	"fmt"
	"slices"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// The phases of a blue/green upgrade, as BlueGreenInfo.phase names them
// (API reference, BlueGreenInfo.phase).
const (
	phaseStarted   = "UPDATE_STARTED"
	phaseCreate    = "CREATING_GREEN_POOL"
	phaseCordon    = "CORDONING_BLUE_POOL"
	phaseDrain     = "DRAINING_BLUE_POOL"
	phaseSoak      = "NODE_POOL_SOAKING"
	phaseDelete    = "DELETING_BLUE_POOL"
	phaseRollback  = "ROLLBACK_STARTED"
	maxTotalSoak   = 7 * 24 * time.Hour
	defaultSoak    = time.Hour
	defaultWait    = 72 * time.Hour
	autoscaledMost = 20
)

// blueGreen carries a blue/green upgrade out phase by phase, from the one
// a cancel paused it in
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#blue-green-upgrade-phases).
// An autoscaled one starts green empty, waits, drains blue 20 nodes at a
// time and does not soak
// (.../node-pool-upgrade-strategies#autoscaled-blue-green-upgrade-phases).
func (s *Server) blueGreen(ctx context.Context, p *pool, o *operation) error {
	u := p.up
	s.mu.Lock()
	if u.bg == nil {
		u.bg = &container.BlueGreenInfo{Phase: phaseStarted, GreenPoolVersion: u.to.Version, BlueInstanceGroupUrls: s.groupURLs(p, p.groups)}
	}
	s.mu.Unlock()
	blue := s.nodesOf(p, p.groups)
	s.mu.Lock()
	o.total, o.done = len(blue), len(u.drained)
	s.mu.Unlock()
	for {
		phase := s.phase(p)
		if phase != phaseDelete && s.stopping(o) {
			return errCancelled
		}
		var err error
		next := ""
		switch phase {
		case phaseStarted, phaseCreate:
			s.setPhase(p, phaseCreate)
			err, next = s.createGreen(ctx, p), phaseCordon
		case phaseCordon:
			err, next = s.cordonAll(ctx, blue, true), phaseDrain
		case phaseDrain:
			err, next = s.drainBlue(ctx, p, o, blue), phaseSoak
			if u.autoscaled() {
				next = phaseDelete // no soak
			}
		case phaseSoak:
			err, next = s.soak(ctx, p, o), phaseDelete
		case phaseDelete:
			return s.deleteBlue(ctx, p, o, blue)
		}
		if err != nil {
			return err
		}
		s.setPhase(p, next)
	}
}

func (s *Server) phase(p *pool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.up.bg.Phase
}

func (s *Server) setPhase(p *pool, phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.up.bg.Phase = phase
	s.logf("%s: blue/green phase %s", p.name, phase)
	s.changedLocked(p)
}

// nodesOf are the names of the groups' instances.
func (s *Server) nodesOf(p *pool, groups []string) []string {
	var out []string
	for i := range groups {
		g, _ := s.Compute.Group(groupKey(p, groups, i))
		for _, in := range g.Instances {
			if in.Action != gcefake.ActionDeleting {
				out = append(out, in.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// createGreen makes a group of the new template per zone, as large as
// blue's there (empty for an autoscaled upgrade), and waits for its
// nodes.
func (s *Server) createGreen(ctx context.Context, p *pool) error {
	u := p.up
	if len(p.green) == 0 {
		sizes := make([]int64, len(p.groups))
		for i := range p.groups {
			if g, _ := s.Compute.Group(groupKey(p, p.groups, i)); !u.autoscaled() {
				sizes[i] = g.TargetSize
			}
		}
		green, err := s.createGroups(ctx, p, u.toTemplate, sizes)
		if err != nil {
			return err
		}
		s.mu.Lock()
		p.green, u.bg.GreenInstanceGroupUrls = green, s.groupURLs(p, green)
		s.changedLocked(p)
		s.mu.Unlock()
	}
	for i := range p.green {
		if err := s.waitGroup(ctx, groupKey(p, p.green, i), gcefake.Group.Stable); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) cordonAll(ctx context.Context, nodes []string, on bool) error {
	return parallel(nodes, func(_ int, n string) error { return s.cordon(ctx, n, on) })
}

// drainBlue drains blue in batches of batchNodeCount or batchPercentage
// of blue (rounded down, at least one), soaking batchSoakDuration between
// them; a policy whose batch is 0 skips the phase. Pods a PDB still holds
// at the pool's PDB timeout stay until the blue pool is deleted
// (.../node-pool-upgrade-strategies#bg-phase-drain-blue).
func (s *Server) drainBlue(ctx context.Context, p *pool, o *operation, blue []string) error {
	u := p.up
	size, how := batchSize(u, len(blue)), drainHow{pdbTimeout: u.pdbTimeout}
	if u.autoscaled() {
		if err := s.wait(ctx, o, waitForDrain(u)); err != nil {
			return err
		}
		size, how.force = autoscaledMost, true
	}
	if size == 0 {
		return nil
	}
	soak, _ := parseDuration(standard(u.settings.BlueGreenSettings).BatchSoakDuration)
	for {
		left := slices.DeleteFunc(slices.Clone(blue), func(n string) bool { return slices.Contains(u.drained, n) })
		if len(left) == 0 {
			return nil
		}
		if s.stopping(o) {
			return errCancelled
		}
		batch := left[:min(size, len(left))]
		if err := s.drainBatch(ctx, p, batch, how); err != nil {
			return err
		}
		s.mu.Lock()
		u.drained = append(u.drained, batch...)
		s.mu.Unlock()
		s.addDone(o, len(batch))
		if len(batch) < len(left) && soak > 0 {
			if err := s.wait(ctx, o, soak); err != nil {
				return err
			}
		}
	}
}

// drainBatch drains a batch of blue nodes; an autoscaled upgrade first
// grows green by as many nodes, standing in for the cluster autoscaler
// that makes room for the evicted pods.
func (s *Server) drainBatch(ctx context.Context, p *pool, batch []string, how drainHow) error {
	if p.up.autoscaled() {
		if err := s.growGreen(ctx, p, len(batch)); err != nil {
			return err
		}
	}
	return parallel(batch, func(_ int, n string) error { return s.drainNode(ctx, n, how) })
}

// growGreen adds n nodes to green, spread over its zones.
func (s *Server) growGreen(ctx context.Context, p *pool, n int) error {
	for k := range n {
		i := k % len(p.green)
		key := groupKey(p, p.green, i)
		g, _ := s.Compute.Group(key)
		if _, err := s.gce.InstanceGroupManagers.Resize(p.c.project, p.zones[i], p.green[i], g.TargetSize+1).Context(ctx).Do(); err != nil {
			return fmt.Errorf("resize %s: %w", p.green[i], err)
		}
	}
	for i := range p.green {
		if err := s.waitGroup(ctx, groupKey(p, p.green, i), gcefake.Group.Stable); err != nil {
			return err
		}
	}
	return nil
}

// batchSize is the standard rollout's batch: batchNodeCount, else
// batchPercentage of blue rounded down and at least one; a policy given
// with both 0 drains nothing; no policy drains one node at a time.
func batchSize(u *upgrade, blue int) int {
	bg := u.settings.BlueGreenSettings
	if bg == nil || bg.StandardRolloutPolicy == nil {
		return 1
	}
	sp := bg.StandardRolloutPolicy
	switch {
	case sp.BatchNodeCount > 0:
		return int(sp.BatchNodeCount)
	case sp.BatchPercentage > 0:
		return max(1, int(sp.BatchPercentage*float64(blue)))
	}
	return 0
}

// waitForDrain is the autoscaled rollout's wait after the cordon: 3 days
// unless set (API reference, AutoscaledRolloutPolicy.waitForDrainDuration).
func waitForDrain(u *upgrade) time.Duration {
	d, err := parseDuration(u.settings.BlueGreenSettings.AutoscaledRolloutPolicy.WaitForDrainDuration)
	if err != nil || u.settings.BlueGreenSettings.AutoscaledRolloutPolicy.WaitForDrainDuration == "" {
		return defaultWait
	}
	return d
}

// soak waits nodePoolSoakDuration (an hour unless set), the soaks in all
// at most 7 days, or until completeUpgrade ends it
// (.../node-pool-upgrade-strategies#bg-phase-soak-node-pool).
func (s *Server) soak(ctx context.Context, p *pool, o *operation) error {
	u := p.up
	bg := u.settings.BlueGreenSettings
	d := defaultSoak
	if bg != nil && bg.NodePoolSoakDuration != "" {
		d, _ = parseDuration(bg.NodePoolSoakDuration)
	}
	batchSoak, _ := parseDuration(standard(bg).BatchSoakDuration)
	if batches := batchCount(u, o.total); time.Duration(max(batches-1, 0))*batchSoak+d > maxTotalSoak {
		d = max(maxTotalSoak-time.Duration(max(batches-1, 0))*batchSoak, 0)
	}
	s.mu.Lock()
	u.bg.BluePoolDeletionStartTime = time.Now().Add(d).UTC().Format(time.RFC3339)
	s.changedLocked(p)
	s.mu.Unlock()
	select {
	case <-o.complete:
		return nil
	default:
	}
	return s.wait(ctx, o, d)
}

func batchCount(u *upgrade, blue int) int {
	size := batchSize(u, blue)
	if size == 0 {
		return 0
	}
	return (blue + size - 1) / size
}

// wait waits d, until a cancel (errCancelled) or a completeUpgrade (nil).
func (s *Server) wait(ctx context.Context, o *operation, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if s.stopping(o) {
			return errCancelled
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-o.complete:
			return nil
		case <-time.After(min(s.opts.PollEvery, time.Until(deadline))):
		}
	}
	return nil
}

// deleteBlue deletes the pods left on blue, not evicting them, and then
// blue's groups; it cannot be cancelled
// (.../node-pool-upgrade-strategies#bg-phase-delete-blue).
func (s *Server) deleteBlue(ctx context.Context, p *pool, o *operation, blue []string) error {
	err := parallel(blue, func(_ int, n string) error { return s.drainNode(ctx, n, drainHow{noPDB: true}) })
	if err != nil {
		return err
	}
	if err := s.deleteGroups(ctx, p, p.groups); err != nil {
		return err
	}
	s.mu.Lock()
	o.done = o.total
	s.mu.Unlock()
	return nil
}

// deleteGroups deletes the groups and waits until they are gone.
func (s *Server) deleteGroups(ctx context.Context, p *pool, groups []string) error {
	for i, g := range groups {
		if _, err := s.gce.InstanceGroupManagers.Delete(p.c.project, p.zones[i], g).Context(ctx).Do(); err != nil {
			return fmt.Errorf("delete instance group %s: %w", g, err)
		}
	}
	for i := range groups {
		key := groupKey(p, groups, i)
		if err := s.waitGone(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) waitGone(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.NodeReadyTimeout)
	defer cancel()
	for {
		if _, ok := s.Compute.Group(key); !ok {
			return nil
		}
		if err := sleep(ctx, s.opts.PollEvery); err != nil {
			return fmt.Errorf("instance group %s was not deleted: %w", key, err)
		}
	}
}

// rollbackGreen undoes a paused blue/green upgrade: blue is uncordoned,
// green drained (honouring PDBs with respectPdb) and deleted
// (.../node-pool-upgrade-strategies#rollback-bg).
func (s *Server) rollbackGreen(ctx context.Context, p *pool, o *operation, respectPdb bool) error {
	s.setPhase(p, phaseRollback)
	blue, green := s.nodesOf(p, p.groups), s.nodesOf(p, p.green)
	s.mu.Lock()
	o.total = len(green)
	s.mu.Unlock()
	if err := s.cordonAll(ctx, blue, false); err != nil {
		return err
	}
	how := drainHow{pdbTimeout: p.up.pdbTimeout, force: true, noPDB: !respectPdb}
	if err := s.cordonAll(ctx, green, true); err != nil {
		return err
	}
	if err := parallel(green, func(_ int, n string) error { return s.drainNode(ctx, n, how) }); err != nil {
		return err
	}
	if err := s.deleteGroups(ctx, p, p.green); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.green, o.done = nil, o.total
	return nil
}
