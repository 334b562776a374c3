package upgrade

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// whyNotCounted says why a machine of the group that the run did not plan
// to replace does not count as a new node of the target, or "" when it
// does: no node has joined for it (n nil), it runs another template or
// version (current false: launched by someone else, or from a default
// that moved), or its node is not yet usable. The scale-up's failure
// names every such machine with this reason.
func whyNotCounted(m plan.Machine, n *corev1.Node, current bool, version string, p *plan.Plan) string {
	if n == nil {
		return fmt.Sprintf("%s, no node has joined", strings.ToLower(orUnknown(m.Lifecycle)))
	}
	if !current {
		ready := "not Ready"
		if capacity.NodeReady(n) {
			ready = "Ready"
		}
		want := "version " + version
		if c := p.Cloud; c != nil && c.Template != "" {
			want = c.Template + " " + want
		}
		kind := "template"
		if c := p.Cloud; c != nil && c.TemplateKind != "" {
			kind = c.TemplateKind
		}
		return fmt.Sprintf("%s, but launched from %s %s version %s, not %s", ready, kind, orUnknown(m.Template), orUnknown(m.Version), want)
	}
	return newNodeProblem(n, version, p)
}
