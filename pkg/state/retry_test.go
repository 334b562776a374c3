package state

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport/retrytest"
)

// TestWritesSentTwice: every write of the record, the lock and the
// requests, when the API server carried it out and its answer was lost,
// succeeds when sent again (transport.Retrying), and leaves what one
// write would.
func TestWritesSentTwice(t *testing.T) {
	const ns, group, me = "kube-system", "ng", "this-host/1"
	lock := func(c *fake.Clientset) *Lock {
		return &Lock{Client: c, Namespace: ns, Group: group, Holder: me, Duration: 30 * time.Second}
	}
	store := func(c *fake.Clientset) *Store { return &Store{Client: c, Namespace: ns} }
	expired := func(t *testing.T, c *fake.Clientset) {
		old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
		other, seconds := "other-host/1", int32(30)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ObjectName(group)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, RenewTime: &old, LeaseDurationSeconds: &seconds}}
		if _, err := c.CoordinationV1().Leases(ns).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	saved := func(t *testing.T, c *fake.Clientset) {
		if err := store(c).Save(context.Background(), &Record{NodeGroup: group, Phase: "Earlier"}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		before func(t *testing.T, c *fake.Clientset)
		verb   string
		write  func(ctx context.Context, c *fake.Clientset) error
		check  func(t *testing.T, c *fake.Clientset)
	}{
		{"the record's first save", nil, "create",
			func(ctx context.Context, c *fake.Clientset) error {
				return store(c).Save(ctx, &Record{NodeGroup: group, Phase: "Taint"})
			},
			recordPhase("Taint")},
		{"a save of the record", saved, "update",
			func(ctx context.Context, c *fake.Clientset) error {
				return store(c).Save(ctx, &Record{NodeGroup: group, Phase: "Drain"})
			},
			recordPhase("Drain")},
		{"the lock taken", nil, "create",
			func(ctx context.Context, c *fake.Clientset) error { return lock(c).Acquire(ctx) },
			lockHolder(me)},
		{"an expired lock taken over", expired, "update",
			func(ctx context.Context, c *fake.Clientset) error { return lock(c).Acquire(ctx) },
			lockHolder(me)},
		{"the lock given up", func(t *testing.T, c *fake.Clientset) {
			if err := lock(c).Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, "update",
			func(ctx context.Context, c *fake.Clientset) error { return lock(c).Release(ctx) },
			lockHolder("")},
		{"a request sent", saved, "patch",
			func(ctx context.Context, c *fake.Clientset) error {
				return (&Requests{Store: store(c), Group: group}).Send(ctx, RequestCancel)
			},
			requestLeft(RequestCancel)},
		{"a request cleared", func(t *testing.T, c *fake.Clientset) {
			saved(t, c)
			if err := (&Requests{Store: store(c), Group: group}).Send(context.Background(), RequestCancel); err != nil {
				t.Fatal(err)
			}
		}, "patch",
			func(ctx context.Context, c *fake.Clientset) error {
				return (&Requests{Store: store(c), Group: group}).Clear(ctx)
			},
			requestLeft("")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientset()
			retrytest.ServerVersions(c, corev1.SchemeGroupVersion.WithResource("configmaps"))
			retrytest.ServerVersions(c, coordinationv1.SchemeGroupVersion.WithResource("leases"))
			if tc.before != nil {
				tc.before(t, c)
			}
			resent := retrytest.SentTwice(c, tc.verb)
			if err := tc.write(context.Background(), c); err != nil {
				t.Fatalf("write sent twice: %v", err)
			}
			if len(resent.Writes()) == 0 {
				t.Fatalf("no %s was sent twice", tc.verb)
			}
			tc.check(t, c)
		})
	}
}

func recordPhase(want string) func(t *testing.T, c *fake.Clientset) {
	return func(t *testing.T, c *fake.Clientset) {
		t.Helper()
		r, err := (&Store{Client: c, Namespace: "kube-system"}).Load(context.Background(), "ng")
		if err != nil || r == nil || r.Phase != want {
			t.Errorf("record %+v, %v; want phase %q", r, err, want)
		}
	}
}

func lockHolder(want string) func(t *testing.T, c *fake.Clientset) {
	return func(t *testing.T, c *fake.Clientset) {
		t.Helper()
		lease, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), ObjectName("ng"), metav1.GetOptions{})
		if err != nil || ptrString(lease.Spec.HolderIdentity) != want {
			t.Errorf("lock %v, %v; want it held by %q", lease, err, want)
		}
	}
}

func requestLeft(want string) func(t *testing.T, c *fake.Clientset) {
	return func(t *testing.T, c *fake.Clientset) {
		t.Helper()
		got, err := (&Requests{Store: &Store{Client: c, Namespace: "kube-system"}, Group: "ng"}).Pending(context.Background())
		if err != nil || got != want {
			t.Errorf("request %q, %v; want %q", got, err, want)
		}
	}
}
