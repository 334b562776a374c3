package karpenter

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NodePool is the provider a run works with: a cloud.Pool of NodeClaims,
// a cloud.Remover that deletes a drained node's NodeClaim (never the Node
// behind Karpenter's back), a cloud.SelfUpdater whose own replacement of
// drifted nodes is held off for the run, and a cloud.Provisioner.
type NodePool struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	name   string
	// target is the NodeClass a rollback points the pool back at; zero
	// for a run, whose target is the pool as it is.
	target nodeClassRef
}

var (
	_ cloud.Remover     = (*NodePool)(nil)
	_ cloud.Pool        = (*NodePool)(nil)
	_ cloud.SelfUpdater = (*NodePool)(nil)
	_ cloud.Provisioner = (*NodePool)(nil)
)

// Waits of RemoveNode: how long Karpenter may take to terminate a node
// whose NodeClaim is deleted, and to launch and register the pool's new
// NodeClaims; how often they are looked at.
var (
	TerminateTimeout = 10 * time.Minute
	LaunchTimeout    = 10 * time.Minute
	pollEvery        = 2 * time.Second
)

// Name implements cloud.Provider.
func (p *NodePool) Name() string { return Name }

// Describe implements cloud.Provider.
func (p *NodePool) Describe() string {
	return "delete the NodeClaim; Karpenter terminates the node and launches for its pods"
}

// GroupName implements cloud.Pool.
func (p *NodePool) GroupName() string { return p.name }

// Provisions implements cloud.Provisioner.
func (p *NodePool) Provisions() string {
	return fmt.Sprintf("Karpenter launches nodes of NodePool %q for the pods the drain evicts", p.name)
}

// now is the clock the plan's view is read at; tests replace it.
var now = time.Now

// expiryEffect is what Karpenter v1 does at a NodeClaim's expiry: it
// deletes the NodeClaim (v1.15 pkg/controllers/nodeclaim/expiration),
// past the NodePool's disruption budgets and do-not-disrupt
// (designs/forceful-expiration.md, "Forceful"), so the run's hold does not
// hold it either.
const expiryEffect = "Karpenter deletes its NodeClaim then, whatever the disruption budgets and the run's hold, outside the run's waves; let it expire before the run, or end the run sooner with a larger --max-unavailable"

// view is the plan's view of the pool: its NodeClass and template hash as
// the target, each node's drift, the budgets in force.
func (p *NodePool) view(np *nodePool, claims []nodeClaim) *plan.CloudGroup {
	cg := &plan.CloudGroup{
		GroupID: plan.GroupID{
			Provider:     Name,
			Group:        p.name,
			GroupKind:    "NodePool",
			Template:     np.NodeClass,
			TemplateKind: "NodeClass",
			MachineKind:  "NodeClaim",
		},
		Launches: plan.Launches{CurrentVersion: np.Hash, TargetVersion: np.Hash}, VersionKey: "drifted", TargetSizeOnly: true,
		Nodes: map[string]plan.Machine{},
	}
	cg.Previous = previousClass(np, claims)
	if p.target != (nodeClassRef{}) {
		cg.Template = p.target.short()
		if np.Ref != p.target {
			cg.Previous = np.Ref.String()
		}
	}
	cg.PreviousTemplate = cg.Previous
	if cg.Previous == "" {
		cg.BackBy = changedInPlace(p.name)
	}
	cg.Expiry = &plan.Expiry{At: map[string]time.Time{}, ReadAt: now(), By: "its NodeClaim's expireAfter", Effect: expiryEffect}
	reasons := map[string]int{}
	for _, c := range claims {
		m := p.machine(c, np)
		if m.State != plan.MachineLeaving {
			cg.Sizes.Desired++
		}
		if c.Node == "" {
			cg.Unjoined = append(cg.Unjoined, m)
			continue
		}
		cg.Nodes[c.Node] = m
		if at, ok := c.expiresAt(); ok && !c.Deleting {
			cg.Expiry.At[c.Node] = at
		}
		if d := driftOf(c, np); d != "" && !c.Deleting {
			reasons[d]++
		}
	}
	cg.Sizes.Max = cg.Sizes.Desired
	cg.Notes = append(poolNotes(np, reasons), p.retargetNotes(np)...)
	// RemoveNode returns once the pool's replacement is initialized.
	cg.AwaitsReplacement, cg.LaunchPace = true, launchPace(claims)
	return cg
}

// launchPace is how long the pool's NodeClaims took from their creation
// to Initialized (launched, registered, the node Ready): the median,
// rounded up to the second the timestamps keep; zero without one.
func launchPace(claims []nodeClaim) plan.Pace {
	var took []time.Duration
	for _, c := range claims {
		if i := c.Conditions[initialized]; i.Status == "True" && !c.Created.IsZero() && !i.Since.Before(c.Created.Time) {
			took = append(took, i.Since.Sub(c.Created.Time))
		}
	}
	if len(took) == 0 {
		return plan.Pace{}
	}
	return plan.Pace{Join: plan.Duration(plan.Median(took) + time.Second),
		JoinFrom: fmt.Sprintf("the creation to Initialized of the pool's %s", plan.Count(len(took), "NodeClaim"))}
}

// machine is a NodeClaim as a machine of the pool; its version is the
// template hash it was launched from, or its drift reason. Its template
// is the pool's NodeClass; in a rollback its own, so that the NodeClaims
// of another than the one the pool goes back to are outdated before the
// pool is pointed back (and Karpenter marks them).
func (p *NodePool) machine(c nodeClaim, np *nodePool) plan.Machine {
	m := plan.Machine{ID: c.Name, Zone: c.Zone, Template: np.NodeClass, Version: np.Hash, State: plan.MachinePending, Lifecycle: "Launching"}
	if p.target != (nodeClassRef{}) {
		m.Template = c.NodeClass
	}
	if d := driftOf(c, np); d != "" {
		m.Version = d
	}
	switch {
	case c.Deleting:
		m.State, m.Lifecycle = plan.MachineLeaving, "Deleting"
	case c.Conditions[initialized].Status == "True":
		m.State, m.Lifecycle = plan.MachineInService, "Initialized"
	}
	return m
}

// poolNotes say what the plan cannot show in its columns: the budgets in
// force and how the run treats them, and the drift by reason.
func poolNotes(np *nodePool, reasons map[string]int) []string {
	budgets := string(np.Budgets)
	if budgets == "" {
		budgets = "none"
	}
	notes := []string{fmt.Sprintf("NodePool %q disruption budgets in force: %s; the run adds %s for its span, so that Karpenter neither replaces drifted nodes nor consolidates nodes away itself (it expires nodes whatever the budgets), and puts them back as they are at its end and on abort", np.Name, budgets, freezeBudgetJSON)}
	if was, ok := np.Annotation[FrozenAnnotation]; ok {
		notes = append(notes, fmt.Sprintf("NodePool %q has its drift and consolidation held off by an unfinished run (budgets before it: %s): run, resume or abort puts them back", np.Name, was))
	}
	keys := make([]string, 0, len(reasons))
	for r := range reasons {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	for _, r := range keys {
		notes = append(notes, fmt.Sprintf("%d NodeClaims of NodePool %q are drifted: %s", reasons[r], np.Name, r))
	}
	return notes
}

// Sizes implements cloud.Pool: a NodePool has no size of its own; its
// NodeClaims not being deleted stand for one.
func (p *NodePool) Sizes(ctx context.Context) (plan.Sizes, error) {
	claims, err := listClaims(ctx, p.dyn, p.name)
	if err != nil {
		return plan.Sizes{}, err
	}
	var s plan.Sizes
	for _, c := range claims {
		if !c.Deleting {
			s.Desired++
		}
	}
	s.Max = s.Desired
	return s, nil
}

// Machines implements cloud.Pool.
func (p *NodePool) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	np, err := readPool(ctx, p.dyn, p.name)
	if err != nil {
		return nil, nil, err
	}
	claims, err := listClaims(ctx, p.dyn, p.name)
	if err != nil {
		return nil, nil, err
	}
	byNode, pending := map[string]plan.Machine{}, []plan.Machine{}
	for _, c := range claims {
		if c.Node == "" {
			pending = append(pending, p.machine(c, np))
		} else {
			byNode[c.Node] = p.machine(c, np)
		}
	}
	return byNode, pending, nil
}

// Current implements cloud.Pool: not drifted from the template hash version.
func (p *NodePool) Current(m plan.Machine, version string) bool { return m.Version == version }

// claimOf is the NodeClaim of a node, "" when none is (left).
func (p *NodePool) claimOf(ctx context.Context, node string) (string, error) {
	claims, err := listClaims(ctx, p.dyn, p.name)
	if err != nil {
		return "", err
	}
	for _, c := range claims {
		if c.Node == node {
			return c.Name, nil
		}
	}
	return "", nil
}

// RemoveNode implements cloud.Remover: it deletes the drained node's
// NodeClaim, which Karpenter terminates (its finalizer drains what is
// left and removes the node), waits until it is gone, then until every
// NodeClaim of the pool is launched, registered and initialized: a launch
// that fails stops the run with Karpenter's reason, the drift still held.
func (p *NodePool) RemoveNode(ctx context.Context, node string) error {
	claim, err := p.claimOf(ctx, node)
	if err != nil {
		return err
	}
	if claim != "" {
		err := p.dyn.Resource(nodeClaims).Delete(ctx, claim, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cannot delete NodeClaim %q of node %q: %w", claim, node, err)
		}
		if err := p.awaitGone(ctx, node, claim); err != nil {
			return err
		}
	}
	return p.awaitLaunched(ctx)
}

// awaitGone waits until Karpenter has terminated the NodeClaim and its
// node. Its timeout is Karpenter's only when the last look saw them still
// there; a call refused, or throttled to the end, is named as such.
func (p *NodePool) awaitGone(ctx context.Context, node, claim string) error {
	var last error // the last look's error, nil when it saw the objects
	err := wait.PollUntilContextTimeout(ctx, pollEvery, TerminateTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = p.dyn.Resource(nodeClaims).Get(ctx, claim, metav1.GetOptions{})
		if !apierrors.IsNotFound(last) {
			return false, ignoreTransient(last)
		}
		_, last = p.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		gone := apierrors.IsNotFound(last)
		last = ignoreNotFound(last)
		return gone, ignoreTransient(last)
	})
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case wait.Interrupted(err) && last == nil:
		return fmt.Errorf("NodeClaim %q (node %q) was not terminated by Karpenter within %s: see its finalizers and Karpenter's log; the run goes on from here when run again", claim, node, TerminateTimeout)
	case wait.Interrupted(err):
		err = last
	}
	return fmt.Errorf("cannot follow the termination of NodeClaim %q (node %q): %w", claim, node, err)
}

// awaitLaunched waits until no NodeClaim of the pool is on its way, and
// fails with the reason of one Karpenter could not launch or register.
// Its timeout is the launch's only when the last look saw one waiting; a
// refused launch or call is named as it is.
func (p *NodePool) awaitLaunched(ctx context.Context) error {
	var waiting []nodeClaim
	var last error // the last look's error
	err := wait.PollUntilContextTimeout(ctx, pollEvery, LaunchTimeout, true, func(ctx context.Context) (bool, error) {
		var claims []nodeClaim
		if claims, last = listClaims(ctx, p.dyn, p.name); last != nil {
			return false, ignoreTransient(last)
		}
		waiting = waiting[:0]
		for _, c := range claims {
			if c.Deleting || c.Conditions[initialized].Status == "True" {
				continue
			}
			if l := c.Conditions[launchedCondition]; l.Status == "False" && l.Reason != "" && l.Reason != "NotLaunched" {
				return false, launchFailed(p.name, c, l)
			}
			waiting = append(waiting, c)
		}
		return len(waiting) == 0, nil
	})
	switch {
	case !wait.Interrupted(err) || ctx.Err() != nil:
		return err
	case last != nil:
		return fmt.Errorf("%w (still after %s)", last, LaunchTimeout)
	}
	return launchTimedOut(p.name, waiting[0])
}

func launchFailed(pool string, c nodeClaim, l condition) error {
	return fmt.Errorf("NodeClaim %q of NodePool %q was not launched: %s: %s; the drift of the pool stays held off: fix the NodePool or its NodeClass, then run again, or abort", c.Name, pool, l.Reason, l.Message)
}

// launchTimedOut names the first step the NodeClaim did not get past.
func launchTimedOut(pool string, c nodeClaim) error {
	step := initialized
	for _, s := range []string{launchedCondition, registered} {
		if c.Conditions[s].Status != "True" {
			step = s
			break
		}
	}
	cd := c.Conditions[step]
	why := cd.Reason
	if cd.Message != "" {
		why += ": " + cd.Message
	}
	if why == "" {
		why = "no reason given"
	}
	return fmt.Errorf("NodeClaim %q of NodePool %q is not %s after %s (%s); the drift of the pool stays held off: see Karpenter's log, then run again, or abort", c.Name, pool, step, LaunchTimeout, why)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ignoreTransient lets a poll go on over an error the next call may not
// see (a timeout, a throttle, a conflict).
func ignoreTransient(err error) error {
	if err == nil || cloud.Transient(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsTimeout(err) {
		return nil
	}
	return err
}
