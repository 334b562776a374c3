package plan

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// TestDoNotDisrupt: where the provider's controller honours Karpenter's
// do-not-disrupt, a pod under it on a node the run replaces is a blocker
// that --force lowers to a warning, and the provider's protected nodes
// are blockers --force does not lift, kept for the nodes the run
// replaces only; elsewhere the pod is a do-not-evict warning.
func TestDoNotDisrupt(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "c-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService},
		"b1": {ID: "c-b1", Zone: "b", Template: "lt-1", Version: "2", State: MachineInService},
	}
	nodes := []corev1.Node{awsNode("a1", "a", "c-a1", "1"), awsNode("b1", "b", "c-b1", "2")}
	guarded := pod("ns", "batch-1", "a1", "batch", "ReplicaSet/batch-1")
	guarded.Annotations = map[string]string{check.AnnDoNotDisrupt: "true"}
	protect := func(node string) check.Finding {
		return check.Finding{Check: check.CheckNodeDoNotDisrupt, Severity: check.Blocker, Kind: "NodeClaim", Name: "c-" + node,
			Nodes: []string{node}, Message: "annotated", Fix: "remove it"}
	}
	type sev map[string]check.Severity
	for _, tc := range []struct {
		name      string
		honoured  bool
		force     bool
		protected []check.Finding
		want      sev
	}{
		{name: "Karpenter", honoured: true, want: sev{check.CheckDoNotDisrupt: check.Blocker}},
		{name: "Karpenter, --force", honoured: true, force: true, want: sev{check.CheckDoNotDisrupt: check.Warning}},
		{name: "another provider", want: sev{check.CheckDoNotEvict: check.Warning}},
		{name: "protected outdated node", honoured: true, force: true, protected: []check.Finding{protect("a1")},
			want: sev{check.CheckDoNotDisrupt: check.Warning, check.CheckNodeDoNotDisrupt: check.Blocker}},
		{name: "protected current node", honoured: true, force: true, protected: []check.Finding{protect("b1")},
			want: sev{check.CheckDoNotDisrupt: check.Warning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloudInput("2", machines)
			in.Cloud.DoNotDisrupt, in.Cloud.Findings, in.Force = tc.honoured, tc.protected, tc.force
			p, err := Build(snapshot.Cluster{Nodes: nodes, Pods: []corev1.Pod{guarded}}, in)
			if err != nil {
				t.Fatal(err)
			}
			got := sev{}
			for _, f := range p.Findings {
				switch f.Check {
				case check.CheckDoNotDisrupt, check.CheckDoNotEvict, check.CheckNodeDoNotDisrupt:
					got[f.Check] = f.Severity
					if len(f.Nodes) != 1 || f.Nodes[0] != "a1" {
						t.Errorf("%s on nodes %v, want a1", f.Check, f.Nodes)
					}
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want %v: %+v", got, tc.want, p.Findings)
			}
			for c, s := range tc.want {
				if got[c] != s {
					t.Errorf("%s: %q, want %q", c, got[c], s)
				}
			}
		})
	}
}
