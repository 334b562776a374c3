package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestNodeDoNotDisruptOnlyYieldsToTheUser: a Node or NodeClaim the user
// protected from Karpenter's disruption holds the run whatever the flags:
// --force is about pods, and --ignore-check node-do-not-disrupt is refused
// (exit 2) naming the annotation to remove; the refusal offers neither.
// A pod's do-not-disrupt yields to --ignore-check, as pod checks do.
func TestNodeDoNotDisruptOnlyYieldsToTheUser(t *testing.T) {
	node := check.Finding{Check: check.CheckNodeDoNotDisrupt, Severity: check.Blocker, Kind: "NodeClaim", Name: "c1", Nodes: []string{"n1"},
		Message: `NodeClaim "c1" of node "n1" is annotated karpenter.sh/do-not-disrupt="true"`, Fix: "kubectl annotate nodeclaim c1 karpenter.sh/do-not-disrupt-"}
	pod := check.Finding{Check: check.CheckDoNotDisrupt, Severity: check.Blocker, Kind: "Deployment", Namespace: "a", Name: "d", Message: "m", Fix: "f"}
	for _, tc := range []struct {
		name     string
		findings []check.Finding
		force    bool
		ignore   []string
		want     string // "" when the run may start
		not      []string
	}{
		{name: "node protected", findings: []check.Finding{node}, want: "kubectl annotate nodeclaim c1", not: []string{"--force", "--ignore-check"}},
		{name: "node protected, --force", findings: []check.Finding{node}, force: true, want: "node-do-not-disrupt (NodeClaim/c1)"},
		{name: "node and pod protected", findings: []check.Finding{node, pod}, want: "or use --ignore-check do-not-disrupt or --force (node-do-not-disrupt only yields to the annotation's removal)", not: []string{"--ignore-check node-do-not-disrupt"}},
		{name: "pod protected, --ignore-check", findings: []check.Finding{pod}, ignore: []string{check.CheckDoNotDisrupt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{}
			r.Force, r.IgnoreChecks = tc.force, tc.ignore
			err := r.RefuseBlockers(&plan.Plan{Findings: tc.findings}, "refusing to run")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var refusal *BlockerRefusal
			if !errors.As(err, &refusal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a refusal saying %q", err, tc.want)
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("%q offers %q", err, n)
				}
			}
		})
	}
	t.Run("--ignore-check node-do-not-disrupt", func(t *testing.T) {
		r := &Request{Request: plan.Request{NodeGroup: "np", MaxUnavailable: "1", MaxAge: time.Hour, DrainTimeout: time.Minute, NodeReadyTimeout: time.Minute,
			IgnoreChecks: []string{check.CheckNodeDoNotDisrupt}}}
		err := r.ValidateRun()
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), `invalid --ignore-check "node-do-not-disrupt": remove the annotation karpenter.sh/do-not-disrupt`) {
			t.Errorf("got %v, want a usage error naming the annotation", err)
		}
	})
}
