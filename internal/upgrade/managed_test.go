package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// replacingService is a service's update that, as EKS's, counts no nodes
// in its progress: it replaces one outdated node (deletes its Node) at
// every third read, so the run reads between, and succeeds after the last.
type replacingService struct {
	managedFake
	client kubernetes.Interface
	mu     sync.Mutex
	left   []string
	reads  int
}

func (s *replacingService) Progress(ctx context.Context, id string) (cloud.UpdateProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	switch {
	case len(s.left) == 0 && s.reads%3 == 1:
		return cloud.UpdateProgress{ID: id, State: cloud.UpdateSucceeded}, nil
	case len(s.left) > 0 && s.reads%3 == 1:
		if err := s.client.CoreV1().Nodes().Delete(ctx, s.left[0], metav1.DeleteOptions{}); err != nil {
			return cloud.UpdateProgress{}, err
		}
		s.left = s.left[1:]
	}
	return cloud.UpdateProgress{ID: id, State: cloud.UpdateInProgress, Phase: "InProgress"}, nil
}

// TestServiceUpdateCountsTheNodesItReplaced: while a service's update
// runs, the run counts the nodes it replaced from the cluster, in its log
// lines, its progress and its record, instead of "0 of 0 nodes" until the
// end; the end counts each node once.
func TestServiceUpdateCountsTheNodesItReplaced(t *testing.T) {
	t.Parallel()
	names := []string{"old-1", "old-2", "old-3"}
	client := newTestClient(imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("old-3", "z2", "old"))
	svc := &replacingService{managedFake: managedFake{None: cloud.None{Client: client}}, client: client, left: names}
	batch := plan.Batch{Number: 1}
	for _, n := range names {
		batch.Nodes = append(batch.Nodes, plan.PlannedNode{Name: n})
	}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Batches: []plan.Batch{batch},
		Nodes:   plan.NodeCounts{Total: 3, Outdated: 3},
		Managed: &plan.ManagedPlan{Service: "EKS managed node group", Target: "release 2"}}
	var mu sync.Mutex
	var during []int // the done counts recorded in the update
	cfg := Config{Client: client, Plan: p, Provider: svc, OnProgress: func(_ context.Context, s plan.State, done []string) error {
		mu.Lock()
		defer mu.Unlock()
		if s.Phase == plan.PhaseUpdate {
			during = append(during, len(done))
		}
		return nil
	}}
	got := runEngine(t, cfg, nil)
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if strings.Contains(got.out, "0 of 0 nodes") || !strings.Contains(got.out, `node "old-1" replaced (1 of 3)`) {
		t.Errorf("the update's lines do not count the nodes replaced:\n%s", got.out)
	}
	mu.Lock()
	defer mu.Unlock()
	// How many go at once depends on when the watch tells the run; some
	// must be recorded before the update ends.
	if !slices.ContainsFunc(during, func(n int) bool { return n > 0 && n < 3 }) || during[len(during)-1] != 3 {
		t.Errorf("done counts recorded during the update %v, want some before the end and 3 last", during)
	}
	if len(got.done) != 3 {
		t.Errorf("done %v, want each of the 3 nodes once", got.done)
	}
}

// TestServiceUpdateRerunCountsTheWholeRun: a run killed while the service
// replaces nodes recorded those it replaced; the re-run that follows the
// same update counts them as done before it, so its end counts every
// node of the group, not only those left when it started.
func TestServiceUpdateRerunCountsTheWholeRun(t *testing.T) {
	t.Parallel()
	names := []string{"old-1", "old-2", "old-3"}
	client := newTestClient(imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("old-3", "z2", "old"))
	svc := &replacingService{managedFake: managedFake{None: cloud.None{Client: client}}, client: client, left: names}
	managedPlan := func(nodes ...string) *plan.Plan {
		batch := plan.Batch{Number: 1}
		for _, n := range nodes {
			batch.Nodes = append(batch.Nodes, plan.PlannedNode{Name: n})
		}
		return &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Batches: []plan.Batch{batch},
			Nodes: plan.NodeCounts{Total: 3, Outdated: len(nodes)}, Managed: &plan.ManagedPlan{Service: "EKS managed node group", Target: "release 2"}}
	}
	rec := &state.Record{}
	first := runEngine(t, Config{Client: client, Plan: managedPlan(names...), Provider: svc, Record: rec,
		OnProgress: func(_ context.Context, s plan.State, done []string) error {
			rec.Phase, rec.Done = string(s.Phase), slices.Clone(done)
			if s.Phase == plan.PhaseUpdate && len(done) > 0 {
				return errKilled
			}
			return nil
		}}, nil)
	if !errors.Is(first.err, errKilled) || len(rec.Done) == 0 || len(rec.Done) == len(names) {
		t.Fatalf("first run: %v, done %v; want it killed in the update after some nodes were replaced\n%s", first.err, rec.Done, first.out)
	}
	var left []string
	for _, n := range names {
		if !slices.Contains(rec.Done, n) {
			left = append(left, n)
		}
	}
	again := runEngine(t, Config{Client: client, Plan: managedPlan(left...), Provider: svc, Record: rec,
		Start: plan.PhaseUpdate, EarlierDone: rec.Done}, nil)
	if again.err != nil {
		t.Fatalf("re-run: %v\n%s", again.err, again.out)
	}
	if !strings.Contains(again.out, "upgrade of 3 nodes finished") {
		t.Errorf("the re-run's end does not count the 3 nodes of the run:\n%s", again.out)
	}
}

// TestServiceUpdateRerunCountsTheRecordedNodes: a run records, as it sets
// out, the nodes the service's update replaces and the group's sizes; a
// re-run that follows the update counts those nodes, the ones replaced
// after the kill (no longer in its plan) included, and only those: the
// closing line counts the group's nodes, never 0 or the service's new
// ones.
func TestServiceUpdateRerunCountsTheRecordedNodes(t *testing.T) {
	t.Parallel()
	names := []string{"old-1", "old-2", "old-3"}
	t.Run("the first run records them", func(t *testing.T) {
		t.Parallel()
		client := newTestClient(imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("old-3", "z2", "old"))
		svc := &replacingService{managedFake: managedFake{None: cloud.None{Client: client}}, client: client, left: names}
		rec := &state.Record{}
		p := managedTestPlan(names...)
		p.Cloud = &plan.CloudPlan{Before: plan.Sizes{Min: 1, Desired: 3, Max: 4}}
		if got := runEngine(t, Config{Client: client, Plan: p, Provider: svc, Record: rec}, nil); got.err != nil {
			t.Fatalf("run: %v\n%s", got.err, got.out)
		}
		if m := rec.Managed; m == nil || !slices.Equal(m.Nodes, names) || m.Sizes == nil || *m.Sizes != p.Cloud.Before {
			t.Errorf("recorded %+v, want the nodes %v and the sizes %v", m, names, p.Cloud.Before)
		}
	})
	for _, tc := range []struct {
		name    string
		earlier []string // recorded done by the killed run
		left    []string // the nodes of the update still there
		want    string
	}{
		{name: "every node replaced after the kill", want: "upgrade of 3 nodes finished\n"},
		{name: "one seen replaced, one replaced after the kill", earlier: []string{"old-1"}, left: []string{"old-3"},
			want: "upgrade of 3 nodes finished (2 by this run, 1 by an earlier, interrupted one)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// the service's new nodes, which the re-run's plan leaves out
			nodes := []runtime.Object{imageNode("new-1", "z1", "new"), imageNode("new-2", "z1", "new"), imageNode("new-3", "z2", "new")}
			for _, n := range tc.left {
				nodes = append(nodes, imageNode(n, "z2", "old"))
			}
			client := newTestClient(nodes...)
			svc := &replacingService{managedFake: managedFake{None: cloud.None{Client: client}}, client: client, left: tc.left}
			rec := &state.Record{Phase: string(plan.PhaseUpdate), Done: tc.earlier,
				Managed: &state.ManagedRecord{Group: "pool", UpdateID: "op-1", Nodes: names}}
			got := runEngine(t, Config{Client: client, Plan: managedTestPlan(tc.left...), Provider: svc, Record: rec,
				Start: plan.PhaseUpdate, EarlierDone: tc.earlier}, nil)
			if got.err != nil {
				t.Fatalf("re-run: %v\n%s", got.err, got.out)
			}
			if !strings.Contains(got.out, tc.want) {
				t.Errorf("the re-run's end does not say %q:\n%s", tc.want, got.out)
			}
		})
	}
}

// managedTestPlan is the plan of a service's update of nodes.
func managedTestPlan(nodes ...string) *plan.Plan {
	batch := plan.Batch{Number: 1}
	for _, n := range nodes {
		batch.Nodes = append(batch.Nodes, plan.PlannedNode{Name: n})
	}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy),
		Nodes: plan.NodeCounts{Total: 3, Outdated: len(nodes)}, Managed: &plan.ManagedPlan{Service: "EKS managed node group", Target: "release 2"}}
	if len(nodes) > 0 {
		p.Batches = []plan.Batch{batch}
	}
	return p
}

// killedAtStart is a service whose StartUpdate starts the update and the
// run is killed before it hears the ID: what the run saved by then is
// all the next run has.
type killedAtStart struct {
	managedFake
	saved *state.ManagedRecord // the record as last saved
}

func (s *killedAtStart) StartUpdate(context.Context, bool) (string, error) {
	return "", errKilled
}

// TestServiceUpdateIntentIsSavedBeforeItStarts: the nodes the update
// replaces and the sizes it raises from are saved before the update is
// started, so a run killed before it saved the update's ID leaves the
// next run what it needs to find the update and follow it.
func TestServiceUpdateIntentIsSavedBeforeItStarts(t *testing.T) {
	t.Parallel()
	client := newTestClient(imageNode("old-1", "z1", "old"), imageNode("old-2", "z2", "old"))
	svc := &killedAtStart{managedFake: managedFake{None: cloud.None{Client: client}}}
	batch := plan.Batch{Number: 1, Nodes: []plan.PlannedNode{{Name: "old-1"}, {Name: "old-2"}}}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy), Batches: []plan.Batch{batch},
		Nodes: plan.NodeCounts{Total: 2, Outdated: 2}, Managed: &plan.ManagedPlan{Service: "EKS managed node group", Target: "release 2"},
		Cloud: &plan.CloudPlan{Before: plan.Sizes{Min: 1, Desired: 2, Max: 3}}}
	rec := &state.Record{}
	got := runEngine(t, Config{Client: client, Plan: p, Provider: svc, Record: rec, Save: func(context.Context) error {
		if rec.Managed != nil {
			m := *rec.Managed
			m.Nodes = slices.Clone(m.Nodes)
			svc.saved = &m
		}
		return nil
	}}, nil)
	if !errors.Is(got.err, errKilled) {
		t.Fatalf("run: %v, want killed at the start\n%s", got.err, got.out)
	}
	if m := svc.saved; m == nil || m.UpdateID != "" || !slices.Equal(m.Nodes, []string{"old-1", "old-2"}) || m.Sizes == nil || m.Sizes.Desired != 2 {
		t.Errorf("saved before the start %+v; want the nodes old-1, old-2 and desired 2, no update ID", m)
	}
}
