package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestObjectName(t *testing.T) {
	tests := []struct{ group, want string }{
		{"workers", "nodeupgrade-workers"},
		{"-l pool=batch,zone in (a)", "nodeupgrade-"},
		{strings.Repeat("x", 80), "nodeupgrade-"},
	}
	for _, tc := range tests {
		t.Run(tc.group, func(t *testing.T) {
			got := ObjectName(tc.group)
			if !strings.HasPrefix(got, tc.want) || len(got) > 63 {
				t.Fatalf("ObjectName(%q) = %q", tc.group, got)
			}
			if tc.want == "nodeupgrade-" && got == ObjectName(tc.group+"x") {
				t.Fatalf("hashes collide for %q", tc.group)
			}
		})
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := &Store{Client: fake.NewClientset(), Namespace: "kube-system"}
	if r, err := s.Load(ctx, "ng"); err != nil || r != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	r := &Record{NodeGroup: "ng", Phase: "Drain", Batch: 2, Batches: 3, NodesTotal: 6, Done: []string{"a", "b"}}
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Done = append(r.Done, "c")
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "ng")
	if err != nil || got == nil || got.Phase != "Drain" || len(got.Done) != 3 || got.Left() != 3 {
		t.Fatalf("loaded %+v, %v", got, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
}

func TestLock(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	lock := func(holder string) *Lock {
		return &Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: holder, Duration: 30 * time.Second}
	}
	if err := lock("other-host/1").Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := lock("other-host/2").Acquire(ctx); !errors.As(err, &held) || held.Holder != "other-host/1" {
		t.Fatalf("second run: got %v, want HeldError naming the holder", err)
	}
	if err := lock("other-host/1").Acquire(ctx); err != nil {
		t.Fatalf("the holder itself may take it again: %v", err)
	}
	// An expired lease is taken over.
	lease, _ := client.CoordinationV1().Leases("kube-system").Get(ctx, ObjectName("ng"), metav1.GetOptions{})
	old := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	lease.Spec.RenewTime = &old
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := lock("other-host/2").Acquire(ctx); err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if err := lock("other-host/2").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock("other-host/3").Acquire(ctx); err != nil {
		t.Fatalf("released lease not free: %v", err)
	}
}

func TestDeadHolderOnThisHost(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	host := HolderIdentity()
	hostname, _, _ := strings.Cut(host, "/")
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(300)
	dead := hostname + "/999999999" // no such pid
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: ObjectName("ng")},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &dead, RenewTime: &now, LeaseDurationSeconds: &seconds}}
	if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := (&Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: host, Duration: 30 * time.Second}).Acquire(ctx); err != nil {
		t.Fatalf("a killed run's lock on this host must not be waited out: %v", err)
	}
	alive := hostname + "/1" // init runs
	lease, _ = client.CoordinationV1().Leases("kube-system").Get(ctx, ObjectName("ng"), metav1.GetOptions{})
	lease.Spec.HolderIdentity = &alive
	lease.Spec.RenewTime = &now
	if _, err := client.CoordinationV1().Leases("kube-system").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := (&Lock{Client: client, Namespace: "kube-system", Group: "ng", Holder: host, Duration: 30 * time.Second}).Acquire(ctx); !errors.As(err, &held) {
		t.Fatalf("a live process's lock must hold: %v", err)
	}
}
