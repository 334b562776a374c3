package upgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
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

// NodeCreationFailure is the scale-up's failure: the group did not bring up
// Ready nodes of the target configuration in time. Nothing was drained.
type NodeCreationFailure struct {
	Group   string
	Timeout time.Duration
	// Zones have no new Ready node; Instances are the new machines that
	// did not become Ready nodes, with the reason.
	Zones     []string
	Instances []string
	// Others are the group's machines the run did not plan to replace
	// that run another version, with what they run: they do not count.
	Others []string
	// Launched and Wanted count the machines the group runs (not leaving)
	// against the desired size.
	Launched, Wanted int
	// Settled says the group already runs as many machines as it wants,
	// some of them Others: no machine more comes, so the wait ended
	// before its timeout.
	Settled  bool
	Original plan.Sizes
	// GroupKind is what the provider calls the group.
	GroupKind string
	// Refused is the cloud's refusal of the launches that ended the wait
	// before its timeout (cloud.LaunchRefusals).
	Refused *plan.LaunchFailure
}

func (e *NodeCreationFailure) Error() string {
	var parts []string
	if len(e.Zones) > 0 {
		parts = append(parts, "no new Ready node in zones "+quoteAll(e.Zones))
	}
	if len(e.Instances) > 0 {
		parts = append(parts, "instances not Ready: "+strings.Join(e.Instances, ", "))
	}
	if len(e.Others) > 0 {
		parts = append(parts, "instances of another version, not counted: "+strings.Join(e.Others, ", "))
	}
	if e.Launched < e.Wanted {
		parts = append(parts, fmt.Sprintf("%d of %d instances launched", e.Launched, e.Wanted))
	}
	when, fix := "after "+e.Timeout.String(), "fix the cause and run again (the end restores them), raise --node-ready-timeout,"
	if e.Refused != nil {
		return fmt.Sprintf("NodeCreationFailure: %s; nothing was drained, and the sizes before the run (%s) are recorded: %s and run again (the end restores them), or put the group back as it was with \"kubectl nodeupgrade abort\"",
			refusedText(e.GroupKind, e.Group, e.Refused), e.Original, e.Refused.Fix)
	}
	if e.Settled {
		when = fmt.Sprintf("runs the %d instances it wants and launches no more", e.Wanted)
		fix = "find why the group launches another version (a warm pool's instances, a default version moved back), fix it and run again,"
	}
	return fmt.Sprintf("NodeCreationFailure: %s %q %s: %s; nothing was drained, and the sizes before the run (%s) are recorded: %s or put the group back as it was with \"kubectl nodeupgrade abort\"",
		e.GroupKind, e.Group, when, strings.Join(parts, "; "), e.Original, fix)
}

// newNodes is what the scale-up waits for: every machine the group should
// run is launched, each new one is a Ready node with the target labels,
// and every zone of the outdated nodes has one.
type newNodes struct {
	ready    map[string][]string // zone -> Ready new nodes
	notReady []string
	// unusable are those of notReady that are Ready nodes yet not usable
	// (without the target labels, say), with why: the progress says so
	// rather than call them not Ready.
	unusable  []string
	other     []string // new machines of another version: they do not count
	launched  int
	zonesLeft []string
}

// ok says the wait is over: every new machine a Ready node of the
// target, one in each zone waited for, and as many as wanted besides the
// machines of another version, which do not count.
func (n newNodes) ok(wanted int) bool {
	return len(n.notReady) == 0 && len(n.zonesLeft) == 0 && n.launched-len(n.other) >= wanted
}

// settled says no machine more can come: the group runs as many as it
// wants, all up, and some run another version (a warm pool's, the default
// moved back), which the wait would count on for ever.
func (n newNodes) settled(wanted int) bool {
	return len(n.notReady) == 0 && len(n.other) > 0 && n.launched >= wanted && !n.ok(wanted)
}

func (cg *cloudGroup) lookAtNewNodes(ctx context.Context, version string, zones []string) (newNodes, error) {
	nodes, err := cg.nodes.groupNodes()
	if err != nil {
		return newNodes{}, err
	}
	byNode, pending, err := cg.pool.Machines(ctx, nodes)
	if err != nil {
		return newNodes{}, err
	}
	st := newNodes{ready: map[string][]string{}}
	outdated := sets.New(cg.cfg.Plan.OutdatedNames()...)
	for _, n := range nodes {
		m, ok := byNode[n.Name]
		if !ok || m.Leaving() {
			continue
		}
		st.launched++
		if outdated.Has(n.Name) {
			continue
		}
		current := cg.pool.Current(m, version)
		switch why := whyNotCounted(m, n, current, version, cg.cfg.Plan); {
		case !current:
			// Not waited for (nothing makes it the target), but named.
			st.other = append(st.other, fmt.Sprintf("%q (%s, node %q): %s", m.ID, m.Zone, n.Name, why))
		case why != "":
			st.notReady = append(st.notReady, fmt.Sprintf("%q (%s, node %q): %s", m.ID, m.Zone, n.Name, why))
			if capacity.NodeReady(n) {
				st.unusable = append(st.unusable, fmt.Sprintf("node %q: %s", n.Name, why))
			}
		default:
			st.ready[m.Zone] = append(st.ready[m.Zone], n.Name)
		}
	}
	for _, m := range pending {
		if m.Leaving() {
			continue
		}
		st.launched++
		st.notReady = append(st.notReady, fmt.Sprintf("%q (%s): %s", m.ID, m.Zone, whyNotCounted(m, nil, false, version, cg.cfg.Plan)))
	}
	for _, z := range zones {
		if len(st.ready[z]) == 0 {
			st.zonesLeft = append(st.zonesLeft, z)
		}
	}
	return st, nil
}

// progress says what the wait for new nodes still waits for.
func (n newNodes) progress(ready, wanted int) string {
	s := fmt.Sprintf("%d/%d new nodes Ready", ready+len(n.unusable), ready+len(n.notReady))
	if len(n.unusable) > 0 {
		s += fmt.Sprintf(", %d of them not usable (%s)", len(n.unusable), listNames(n.unusable, 1))
	}
	if n.launched < wanted {
		s += fmt.Sprintf(", %d/%d machines launched", n.launched, wanted)
	}
	if len(n.zonesLeft) > 0 {
		s += ", none yet in zones " + listNames(quoteEach(n.zonesLeft), waitNamesShown)
	}
	return s
}

// newNodeProblem says why a new node is not yet usable, or "".
func newNodeProblem(n *corev1.Node, version string, p *plan.Plan) string {
	if !capacity.NodeReady(n) {
		return "not Ready"
	}
	if t := capacity.StartupTaint(n); t != "" {
		return "Ready, still tainted " + t
	}
	if c := p.Cloud; c != nil {
		if v, ok := n.Labels[c.VersionLabel]; ok && v != version {
			return fmt.Sprintf("label %s=%s, want %s", c.VersionLabel, v, version)
		}
		if v, ok := n.Labels[c.ImageLabel]; ok && c.TargetImage != "" && v != c.TargetImage {
			return fmt.Sprintf("label %s=%s, want %s", c.ImageLabel, v, c.TargetImage)
		}
	}
	for k, want := range p.TargetLabels {
		if n.Labels[k] != want {
			return fmt.Sprintf("label %s=%q, want %q", k, n.Labels[k], want)
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// waitNewNodes waits, up to --node-ready-timeout, until the group runs
// wanted machines with a Ready node of the target on each new one, in
// every zone given.
func (cg *cloudGroup) waitNewNodes(ctx context.Context, gr *state.GroupRecord, zones []string, wanted int) error {
	where := ""
	if len(zones) > 0 {
		where = " in zones " + quoteAll(zones)
	}
	cg.logf("waiting up to %s for the new nodes of %s to be Ready%s (%d machines in all)", cg.cfg.NodeReadyTimeout, cg.words.templateVersion(gr.TargetVersion), where, wanted)
	var st newNodes
	start := time.Now()
	failure := func() *NodeCreationFailure {
		return &NodeCreationFailure{Group: cg.pool.GroupName(), GroupKind: cg.words.groupKind(), Timeout: cg.cfg.NodeReadyTimeout, Zones: st.zonesLeft, Instances: st.notReady, Others: st.other, Launched: st.launched, Wanted: wanted, Original: *gr.Original}
	}
	return cg.arrivals.awaitNodes(ctx, func(ctx context.Context) (bool, error) {
		seen, err := cg.lookAtNewNodes(ctx, gr.TargetVersion, zones)
		if err != nil {
			return false, cg.refusedOr(ctx, start, err, failure)
		}
		st = seen
		n := 0
		for _, names := range st.ready {
			n += len(names)
		}
		if st.settled(wanted) {
			f := failure()
			f.Settled = true
			return false, f
		}
		if !st.ok(wanted) {
			if lf, err := cg.refused(ctx, start); err != nil || lf != nil {
				if err != nil {
					return false, err
				}
				f := failure()
				f.Refused = lf
				return false, f
			}
			cg.progress.waitingFor(st.progress(n, wanted))
			return false, nil
		}
		cg.logf("%d new nodes Ready in %d zones", n, len(st.ready))
		return true, nil
	}, failure)
}

// awaitNodes looks until look says done or --node-ready-timeout passes,
// then fails with the failure of the last complete look. It looks again
// on every node change (at most once a second) and, as a cloud API has no
// watch, at least every PollInterval. A look's error ends the wait unless
// the timeout cut the look short, or it passes with time (the cloud
// throttled the call, cloud.Transient): then the wait backs off and looks
// again, and only its timeout ends it.
// arrivals waits for machines to become nodes: looks at the cloud
// group and the cluster until a look says done, within
// --node-ready-timeout.
type arrivals struct {
	nodes         *nodeWriter // its view's changes trigger a look
	timeout, poll time.Duration
	logf          func(format string, args ...any)
}

func (a *arrivals) awaitNodes(ctx context.Context, look func(ctx context.Context) (bool, error), failure func() *NodeCreationFailure) error {
	return a.awaitLook(ctx, look, func() error { return failure() })
}

// awaitLook is awaitNodes with any failure.
func (a *arrivals) awaitLook(ctx context.Context, look func(ctx context.Context) (bool, error), failure func() error) error {
	wctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	throttled := 0 // transient errors in a row
	for {
		done, err := look(wctx)
		if err == nil && done {
			return nil
		}
		if err != nil && wctx.Err() == nil && cloud.Transient(err) {
			throttled++
			pause := cloud.Backoff(a.poll, throttled)
			a.logf("%s; looking again in %s (the wait ends at --node-ready-timeout)", err, pause)
			if err := transport.Sleep(wctx, pause); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return failure()
			}
			continue
		}
		if err != nil && wctx.Err() == nil {
			return err
		}
		throttled = 0
		poll := time.NewTimer(a.poll)
		select {
		case <-wctx.Done():
			poll.Stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return failure()
		case <-a.nodes.view.changed:
		case <-poll.C:
		}
		poll.Stop()
		if err := transport.Sleep(wctx, time.Second); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// waitReplacements waits, after a surge batch, until the group runs its
// desired size again in Ready nodes of the target configuration: the
// nodes removed without lowering the desired size have their replacements.
func (cg *cloudGroup) waitReplacements(ctx context.Context) error {
	cr := cg.cfg.Record.Cloud
	if cr == nil {
		return nil
	}
	sizes, err := cg.pool.Sizes(ctx)
	if err != nil {
		return err
	}
	cr.LastDesired = sizes.Desired
	if err := cg.save(ctx); err != nil {
		return err
	}
	return cg.waitNewNodes(ctx, &cr.GroupRecord, nil, int(cr.LastDesired))
}
