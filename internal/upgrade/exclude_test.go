package upgrade

import (
	"errors"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")

// exclusionAtDrain records, for every pod evicted or deleted and every
// node deleted, whether the node carried ExcludeLBLabel at that moment.
type exclusionAtDrain struct {
	mu         sync.Mutex
	drained    []string // nodes a pod left
	unexcluded []string // of them, those without the label then
	removed    []string // nodes deleted
	unlabelled []string // of them, those without the label then
}

func watchExclusion(c *testClient) *exclusionAtDrain {
	w := &exclusionAtDrain{}
	look := func(ns, pod string) {
		obj, err := c.Tracker().Get(podsResource, ns, pod)
		if err != nil {
			return
		}
		node := obj.(*corev1.Pod).Spec.NodeName
		n, err := c.Tracker().Get(nodesResource, "", node)
		if err != nil {
			return
		}
		_, has := n.(*corev1.Node).Labels[ExcludeLBLabel]
		w.mu.Lock()
		defer w.mu.Unlock()
		if !slices.Contains(w.drained, node) {
			w.drained = append(w.drained, node)
		}
		if !has && !slices.Contains(w.unexcluded, node) {
			w.unexcluded = append(w.unexcluded, node)
		}
	}
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" {
			look(a.GetNamespace(), a.(k8stesting.CreateAction).GetObject().(interface{ GetName() string }).GetName())
		}
		return false, nil, nil
	})
	c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		look(a.GetNamespace(), a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	c.PrependReactor("delete", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		n, err := c.Tracker().Get(nodesResource, "", name)
		if err != nil {
			return false, nil, nil
		}
		_, has := n.(*corev1.Node).Labels[ExcludeLBLabel]
		w.mu.Lock()
		defer w.mu.Unlock()
		w.removed = append(w.removed, name)
		if !has {
			w.unlabelled = append(w.unlabelled, name)
		}
		return false, nil, nil
	})
	return w
}

func (w *exclusionAtDrain) check(t *testing.T, wantDrained, wantRemoved int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.drained) != wantDrained {
		t.Errorf("pods left nodes %v, want %d nodes drained", w.drained, wantDrained)
	}
	if len(w.unexcluded) > 0 {
		t.Errorf("nodes %v drained before they were labelled %s", sorted(w.unexcluded), ExcludeLBLabel)
	}
	if len(w.removed) != wantRemoved {
		t.Errorf("nodes %v removed, want %d", w.removed, wantRemoved)
	}
	if len(w.unlabelled) > 0 {
		t.Errorf("nodes %v removed without the label %s", sorted(w.unlabelled), ExcludeLBLabel)
	}
}

// wantNoExclusion fails for a node left with the label the run set.
func wantNoExclusion(t *testing.T, client *testClient, except ...string) {
	t.Helper()
	for name, n := range client.nodes(t) {
		_, has := n.Labels[ExcludeLBLabel]
		if has != slices.Contains(except, name) {
			t.Errorf("node %q has label %s: %v, want %v", name, ExcludeLBLabel, has, !has)
		}
		if excludedByRun(&n) {
			t.Errorf("node %q left with annotation %s", name, ExcludedByRunAnnotation)
		}
	}
}

// excludedBefore is a node someone else took out of load balancers.
func excludedBefore(n *corev1.Node) { n.Labels[ExcludeLBLabel] = "" }

// Every strategy labels a node before its drain, the scale-down's nodes
// and blue's included, and leaves no label on the nodes that stay.
func TestExcludeFromLoadBalancersBeforeEveryDrain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		strategy plan.StrategyName
		in       plan.Input
		bg       *plan.BlueGreenInput
		none     bool
		// wantDrained counts the nodes a pod was evicted or deleted from,
		// wantRemoved the nodes deleted.
		wantDrained, wantRemoved int
	}{
		// Three old nodes, then the four scale-up nodes the scale-down
		// removes (no pod comes back to them in a fake cluster).
		{name: "eks on a cloud group, scale-down included", strategy: "eks", in: plan.Input{MaxUnavailable: "2"}, wantDrained: 3, wantRemoved: 7},
		{name: "eks with provider none", strategy: "eks", in: plan.Input{MaxUnavailable: "1"}, none: true, wantDrained: 3, wantRemoved: 3},
		{name: "surge removals", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "1"}, wantDrained: 3, wantRemoved: 3},
		// Blue's batches are drained, then what is left deleted.
		{name: "blue-green batches and the deletion of blue", strategy: "blue-green", bg: &plan.BlueGreenInput{BatchNodes: 2}, wantDrained: 3, wantRemoved: 3},
		{name: "blue-green, blue deleted in one go", strategy: "blue-green", bg: &plan.BlueGreenInput{}, wantDrained: 3, wantRemoved: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := []*corev1.Node{groupNode("old-a1", "z1", "1"), groupNode("old-a2", "z1", "1"), groupNode("old-b1", "z2", "1")}
			in := tc.in
			in.Strategy = tc.strategy
			if tc.none {
				nodes = []*corev1.Node{imageNode("old-a1", "z1", "old"), imageNode("old-a2", "z1", "old"), imageNode("old-b1", "z2", "old"), imageNode("new-b2", "z2", "new")}
				in.Provider, in.TargetLabels = cloud.NoneName, map[string]string{"image": "new"}
			}
			var objs []runtime.Object
			for _, n := range nodes {
				objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "500m"))
			}
			client := newTestClient(objs...)
			watch := watchExclusion(client)
			group := newFakeGroup(client, plan.Sizes{Min: 1, Desired: 3, Max: 4}, nodes...)
			var provider cloud.Provider = group
			switch {
			case tc.none:
				provider = &cloud.None{Client: client, DeleteNode: true}
			case tc.bg != nil:
				provider = newFakeBlueGreen(group)
				in.BlueGreen = *tc.bg
				in.Cloud = group.cloudGroup()
			default:
				in.Cloud = group.cloudGroup()
			}
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, provider)
			cfg.Drain = drainOpts()
			got := runEngine(t, cfg, nil, group)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			watch.check(t, tc.wantDrained, tc.wantRemoved)
			wantNoExclusion(t, client)
		})
	}
}

// The label comes off the nodes that stay (abort, rollback, a node the
// stopped scale-down keeps), but never off a node that had it before the
// run.
func TestExclusionTakenOffNodesThatStay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		strategy plan.StrategyName
		killAt   string
		rollback bool
		// excluded is the node that carried the label before the run.
		excluded string
	}{
		{name: "eks aborted mid-batch", strategy: "eks", killAt: "Remove 1", excluded: "old-a1"},
		{name: "eks aborted in the second batch", strategy: "eks", killAt: "Cordon 2", excluded: "old-a1"},
		{name: "blue-green aborted in a batch soak", strategy: "blue-green", killAt: "BatchSoak 1", excluded: "old-a2"},
		{name: "blue-green rolled back in a batch soak", strategy: "blue-green", killAt: "BatchSoak 1", rollback: true, excluded: "old-a2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var nodes []*corev1.Node
			for _, n := range threeOldNodes() {
				if n.Name == tc.excluded {
					excludedBefore(n)
				}
				nodes = append(nodes, n)
			}
			var objs []runtime.Object
			for _, n := range nodes {
				objs = append(objs, n, appPod("pod-"+n.Name, n.Name, "500m"))
			}
			client := newTestClient(objs...)
			before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
			group := newFakeGroup(client, before, nodes...)
			var provider cloud.Provider = group
			in := plan.Input{Strategy: tc.strategy, MaxUnavailable: "2", Cloud: group.cloudGroup()}
			if tc.strategy == "blue-green" {
				provider = newFakeBlueGreen(group)
				in.MaxUnavailable, in.BlueGreen = "", plan.BlueGreenInput{BatchNodes: 2}
			}
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, provider)
			cfg.Drain = drainOpts()
			rec := cfg.Record
			cfg.OnProgress = killAt(rec, p, tc.killAt)
			var labelled []string
			first := runEngine(t, cfg, func(s plan.State) {
				if phaseName(s) != tc.killAt {
					return
				}
				for name, n := range client.nodes(t) {
					if excludedByRun(&n) {
						labelled = append(labelled, name)
					}
				}
			}, group)
			if !errors.Is(first.err, errKilled) {
				t.Fatalf("first run: %v, want it killed\n%s", first.err, first.out)
			}
			if len(labelled) == 0 {
				t.Fatalf("the run labelled no node before it was killed: nothing to take off\n%s", first.out)
			}
			if slices.Contains(labelled, tc.excluded) {
				t.Errorf("the run marked %q, which had the label before it", tc.excluded)
			}
			again := buildPlan(t, client, plan.Input{Strategy: tc.strategy, MaxUnavailable: in.MaxUnavailable, BlueGreen: in.BlueGreen, Cloud: group.cloudGroup(), Resume: plan.Resume{Recorded: rec.Cloud.Original}})
			acfg := cloudRun(again, client, provider)
			acfg.Record = rec
			groups := []*fakeGroup{group}
			if bg, ok := provider.(*fakeBlueGreen); ok {
				bg.UseGreen(rec.Cloud.Green)
				if bg.green != nil {
					groups = append(groups, bg.green)
				}
			}
			if tc.rollback {
				acfg.Start, acfg.Drain = plan.PhaseRollback, drainOpts()
				if got := runEngine(t, acfg, nil, groups...); got.err != nil {
					t.Fatalf("rollback: %v\n%s", got.err, got.out)
				}
			} else if out, _, err := abortRun(t, acfg, groups...); err != nil {
				t.Fatalf("abort: %v\n%s", err, out)
			}
			left := []string{}
			if _, ok := client.nodes(t)[tc.excluded]; ok {
				left = append(left, tc.excluded)
			}
			wantNoExclusion(t, client, left...)
			if n, ok := client.nodes(t)[tc.excluded]; ok && n.Labels[ExcludeLBLabel] != "" {
				t.Errorf("node %q: label %s changed to %q", tc.excluded, ExcludeLBLabel, n.Labels[ExcludeLBLabel])
			}
		})
	}
}
