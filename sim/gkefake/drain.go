package gkefake

// GKE's drain, through the Kubernetes API. It is kubectl's drain library
// (k8s.io/kubectl/pkg/drain), never the plugin's: the fake stands for
// GKE, whose code the plugin under test does not share.

import (
	"context"
	"errors"
	"io"
	"time"

	"k8s.io/kubectl/pkg/drain"
)

// drainHow says how a node's pods leave it.
type drainHow struct {
	// pdbTimeout is how long evictions a PodDisruptionBudget refuses are
	// tried again.
	pdbTimeout time.Duration
	// force deletes the pods still there after pdbTimeout (surge, and the
	// autoscaled blue/green drain); without it they stay, for the deletion
	// of the blue pool (blue/green's drain phase).
	force bool
	// noPDB deletes the pods at once, PDBs not honoured (the deletion of
	// the blue pool; a rollback without respectPdb).
	noPDB bool
}

// drainNode evicts the node's pods (DaemonSet pods stay), honouring
// PodDisruptionBudgets and graceful termination for up to the pool's PDB
// timeout, then deletes what is left with force
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge:
// "Drain the existing node respecting PodDisruptionBudget and
// GracefulTerminationPeriod settings for up to one hour. After one hour,
// the remaining Pods are forcibly deleted").
func (s *Server) drainNode(ctx context.Context, node string, how drainHow) error {
	h := &drain.Helper{
		Ctx: ctx, Client: s.kube, Force: true, IgnoreAllDaemonSets: true, DeleteEmptyDirData: true,
		GracePeriodSeconds: -1, EvictErrorRetryDelay: s.opts.EvictRetry, Out: io.Discard, ErrOut: io.Discard,
	}
	if how.noPDB {
		return s.deletePods(h, node)
	}
	deadline := time.Now().Add(how.pdbTimeout)
	for time.Now().Before(deadline) {
		h.Timeout = time.Until(deadline)
		err := podsOff(h, node)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, min(s.opts.EvictRetry, max(time.Until(deadline), 0))); err != nil {
			return err
		}
	}
	if !how.force {
		s.logf("node %s: PDB timeout of %s passed; the pods left stay until the blue pool is deleted", node, how.pdbTimeout)
		return nil
	}
	s.logf("node %s: PDB timeout of %s passed; deleting the pods left", node, how.pdbTimeout)
	return s.deletePods(h, node)
}

// deletePods deletes the node's pods, not evicting them: PDBs are not
// honoured (the blue pool's deletion, "unlike eviction, deletion does not
// respect PDBs", https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#bg-phase-delete-blue).
func (s *Server) deletePods(h *drain.Helper, node string) error {
	h.DisableEviction, h.Timeout = true, 2*time.Minute
	return podsOff(h, node)
}

// podsOff evicts (or deletes) every pod the helper would on the node and
// waits until they are gone.
func podsOff(h *drain.Helper, node string) error {
	list, errs := h.GetPodsForDeletion(node)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return h.DeleteOrEvictPods(list.Pods())
}

// parallel runs f for each item at once and joins the errors.
func parallel[T any](items []T, f func(int, T) error) error {
	errs := make([]error, len(items))
	done := make(chan struct{})
	for i, it := range items {
		go func() {
			errs[i] = f(i, it)
			done <- struct{}{}
		}()
	}
	for range items {
		<-done
	}
	return errors.Join(errs...)
}
