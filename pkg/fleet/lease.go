package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// LeaseDuration is how long a coordinator that stopped renewing its lease
// (SIGKILLed, its machine gone) keeps the next one waiting; a dead holder
// on the same machine is seen at once.
const LeaseDuration = 30 * time.Second

// HeldError is a fleet whose coordinator lease another live coordinator
// holds: two coordinators of one fleet would start its targets twice.
type HeldError struct {
	Fleet string
	Held  *state.HeldError
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("fleet %q is run by another coordinator, %q (lease renewed %s ago, expires in %s); follow it with \"fleet status -w\", or run the fleet again once it stops",
		e.Fleet, e.Held.Holder, max(time.Since(e.Held.RenewedAt), 0).Round(time.Second), max(time.Until(e.Held.Expires), 0).Round(time.Second))
}

// lease is the fleet's coordinator lease, a coordination.k8s.io Lease of
// the record's name beside it (the lock of a node group's run, the same
// code): held by one coordinator at a time, renewed while it runs.
func (s *Store) lease(holder string) *state.Lock {
	return &state.Lock{Client: s.Client, Namespace: s.Namespace, Group: "fleet-" + s.Name, Holder: holder, Duration: LeaseDuration}
}

// Holder is the live coordinator that holds the fleet's lease, or nil.
func (s *Store) Holder(ctx context.Context) (*HeldError, error) {
	held, err := s.lease("probe/" + fmt.Sprint(time.Now().UnixNano())).HeldBy(ctx)
	if err != nil || held == nil {
		return nil, err
	}
	return &HeldError{Fleet: s.Name, Held: held}, nil
}

// Hold takes the fleet's lease (in its Store) for holder and renews it until release; the
// context it returns ends when the lease is lost. A holder waitsOut names
// (an earlier pod of the coordinator's Job) is waited out until its lease
// runs out; any other live holder is a *HeldError.
func (sc *Scheduler) Hold(ctx context.Context, holder string, waitsOut func(string) bool, errOut io.Writer) (context.Context, func(), error) {
	s := sc.Store
	l := s.lease(holder)
	told := ""
	for {
		err := l.Acquire(ctx)
		var held *state.HeldError
		switch {
		case err == nil:
			return s.keep(ctx, l)
		case !errors.As(err, &held):
			return ctx, nil, fmt.Errorf("cannot take the lease of fleet %q: %w", s.Name, err)
		case waitsOut == nil || !waitsOut(held.Holder):
			return ctx, nil, &HeldError{Fleet: s.Name, Held: held}
		}
		if told != held.Holder {
			told = held.Holder
			fmt.Fprintf(errOut, "waiting for the lease of fleet %q: %q, an earlier pod of this Job, holds it until it renews it no more (at the latest in %s)\n",
				s.Name, held.Holder, max(time.Until(held.Expires), 0).Round(time.Second))
		}
		if err := sc.Sleep(ctx, min(max(time.Until(held.Expires), 0)+100*time.Millisecond, 2*time.Second)); err != nil {
			return ctx, nil, err
		}
	}
}

// keep renews l until release; release gives it up even once ctx ended.
func (s *Store) keep(ctx context.Context, l *state.Lock) (context.Context, func(), error) {
	cleanup := context.WithoutCancel(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	go l.KeepAlive(ctx, func(err error) { cancel(fmt.Errorf("fleet %q: %w", s.Name, err)) })
	return ctx, func() {
		cancel(nil)
		_ = l.Release(cleanup)
	}, nil
}
