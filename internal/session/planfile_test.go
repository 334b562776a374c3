package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestSavedPlanKeepsItsWindows: run --plan-file (and the in-cluster Job,
// which runs one) keeps the maintenance windows the plan was reviewed
// with; windows given again on the command line win.
func TestSavedPlanKeepsItsWindows(t *testing.T) {
	notAfter := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	saved := &plan.Plan{NodeGroup: "demo", Strategy: string(plan.StrategyEKS), Window: &plan.WindowPlan{
		Windows: []string{"Sat-Sun 22:00-06:00 Europe/Berlin"}, NotAfter: &notAfter,
	}}
	for _, tc := range []struct {
		name         string
		given        []string
		wantWindows  []string
		wantNotAfter string
	}{
		{"none given: the plan's", nil, []string{"Sat-Sun 22:00-06:00 Europe/Berlin"}, "2026-12-01T06:00:00Z"},
		{"given again: those", []string{"daily 01:00-05:00"}, []string{"daily 01:00-05:00"}, "2026-12-01T06:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			r.Windows = tc.given
			r.fromPlan(saved)
			if !slices.Equal(r.Windows, tc.wantWindows) || r.NotAfter != tc.wantNotAfter || r.NotBefore != "" {
				t.Errorf("windows %q, not before %q, not after %q; want %q, \"\", %q", r.Windows, r.NotBefore, r.NotAfter, tc.wantWindows, tc.wantNotAfter)
			}
		})
	}
}

// TestSavedPlanOfARollback: a saved rollback plan runs while its scale-down
// would remove the nodes it names (some gone already, removed by a run of
// it), and is stale once another node would go unreplaced.
func TestSavedPlanOfARollback(t *testing.T) {
	t.Parallel()
	planOf := func(batched, deferred []string) *plan.Plan {
		p := &plan.Plan{}
		for _, n := range batched {
			p.Batches = append(p.Batches, plan.Batch{Nodes: []plan.PlannedNode{{Name: n}}})
		}
		for _, n := range deferred {
			p.Deferred = append(p.Deferred, plan.PlannedNode{Name: n})
		}
		p.Nodes.Outdated, p.Nodes.Deferred = len(batched), len(deferred)
		return p
	}
	saved := planOf([]string{"a"}, []string{"x", "y"})
	for _, tc := range []struct {
		name      string
		fresh     *plan.Plan
		wantError string
	}{
		{name: "the same split", fresh: planOf([]string{"a"}, []string{"x", "y"})},
		{name: "a deferred node removed already", fresh: planOf(nil, []string{"y"})},
		{name: "a deferred node batched now", fresh: planOf([]string{"a", "x"}, []string{"y"}), wantError: `node "x" is outdated but not in the plan`},
		{name: "another node deferred", fresh: planOf([]string{"a"}, []string{"x", "z"}), wantError: `node "z" is outdated but not in the plan's scale-down`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := compareSaved(saved, tc.fresh, "p.json", map[string]bool{"a": tc.fresh.Nodes.Outdated == 0})
			if tc.wantError == "" && err != nil || tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
				t.Fatalf("error %v, want %q", err, tc.wantError)
			}
			if err == nil {
				p := withoutDone(saved, tc.fresh, nil)
				if got := p.DeferredNames(); !slices.Equal(got, tc.fresh.DeferredNames()) || p.Nodes.Deferred != len(got) {
					t.Errorf("the plan run defers %v (counted %d), want the fresh plan's %v", got, p.Nodes.Deferred, tc.fresh.DeferredNames())
				}
			}
		})
	}
}

// TestSavedPlanOfChangedNodes: a saved plan one of whose nodes was deleted,
// or is another machine under its name now, is refused (exit 2, naming the
// node) when the nodes are listed, before planning waits on the cloud
// group's machines that are not nodes (a deleted node's is one); a node an
// unfinished run of the plan replaced is expected to be gone.
func TestSavedPlanOfChangedNodes(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	node := func(name, providerID string, at time.Time) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	saved := &plan.Plan{NodeGroup: "demo", Batches: []plan.Batch{{Nodes: []plan.PlannedNode{
		{Name: "a", ProviderID: "aws:///us-east-1a/i-a", Created: created},
		{Name: "b", ProviderID: "aws:///us-east-1b/i-b", Created: created},
	}}}}
	both := []corev1.Node{node("a", "aws:///us-east-1a/i-a", created), node("b", "aws:///us-east-1b/i-b", created)}
	for _, tc := range []struct {
		name      string
		nodes     []corev1.Node
		done      []string // by an unfinished run of the plan
		wantError string
	}{
		{name: "unchanged", nodes: both},
		{name: "a node deleted", nodes: both[:1], wantError: `--plan-file "p.json" is stale: node "b" is gone from the cluster; run plan again`},
		{name: "a node done by the run", nodes: both[:1], done: []string{"b"}},
		{name: "another machine by the name", nodes: []corev1.Node{both[0], node("b", "aws:///us-east-1b/i-c", created)},
			wantError: `node "b" is machine "aws:///us-east-1b/i-c" now, not "aws:///us-east-1b/i-b"`},
		{name: "registered again", nodes: []corev1.Node{both[0], node("b", "aws:///us-east-1b/i-b", created.Add(time.Hour))},
			wantError: `node "b" was registered again at 2026-11-01T09:00:00Z`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Session{Client: fake.NewClientset(), StateNamespace: "kube-system"}
			if tc.done != nil {
				if err := s.store().Save(context.Background(), &state.Record{NodeGroup: "demo", Done: tc.done}); err != nil {
					t.Fatal(err)
				}
			}
			r := &Request{Request: plan.Request{NodeGroup: "demo", PlanFile: "p.json"}, SavedPlan: saved}
			err := s.refuseChangedNodes(context.Background(), r, tc.nodes)
			var usage *UsageError
			if tc.wantError == "" && err != nil || tc.wantError != "" && (!errors.As(err, &usage) || !strings.Contains(err.Error(), tc.wantError)) {
				t.Fatalf("error %v, want a usage error with %q", err, tc.wantError)
			}
		})
	}
}

// TestSavedPlanOfDeletedNodeRefusedFirst: the refusal comes from
// refuseOnNodes, which the snapshot calls once the nodes are listed, before
// the pods are and before anything waits; a record that cannot be read
// there is an error, not a run with nothing done.
func TestSavedPlanOfDeletedNodeRefusedFirst(t *testing.T) {
	t.Parallel()
	saved := &plan.Plan{NodeGroup: "demo", Batches: []plan.Batch{{Nodes: []plan.PlannedNode{{Name: "a"}, {Name: "b"}}}}}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"eks.amazonaws.com/nodegroup": "demo"}}}}
	for _, tc := range []struct {
		name      string
		readFails bool
		wantError string
	}{
		{name: "node deleted", wantError: `node "b" is gone from the cluster`},
		{name: "record unreadable", readFails: true, wantError: `error when reading the record of "demo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := fake.NewClientset()
			if tc.readFails {
				client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("etcdserver: request timed out")
				})
			}
			s := &Session{Client: client, StateNamespace: "kube-system"}
			// The plan's target labels, as Validate resolves them.
			r := &Request{Request: plan.Request{NodeGroup: "demo", PlanFile: "p.json"}, SavedPlan: saved, targetLabels: map[string]string{"v": "2"}}
			err := s.refuseOnNodes(context.Background(), r, nodes)
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Fatalf("error %v, want %q", err, tc.wantError)
			}
			var usage *UsageError
			if tc.readFails == errors.As(err, &usage) {
				t.Errorf("error %v: usage error %v, want %v", err, !tc.readFails, tc.readFails)
			}
		})
	}
}
