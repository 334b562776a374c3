// Package session is the one path from a command, a saved plan or a
// record to a plan and a running strategy: it validates the request,
// detects and opens the cloud, plans, takes the node group's lock, runs
// the engine and keeps the record. The cobra commands of pkg/plugin
// are thin shells over it; it knows nothing of flags' parsing or cobra.
package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// Session is one command's connection to the cluster and where its output
// goes.
type Session struct {
	Client kubernetes.Interface
	// KubeContext names the kubeconfig context, for the plan's header.
	KubeContext string
	genericiooptions.IOStreams
	// StateNamespace holds the node groups' records and locks.
	StateNamespace string
	// HookKubeconfig writes a kubeconfig for the hooks and says how to
	// remove it; nil where the connection has none to give (tests).
	HookKubeconfig func() (path string, remove func(), err error)
	// Live says the output is a terminal: the engine draws a live line.
	Live bool
	// WaitsOutLock, when set, says which holders of a group's lock this
	// run waits out instead of being refused: an in-cluster run's earlier
	// pods, killed before they gave it up (their lease runs out).
	WaitsOutLock func(holder string) bool
}

// store is the node groups' records: the session alone reads and
// writes them; commands go through Record, Look and the session's verbs.
func (s *Session) store() *state.Store {
	return &state.Store{Client: s.Client, Namespace: s.StateNamespace}
}

// Record is group's run record as stored, nil where it has none; a read
// error is an error, never "no run".
func (s *Session) Record(ctx context.Context, group string) (*state.Record, error) {
	return s.store().Load(ctx, group)
}

// Requests are the control requests (cancel, rollback, complete) of group.
func (s *Session) Requests(group string) *state.Requests {
	return &state.Requests{Store: s.store(), Group: group}
}

// LockDuration is how long a killed run's lock blocks others (on another
// machine; on the same machine a dead holder is seen at once).
const LockDuration = 30 * time.Second

// HoldLock takes group's lock and keeps it alive until release; the
// context it returns ends when the lock is lost. Release happens even
// when ctx was cancelled: the bookkeeping after a run must.
func (s *Session) HoldLock(ctx context.Context, group string) (context.Context, string, func(), error) {
	holder := state.HolderIdentity()
	lock := &state.Lock{Client: s.Client, Namespace: s.StateNamespace, Group: group, Holder: holder, Duration: LockDuration}
	if err := s.acquire(ctx, lock); err != nil {
		return ctx, holder, nil, err
	}
	cleanupCtx := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	go lock.KeepAlive(ctx, func(err error) { cancel(err) })
	return ctx, holder, func() {
		cancel(nil)
		_ = lock.Release(cleanupCtx)
	}, nil
}

// Holder is the live run that holds group's lock, and until when, or nil.
// Read the lock before the record: a run writes its last record, then
// gives the lock up, so a record read after the lock was seen free is
// final. A lock that cannot be read is an error, never "not held": a
// control would take a live run for a stopped one.
func (s *Session) Holder(ctx context.Context, group string) (*state.HeldError, error) {
	lock := &state.Lock{Client: s.Client, Namespace: s.StateNamespace, Group: group, Holder: "probe/" + fmt.Sprint(time.Now().UnixNano()), Duration: LockDuration}
	return lock.HeldBy(ctx)
}

// WaitOutLock waits while group's lock is held by a holder WaitsOutLock
// names (an earlier pod of this Job, killed), until its lease runs out or
// it gives the lock up: a command that reads the lock before it takes it
// (abort) sees then what the killed pod left.
func (s *Session) WaitOutLock(ctx context.Context, group string) error {
	told := ""
	for {
		held, err := s.Holder(ctx, group)
		if err != nil {
			return err
		}
		if held == nil || s.WaitsOutLock == nil || !s.WaitsOutLock(held.Holder) {
			return nil
		}
		if told != held.Holder {
			told = held.Holder
			fmt.Fprintf(s.ErrOut, "waiting for the lock of %q: %q, an earlier pod of this Job, holds it until it renews it no more (at the latest in %s)\n",
				group, held.Holder, max(time.Until(held.Expires), 0).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(max(time.Until(held.Expires), 0)+100*time.Millisecond, 2*time.Second)):
		}
	}
}

// acquire takes lock, waiting out a holder WaitsOutLock names until its
// lease runs out or it gives the lock up.
func (s *Session) acquire(ctx context.Context, lock *state.Lock) error {
	told := ""
	for {
		err := lock.Acquire(ctx)
		var held *state.HeldError
		if !errors.As(err, &held) || s.WaitsOutLock == nil || !s.WaitsOutLock(held.Holder) {
			return err
		}
		if told != held.Holder {
			told = held.Holder
			fmt.Fprintf(s.ErrOut, "waiting for the lock of %q: %q, an earlier pod of this Job, holds it until it renews it no more (at the latest in %s)\n",
				lock.Group, held.Holder, max(time.Until(held.Expires), 0).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(max(time.Until(held.Expires), 0)+100*time.Millisecond, 2*time.Second)):
		}
	}
}
