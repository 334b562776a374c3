package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// Keys of the outdated reasons that are not labels, where the provider
// names none (see CloudGroup.TemplateKey).
const (
	DiffTemplate        = "template"
	DiffTemplateVersion = "version"
	// DiffBlue marks a node of blue/green's blue group, drained whatever
	// it runs.
	DiffBlue = "blue-group"
)

// NewVersion stands for the template version a run will create.
const NewVersion = "new"

// Sizes are the sizes of a cloud group. A cloud whose groups have only a
// target size reports it as Desired, with Min 0 and Max equal to it,
// ignores the Max it is given and sets CloudGroup.TargetSizeOnly.
type Sizes struct {
	Min     int32 `json:"min"`
	Desired int32 `json:"desired"`
	Max     int32 `json:"max"`
}

func (s Sizes) String() string {
	return fmt.Sprintf("min %d, desired %d, max %d", s.Min, s.Desired, s.Max)
}

// less is s with n nodes fewer desired and at most.
func (s Sizes) less(n int32) Sizes {
	s.Desired, s.Max = s.Desired-n, s.Max-n
	return s
}

// MachineState is where a machine is in its life, in every cloud's terms.
type MachineState string

const (
	MachinePending   MachineState = "Pending"
	MachineInService MachineState = "InService"
	// MachineLeaving is a machine on its way out (terminating, deleting).
	MachineLeaving MachineState = "Leaving"
)

// Machine is a cloud machine of the group (an EC2 instance, a VM).
type Machine struct {
	ID       string       `json:"id"`
	Zone     string       `json:"zone,omitempty"`
	Template string       `json:"template,omitempty"`
	Version  string       `json:"version,omitempty"`
	Image    string       `json:"image,omitempty"`
	State    MachineState `json:"state,omitempty"`
	// Lifecycle is the provider's own word for the state, for messages
	// (Auto Scaling's Terminating:Wait, say).
	Lifecycle string `json:"lifecycle,omitempty"`
	// Launched is when the cloud launched the machine, where it says
	// (EC2's LaunchTime): with its node's Ready, the whole of a join
	// (MachineJoinPace), which the node's own creation leaves the boot
	// out of.
	Launched time.Time `json:"launched,omitzero"`
}

// Leaving reports whether the machine is already on its way out.
func (m Machine) Leaving() bool { return m.State == MachineLeaving }

// CloudGroup is the provider's view of the node group, read (never changed)
// before planning: the parts the plan keeps as they are (GroupID,
// Launches, Removal), and what the plan reads to decide.
type CloudGroup struct {
	GroupID
	Launches
	Removal
	// Can is what the provider can do with the group.
	Can Capability
	// Options are the provider's own settings it was opened with
	// (CloudTarget.Options), kept in the plan.
	Options map[string]string
	// Managed is the group's service where it runs updates itself (see
	// Service); nil otherwise.
	Managed *Service `json:"-"`
	// Green is the name of the green group a blue/green run creates,
	// where the provider names it otherwise than blue's name with the
	// target version; GreenLabel is the label key whose value, green's
	// name, green's nodes carry instead of the node group's (EKS labels a
	// managed node group's nodes with its own name): the run finds them
	// by it, and the node group goes by green's name afterwards.
	Green      string
	GreenLabel string
	// TargetLike is a version whose machines the target's look like
	// apart from the image (the target copies it, or differs from it in
	// the image alone): its nodes carry the labels the new nodes will.
	// "" when the provider cannot tell.
	TargetLike string
	// TemplateKey and VersionKey name, in the plan's OUTDATED column, a
	// machine of another template or version (AWS: launch-template,
	// launch-template-version); DiffTemplate and DiffTemplateVersion when
	// empty.
	TemplateKey, VersionKey string
	Sizes                   Sizes
	// TargetSizeOnly says the group has a target size and no min or max
	// (a managed instance group): messages name that size alone.
	TargetSizeOnly bool
	// Notes are what the provider says of the group that the plan's
	// columns cannot (Karpenter: the budgets in force, drift by reason).
	Notes []string
	// Findings are what the provider found that holds the run: of the
	// group itself (check group-degraded, no nodes named), or of its
	// nodes (a Node or NodeClaim annotated do-not-disrupt), of which the
	// plan keeps those of the nodes it replaces.
	Findings []check.Finding
	// Expiry is when the provider ends nodes by itself, whatever the run
	// holds off (Karpenter's expireAfter); nil where it does not.
	Expiry *Expiry
	// DoNotDisrupt says the provider's controller honours Karpenter's
	// karpenter.sh/do-not-disrupt: the audit makes a pod under it a
	// blocker, as the controller's own drift waits for it.
	DoNotDisrupt bool
	// Nodes maps the group's nodes to their machines; a node missing here
	// is not a member of the group. Unjoined are the group's machines no
	// node stands for yet (launching, or not registered).
	Nodes    map[string]Machine
	Unjoined []Machine
}

// Resume is what an unfinished run's record tells the plan of the group
// (the session reads it; a provider never sets it): the cloud side
// goes on where that run stopped. The zero value: no run to resume.
type Resume struct {
	// Recorded are the sizes an interrupted run recorded before it scaled
	// the group up; nil when no run is in progress. RescaleFrom is set when
	// that scale-up was for another version, whose nodes this target
	// replaces too: the group scales up again (see state.CloudRecord).
	Recorded    *Sizes
	RescaleFrom string
	// RollbackFrom is the version an interrupted run scaled the group up
	// for, when this target is the version before that run (a rollback):
	// the nodes the recorded sizes have no room for are outdated, and the
	// scale-down removes them rather than a batch replacing them first.
	RollbackFrom string
	// Following is the service's update an unfinished run started, which
	// a run now follows (see ServiceUpdate); nil otherwise.
	Following *ServiceUpdate
	// BlueDeleted names the blue group an interrupted blue/green run
	// deleted before it could record so; the group is then its green.
	BlueDeleted string
	// InterruptedGreen is the green group of an interrupted blue/green
	// run whose blue, this group, is not deleted yet. With no blue node
	// left to drain (the autoscaler removed them) the run still has blue
	// to delete.
	InterruptedGreen string
}

// ServiceUpdate is a service's update under way that an unfinished run
// started: the nodes it replaces (the group's outdated nodes when the run
// set out) and the group's sizes before the service scaled it up (nil
// where not recorded). The group's other nodes are the service's new ones
// (surge, green): current, whatever their labels say before the update
// ends, and the sizes now are the service's scale-up, not the group's.
type ServiceUpdate struct {
	Nodes []string
	Sizes *Sizes
}

// Expiry is when the provider ends the group's nodes at a time of its own:
// At by node name, as read at ReadAt; By names the setting, Effect says
// what the end does, for ExpiryNotes.
type Expiry struct {
	At     map[string]time.Time
	ReadAt time.Time
	By     string
	Effect string
}

// GroupID names the group in its provider's words: Group is the group (an
// Auto Scaling group), GroupKind and TemplateKind what the provider calls
// a group and its templates, MachineKind a machine (instance).
type GroupID struct {
	Provider     string `json:"provider"`
	Region       string `json:"region,omitempty"`
	Group        string `json:"group"`
	GroupKind    string `json:"groupKind"`
	Template     string `json:"template"`
	TemplateKind string `json:"templateKind"`
	MachineKind  string `json:"machineKind,omitempty"`
}

// Launches is what the group launches now and after the run.
type Launches struct {
	// CurrentVersion is the version the group launches now; TargetVersion
	// the one nodes must run after the upgrade, NewVersion when the run
	// creates it; TargetImage its image where known.
	CurrentVersion string `json:"currentVersion"`
	TargetVersion  string `json:"targetVersion"`
	TargetImage    string `json:"targetImage,omitempty"`
	// TargetText says what the target is where a template's version does
	// not (an EKS managed node group's Kubernetes and AMI release
	// versions); "" when it does.
	TargetText string `json:"targetText,omitempty"`
	// VersionLabel and ImageLabel are node labels that name the node's
	// template version and image, where the provider's nodes carry them
	// (EKS's); a node whose label disagrees with the target is outdated,
	// and a new node is not usable until it agrees. "" where none.
	VersionLabel string `json:"versionLabel,omitempty"`
	ImageLabel   string `json:"imageLabel,omitempty"`
	// LaunchesAfter says, in the provider's words, what the group
	// launches after the run: the version it follows ($Default, made the
	// target) or the number it is pinned to; "" when the provider does not
	// say.
	LaunchesAfter string `json:"launchesAfter,omitempty"`
	// Previous is the version a rollback after the run points the group
	// back at, of PreviousTemplate, where CurrentVersion is not it or the
	// group is a service's that takes it (an EKS managed node group: the
	// version of the user's launch template it names; Karpenter: the
	// NodeClass, group/kind/name, that the outdated NodeClaims were
	// launched from before the NodePool was pointed at another); "" where
	// CurrentVersion is it or nothing is.
	Previous         string `json:"previous,omitempty"`
	PreviousTemplate string `json:"previousTemplate,omitempty"`
	// BackBy says, where the group cannot be pointed back at the version
	// before the run (EKS refuses an earlier release), why and what goes
	// back instead; "" where it can.
	BackBy string `json:"backBy,omitempty"`
}

// Removal is what removing one of the group's machines goes through.
type Removal struct {
	// Rebalance names the group's own rebalancing between zones, which a
	// run suspends while it lowers the desired size (see
	// cloud.Rebalancer); "" when the cloud has none. RebalanceHeld says it
	// is suspended already, before the run, and stays so.
	Rebalance     string `json:"rebalance,omitempty"`
	RebalanceHeld bool   `json:"rebalanceHeld,omitempty"`
	// LoadBalancers are those a node of the group leaves, and is waited
	// for, before its machine is removed (see cloud.Deregisterer); none
	// where the cloud has no such thing or the group is in none.
	LoadBalancers []LoadBalancer `json:"loadBalancers,omitempty"`
	// LeaveHooks hold the machines the group terminates until their owner
	// lets go (AWS: terminating lifecycle hooks); Reserve is its pool of
	// machines that are not nodes (AWS: the warm pool), nil without one;
	// Protected are the machines its own scale-in passes over.
	LeaveHooks []LeaveHook `json:"leaveHooks,omitempty"`
	Reserve    *Reserve    `json:"reserve,omitempty"`
	Protected  []string    `json:"protected,omitempty"`
	// AwaitsReplacement: a machine's removal returns once the group has
	// launched its replacement (Karpenter: the NodeClaim terminated, then
	// the pool's claims initialized), one machine after the other, so a
	// batch's removals take a join each (Plan.JoinTime). LaunchPace is how
	// long the group's machines took to launch as the cloud measured it
	// (Karpenter: NodeClaim creation to Initialized), preferred to the
	// nodes' creation to Ready, which leaves the launch out.
	AwaitsReplacement bool `json:"awaitsReplacement,omitempty"`
	LaunchPace        Pace `json:"launchPace,omitzero"`
}

// Joining are the machines of the group still on their way to be nodes
// that the target would replace: the replacement of a node an interrupted
// run removed, launched on the version the rollback leaves, say. A plan
// made before they join leaves them out; a run waits for them first.
func (cg *CloudGroup) Joining() []Machine {
	var out []Machine
	for _, m := range cg.Unjoined {
		if m.Leaving() {
			continue
		}
		if cg.TargetVersion == NewVersion || m.Template != cg.Template || m.Version != cg.TargetVersion {
			out = append(out, m)
		}
	}
	return out
}

// JoiningNote says which machines a run waits for before it plans.
func (cg *CloudGroup) JoiningNote(joining []Machine) string {
	ids := make([]string, len(joining))
	for i, m := range joining {
		ids[i] = fmt.Sprintf("%s (version %s)", m.ID, m.Version)
	}
	return fmt.Sprintf("%d %ss of %s %q are not nodes yet and run another version: %s; a run waits up to --node-ready-timeout for them to join, then plans them too", len(joining), cg.MachineKind, cg.GroupKind, cg.Group, strings.Join(ids, ", "))
}

// SizeText says the sizes a group is at: desired and max, or the target
// size alone where the group has no max (a nil c has both).
func (c *CloudPlan) SizeText(s Sizes) string {
	if c != nil && c.TargetSizeOnly {
		return fmt.Sprintf("target size %d", s.Desired)
	}
	return fmt.Sprintf("desired %d, max %d", s.Desired, s.Max)
}

// ResizeText says how a group's sizes move from one to the other, as
// SizeText names them.
func (c *CloudPlan) ResizeText(from, to Sizes) string {
	if c != nil && c.TargetSizeOnly {
		return fmt.Sprintf("target size %d -> %d", from.Desired, to.Desired)
	}
	return fmt.Sprintf("desired %d -> %d, max %d -> %d", from.Desired, to.Desired, from.Max, to.Max)
}

// CloudPlan is the cloud side of a plan. Its fields are the same for every
// provider; the values are the provider's own names. GroupID, Launches and
// Removal are the CloudGroup's.
type CloudPlan struct {
	GroupID
	Launches
	Removal
	// Before are the sizes the group goes back to at the end; During the
	// sizes while the upgrade runs, ScaleUp nodes more.
	Before  Sizes `json:"before"`
	During  Sizes `json:"during"`
	ScaleUp int32 `json:"scaleUp"`
	// TargetSizeOnly is CloudGroup.TargetSizeOnly.
	TargetSizeOnly bool `json:"targetSizeOnly,omitempty"`
	// Resumed says the sizes come from an interrupted run's record.
	Resumed bool `json:"resumed,omitempty"`
	// BlueDeleted is the blue group an interrupted run deleted before it
	// recorded so: the run only finishes, on green (this group).
	BlueDeleted string `json:"blueDeleted,omitempty"`
	// InterruptedGreen is Resume.InterruptedGreen.
	InterruptedGreen string `json:"interruptedGreen,omitempty"`
	// RescaleFrom is the version an interrupted run scaled up for, when
	// its new nodes are outdated for this target: the run scales up again
	// (ScaleUp more, from the sizes now), or it would hold off every node
	// with nothing new to move to.
	RescaleFrom string `json:"rescaleFrom,omitempty"`
	// Options are the provider's own settings the plan was made with
	// (CloudTarget.Options): run --plan-file asks for them again.
	Options map[string]string `json:"options,omitempty"`
	// RemovesOnly says the provider cannot point the group at the target
	// or resize it (it lacks CapResize): the run of a strategy that
	// replaces nodes in place only removes them, and the group replaces
	// them with what it launches; no Setup, scale-up or scale-down.
	RemovesOnly bool `json:"removesOnly,omitempty"`
}

// LoadBalancer is a load balancer that sends traffic to the group's
// machines, and how long it keeps a deregistered one (AWS: a target
// group's deregistration delay, a Classic Load Balancer's connection
// draining timeout).
type LoadBalancer struct {
	// Kind is what the cloud calls it ("target group").
	Kind  string   `json:"kind"`
	Name  string   `json:"name"`
	Delay Duration `json:"delay"`
}

// LongestDelay is the longest deregistration delay of the load balancers.
func LongestDelay(lbs []LoadBalancer) time.Duration {
	var d time.Duration
	for _, lb := range lbs {
		d = max(d, time.Duration(lb.Delay))
	}
	return d
}

// UnmarshalJSON also reads plans saved before the fields were neutral
// (autoScalingGroup, launchTemplateID: the aws provider's).
func (c *CloudPlan) UnmarshalJSON(b []byte) error {
	type plain CloudPlan
	var v struct {
		plain
		AutoScalingGroup string `json:"autoScalingGroup"`
		LaunchTemplateID string `json:"launchTemplateID"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = CloudPlan(v.plain)
	if c.Group == "" && v.AutoScalingGroup != "" {
		c.Group, c.Template = v.AutoScalingGroup, v.LaunchTemplateID
		c.GroupKind, c.TemplateKind = "Auto Scaling group", "launch template"
	}
	return nil
}

// ScaleUpCount is how many nodes the EKS update adds before draining: the
// larger of twice the zones in use and maxUnavailable.
func ScaleUpCount(zones, maxUnavailable int) int32 {
	return int32(max(2*zones, maxUnavailable))
}

// machineOutdated says why a node's machine does not run the target
// configuration; notMember is set for nodes that are no machine of the
// group.
func machineOutdated(node *corev1.Node, cg *CloudGroup) (diffs []LabelDiff, machine Machine, notMember bool) {
	m, ok := cg.Nodes[node.Name]
	switch {
	case !ok:
		return nil, m, true
	case m.Leaving():
		return nil, m, false
	}
	switch {
	case m.Template != cg.Template:
		diffs = append(diffs, LabelDiff{Key: cmp.Or(cg.TemplateKey, DiffTemplate), Current: m.Template, Target: cg.Template})
	case m.Version != cg.TargetVersion:
		diffs = append(diffs, LabelDiff{Key: cmp.Or(cg.VersionKey, DiffTemplateVersion), Current: m.Version, Target: cg.TargetVersion})
	}
	// The provider's own labels, where the nodes carry them, must agree
	// too: a node whose labels say otherwise (EKS's) would be replaced by
	// the cloud's service itself.
	if v, ok := node.Labels[cg.VersionLabel]; ok && cg.TargetVersion != NewVersion && v != cg.TargetVersion {
		diffs = append(diffs, LabelDiff{Key: cg.VersionLabel, Current: v, Target: cg.TargetVersion})
	}
	if v, ok := node.Labels[cg.ImageLabel]; ok && cg.TargetImage != "" && v != cg.TargetImage {
		diffs = append(diffs, LabelDiff{Key: cg.ImageLabel, Current: v, Target: cg.TargetImage})
	}
	return diffs, m, false
}

// notMemberNote says which nodes of the group are left alone because their
// machines are in no or another group (e.g. blue/green's green one),
// naming a few.
func notMemberNote(names []string, cg *CloudGroup) string {
	shown := names
	if len(shown) > 3 {
		shown = shown[:3]
	}
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = fmt.Sprintf("%q", n)
	}
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	if len(names) == 1 {
		return fmt.Sprintf("node %s is not an %s of %s %q; it is left alone", q[0], cg.MachineKind, cg.GroupKind, cg.Group)
	}
	return fmt.Sprintf("%d nodes (%s%s) are not %ss of %s %q; they are left alone", len(names), strings.Join(q, ", "), more, cg.MachineKind, cg.GroupKind, cg.Group)
}

// removesOnly reports whether a run can only remove the group's nodes:
// it neither resizes the group nor has a service run the update.
func removesOnly(cg *CloudGroup) bool {
	return cg.Can.Has(CapRemoveNodes) && !cg.Can.Has(CapResize) && cg.Managed == nil
}

// cloudPlan is the cloud side before the strategy sizes it: the sizes now,
// or an interrupted run's recorded ones.
func cloudPlan(cg *CloudGroup, r Resume) *CloudPlan {
	cp := &CloudPlan{
		GroupID:          cg.GroupID,
		Launches:         cg.Launches,
		Removal:          cg.Removal,
		Before:           cg.Sizes,
		During:           cg.Sizes,
		TargetSizeOnly:   cg.TargetSizeOnly,
		BlueDeleted:      r.BlueDeleted,
		InterruptedGreen: r.InterruptedGreen,
		RemovesOnly:      removesOnly(cg),
		Options:          cg.Options,
	}
	if r.Recorded != nil {
		// An interrupted run scaled up already: the sizes now are the
		// inflated ones, and the recorded ones are what the end restores.
		cp.Before, cp.Resumed, cp.RescaleFrom = *r.Recorded, true, r.RescaleFrom
	}
	if f := r.Following; f != nil {
		// The service scaled up already, and its end scales down.
		cp.Resumed = true
		if f.Sizes != nil {
			cp.Before = *f.Sizes
		}
	}
	return cp
}
