package state

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport/retrytest"
)

const lockNS, lockGroup, me, rival = "kube-system", "ng", "this-host/1", "other-host/7"

var leases = coordinationv1.SchemeGroupVersion.WithResource("leases")

// lease is the lock of lockGroup held by holder, renewed at renewed, for
// seconds.
func lease(holder string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	rt := metav1.NewMicroTime(renewed)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: lockNS, Name: ObjectName(lockGroup)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &rt, LeaseDurationSeconds: &seconds}}
}

func lockOf(c *fake.Clientset, holder string, d time.Duration) *Lock {
	return &Lock{Client: c, Namespace: lockNS, Group: lockGroup, Holder: holder, Duration: d}
}

// storedLease reads the lease as stored, past the reactors that refuse
// the code under test.
func storedLease(t *testing.T, c *fake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := c.Tracker().Get(leases, lockNS, ObjectName(lockGroup))
	if err != nil {
		t.Fatal(err)
	}
	return l.(*coordinationv1.Lease)
}

var (
	errBlip       = apierrors.NewServiceUnavailable("etcd leader changed")
	leaseConflict = apierrors.NewConflict(leases.GroupResource(), ObjectName(lockGroup), errors.New("the lease changed"))
)

// TestHeldBy: status and abort learn which live run holds a group's lock,
// and until when; a lock nobody holds, an expired one, one of this run and
// one of a killed run on this machine hold nothing.
func TestHeldBy(t *testing.T) {
	host, _, _ := strings.Cut(HolderIdentity(), "/")
	renewed := time.Now().Add(-10 * time.Second).Truncate(time.Microsecond)
	for _, tc := range []struct {
		name       string
		lease      *coordinationv1.Lease
		refused    bool
		wantHolder string
		wantErr    string
	}{
		{name: "no lock"},
		{name: "held by a live run elsewhere", lease: lease(rival, renewed, 60), wantHolder: rival},
		{name: "held by this run", lease: lease(me, renewed, 60)},
		{name: "expired", lease: lease(rival, time.Now().Add(-2*time.Minute), 60)},
		{name: "released", lease: lease("", renewed, 60)},
		{name: "held by a killed run on this machine", lease: lease(host+"/999999999", renewed, 60)},
		{name: "the lock unreadable", refused: true, wantErr: `error when reading the lock of "ng"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			if tc.lease != nil {
				if err := c.Tracker().Add(tc.lease); err != nil {
					t.Fatal(err)
				}
			}
			if tc.refused {
				refuse(c, "get", "leases", -1, errBlip)
			}
			l := lockOf(c, me, 30*time.Second)
			held, err := l.HeldBy(context.Background())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || held != nil {
					t.Fatalf("HeldBy = %v, %v; want error %q", held, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantHolder == "" {
				if held != nil {
					t.Fatalf("HeldBy = %+v, want nobody", held)
				}
			} else if held == nil || held.Holder != tc.wantHolder || held.Group != lockGroup ||
				!held.RenewedAt.Equal(renewed) || !held.Expires.Equal(renewed.Add(60*time.Second)) {
				t.Fatalf("HeldBy = %+v, want %s, renewed %s, expiring a minute later (the lease's duration)", held, tc.wantHolder, renewed)
			}
			if got, err := l.Held(context.Background()); err != nil || got != (tc.wantHolder != "") {
				t.Errorf("Held = %v, %v; want %v", got, err, tc.wantHolder != "")
			}
		})
	}
}

// TestHeldErrorMessage: a refused run is told who holds the lock, how
// long ago it was renewed and when it runs out, and what to do.
func TestHeldErrorMessage(t *testing.T) {
	now := time.Now()
	err := &HeldError{Group: "ng", Holder: rival, RenewedAt: now.Add(-time.Minute), Expires: now.Add(2 * time.Minute)}
	want := `node group "ng" is being upgraded by "other-host/7" (lock renewed 1m0s ago, expires in 2m0s); wait for it, or run again after it stops`
	if got := err.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestHeldElsewhere: a holder on another machine cannot be seen to have
// died; one on this machine can.
func TestHeldElsewhere(t *testing.T) {
	host, _, _ := strings.Cut(HolderIdentity(), "/")
	for _, tc := range []struct {
		holder string
		want   bool
	}{
		{HolderIdentity(), false},
		{host + "/999999999", false},
		{"another-" + host + "/1", true},
		{"no-pid-" + host, true},
	} {
		t.Run(tc.holder, func(t *testing.T) {
			if got := (&HeldError{Group: "ng", Holder: tc.holder}).Elsewhere(); got != tc.want {
				t.Errorf("Elsewhere() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAcquireRaces: two runs that start at once, or take over an expired
// lock at once, end with one holder; the other is refused naming it. An
// API server that cannot be read or written refuses the run.
func TestAcquireRaces(t *testing.T) {
	forbidden := apierrors.NewForbidden(leases.GroupResource(), ObjectName(lockGroup), errors.New("no rights"))
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, c *fake.Clientset)
		wantHolder string // who holds the lock after; me when Acquire succeeds
		wantErr    string
	}{
		{
			name: "another run creates the lock between the read and the create",
			setup: func(t *testing.T, c *fake.Clientset) {
				var once sync.Once
				c.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					created := false
					once.Do(func() { created = c.Tracker().Add(lease(rival, time.Now(), 30)) == nil })
					if created {
						return true, nil, apierrors.NewAlreadyExists(leases.GroupResource(), ObjectName(lockGroup))
					}
					return false, nil, nil
				})
			},
			wantHolder: rival, wantErr: `being upgraded by "other-host/7"`,
		},
		{
			name: "another run takes over the expired lock first",
			setup: func(t *testing.T, c *fake.Clientset) {
				expiredLease(t, c)
				var once sync.Once
				c.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					once.Do(func() {
						taken := lease(rival, time.Now(), 30)
						taken.ResourceVersion = "999"
						if err := c.Tracker().Update(leases, taken, lockNS); err != nil {
							t.Error(err)
						}
					})
					return false, nil, nil
				})
			},
			wantHolder: rival, wantErr: `being upgraded by "other-host/7"`,
		},
		{
			name: "the takeover refused, and the lock unreadable after",
			setup: func(t *testing.T, c *fake.Clientset) {
				expiredLease(t, c)
				refuse(c, "update", "leases", -1, leaseConflict)
				var gets atomic.Int32 // the first is Acquire's own
				c.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					if gets.Add(1) > 1 {
						return true, nil, errBlip
					}
					return false, nil, nil
				})
			},
			wantHolder: "other-host/1", wantErr: `error when reading the lock of "ng"`,
		},
		{
			name: "the takeover forbidden",
			setup: func(t *testing.T, c *fake.Clientset) {
				expiredLease(t, c)
				refuse(c, "update", "leases", -1, forbidden)
			},
			wantHolder: "other-host/1", wantErr: "no rights",
		},
		{
			name:    "the lock unreadable",
			setup:   func(t *testing.T, c *fake.Clientset) { refuse(c, "get", "leases", -1, errBlip) },
			wantErr: `error when reading the lock of "ng"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			retrytest.ServerVersions(c, leases)
			tc.setup(t, c)
			err := lockOf(c, me, 30*time.Second).Acquire(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Acquire: %v, want %q", err, tc.wantErr)
			}
			if tc.wantHolder == "" {
				return
			}
			if got := ptrString(storedLease(t, c).Spec.HolderIdentity); got != tc.wantHolder {
				t.Errorf("lock held by %q, want %q", got, tc.wantHolder)
			}
		})
	}
}

func expiredLease(t *testing.T, c *fake.Clientset) {
	t.Helper()
	if _, err := c.CoordinationV1().Leases(lockNS).Create(context.Background(), lease("other-host/1", time.Now().Add(-time.Hour), 30), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRelease: a run gives up only its own lock; a lock that is gone or
// another run's is left as it is; a conflict is read again.
func TestRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		holder     string // of the lease before; "" for no lease
		setup      func(c *fake.Clientset)
		wantHolder string
		wantErr    bool
	}{
		{name: "this run's lock", holder: me, wantHolder: ""},
		{name: "no lock"},
		{name: "another run's lock", holder: rival, wantHolder: rival},
		{name: "a conflict on the release", holder: me, wantHolder: "", setup: func(c *fake.Clientset) {
			refuse(c, "update", "leases", 1, leaseConflict)
		}},
		{name: "the lock unreadable", holder: me, wantHolder: me, wantErr: true, setup: func(c *fake.Clientset) {
			refuse(c, "get", "leases", -1, errBlip)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			if tc.holder != "" {
				if err := c.Tracker().Add(lease(tc.holder, time.Now(), 30)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(c)
			}
			err := lockOf(c, me, 30*time.Second).Release(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("Release: %v, want an error: %v", err, tc.wantErr)
			}
			if tc.holder == "" {
				return
			}
			if got := ptrString(storedLease(t, c).Spec.HolderIdentity); got != tc.wantHolder {
				t.Errorf("lock held by %q after the release, want %q", got, tc.wantHolder)
			}
		})
	}
}

// TestKeepAlive: a run renews its lock until it stops, through blips and
// conflicts of the API server, and is told when another run took it.
func TestKeepAlive(t *testing.T) {
	const d = 30 * time.Millisecond // renewed every 10ms
	for _, tc := range []struct {
		name     string
		setup    func(c *fake.Clientset)
		takeOver bool // another run takes the lock while it is kept
		wantLost string
	}{
		{name: "renewed while held"},
		{name: "renewed after the API server failed twice", setup: func(c *fake.Clientset) { refuse(c, "get", "leases", 2, errBlip) }},
		{name: "renewed after a conflict", setup: func(c *fake.Clientset) {
			refuse(c, "update", "leases", 1, leaseConflict)
		}},
		{name: "taken by another run", takeOver: true, wantLost: `lost the lock of node group "ng" to "other-host/7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			// A renewal from a stale read must conflict, as with the API
			// server, or it would undo a takeover.
			retrytest.ServerVersions(c, leases)
			start := time.Now().Add(-time.Second)
			if _, err := c.CoordinationV1().Leases(lockNS).Create(context.Background(), lease(me, start, 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(c)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lost := make(chan error, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				lockOf(c, me, d).KeepAlive(ctx, func(err error) { lost <- err })
			}()
			if tc.takeOver {
				takeOver(t, c)
				select {
				case err := <-lost:
					if err.Error() != tc.wantLost {
						t.Errorf("lost: %v, want %q", err, tc.wantLost)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("never told the lock was taken")
				}
				<-done // it stops by itself
				if got := ptrString(storedLease(t, c).Spec.HolderIdentity); got != rival {
					t.Errorf("lock held by %q after it was lost, want %q", got, rival)
				}
				return
			}
			waitRenewed(t, c, start)
			cancel()
			<-done
			select {
			case err := <-lost:
				t.Errorf("lost a lock it held: %v", err)
			default:
			}
		})
	}
}

// takeOver makes rival the holder, as another run that found the lock
// expired does.
func takeOver(t *testing.T, c *fake.Clientset) {
	t.Helper()
	leaseAPI := c.CoordinationV1().Leases(lockNS)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leaseAPI.Get(context.Background(), ObjectName(lockGroup), metav1.GetOptions{})
		if err != nil {
			return err
		}
		holder, now := rival, metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime = &holder, &now
		_, err = leaseAPI.Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitRenewed waits, bounded, until the lease is renewed after since and
// still held by me.
func waitRenewed(t *testing.T, c *fake.Clientset, since time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := storedLease(t, c)
		if l.Spec.RenewTime.After(since) && ptrString(l.Spec.HolderIdentity) == me {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease not renewed: %+v", l.Spec)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
