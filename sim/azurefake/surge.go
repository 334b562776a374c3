package azurefake

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// upgrade runs AKS's surge upgrade of the pool to t
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#customize-node-surge-upgrade):
// maxSurge new machines on the target first (those an earlier, failed or
// cancelled upgrade added count), then the old machines maxSurge +
// maxUnavailable at a time (maxUnavailable: old nodes taken down beside
// the surge, "#customize-unavailable-nodes"): each cordoned and drained
// honouring PDBs for up to drainTimeoutInMinutes ("If this time is
// exceeded, the upgrade fails", AgentPoolUpgradeSettings.DrainTimeoutInMinutes),
// the batch soaked nodeSoakDurationInMinutes, then reimaged to the target
// (the node keeps its name); at the end the surge machines are drained
// and deleted. An abort stops it where it is; another failure leaves the
// pool Failed with the surge machines in place. A drain a PDB holds past
// the timeout ends it as undrainableNodeBehavior says: Schedule (the
// default) gives up (gaveUp), Cordon quarantines the node and goes on
// (drainBatch).
func (s *Server) upgrade(ctx context.Context, p *pool, o *operation, t target) error {
	s.mu.Lock()
	r := s.settingsLocked(p)
	var added []*machine
	have := 0
	for _, m := range p.nodes {
		m.quarantined = false // AKS drains a quarantined node again on the next upgrade
		if m.surge {
			have++
		}
	}
	if err := s.subnetRefusalLocked(p, r.surge-have); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.launchRefusalLocked(*p.model.Name, p.scaleSet, str(p.model.Properties.VMSize), r.surge-have); err != nil {
		s.mu.Unlock()
		return err // the surge comes first: nothing drained
	}
	for range max(r.surge-have, 0) {
		added = append(added, s.newMachineLocked(p, t.version, t.image, true))
	}
	s.mu.Unlock()
	s.logf("pool %s: %s to %s/%s, surge %d, unavailable %d", *p.model.Name, t.state, t.version, t.image, r.surge, r.unavailable)
	if err := parallel(added, func(m *machine) error { return s.joinNode(ctx, p, m) }); err != nil {
		return err
	}
	for {
		batch := s.nextBatch(p, t, max(r.surge+r.unavailable, 1))
		if len(batch) == 0 {
			break
		}
		if s.aborted(o) {
			return errAborted
		}
		s.logf("pool %s: draining %s", *p.model.Name, machineNames(batch))
		batch, blocked, err := s.drainBatch(ctx, p, batch, r)
		if err != nil {
			return err
		}
		if err := sleep(ctx, r.soak); err != nil {
			return err
		}
		s.logf("pool %s: reimaging %s", *p.model.Name, machineNames(batch))
		if err := parallel(batch, func(m *machine) error { return s.reimage(ctx, p, m, t) }); err != nil {
			return err
		}
		if blocked != nil {
			return s.gaveUp(ctx, p, r, blocked)
		}
	}
	if s.aborted(o) {
		return errAborted
	}
	if err := s.removeSurge(ctx, p, r.drain, false); err != nil {
		return err
	}
	return s.quarantinedEnd(p)
}

// drainBatch cordons and drains the batch and returns the machines
// drained. A machine whose drain timed out is left out: under Cordon
// quarantined, under Schedule returned in blocked with its drain's error.
func (s *Server) drainBatch(ctx context.Context, p *pool, batch []*machine, r upgradeRules) (drained []*machine, blocked *blockedDrain, err error) {
	errs := make([]error, len(batch))
	_ = parallel(batch, func(m *machine) error {
		errs[slices.Index(batch, m)] = s.cordonAndDrain(ctx, m.name, r.drain)
		return nil
	})
	for i, m := range batch {
		var de *drainError
		switch {
		case errs[i] == nil:
			drained = append(drained, m)
		case r.cordon && errors.As(errs[i], &de):
			if err := s.quarantine(ctx, m.name); err != nil {
				return nil, nil, err
			}
			s.mu.Lock()
			m.quarantined = true
			s.mu.Unlock()
			s.logf("pool %s: %s quarantined: %v", *p.model.Name, m.name, errs[i])
		case errors.As(errs[i], &de):
			if blocked == nil {
				blocked = &blockedDrain{err: de}
			}
			blocked.machines = append(blocked.machines, m)
		default:
			return nil, nil, errs[i]
		}
	}
	return drained, blocked, nil
}

// blockedDrain are the machines of a batch whose drains a PDB held past
// the timeout under undrainableNodeBehavior Schedule, and the first
// drain's error, which the failed upgrade reports.
type blockedDrain struct {
	machines []*machine
	err      *drainError
}

// gaveUp ends an upgrade whose drain failed under undrainableNodeBehavior
// Schedule as AKS does: "AKS will mark the blocked nodes schedulable, but
// the blocked nodes are not upgraded. A best-effort attempt will be made
// to delete all surge nodes. The upgrade operation and the managed
// cluster will be in failed state if there are any blocked nodes"
// (UndrainableNodeBehavior Schedule, the REST spec's 2025-05-01 enum;
// https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#optimize-upgrades-to-improve-performance-and-minimize-disruptions).
// The machines of the batch that drained were reimaged first.
func (s *Server) gaveUp(ctx context.Context, p *pool, r upgradeRules, b *blockedDrain) error {
	for _, m := range b.machines {
		if err := s.cordon(ctx, m.name, false); err != nil {
			return err
		}
	}
	s.logf("pool %s: %s made schedulable again, not upgraded; removing the surge nodes", *p.model.Name, machineNames(b.machines))
	if err := s.removeSurge(ctx, p, r.drain, true); err != nil {
		return err
	}
	return b.err
}

// errQuarantined ends an upgrade that left nodes quarantined.
type errQuarantined struct{ nodes []string }

func (e *errQuarantined) Error() string {
	return "Upgrade completed with nodes that could not be drained, left cordoned and labelled " + QuarantineLabel + "=" + QuarantineValue + ": " + strings.Join(e.nodes, ", ")
}

// quarantinedEnd is the upgrade's end when nodes are left quarantined:
// AKS ends it Canceled, keeping a surge node for each
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#set-node-drain-behavior).
func (s *Server) quarantinedEnd(p *pool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, m := range p.nodes {
		if m.quarantined {
			names = append(names, m.name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &errQuarantined{nodes: names}
}

// nextBatch is the next old machines to upgrade, at most n.
func (s *Server) nextBatch(p *pool, t target, n int) []*machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*machine
	for _, m := range p.nodes {
		if !m.surge && !m.quarantined && (m.version != t.version || m.image != t.image) && len(out) < n {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) aborted(o *operation) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return o.abort
}

func (s *Server) cordonAndDrain(ctx context.Context, node string, timeout time.Duration) error {
	if err := s.cordon(ctx, node, true); err != nil {
		return err
	}
	return s.drain(ctx, node, timeout)
}

// reimage puts the target on a drained machine: its node leaves and,
// once the machine is reimaged (an AKS minute here: minutes on Azure),
// registers again under the same name, uncordoned. A node made again at
// once under the name of the one just deleted can be missed by kwok,
// which then never runs the pods bound to it.
func (s *Server) reimage(ctx context.Context, p *pool, m *machine, t target) error {
	if err := s.leaveNode(ctx, m.name); err != nil {
		return err
	}
	if err := sleep(ctx, s.opts.MinuteIs); err != nil {
		return err
	}
	s.mu.Lock()
	m.version, m.image = t.version, t.image
	s.mu.Unlock()
	return s.joinNode(ctx, p, m)
}

// removeSurge drains and deletes the machines the upgrade added. At
// bestEffort a machine whose drain fails is made schedulable again and
// kept, and the others still go.
func (s *Server) removeSurge(ctx context.Context, p *pool, drainTimeout time.Duration, bestEffort bool) error {
	s.mu.Lock()
	var surge []*machine
	keep := 0 // a surge machine stays for each quarantined node
	for _, m := range p.nodes {
		switch {
		case m.quarantined:
			keep++
		case m.surge:
			surge = append(surge, m)
		}
	}
	surge = surge[min(keep, len(surge)):]
	s.mu.Unlock()
	return parallel(surge, func(m *machine) error {
		if err := s.cordonAndDrain(ctx, m.name, drainTimeout); err != nil {
			if !bestEffort {
				return err
			}
			s.logf("pool %s: surge node %s kept: %v", *p.model.Name, m.name, err)
			return s.cordon(ctx, m.name, false)
		}
		if err := s.leaveNode(ctx, m.name); err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range p.nodes {
			if x == m {
				p.nodes = append(p.nodes[:i], p.nodes[i+1:]...)
				break
			}
		}
		return nil
	})
}

// parallel runs f on every item at once and returns the first error.
func parallel[T any](items []T, f func(T) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	for i, it := range items {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(it) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func machineNames(ms []*machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}
