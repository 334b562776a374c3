package azurefake

import (
	"context"
	"sync"
	"time"
)

// upgrade runs AKS's surge upgrade of the pool to t
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#customize-node-surge-upgrade):
// maxSurge new machines on the target first (those an earlier, failed or
// cancelled upgrade added count), then the old machines maxSurge at a
// time: each cordoned and drained honouring PDBs for up to
// drainTimeoutInMinutes ("If this time is exceeded, the upgrade fails",
// AgentPoolUpgradeSettings.DrainTimeoutInMinutes), the batch soaked
// nodeSoakDurationInMinutes, then reimaged to the target (the node keeps
// its name); at the end the surge machines are drained and deleted. An
// abort stops it where it is; a failure leaves the pool Failed with the
// surge machines in place, as AKS does.
func (s *Server) upgrade(ctx context.Context, p *pool, o *operation, t target) error {
	s.mu.Lock()
	surge, drainTimeout, soak := s.settingsLocked(p)
	var added []*machine
	have := 0
	for _, m := range p.nodes {
		if m.surge {
			have++
		}
	}
	for range max(surge-have, 0) {
		added = append(added, s.newMachineLocked(p, t.version, t.image, true))
	}
	s.mu.Unlock()
	s.logf("pool %s: %s to %s/%s, surge %d", *p.model.Name, t.state, t.version, t.image, surge)
	if err := parallel(added, func(m *machine) error { return s.joinNode(ctx, p, m) }); err != nil {
		return err
	}
	for {
		batch := s.nextBatch(p, t, surge)
		if len(batch) == 0 {
			break
		}
		if s.aborted(o) {
			return errAborted
		}
		s.logf("pool %s: draining %s", *p.model.Name, machineNames(batch))
		if err := parallel(batch, func(m *machine) error { return s.cordonAndDrain(ctx, m.name, drainTimeout) }); err != nil {
			return err
		}
		if err := sleep(ctx, soak); err != nil {
			return err
		}
		s.logf("pool %s: reimaging %s", *p.model.Name, machineNames(batch))
		if err := parallel(batch, func(m *machine) error { return s.reimage(ctx, p, m, t) }); err != nil {
			return err
		}
	}
	if s.aborted(o) {
		return errAborted
	}
	return s.removeSurge(ctx, p, drainTimeout)
}

// nextBatch is the next old machines to upgrade, at most n.
func (s *Server) nextBatch(p *pool, t target, n int) []*machine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*machine
	for _, m := range p.nodes {
		if !m.surge && (m.version != t.version || m.image != t.image) && len(out) < n {
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

// removeSurge drains and deletes the machines the upgrade added.
func (s *Server) removeSurge(ctx context.Context, p *pool, drainTimeout time.Duration) error {
	s.mu.Lock()
	var surge []*machine
	for _, m := range p.nodes {
		if m.surge {
			surge = append(surge, m)
		}
	}
	s.mu.Unlock()
	return parallel(surge, func(m *machine) error {
		if err := s.cordonAndDrain(ctx, m.name, drainTimeout); err != nil {
			return err
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
