package plan

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// MaxUnavailableCap is the EKS quota on nodes upgraded in parallel.
const MaxUnavailableCap = 100

// InputError is bad user input: the command exits 2 and nothing changed.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// ResolveNodeGroupLabel finds which of the known label keys (the clouds'
// registered ones: cloud.NodeGroupLabels) carries the node group name. An
// explicit key is only checked.
func ResolveNodeGroupLabel(nodes []corev1.Node, name, explicitKey string, known []string) (string, error) {
	keys := known
	if explicitKey != "" {
		keys = []string{explicitKey}
	}
	found := map[string]bool{}
	for i := range nodes {
		for _, k := range keys {
			if nodes[i].Labels[k] == name {
				found[k] = true
			}
		}
	}
	switch len(found) {
	case 0:
		if explicitKey != "" {
			return "", inputErrorf("node group %q not found: no node has label %s=%s%s; check --nodegroup-label", name, explicitKey, name, existingGroups(nodes, keys, name))
		}
		return "", inputErrorf("node group %q not found: no node has it as the value of %s%s; use --nodegroup-label or -l/--selector", name, strings.Join(known, ", "), existingGroups(nodes, keys, name))
	case 1:
		for k := range found {
			return k, nil
		}
	}
	ks := make([]string, 0, len(found))
	for k := range found {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return "", inputErrorf("node group %q is ambiguous: labels %s all carry it; use --nodegroup-label", name, strings.Join(ks, ", "))
}

// existingGroups names the node groups the nodes carry under keys, for a
// typo's message: " (the node groups are "a", "b")", at most 10 of them,
// those closest to the typo first; "" when there are none.
func existingGroups(nodes []corev1.Node, keys []string, typo string) string {
	seen := map[string]bool{}
	for i := range nodes {
		for _, k := range keys {
			if v := nodes[i].Labels[k]; v != "" {
				seen[v] = true
			}
		}
	}
	if len(seen) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(seen))
	// Stable: names as far from the typo stay in alphabetical order.
	slices.SortStableFunc(names, func(a, b string) int { return editDistance(a, typo) - editDistance(b, typo) })
	more := ""
	if len(names) > 10 {
		names, more = names[:10], fmt.Sprintf(" and %d more", len(names)-10)
	}
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return fmt.Sprintf(" (the node groups are %s%s)", strings.Join(names, ", "), more)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ParseMaxUnavailable resolves "N" (1..100) or "P%" (1..100 of groupSize,
// rounded down, at least 1) to a node count.
func ParseMaxUnavailable(v string, groupSize int) (int, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil || pct < 1 || pct > 100 {
			return 0, inputErrorf("invalid --max-unavailable %q: a percentage must be between 1%% and 100%%", v)
		}
		n := groupSize * pct / 100
		return min(max(n, 1), MaxUnavailableCap), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxUnavailableCap {
		return 0, inputErrorf("invalid --max-unavailable %q: must be a number of nodes from 1 to %d or a percentage such as 25%%", v, MaxUnavailableCap)
	}
	return n, nil
}

// ParseTargetLabels parses repeated key=value flags.
func ParseTargetLabels(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, inputErrorf("invalid --target-label %q: want key=value", v)
		}
		if errs := validateLabel(k, val); errs != "" {
			return nil, inputErrorf("invalid --target-label %q: %s", v, errs)
		}
		out[k] = val
	}
	return out, nil
}

func validateLabel(k, v string) string {
	if _, err := labels.Parse(k + "=" + v); err != nil {
		return "not a valid label"
	}
	if strings.ContainsAny(k+v, " ,") {
		return "not a valid label"
	}
	return ""
}

// ParseTaint parses key=value:Effect (value optional).
func ParseTaint(v string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(v, ":")
	if !ok {
		return corev1.Taint{}, inputErrorf("invalid --taint %q: want key=value:NoSchedule", v)
	}
	k, val, _ := strings.Cut(kv, "=")
	switch corev1.TaintEffect(effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, inputErrorf("invalid --taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", v)
	}
	if k == "" || validateLabel(k, val) != "" {
		return corev1.Taint{}, inputErrorf("invalid --taint %q: want key=value:NoSchedule", v)
	}
	return corev1.Taint{Key: k, Value: val, Effect: corev1.TaintEffect(effect)}, nil
}

// TaintString formats a taint the way --taint takes it.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

// GroupNodes returns the nodes of the group, sorted by name.
func GroupNodes(nodes []corev1.Node, in Input) ([]corev1.Node, error) {
	var sel labels.Selector
	if in.Selector != "" {
		s, err := labels.Parse(in.Selector)
		if err != nil {
			return nil, inputErrorf("invalid --selector %q: %v", in.Selector, err)
		}
		sel = s
	} else {
		sel = labels.SelectorFromSet(labels.Set{in.NodeGroupLabel: in.NodeGroup})
	}
	// the group's nodes are copied once, into a slice of their number: a
	// Node struct is 768 bytes, and appending 5,000 of them copied each
	// about twice more as the slice grew
	var members []int
	for i := range nodes {
		if sel.Matches(labels.Set(nodes[i].Labels)) {
			members = append(members, i)
		}
	}
	var out []corev1.Node
	if len(members) > 0 {
		out = make([]corev1.Node, len(members))
		for j, i := range members {
			out[j] = nodes[i]
		}
	}
	if len(out) == 0 && in.Selector != "" {
		return nil, inputErrorf("no node matches --selector %q", in.Selector)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Outdated returns the target labels the node lacks or carries with another value.
func Outdated(node *corev1.Node, target map[string]string) []LabelDiff {
	var diffs []LabelDiff
	for _, k := range sortedKeys(target) {
		if cur := node.Labels[k]; cur != target[k] {
			diffs = append(diffs, LabelDiff{Key: k, Current: cur, Target: target[k]})
		}
	}
	return diffs
}

// Build computes the plan. It is pure: the same snapshot and input always
// give the same plan.
func Build(snap snapshot.Cluster, in Input) (*Plan, error) {
	group, err := GroupNodes(snap.Nodes, in)
	if err != nil {
		return nil, err
	}
	in.Pace = measuredPace(in.Pace, in.Cloud, group)
	strategy, err := LookupStrategy(string(in.Strategy))
	if err != nil {
		return nil, err
	}
	maxUnavailable, err := strategy.Validate(in, len(group))
	if err != nil {
		return nil, err
	}
	if err := checkCapability(strategy, in); err != nil {
		return nil, err
	}
	p := newPlan(in, strategy, maxUnavailable)
	podsByNode := evictablePodsByNode(snap.Pods)
	outdated := p.countNodes(group, in, podsByNode, strategy.Traits().WholeGroup)
	if in.Cloud != nil {
		p.Cloud = cloudPlan(in.Cloud, in.Resume)
		ids := map[string]bool{}
		for _, n := range outdated {
			ids[n.MachineID] = true
		}
		p.Notes = append(p.Notes, in.Cloud.LifecycleNotes(in.TerminateTimeout, ids)...)
		p.Notes = append(p.Notes, in.Cloud.Notes...)
	}
	p.Order = in.Order
	if p.Order == "" {
		p.Order = OrderRandom
		if len(p.Zones) > 1 {
			p.Order = OrderZoneBalanced
		}
	}
	// Shuffle a name-sorted list so the seed alone decides the order.
	rng := rand.New(rand.NewPCG(uint64(in.Seed), uint64(in.Seed)^0x9e3779b97f4a7c15))
	rng.Shuffle(len(outdated), func(i, j int) { outdated[i], outdated[j] = outdated[j], outdated[i] })
	batches, err := strategy.Plan(&Planning{Snapshot: snap, Input: in, PodsByNode: podsByNode, Outdated: outdated, Plan: p})
	if err != nil {
		return nil, err
	}
	batches, note := quarantinedFirst(batches, p.Order)
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	names := p.addBatches(p.cutWaves(batches, in))
	if err := p.planSteps(in, strategy); err != nil {
		return nil, err
	}
	p.addWaveSoak()
	if in.Cloud != nil {
		p.Notes = append(p.Notes, in.Cloud.ExpiryNotes(p.EstimatedDuration())...)
	}
	p.HookedNodes = hookedNodes(group)
	p.addFindings(snap, group, names, podsByNode, in, strategy.Traits())
	return p, nil
}

// newPlan is the plan's header: what was asked for.
func newPlan(in Input, strategy Strategy, maxUnavailable int) *Plan {
	return &Plan{
		APIVersion:            APIVersion,
		Kind:                  Kind,
		Context:               in.Context,
		NodeGroup:             in.NodeGroup,
		NodeGroupLabel:        in.NodeGroupLabel,
		Selector:              in.Selector,
		TargetLabels:          in.TargetLabels,
		Strategy:              string(strategy.Name()),
		StrategyFrom:          in.StrategyFrom,
		Provider:              in.Provider,
		MaxUnavailableInput:   in.MaxUnavailable,
		MaxUnavailable:        maxUnavailable,
		MaxSurge:              in.MaxSurge,
		Taint:                 TaintString(in.Taint),
		Seed:                  in.Seed,
		PostDrainWait:         Duration(in.PostDrainWait),
		DeregistrationTimeout: Duration(in.DeregistrationTimeout),
		Pace:                  in.Pace,
		Zones:                 []string{},
		Batches:               []Batch{},
		Findings:              []check.Finding{},
	}
}

// evictablePodsByNode are the bound pods a drain evicts, by node.
func evictablePodsByNode(pods []corev1.Pod) map[string][]*corev1.Pod {
	byNode := map[string][]*corev1.Pod{}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName != "" && Evictable(pod) {
			byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], pod)
		}
	}
	return byNode
}

// addBatches numbers the strategy's batches into the plan and returns
// their node names, batch by batch.
func (p *Plan) addBatches(batches [][]PlannedNode) [][]string {
	names := make([][]string, len(batches))
	for i, b := range batches {
		p.Batches = append(p.Batches, Batch{Number: i + 1, Nodes: b})
		for _, n := range b {
			names[i] = append(names[i], n.Name)
		}
	}
	return names
}

// planSteps lists the phases: the strategy's, the service's where it runs
// the update, or what is left of a run that deleted blue.
func (p *Plan) planSteps(in Input, strategy Strategy) error {
	p.Steps = strategy.Steps(p)
	if c := p.Cloud; c != nil && c.BlueDeleted != "" {
		p.Steps = []Step{{Phase: string(PhaseDeleteBlue), Detail: fmt.Sprintf("%s %q is deleted already; record it, and let the autoscaler have green's nodes again", c.GroupKind, c.BlueDeleted)}}
	}
	if c := p.Cloud; c != nil && c.InterruptedGreen != "" && len(p.Batches) == 0 {
		// Green is made and blue drained: the run goes on after the drain.
		p.Steps = stepsAfter(p.Steps, "DrainBlue")
	}
	if err := managedPlan(p, in, strategy); err != nil {
		return err
	}
	// The timeout bounds annotation hooks too, which may appear after the
	// plan: it is kept whenever given.
	if in.Hooks.Any() || in.Hooks.Timeout > 0 {
		h := in.Hooks
		h.Timeout = Duration(h.TimeoutOrDefault())
		p.Hooks = &h
	}
	return nil
}

// addFindings finds what would hold or harm the run: the workload checks, a
// target the new nodes cannot reach, pinned pods, no room, pods a service
// forces out, an outdated warm pool.
func (p *Plan) addFindings(snap snapshot.Cluster, group []corev1.Node, names [][]string, podsByNode map[string][]*corev1.Pod, in Input, traits Traits) {
	outdatedNames := slices.Concat(names...)
	// The scale-down drains the deferred nodes as a batch would.
	p.Findings = audit(snap, group, slices.Concat(outdatedNames, p.DeferredNames()), names, in)
	p.Findings = append(p.Findings, unreachableTarget(group, in)...)
	pinned, pinnedKeys := pinnedPods(snap, outdatedNames, podsByNode, p.replacementInput(in))
	p.Findings = append(p.Findings, pinned...)
	p.Findings = append(p.Findings, noRoom(snap, podsByNode, names, roomInput(p, in), traits.OutdatedHeldOff, pinnedKeys)...)
	p.Findings = append(p.Findings, forcedOut(p, snap, podsByNode, outdatedNames)...)
	if in.Cloud != nil {
		name := in.NodeGroup
		if name == "" {
			name = in.Selector
		}
		p.Findings = append(p.Findings, outdatedWarmPool(in.Cloud, p, name)...)
		p.Findings = append(p.Findings, cloudFindings(in.Cloud, slices.Concat(outdatedNames, p.DeferredNames()))...)
	}
	if p.Findings = check.Sort(p.Findings); p.Findings == nil {
		p.Findings = []check.Finding{}
	}
	p.markFindings()
}

// serviceRunning names the group's service when it carries out strategy
// itself (its own order and pace, no batches of the run's), else "".
func (in Input) serviceRunning(strategy StrategyName) string {
	if in.Cloud == nil || in.Cloud.Managed == nil || !in.Cloud.Managed.Runs(strategy) {
		return ""
	}
	return in.Cloud.GroupKind
}

// checkCapability refuses a strategy the provider cannot carry out, before
// anything changes.
func checkCapability(s Strategy, in Input) error {
	can, provider := CapRemoveNodes, in.Provider
	if in.Cloud != nil && in.Cloud.Managed != nil && in.Cloud.Managed.Runs(s.Name()) {
		return nil // the service carries it out
	}
	if in.Cloud != nil {
		can = in.Cloud.Can
	}
	need := s.Needs(in)
	if can.Has(need) {
		return nil
	}
	if provider == "" {
		provider = "none"
	}
	if ex, ok := s.(needsExplainer); ok {
		return inputErrorf("%s", ex.NeedsWhy(in, provider))
	}
	return inputErrorf("--strategy %s needs a provider that %s, not --provider %s", s.Name(), can.Missing(need), provider)
}

// needsExplainer is a strategy that says better than the generic message
// why the provider cannot carry it out, and what to do instead.
type needsExplainer interface {
	NeedsWhy(in Input, provider string) string
}

// groupOutdated reports whether a node of the cloud group runs other than
// the target: only then does a whole-group strategy replace them all. A
// group already on the target is nothing to do, or a finished blue/green
// run started again would make a green of green.
func groupOutdated(group []corev1.Node, in Input) bool {
	for i := range group {
		diffs, m, notMember := machineOutdated(&group[i], in.Cloud)
		if !notMember && !m.Leaving() && len(diffs)+len(Outdated(&group[i], in.TargetLabels)) > 0 {
			return true
		}
	}
	return false
}

// countNodes counts the group's nodes and returns the outdated ones, in
// name order, with their pods.
func (p *Plan) countNodes(group []corev1.Node, in Input, podsByNode map[string][]*corev1.Pod, wholeGroup bool) []PlannedNode {
	zones := map[string]bool{}
	var outdated []PlannedNode
	var others []string // nodes of the group outside its cloud group
	// A green given by the user (--green-selector, --green-asg) is what the
	// run moves to, whatever blue runs.
	givenGreen := in.BlueGreen.GreenSelector != "" || in.BlueGreen.GreenGroup != ""
	wholeGroup = wholeGroup && in.Cloud != nil && (givenGreen || groupOutdated(group, in))
	for i := range group {
		node := &group[i]
		p.Nodes.Total++
		if z := node.Labels[ZoneLabel]; z != "" {
			zones[z] = true
		}
		diffs, machine, skip := p.nodeDiffs(node, in, wholeGroup, &others)
		if skip {
			continue
		}
		switch {
		case len(diffs) == 0:
			p.Nodes.Current++
			continue
		case node.Labels[StateLabel] == StateDone:
			p.Nodes.Done++
			p.Done = append(p.Done, node.Name)
			continue
		}
		p.Nodes.Outdated++
		outdated = append(outdated, plannedNode(node, in, diffs, machine, podsByNode[node.Name]))
	}
	if len(others) > 0 {
		p.Notes = append(p.Notes, notMemberNote(others, in.Cloud))
	}
	for z := range zones {
		p.Zones = append(p.Zones, z)
	}
	sort.Strings(p.Zones)
	return outdated
}

// nodeDiffs says why node is outdated (none: current). skip is set for a
// node the run leaves alone: no machine of the cloud group (added to
// others), or one on its way out already (noted).
func (p *Plan) nodeDiffs(node *corev1.Node, in Input, wholeGroup bool, others *[]string) (diffs []LabelDiff, machine Machine, skip bool) {
	diffs = Outdated(node, in.TargetLabels)
	if in.Cloud == nil {
		return diffs, machine, false
	}
	if f := in.Resume.Following; f != nil && !slices.Contains(f.Nodes, node.Name) {
		return nil, machine, false // the service's new node
	}
	cloudDiffs, m, notMember := machineOutdated(node, in.Cloud)
	if notMember {
		*others = append(*others, node.Name)
		return nil, m, true
	}
	if m.Leaving() {
		p.Notes = append(p.Notes, fmt.Sprintf("node %q: %s %q is already %s", node.Name, in.Cloud.MachineKind, m.ID, strings.ToLower(cmp.Or(m.Lifecycle, "leaving"))))
		return nil, m, true
	}
	diffs = append(cloudDiffs, diffs...)
	if wholeGroup && len(diffs) == 0 {
		diffs = []LabelDiff{{Key: DiffBlue, Current: in.Cloud.Group}}
	}
	return diffs, m, false
}

// replacementInput is in with the labels the nodes that replace the
// outdated ones carry beyond the target's: a green group whose nodes are
// labelled with its own name (EKS's managed node groups) does not carry
// blue's, so pods that select blue's can run nowhere.
func (p *Plan) replacementInput(in Input) Input {
	bg := p.BlueGreen
	if bg == nil || bg.GreenLabel == "" || !bg.Create {
		return in
	}
	labels := maps.Clone(in.TargetLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[bg.GreenLabel] = bg.Green
	in.TargetLabels = labels
	return in
}

// plannedNode is an outdated node as the plan lists it, with its pods.
func plannedNode(node *corev1.Node, in Input, diffs []LabelDiff, machine Machine, pods []*corev1.Pod) PlannedNode {
	pn := PlannedNode{
		Name:        node.Name,
		Zone:        node.Labels[ZoneLabel],
		ProviderID:  node.Spec.ProviderID,
		Created:     node.CreationTimestamp.UTC(),
		Tainted:     hasTaint(node, in.Taint),
		Cordoned:    node.Spec.Unschedulable,
		Quarantined: check.Quarantined(node),
		Outdated:    diffs,
		MachineID:   machine.ID,
	}
	slices.SortFunc(pods, comparePodKeys)
	pn.Pods = make([]string, 0, len(pods))
	for _, pod := range pods {
		pn.Pods = append(pn.Pods, podKey(pod))
	}
	return pn
}

// markFindings names, on each planned node, the checks that found
// something there.
func (p *Plan) markFindings() {
	perNode := map[string]*[2][]string{}
	for _, f := range p.Findings {
		for _, n := range f.Nodes {
			e := perNode[n]
			if e == nil {
				e = &[2][]string{}
				perNode[n] = e
			}
			i := 1
			if f.Severity == check.Blocker {
				i = 0
			}
			if !slices.Contains(e[i], f.Check) {
				e[i] = append(e[i], f.Check)
			}
		}
	}
	mark := func(nodes []PlannedNode) {
		for i := range nodes {
			if e := perNode[nodes[i].Name]; e != nil {
				nodes[i].Blockers, nodes[i].Warnings = e[0], e[1]
			}
		}
	}
	for bi := range p.Batches {
		mark(p.Batches[bi].Nodes)
	}
	mark(p.Deferred)
}

// cloudFindings are the provider's findings of the group itself, and
// those on the nodes the run replaces, with those nodes alone.
func cloudFindings(cg *CloudGroup, replaced []string) []check.Finding {
	var out []check.Finding
	for _, f := range cg.Findings {
		if len(f.Nodes) == 0 {
			out = append(out, f) // of the group itself
			continue
		}
		f.Nodes = slices.DeleteFunc(slices.Clone(f.Nodes), func(n string) bool { return !slices.Contains(replaced, n) })
		if len(f.Nodes) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// audit runs the workload checks and adjusts them to the flags: --force
// deletes bare pods and replaces the nodes of pods under Karpenter's
// do-not-disrupt, and without --delete-emptydir-data the drain refuses
// pods with emptyDir volumes, as kubectl's does.
func audit(snap snapshot.Cluster, group []corev1.Node, outdated []string, batches [][]string, in Input) []check.Finding {
	findings := check.Run(check.Input{
		Nodes:        group,
		Pods:         snap.Pods,
		PDBs:         snap.PDBs,
		ReplicaSets:  snap.ReplicaSets,
		Deployments:  snap.Deployments,
		StatefulSets: snap.StatefulSets,
		Services:     snap.Services,
		Namespaces:   snap.Namespaces,
		Outdated:     outdated,
		Batches:      batches,
		Namespace:    in.Namespace,
		Recovering:   in.Recovering,
		DoNotDisrupt: in.Cloud != nil && in.Cloud.DoNotDisrupt,
	})
	for i := range findings {
		f := &findings[i]
		switch {
		case f.Check == check.CheckBarePod && in.Force:
			f.Severity = check.Warning
			f.Fix = "--force deletes it; nothing recreates it"
		case f.Check == check.CheckDoNotDisrupt && in.Force:
			f.Severity = check.Warning
			f.Fix = "--force replaces the nodes anyway, as Karpenter's forceful termination would"
		case f.Check == check.CheckEmptyDirData && !in.DeleteEmptyDir:
			f.Severity = check.Blocker
			f.Fix = "use --delete-emptydir-data to evict it (the data is lost)"
		}
	}
	return check.Sort(findings)
}

// Evictable mirrors the pods kubectl's drain acts on: not DaemonSet pods,
// not mirror pods, not pods that already finished.
func Evictable(pod *corev1.Pod) bool {
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	if pods.Finished(pod) {
		return false
	}
	if c := metav1.GetControllerOfNoCopy(pod); c != nil && c.Kind == "DaemonSet" {
		return false
	}
	return true
}

func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// comparePodKeys orders pods as their podKeys compare, without building
// them: a sort of 150,000 pods built two strings a comparison.
func comparePodKeys(a, b *corev1.Pod) int {
	if a.Namespace == b.Namespace {
		return strings.Compare(a.Name, b.Name)
	}
	an, bn := a.Namespace, b.Namespace
	n := min(len(an), len(bn))
	for i := range n {
		if an[i] != bn[i] {
			return cmp.Compare(an[i], bn[i])
		}
	}
	// One namespace starts the other: the shorter key goes on with "/".
	if len(an) < len(bn) {
		return cmp.Compare('/', bn[n])
	}
	return cmp.Compare(an[n], '/')
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
