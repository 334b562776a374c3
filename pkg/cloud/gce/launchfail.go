package gce

import (
	"context"
	"slices"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var _ cloud.LaunchRefusals = (*NodeGroup)(nil)

// capacityFixes say what to do about each capacity code of a managed
// instance's lastAttempt.errors
// (https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-vm-creation).
var capacityFixes = map[string]string{
	"QUOTA_EXCEEDED":                            "raise the quota Compute names (Cloud console, IAM & Admin > Quotas) or lower --max-surge",
	"ZONE_RESOURCE_POOL_EXHAUSTED":              "wait for the zone's capacity, or launch a machine type the zone has (--instance-template)",
	"ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS": "wait for the zone's capacity, or launch a machine type the zone has (--instance-template)",
}

// LaunchRefused implements cloud.LaunchRefusals from the groups' managed
// instances (listManagedInstances): one still being created whose
// lastAttempt failed for quota or capacity is refused in its zone, and
// the zones of the target template's other instances have capacity.
// lastAttempt carries no time: it is the attempt of an instance being
// created now, so since is not needed.
func (n *NodeGroup) LaunchRefused(ctx context.Context, _ time.Time) (*plan.LaunchFailure, error) {
	byName, _, err := n.managed(ctx, n.all())
	if err != nil {
		return nil, err
	}
	target, err := n.API.templateOf(ctx, n.MIGs[0])
	if err != nil {
		return nil, err
	}
	return launchRefusal(byName, target, time.Now()), nil
}

// launchRefusal is the refusal among the managed instances, the first
// by name naming the code; nil when none is refused.
func launchRefusal(byName map[string]*compute.ManagedInstance, target string, at time.Time) *plan.LaunchFailure {
	var out *plan.LaunchFailure
	var refused, launched []string
	for _, name := range slices.Sorted(mapsKeys(byName)) {
		mi := byName[name]
		if e := capacityError(mi); e != nil {
			if out == nil {
				out = &plan.LaunchFailure{Code: e.Code, Message: oneLine(e.Message), Fix: capacityFixes[e.Code], At: at}
			}
			refused = append(refused, zoneOf(mi))
		} else if mi.Version != nil && lastSegment(mi.Version.InstanceTemplate) == target && mi.CurrentAction != "DELETING" {
			launched = append(launched, zoneOf(mi))
		}
	}
	if out == nil {
		return nil
	}
	out.Zones = sortedSet(refused)
	out.Launched = slices.DeleteFunc(sortedSet(launched), func(z string) bool { return slices.Contains(out.Zones, z) })
	return out
}

// capacityError is the quota or capacity error of the last attempt to
// create mi; nil when there is none.
func capacityError(mi *compute.ManagedInstance) *compute.ManagedInstanceLastAttemptErrorsErrors {
	if !slices.Contains(creating, mi.CurrentAction) || mi.LastAttempt == nil || mi.LastAttempt.Errors == nil {
		return nil
	}
	for _, e := range mi.LastAttempt.Errors.Errors {
		if _, ok := capacityFixes[e.Code]; ok {
			return e
		}
	}
	return nil
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
