package karpenter_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
)

// syncBuffer is Karpenter's log, shown when the test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRealKarpenter: Karpenter v1.15.0 with its KWOK provider, beside the
// simulated cluster, launches NodeClaims whose kwok nodes turn Ready for
// the pending pods of a NodePool, and marks them Drifted once the
// NodePool's template names another NodeClass; a Drifted budget of 0
// keeps it from replacing them.
func TestRealKarpenter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	_, took, err := karpenter.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("building Karpenter's KWOK binary took %s (0: cached)", took.Round(time.Second))
	c, err := cluster.Start(ctx, cluster.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	logs := &syncBuffer{}
	k, err := karpenter.Start(ctx, c.RestConfig, karpenter.Options{Kubeconfig: c.Kubeconfig, Logs: logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	t.Cleanup(func() {
		k.Stop()
		if t.Failed() {
			t.Logf("Karpenter's log:\n%s", logs)
		}
	})
	dc := dynamic.NewForConfigOrDie(c.RestConfig)
	frozen := []any{map[string]any{"nodes": "0", "reasons": []any{"Drifted"}}}
	spec := karpenter.PoolSpec{Name: "pool", NodeClass: "v1", Zones: karpenter.Zones[:3], Budgets: frozen}
	if err := karpenter.Create(ctx, dc, karpenter.NodeClass("v1"), karpenter.NodeClass("v2"), karpenter.Pool(spec)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, karpenter.Workload("default", "web", "pool", 3, "500m", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("pending pods get NodeClaims and Ready nodes", func(t *testing.T) {
		waitClaims(ctx, t, dc, "pool", 3, func(nc map[string]string) bool { return nc["Initialized"] == "True" })
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=pool"})
		if err != nil {
			t.Fatal(err)
		}
		zones := map[string]int{}
		for _, n := range nodes.Items {
			if !ready(&n) {
				t.Errorf("node %q is not Ready", n.Name)
			}
			zones[n.Labels[corev1.LabelTopologyZone]]++
		}
		if len(nodes.Items) != 3 || len(zones) != 3 {
			t.Errorf("want 3 Ready nodes in 3 zones, got %d in %v", len(nodes.Items), zones)
		}
	})

	t.Run("another NodeClass in the template marks every NodeClaim Drifted", func(t *testing.T) {
		patch := []byte(`{"spec":{"template":{"spec":{"nodeClassRef":{"group":"karpenter.kwok.sh","kind":"KWOKNodeClass","name":"v2"}}}}}`)
		if _, err := dc.Resource(karpenter.NodePools).Patch(ctx, "pool", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		before := waitClaims(ctx, t, dc, "pool", 3, func(nc map[string]string) bool { return nc["Drifted"] == "True/NodePoolDrifted" })
		// The frozen budget holds: nothing replaces them.
		time.Sleep(20 * time.Second)
		after := waitClaims(ctx, t, dc, "pool", 3, func(nc map[string]string) bool { return nc["Drifted"] == "True/NodePoolDrifted" })
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("the NodeClaims changed under a Drifted budget of 0: %v, then %v", before, after)
		}
	})
	if exited, err := k.Exited(); exited {
		t.Errorf("Karpenter exited: %v", err)
	}
}

// waitClaims waits until the pool has n NodeClaims, every one ok by its
// conditions (type: status, or status/reason where a reason is given),
// and returns their names.
func waitClaims(ctx context.Context, t *testing.T, dc dynamic.Interface, pool string, n int, ok func(map[string]string) bool) []string {
	t.Helper()
	var last []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		ncs, err := karpenter.PoolClaims(ctx, dc, pool)
		if err != nil {
			return false, err
		}
		last = last[:0]
		good := 0
		for i := range ncs {
			conds := map[string]string{}
			for _, typ := range []string{"Launched", "Registered", "Initialized", "Drifted"} {
				s, r := karpenter.Condition(&ncs[i], typ)
				conds[typ] = s
				if typ == "Drifted" && r != "" {
					conds[typ] = s + "/" + r
				}
			}
			last = append(last, fmt.Sprintf("%s %v", ncs[i].GetName(), conds))
			if ok(conds) && ncs[i].GetDeletionTimestamp() == nil {
				good++
			}
		}
		return good == n && len(ncs) == n, nil
	})
	if err != nil {
		t.Fatalf("NodeClaims of %q: %v; last seen: %v", pool, err, last)
	}
	return last
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
