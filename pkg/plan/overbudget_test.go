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
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"batches a+c then b", w.overBudget([][]PlannedNode{{nodes[0], nodes[2]}, {nodes[1]}}), []string{
			`batch 1 takes 2 pods of Deployment "demo/ledger", more than the 1 that may be down at once: the drain will wait for replacements between evictions`,
		}},
		{"batches of one node", w.overBudget([][]PlannedNode{{nodes[0]}, {nodes[1]}, {nodes[2]}}), nil},
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
