package gce

import (
	"context"
	"fmt"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// The update policy's values
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers#InstanceGroupManagerUpdatePolicy).
const (
	proactive     = "PROACTIVE"
	opportunistic = "OPPORTUNISTIC"
	noRedistrib   = "NONE"
)

// Redistribution is what the plan calls a regional group's proactive
// instance redistribution.
const Redistribution = "instance redistribution"

// SelfUpdates implements cloud.SelfUpdater: each group's update policy
// type, as name=TYPE,...
func (n *NodeGroup) SelfUpdates(ctx context.Context) (string, error) {
	parts := make([]string, len(n.MIGs))
	for i, m := range n.MIGs {
		igm, err := n.API.getMIG(ctx, m)
		if err != nil {
			return "", err
		}
		if igm == nil {
			return "", missingMIG(m)
		}
		parts[i] = m.Name + "=" + updateType(igm)
	}
	return strings.Join(parts, ","), nil
}

// updateType is the group's update policy type; PROACTIVE when unset,
// the API's default.
func updateType(igm *compute.InstanceGroupManager) string {
	if igm.UpdatePolicy == nil || igm.UpdatePolicy.Type == "" {
		return proactive
	}
	return igm.UpdatePolicy.Type
}

// HoldUpdates implements cloud.SelfUpdater: OPPORTUNISTIC, so a group
// applies its template to the instances it creates and to none it runs.
func (n *NodeGroup) HoldUpdates(ctx context.Context) error {
	for _, m := range n.MIGs {
		igm, err := n.API.getMIG(ctx, m)
		if err != nil || igm == nil || updateType(igm) == opportunistic {
			continue
		}
		if err := n.API.patchPolicy(ctx, m, &compute.InstanceGroupManagerUpdatePolicy{Type: opportunistic}); err != nil {
			return err
		}
	}
	return nil
}

// RestoreUpdates implements cloud.SelfUpdater. A group that was PROACTIVE
// and still runs instances of another template than its own is left
// OPPORTUNISTIC: PROACTIVE now would replace them undrained.
func (n *NodeGroup) RestoreUpdates(ctx context.Context, was string) (string, error) {
	var notes []string
	for kv := range strings.SplitSeq(was, ",") {
		name, typ, _ := strings.Cut(kv, "=")
		i := slices.IndexFunc(n.MIGs, func(m MIG) bool { return m.Name == name })
		if i < 0 || typ == opportunistic {
			continue
		}
		note, err := n.restoreOne(ctx, n.MIGs[i], typ)
		if err != nil {
			return "", err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	return strings.Join(notes, "; "), nil
}

func (n *NodeGroup) restoreOne(ctx context.Context, m MIG, typ string) (string, error) {
	igm, err := n.API.getMIG(ctx, m)
	if err != nil || igm == nil || updateType(igm) == typ {
		return "", err
	}
	mis, err := n.API.managedInstances(ctx, m)
	if err != nil {
		return "", err
	}
	tmpl := lastSegment(igm.InstanceTemplate)
	old := 0
	for _, mi := range mis {
		if mi.Version == nil || lastSegment(mi.Version.InstanceTemplate) != tmpl {
			old++
		}
	}
	if old > 0 {
		return fmt.Sprintf("the update policy of managed instance group %q stays OPPORTUNISTIC (it was %s): %d of its instances run another template than %q, which %s would replace undrained; run again to finish, then set it back", m.Name, typ, old, tmpl, typ), nil
	}
	return "", n.API.patchPolicy(ctx, m, &compute.InstanceGroupManagerUpdatePolicy{Type: typ})
}

// RegionalNodeGroup is a node group of one regional managed instance
// group, which redistributes its instances between zones of its own
// accord (instanceRedistributionType PROACTIVE): the run holds that off
// while it removes nodes, as AZRebalance on AWS.
type RegionalNodeGroup struct {
	*NodeGroup
}

var _ cloud.Rebalancer = RegionalNodeGroup{}

// RebalanceName implements cloud.Rebalancer.
func (r RegionalNodeGroup) RebalanceName() string { return Redistribution }

// RebalanceHeld implements cloud.Rebalancer.
func (r RegionalNodeGroup) RebalanceHeld(ctx context.Context) (bool, error) {
	igm, err := r.API.getMIG(ctx, r.MIGs[0])
	if err != nil || igm == nil {
		return false, err
	}
	return redistributionHeld(igm), nil
}

func redistributionHeld(igm *compute.InstanceGroupManager) bool {
	return igm.UpdatePolicy != nil && igm.UpdatePolicy.InstanceRedistributionType == noRedistrib
}

// RebalanceZones implements cloud.Rebalancer: the zones of the group's
// distribution policy.
func (r RegionalNodeGroup) RebalanceZones(ctx context.Context) ([]string, error) {
	igm, err := r.API.getMIG(ctx, r.MIGs[0])
	if err != nil || igm == nil || igm.DistributionPolicy == nil {
		return nil, err
	}
	var zones []string
	for _, z := range igm.DistributionPolicy.Zones {
		zones = append(zones, lastSegment(z.Zone))
	}
	return zones, nil
}

// HoldRebalance implements cloud.Rebalancer.
func (r RegionalNodeGroup) HoldRebalance(ctx context.Context) error {
	return r.API.patchPolicy(ctx, r.MIGs[0], &compute.InstanceGroupManagerUpdatePolicy{InstanceRedistributionType: noRedistrib})
}

// ReleaseRebalance implements cloud.Rebalancer.
func (r RegionalNodeGroup) ReleaseRebalance(ctx context.Context) error {
	return r.API.patchPolicy(ctx, r.MIGs[0], &compute.InstanceGroupManagerUpdatePolicy{InstanceRedistributionType: proactive})
}
