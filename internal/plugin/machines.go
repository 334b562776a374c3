package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// leaveMachinesRunningFlag is the one way past the machine-left-running
// blocker: its name says what happens.
const leaveMachinesRunningFlag = "leave-machines-running"

// machinesLeftRunning finds, for a plan with provider none, the outdated
// nodes whose Node objects the run would delete while their machines may
// belong to a cloud group (aws://, gce://, azure:// provider IDs, or a
// machine of a registered cloud: see cloud.GroupCloud): the
// machines would keep running, un-upgraded, and their group would not
// replace them. A cloud this plugin serves is asked first; a machine it
// says belongs to no group (Karpenter's, standalone) is deleted as asked.
// Nothing is found with --delete-node=false (nothing is deleted) or with
// --leave-machines-running. One blocker per cloud.
func (o *PlanOptions) machinesLeftRunning(ctx context.Context, p *plan.Plan, nodes []corev1.Node) []check.Finding {
	if !o.DeleteNode || o.LeaveMachinesRunning {
		return nil
	}
	outdated := p.OutdatedNames()
	byCloud := map[string][]corev1.Node{}
	for _, n := range nodes {
		if name := cloud.GroupCloud(n.Spec.ProviderID); name != "" && slices.Contains(outdated, n.Name) {
			byCloud[name] = append(byCloud[name], n)
		}
	}
	var out []check.Finding
	for _, name := range slices.Sorted(maps.Keys(byCloud)) {
		reason, fix, owned := o.askOwner(ctx, name, byCloud[name])
		if !owned {
			continue
		}
		names := make([]string, len(byCloud[name]))
		for i, n := range byCloud[name] {
			names[i] = n.Name
		}
		out = append(out, check.Finding{
			Check: check.CheckMachineLeftRunning, Severity: check.Blocker, Kind: "NodeGroup", Name: o.recordName(), Nodes: names,
			Message: fmt.Sprintf("--provider none would delete the Node objects of %s and leave their %s machines running: %s", plan.Count(len(names), "node"), name, reason),
			Fix:     fix + "; or --delete-node=false to leave them cordoned instead of deleted, or --" + leaveMachinesRunningFlag + " if no group keeps those machines",
		})
	}
	return out
}

// askOwner asks the cloud the plugin serves under name whether a group
// keeps the nodes' machines. owned is false only when the cloud said the
// machines belong to no group; reason and fix say what was found.
func (o *PlanOptions) askOwner(ctx context.Context, name string, nodes []corev1.Node) (reason, fix string, owned bool) {
	c, ok := cloud.Lookup(name)
	if !ok {
		return fmt.Sprintf("no provider of this plugin serves %s machines yet, so nothing asked whether a group keeps them", name),
			"replace them with the cloud's own tools", true
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cg, _, err := cloud.OpenGroup(ctx, c, o.client, nodes, o.Cloud)
	switch {
	case err == nil && cg != nil:
		return fmt.Sprintf("they are %ss of %s %q, which would not replace them", cg.MachineKind, cg.GroupKind, cg.Name), "use --provider " + name, true
	case errors.Is(err, cloud.ErrNoGroup):
		return "", "", false
	case errors.Is(err, cloud.ErrManaged):
		return oneLineOf(err), "upgrade it as the message says", true
	case err != nil:
		return fmt.Sprintf("provider %s could not tell whether a group keeps them (%s)", name, oneLineOf(err)), "use --provider " + name + " once it can", true
	}
	return "provider " + name + " found no group", "use --provider " + name, true
}

func oneLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
