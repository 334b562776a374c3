package upgrade

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// A run on a group with a target size alone (a managed instance group)
// names that size and no max (issue 42: "back to desired 9, max 9").
func TestRunLinesOfATargetSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		targetOnly bool
		want       []string
	}{
		{"desired and max", false, []string{`up by 4: desired 3 -> 7, max 4 -> 8`, `"asg" is back to desired 3, max 4`}},
		{"target size alone", true, []string{`up by 4: target size 3 -> 7` + "\n", `"asg" is back to target size 3` + "\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			cg := group.cloudGroup()
			cg.TargetSizeOnly = tc.targetOnly
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: cg})
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			cfg.Save = func(context.Context) error { return nil }
			got := runEngine(t, cfg, nil, group)
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.out, w) {
					t.Errorf("output lacks %q:\n%s", w, got.out)
				}
			}
		})
	}
}
