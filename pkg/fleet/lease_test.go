package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// leaseObject is the fleet's lease as holder left it, renewed ago.
func leaseObject(holder string, ago time.Duration) *coordinationv1.Lease {
	renewed := metav1.NewMicroTime(time.Now().Add(-ago))
	seconds := int32(LeaseDuration / time.Second)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: state.ObjectName("fleet-f"), Namespace: "kube-system"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &renewed, AcquireTime: &renewed, LeaseDurationSeconds: &seconds},
	}
}

// TestCoordinatorLease: one coordinator of a fleet at a time. The lease's
// renew time is the clock: the scheduler's Sleep moves it back by what it
// sleeps, so a holder's lease runs out without the test waiting.
func TestCoordinatorLease(t *testing.T) {
	earlierPod := func(h string) bool { return strings.HasPrefix(h, "nodeupgrade-fleet-f-") }
	tests := []struct {
		name     string
		lease    *coordinationv1.Lease // nil: none yet
		waitsOut func(string) bool
		held     string // the holder named in the refusal; "": taken
		slept    bool
	}{
		{"no lease yet: taken", nil, nil, "", false},
		{"given up (empty holder): taken", leaseObject("", 0), nil, "", false},
		{"a live coordinator elsewhere: refused naming it", leaseObject("laptop/42", 5*time.Second), nil, "laptop/42", false},
		{"a coordinator killed elsewhere, expired: taken over", leaseObject("laptop/42", LeaseDuration+time.Second), nil, "", false},
		{"an earlier pod of the Job: waited out, then taken", leaseObject("nodeupgrade-fleet-f-abcde/1", time.Second), earlierPod, "", true},
		{"a live coordinator not of the Job: refused even in a pod", leaseObject("laptop/42", time.Second), earlierPod, "laptop/42", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset()
			leases := c.CoordinationV1().Leases("kube-system")
			if tt.lease != nil {
				if _, err := leases.Create(context.Background(), tt.lease, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			slept := false
			s := &Scheduler{Store: &Store{Client: c, Namespace: "kube-system", Name: "f"}, Sleep: func(ctx context.Context, d time.Duration) error {
				slept = true
				l, err := leases.Get(ctx, state.ObjectName("fleet-f"), metav1.GetOptions{})
				if err != nil {
					return err
				}
				back := metav1.NewMicroTime(l.Spec.RenewTime.Add(-d))
				l.Spec.RenewTime = &back
				_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				return err
			}}
			var said strings.Builder
			_, release, err := s.Hold(context.Background(), "me/1", tt.waitsOut, &said)
			var held *HeldError
			switch {
			case tt.held != "":
				if !errors.As(err, &held) || held.Held.Holder != tt.held || !strings.Contains(err.Error(), `"`+tt.held+`"`) {
					t.Fatalf("Hold: %v; want refused naming %q", err, tt.held)
				}
				if l, _ := leases.Get(context.Background(), state.ObjectName("fleet-f"), metav1.GetOptions{}); *l.Spec.HolderIdentity != tt.held {
					t.Errorf("the refused coordinator changed the lease: holder %q", *l.Spec.HolderIdentity)
				}
				return
			case err != nil:
				t.Fatalf("Hold: %v", err)
			}
			if slept != tt.slept || tt.slept && !strings.Contains(said.String(), "an earlier pod of this Job") {
				t.Errorf("slept %v, want %v; said %q", slept, tt.slept, said.String())
			}
			if h, err := s.Store.Holder(context.Background()); err != nil || h == nil || h.Held.Holder != "me/1" {
				t.Fatalf("holder %+v (%v), want me/1", h, err)
			}
			release()
			if h, err := s.Store.Holder(context.Background()); err != nil || h != nil {
				t.Errorf("after release: holder %+v (%v), want none", h, err)
			}
		})
	}
}

// TestUpdateAfterTheContextEnded: a record that could not be written is
// an error, never a nil record (client-go's retry answers nil for a
// context's end, wait.Interrupted).
func TestUpdateAfterTheContextEnded(t *testing.T) {
	s := scheduler(&fakeRunner{}, stage("s", 1, 1, 0))
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.Store.Client.(*fake.Clientset).PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("client rate limiter Wait returned an error: %w", context.Canceled)
	})
	rec, err := s.Store.Update(ctx, func(*Record) error { return nil })
	if err == nil || rec != nil {
		t.Fatalf("Update after the context ended: %v, %v; want an error and no record", rec, err)
	}
	if _, err := s.mark(ctx, "s", func(*StageRecord) {}); err == nil {
		t.Fatal("mark after the context ended: no error")
	}
}
