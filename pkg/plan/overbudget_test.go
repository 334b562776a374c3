package plan

import (
	"slices"
	"testing"
)

// TestOverBudgetNotes: the run's batches are noted by number; a service
// that drains in an order of its own is noted by the most pods any of
// its rounds could take.
func TestOverBudgetNotes(t *testing.T) {
	// ledger (budget 1): one pod on each of a, b and c; web (budget 2):
	// two on a, one on b.
	w := &workloads{
		perNode: map[string][]podsOf{
			"a": {{w: 0, pods: 1}, {w: 1, pods: 2}},
			"b": {{w: 0, pods: 1}, {w: 1, pods: 1}},
			"c": {{w: 0, pods: 1}},
		},
		budget: []int{1, 2},
		refs:   []workloadRef{{"Deployment", "demo", "ledger"}, {"Deployment", "demo", "web"}},
	}
	nodes := []PlannedNode{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	notes := func(batches [][]PlannedNode) []string { n, _ := w.overBudget(batches); return n }
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"batches a+c then b", notes([][]PlannedNode{{nodes[0], nodes[2]}, {nodes[1]}}), []string{
			`batch 1 takes 2 pods of Deployment "demo/ledger", more than the 1 that may be down at once: the drain will wait for replacements between evictions`,
		}},
		{"batches of one node", notes([][]PlannedNode{{nodes[0]}, {nodes[1]}, {nodes[2]}}), nil},
		{"service, 2 at once", w.overBudgetAnyOrder(nodes, 2, "EKS managed node group"), []string{
			`the EKS managed node group's service drains 2 nodes at once, in an order of its own: together they may hold 2 pods of Deployment "demo/ledger", more than the 1 that may be down at once, and its drain then waits for replacements between evictions`,
			`the EKS managed node group's service drains 2 nodes at once, in an order of its own: together they may hold 3 pods of Deployment "demo/web", more than the 2 that may be down at once, and its drain then waits for replacements between evictions`,
		}},
		{"service, 1 at once", w.overBudgetAnyOrder(nodes, 1, "EKS managed node group"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("notes:\n%q\nwant\n%q", c.got, c.want)
			}
		})
	}
}

// TestUpdateSettingsText: settings a pool does not set read as the
// service's defaults, never as an empty "(were )".
func TestUpdateSettingsText(t *testing.T) {
	surge := 2
	for _, tc := range []struct {
		name string
		s    UpdateSettings
		want string
	}{
		{"none set", UpdateSettings{Other: map[string]string{}}, "none set (the service's defaults)"},
		{"some set", UpdateSettings{Strategy: "SURGE", MaxSurge: &surge, Other: map[string]string{"drainTimeoutInMinutes": "45"}}, "strategy SURGE, maxSurge 2, drainTimeoutInMinutes 45"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestDrainRounds: a batch holding more of a workload's pods than its
// budget drains them in rounds, each waiting for replacements; the plan
// counts the most any batch takes.
func TestDrainRounds(t *testing.T) {
	// ledger (budget 1): one pod on each of a, b and c; web (budget 2):
	// three on a; solo (no budget it can keep): two on b.
	w := &workloads{
		perNode: map[string][]podsOf{
			"a": {{w: 0, pods: 1}, {w: 1, pods: 3}},
			"b": {{w: 0, pods: 1}, {w: 2, pods: 2}},
			"c": {{w: 0, pods: 1}},
		},
		budget: []int{1, 2, unlimited},
		refs:   []workloadRef{{"Deployment", "demo", "ledger"}, {"Deployment", "demo", "web"}, {"Deployment", "demo", "solo"}},
	}
	a, b, c := PlannedNode{Name: "a"}, PlannedNode{Name: "b"}, PlannedNode{Name: "c"}
	for _, tc := range []struct {
		name    string
		batches [][]PlannedNode
		want    int
	}{
		{"a node at a time: web's 3 pods, 2 at once", [][]PlannedNode{{a}, {b}, {c}}, 2},
		{"all at once: ledger's 3 pods, 1 at once", [][]PlannedNode{{a, b, c}}, 3},
		{"within every budget", [][]PlannedNode{{b}, {c}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, got := w.overBudget(tc.batches); got != tc.want {
				t.Errorf("rounds %d, want %d", got, tc.want)
			}
		})
	}
}
