package session

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
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// openedCloud is the cloud that serves the nodes (nil: provider none),
// whether a cloud was asked and said they belong to no group, and the
// notes the plan gets about it.
type openedCloud struct {
	cloud      cloud.Cloud
	askedCloud bool
	notes      []string
}

// openCloudOf opens the nodes' group with the request's cloud into in and
// pl. Where the cloud was only detected and says the machines belong to
// no group, provider none serves them.
func (s Clouds) openCloudOf(ctx context.Context, r *Request, pl *Planned, in *plan.Input, nodes []corev1.Node, rec *state.Record) (openedCloud, error) {
	c, err := r.cloudFor(nodes)
	if err != nil {
		return openedCloud{}, err
	}
	in.Provider = cloud.NoneName
	if c == nil {
		if why := cloud.NoneRefused(nodes); why != "" {
			return openedCloud{}, Usagef("%s", why)
		}
		return openedCloud{}, r.refuseNoTarget(*in)
	}
	in.Provider = c.Name()
	in.Cloud, pl.Provider, err = s.openCloud(ctx, r, c, nodes, rec, &in.Resume)
	switch {
	case err == nil:
		return openedCloud{cloud: c}, r.defaultStrategy(in)
	case r.Provider == "" && !r.Cloud.Given() && errors.Is(err, cloud.ErrNoGroup) && len(r.targetLabels) > 0:
		// Detected from the provider IDs, but no group of the cloud has
		// them (Karpenter's, standalone): nodes are only deleted.
		note := fmt.Sprintf("provider none: the nodes are %s machines of no group (%v), so their Node objects are deleted and the machines left to whoever made them", c.Name(), err)
		in.Provider, in.Cloud, in.Resume, pl.Provider = cloud.NoneName, nil, plan.Resume{}, nil
		return openedCloud{askedCloud: true, notes: []string{note}}, r.refuseNoTarget(*in)
	case r.Provider == "" && !r.Cloud.Given():
		// --provider none only with --leave-machines-running: alone it would
		// delete the Node objects of machines a group may keep running.
		return openedCloud{}, fmt.Errorf("%w (provider %s was chosen from the nodes' provider IDs; if no group keeps these machines, as with standalone ones, --provider none --%s deletes only their Node objects; Karpenter's are --provider karpenter's)",
			err, c.Name(), LeaveMachinesRunningFlag)
	}
	return openedCloud{}, err
}

// openCloud reads the node group's cloud group and the target, and
// returns the provider the run changes it with. It only reads. rec is the
// unfinished run's record, or nil.
func (s Clouds) openCloud(ctx context.Context, r *Request, c cloud.Cloud, nodes []corev1.Node, rec *state.Record, resume *plan.Resume) (*plan.CloudGroup, cloud.Provider, error) {
	// An unfinished run knows its group: after a blue/green run made green,
	// the nodes span two groups.
	if rec != nil && rec.Cloud == nil {
		rec = nil
	}
	target := r.Cloud
	target.Strategy = r.strategy.Name()
	if target.Group == "" && rec != nil {
		target.Group = rec.Cloud.Group
	}
	if g := r.BlueGreen.GreenGroup; g != "" {
		target.Exclude = append(target.Exclude, g)
	}
	cg, provider, err := cloud.OpenGroup(ctx, c, s.Client, nodes, target)
	if deletedBlue(rec, target, err) {
		// The run got as far as deleting blue's group: green is the group
		// now, and the run only finishes what follows the deletion.
		target.Group = rec.Cloud.Green
		if cg, provider, err = cloud.OpenGroup(ctx, c, s.Client, nodes, target); err == nil {
			resume.BlueDeleted = rec.Cloud.Group
		} else {
			err = &blueGoneError{green: rec.Cloud.Green, err: err}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if _, ok := provider.(cloud.BlueGreen); ok && rec != nil && rec.Cloud.Green != "" && resume.BlueDeleted == "" && rec.Cloud.Group == cg.Group && r.strategy.Traits().WholeGroup {
		resume.InterruptedGreen = rec.Cloud.Green
	}
	// An interrupted run scaled the group up already: the plan says so and
	// shows the sizes the end restores.
	if rec != nil && rec.Cloud.Original != nil && rec.Cloud.Group == cg.Group && r.strategy.Traits().ScalesGroup {
		resume.Recorded = rec.Cloud.Original
		if rec.Cloud.ScaledForOther(cg.TargetVersion) {
			resume.RescaleFrom = rec.Cloud.ScaledFor
		}
		if rec.Cloud.ScaledForRolledBack(cg.TargetVersion) {
			resume.RollbackFrom = rec.Cloud.ScaledFor
		}
	}
	return cg, provider, nil
}

// blueGoneError is the failure to open green in place of the blue group
// an interrupted blue/green run deleted: the plan opens it again with
// green's nodes where it gave blue's, still leaving.
type blueGoneError struct {
	green string
	err   error
}

func (e *blueGoneError) Error() string { return e.err.Error() }
func (e *blueGoneError) Unwrap() error { return e.err }

// deletedBlue reports whether err says the group an interrupted blue/green
// run was deleting is gone: the kill came after the delete and before the
// record of it.
func deletedBlue(rec *state.Record, target plan.CloudTarget, err error) bool {
	return err != nil && errors.Is(err, cloud.ErrGroupNotFound) && rec != nil &&
		plan.Phase(rec.Phase) == plan.PhaseDeleteBlue && rec.Cloud.Green != "" && target.Group == rec.Cloud.Group
}

// machinesLeftRunning finds, for a plan with provider none, the outdated
// nodes whose Node objects the run would delete while their machines may
// belong to a cloud group (aws://, gce://, azure:// provider IDs, or a
// machine of a registered cloud: see cloud.GroupCloud): the
// machines would keep running, un-upgraded, and their group would not
// replace them. A cloud this plugin serves is asked first; a machine it
// says belongs to no group (Karpenter's, standalone) is deleted as asked.
// Nothing is found with --delete-node=false (nothing is deleted) or with
// --leave-machines-running. One blocker per cloud.
func (s Clouds) machinesLeftRunning(ctx context.Context, r *Request, p *plan.Plan, nodes []corev1.Node) []check.Finding {
	if !r.DeleteNode || r.LeaveMachinesRunning {
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
		reason, fix, owned := s.askOwner(ctx, r, name, byCloud[name])
		if !owned {
			continue
		}
		names := make([]string, len(byCloud[name]))
		for i, n := range byCloud[name] {
			names[i] = n.Name
		}
		out = append(out, check.Finding{
			Check: check.CheckMachineLeftRunning, Severity: check.Blocker, Kind: "NodeGroup", Name: r.RecordName(), Nodes: names,
			Message: fmt.Sprintf("--provider none would delete the Node objects of %s and leave their %s machines running: %s", plan.Count(len(names), "node"), name, reason),
			Fix:     fix + "; or --delete-node=false to leave them cordoned instead of deleted, or --" + LeaveMachinesRunningFlag + " if no group keeps those machines",
		})
	}
	return out
}

// askOwner asks the cloud the plugin serves under name whether a group
// keeps the nodes' machines. owned is false only when the cloud said the
// machines belong to no group; reason and fix say what was found.
func (s Clouds) askOwner(ctx context.Context, r *Request, name string, nodes []corev1.Node) (reason, fix string, owned bool) {
	c, ok := cloud.Lookup(name)
	if !ok {
		return fmt.Sprintf("no provider of this plugin serves %s machines yet, so nothing asked whether a group keeps them", name),
			"replace them with the cloud's own tools", true
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cg, _, err := cloud.OpenGroup(ctx, c, s.Client, nodes, r.Cloud)
	switch {
	case err == nil && cg != nil:
		return fmt.Sprintf("they are %ss of %s %q, which would not replace them", cg.MachineKind, cg.GroupKind, cg.Group), "use --provider " + name, true
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
