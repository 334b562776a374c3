package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// LeaveHook is a hook of the cloud's that holds a removed machine on its
// way out until its owner lets go or its timeout passes (AWS: a lifecycle
// hook on EC2_INSTANCE_TERMINATING). It belongs to another system: a run
// waits for it, never completes it.
type LeaveHook struct {
	Name string `json:"name"`
	// Timeout is how long it holds a machine without a heartbeat from its
	// owner; DefaultResult what the cloud does then.
	Timeout       Duration `json:"timeout"`
	DefaultResult string   `json:"defaultResult,omitempty"`
}

func (h LeaveHook) String() string {
	return fmt.Sprintf("%q (heartbeat %d s)", h.Name, int64(time.Duration(h.Timeout)/time.Second))
}

// Reserve is a pool of machines kept ready beside the group (AWS: a warm
// pool). Its machines are not nodes and not capacity: a run never removes
// or awaits them.
type Reserve struct {
	// Kind is what the provider calls it; State the state its machines
	// wait in (Stopped, Running, Hibernated).
	Kind     string    `json:"kind"`
	State    string    `json:"state,omitempty"`
	MinSize  int32     `json:"minSize"`
	Machines []Machine `json:"machines,omitempty"`
}

// LifecycleNotes are the plan's notes on what of the group's own life the
// run meets: hooks that hold leaving machines, the reserve pool, and
// outdated machines (by ID) protected from the group's own scale-in.
func (cg *CloudGroup) LifecycleNotes(terminateTimeout time.Duration, outdated map[string]bool) []string {
	var notes []string
	if len(cg.LeaveHooks) > 0 {
		names := make([]string, len(cg.LeaveHooks))
		longest := time.Duration(0)
		for i, h := range cg.LeaveHooks {
			names[i] = h.String()
			longest = max(longest, time.Duration(h.Timeout))
		}
		note := fmt.Sprintf("%s %q holds every %s it terminates for lifecycle hooks %s: the run waits for each removed %s to be gone, up to --terminate-timeout (%s), and never completes another system's hook",
			cg.GroupKind, cg.Group, cg.MachineKind, strings.Join(names, ", "), cg.MachineKind, FormatDuration(terminateTimeout))
		if terminateTimeout > 0 && longest > terminateTimeout {
			note += fmt.Sprintf("; a hook may hold longer (%s) than that: raise --terminate-timeout, or a held termination stops the run (run again to go on)", FormatDuration(longest))
		}
		notes = append(notes, note)
	}
	if r := cg.Reserve; r != nil {
		old := len(cg.outdatedReserve())
		note := fmt.Sprintf("%s %q has a %s of %d %ss (%s, min size %d): they are not nodes, so the run neither counts, awaits nor terminates them",
			cg.GroupKind, cg.Group, r.Kind, len(r.Machines), cg.MachineKind, stateOrUnknown(r.State), r.MinSize)
		if old > 0 {
			// AWS does not replace warm-pool instances when the launch
			// template changes (only an instance refresh does), and a
			// scale-out draws on the pool first.
			note += fmt.Sprintf("; %d of them were launched from another %s version and join later, on the old image, when the group scales out (during this run's scale-up too): replace them yourself (an instance refresh, or a new %s)",
				old, cg.TemplateKind, r.Kind)
		}
		notes = append(notes, note)
	}
	var protected []string
	for _, id := range cg.Protected {
		if outdated[id] {
			protected = append(protected, id)
		}
	}
	if len(protected) > 0 {
		// AWS: scale-in protection does not stop
		// TerminateInstanceInAutoScalingGroup, only the group's own
		// choice of what to terminate when the desired size drops.
		notes = append(notes, fmt.Sprintf("outdated %ss %s of %s %q are protected from scale-in: the run terminates each explicitly, which the protection does not prevent (it stays on the others), and never lowers the desired size expecting the group to pick one",
			cg.MachineKind, strings.Join(protected, ", "), cg.GroupKind, cg.Group))
	}
	return notes
}

// outdatedReserve are the reserve's machines launched from anything but the
// target version.
func (cg *CloudGroup) outdatedReserve() []string {
	if cg.Reserve == nil {
		return nil
	}
	var old []string
	for _, m := range cg.Reserve.Machines {
		if cg.TargetVersion == NewVersion || m.Template != cg.Template || m.Version != cg.TargetVersion {
			old = append(old, m.ID)
		}
	}
	return old
}

// outdatedWarmPool blocks a run that scales the group up while its reserve
// holds machines of another version: the cloud takes those first (AWS
// draws a scale-out from the warm pool, and never replaces warm instances
// when the launch template changes), so they join on the old image and
// the run stops at its scale-up: the group runs all it wants, and no node
// of the target comes.
func outdatedWarmPool(cg *CloudGroup, p *Plan, nodeGroup string) []check.Finding {
	old := cg.outdatedReserve()
	if len(old) == 0 || p.Cloud == nil {
		return nil
	}
	added := max(p.Cloud.ScaleUp, p.Cloud.During.Desired-p.Cloud.Before.Desired)
	if added <= 0 {
		return nil // nothing launches (blue/green makes a group without the pool)
	}
	shown := old
	if len(old) > 3 {
		shown = append(slices.Clone(old[:3]), fmt.Sprintf("and %d more", len(old)-3))
	}
	return []check.Finding{{
		Check: check.CheckOutdatedWarmPool, Severity: check.Blocker, Kind: "NodeGroup", Name: nodeGroup,
		Message: fmt.Sprintf("the %s of %s %q holds %d %ss launched from another %s version (%s): the scale-up of %d takes them first and they join on the old image, so the run would stop there (NodeCreationFailure: the group launches no more)",
			cg.Reserve.Kind, cg.GroupKind, cg.Group, len(old), cg.MachineKind, cg.TemplateKind, strings.Join(shown, ", "), added),
		Fix: fmt.Sprintf("replace the %s's %ss before the run (an instance refresh, or delete the %s and make it again after the run)", cg.Reserve.Kind, cg.MachineKind, cg.Reserve.Kind),
	}}
}

func stateOrUnknown(s string) string {
	if s == "" {
		return "state unknown"
	}
	return s
}

// leaveHooksLine names the hooks that hold a removed machine, for the
// plan's cloud section; "" without any.
func leaveHooksLine(c *CloudPlan) string {
	if len(c.LeaveHooks) == 0 {
		return ""
	}
	names := make([]string, len(c.LeaveHooks))
	for i, h := range c.LeaveHooks {
		names[i] = h.String()
	}
	return "held by lifecycle hooks " + strings.Join(names, ", ") + "; the run waits, never completes them"
}
