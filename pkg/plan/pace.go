package plan

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Pace is how long this group's new nodes take to be Ready, its batches
// to drain and its service to apply an update of its settings, where
// something measured it: the plan's estimates take it in place of
// NodeLaunchEstimate, DrainEstimate and SettingsUpdateEstimate. A zero
// field is unmeasured (the default stands); JoinFrom, DrainFrom and
// SettingsFrom say in the plan's words what measured each.
type Pace struct {
	Join         Duration `json:"join,omitempty"`
	JoinFrom     string   `json:"joinFrom,omitempty"`
	Drain        Duration `json:"drain,omitempty"`
	DrainFrom    string   `json:"drainFrom,omitempty"`
	Settings     Duration `json:"settings,omitempty"`
	SettingsFrom string   `json:"settingsFrom,omitempty"`
}

// Or is pc with what it did not measure taken from other.
func (pc Pace) Or(other Pace) Pace {
	if pc.Join == 0 {
		pc.Join, pc.JoinFrom = other.Join, other.JoinFrom
	}
	if pc.Drain == 0 {
		pc.Drain, pc.DrainFrom = other.Drain, other.DrainFrom
	}
	if pc.Settings == 0 {
		pc.Settings, pc.SettingsFrom = other.Settings, other.SettingsFrom
	}
	return pc
}

// JoinTime is how long a new node of the group takes to be Ready.
func (p *Plan) JoinTime() time.Duration {
	if p.Pace != nil && p.Pace.Join > 0 {
		return time.Duration(p.Pace.Join)
	}
	return NodeLaunchEstimate
}

// DrainTime is how long a batch of the group takes to drain.
func (p *Plan) DrainTime() time.Duration {
	if p.Pace != nil && p.Pace.Drain > 0 {
		return time.Duration(p.Pace.Drain)
	}
	return DrainEstimate
}

// SettingsTime is how long the group's service takes to apply an update
// of the group's settings alone.
func (p *Plan) SettingsTime() time.Duration {
	if p.Pace != nil && p.Pace.Settings > 0 {
		return time.Duration(p.Pace.Settings)
	}
	return SettingsUpdateEstimate
}

// JoinTime, DrainTime and SettingsTime of an Input: its Pace, else the
// defaults.
func (in Input) JoinTime() time.Duration     { return (&Plan{Pace: in.Pace}).JoinTime() }
func (in Input) DrainTime() time.Duration    { return (&Plan{Pace: in.Pace}).DrainTime() }
func (in Input) SettingsTime() time.Duration { return (&Plan{Pace: in.Pace}).SettingsTime() }

// paceText says where the estimates' join and drain times come from.
func (p *Plan) paceText() string {
	join := fmt.Sprintf("a new node Ready in %s", FormatDuration(p.JoinTime()))
	if p.Pace != nil && p.Pace.Join > 0 {
		join = fmt.Sprintf("nodes Ready in %s (from %s)", FormatDuration(p.JoinTime()), p.Pace.JoinFrom)
	}
	drain := fmt.Sprintf("a drain in %s", FormatDuration(p.DrainTime()))
	if p.Pace != nil && p.Pace.Drain > 0 {
		drain = fmt.Sprintf("a drain in %s (from %s)", FormatDuration(p.DrainTime()), p.Pace.DrainFrom)
	}
	if p.DrainRounds > 1 {
		drain += fmt.Sprintf(" per round of evictions, %d rounds a batch (a PDB lets fewer of a workload's pods go at once than a batch holds)", p.DrainRounds)
	}
	return join + ", " + drain
}

// NodeJoinPace measures how long the nodes took from their creation to
// Ready: the median of those Ready (a node whose Ready condition changed
// since keeps its last change, so the median leaves such outliers out),
// rounded up to the second the timestamps keep. Zero without one.
func NodeJoinPace(nodes []corev1.Node) Pace {
	var took []time.Duration
	for i := range nodes {
		n := &nodes[i]
		if c := nodeReady(n); c != nil && !n.CreationTimestamp.IsZero() && !c.LastTransitionTime.Before(&n.CreationTimestamp) {
			took = append(took, c.LastTransitionTime.Sub(n.CreationTimestamp.Time))
		}
	}
	if len(took) == 0 {
		return Pace{}
	}
	d := max(Median(took), 0) + time.Second
	return Pace{Join: Duration(d), JoinFrom: fmt.Sprintf("the creation to Ready of the group's %s", Count(len(took), "node"))}
}

// MachineJoinPace measures how long the group's machines took from their
// launch to their node's Ready (the median of those whose cloud says when
// it launched them; see NodeJoinPace for the Ready time), rounded up to
// the second. Zero without one.
func MachineJoinPace(machines map[string]Machine, nodes []corev1.Node) Pace {
	var took []time.Duration
	for i := range nodes {
		n := &nodes[i]
		m, ok := machines[n.Name]
		// The API server keeps Ready to the second; a cloud may keep the
		// launch finer (Compute's creationTimestamp).
		launched := m.Launched.Truncate(time.Second)
		if ready := nodeReady(n); ok && ready != nil && !launched.IsZero() && !ready.LastTransitionTime.Time.Before(launched) {
			took = append(took, ready.LastTransitionTime.Sub(launched))
		}
	}
	if len(took) == 0 {
		return Pace{}
	}
	return Pace{Join: Duration(max(Median(took), 0) + time.Second), JoinFrom: fmt.Sprintf("the launch to Ready of the group's %s", Count(len(took), "machine"))}
}

// nodeReady is n's Ready condition when True, nil otherwise.
func nodeReady(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if c := &n.Status.Conditions[i]; c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// PodStartPace measures how long the pods took from their scheduling to
// Ready (the median): a drain waits about that long for each eviction a
// PDB holds until a replacement is Ready. The start is the pod's binding
// to its node (PodScheduled), not its creation: a pod created before
// there was room for it waited for a node, which a drain's replacement,
// with the new nodes up, does not (the GKE demo's pods, made as its pool
// came up: 6s from creation, 1s from binding). Zero without a Ready pod.
func PodStartPace(pods []corev1.Pod) Pace {
	var took []time.Duration
	for i := range pods {
		p := &pods[i]
		start, ready := p.CreationTimestamp, condition(p, corev1.PodReady)
		if bound := condition(p, corev1.PodScheduled); bound != nil && start.Before(&bound.LastTransitionTime) {
			start = bound.LastTransitionTime
		}
		if ready != nil && !start.IsZero() && !ready.LastTransitionTime.Before(&start) {
			took = append(took, ready.LastTransitionTime.Sub(start.Time))
		}
	}
	if len(took) == 0 {
		return Pace{}
	}
	d := max(Median(took), 0) + time.Second
	return Pace{Drain: Duration(d), DrainFrom: fmt.Sprintf("the scheduling to Ready of %s of the group", Count(len(took), "pod"))}
}

// condition is p's condition of type t when True, nil otherwise.
func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// Median is the middle of ds (the lower of the two middle ones), 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// measuredPace is given with what it lacks measured by the cloud (its
// LaunchPace, else its machines' launch to their nodes' Ready), else on
// the group's nodes; nil when nothing is measured.
func measuredPace(given *Pace, cloud *CloudGroup, group []corev1.Node) *Pace {
	var pc Pace
	if given != nil {
		pc = *given
	}
	if cloud != nil {
		pc = pc.Or(cloud.LaunchPace).Or(MachineJoinPace(cloud.Nodes, group))
	}
	pc = pc.Or(NodeJoinPace(group))
	if pc == (Pace{}) {
		return nil
	}
	return &pc
}
