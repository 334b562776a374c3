package gce

import (
	"context"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// greenPolicy is blue's update policy for a green group over zones
// zones, with maxSurge and maxUnavailable fixed numbers: compute-api.json
// (InstanceGroupManagerUpdatePolicy) takes a percentage only "if the
// group has 10 or more instances", and green starts with fewer (at 0 for
// autoscaled-blue-green). A percentage becomes what it comes to for blue
// (its calculated value), or the API's default, the number of zones,
// where that is 0. Two rules of the MIG update docs, not in the
// discovery document, hold too
// (https://cloud.google.com/compute/docs/instance-groups/rolling-out-updates-to-managed-instance-groups#max_surge,
// #max_unavailable, #replacement_method): a regional group's fixed value
// is 0 or at least its number of zones (a value under it is raised to
// it), and replacementMethod RECREATE takes maxSurge 0.
func greenPolicy(blue *compute.InstanceGroupManagerUpdatePolicy, zones int64) *compute.InstanceGroupManagerUpdatePolicy {
	if blue == nil {
		return nil
	}
	up := *blue
	up.MaxSurge, up.MaxUnavailable = fixedOf(blue.MaxSurge, zones), fixedOf(blue.MaxUnavailable, zones)
	if up.ReplacementMethod == "RECREATE" {
		up.MaxSurge = &compute.FixedOrPercent{Fixed: 0, ForceSendFields: []string{"Fixed"}}
		if up.MaxUnavailable != nil && up.MaxUnavailable.Fixed == 0 {
			up.MaxUnavailable = nil // the default, the number of zones
		}
		return &up
	}
	if up.MaxSurge != nil && up.MaxUnavailable != nil && up.MaxSurge.Fixed == 0 && up.MaxUnavailable.Fixed == 0 {
		// "At least one of either maxSurge or maxUnavailable must be
		// greater than 0": the defaults are.
		up.MaxSurge, up.MaxUnavailable = nil, nil
	}
	return &up
}

// fixedOf is v as a fixed number, at least zones unless 0; nil (the
// API's default) for a percentage that comes to 0.
func fixedOf(v *compute.FixedOrPercent, zones int64) *compute.FixedOrPercent {
	switch {
	case v == nil:
		return nil
	case v.Percent == 0 && v.Fixed == 0:
		return &compute.FixedOrPercent{Fixed: 0, ForceSendFields: []string{"Fixed"}}
	case v.Percent == 0:
		return &compute.FixedOrPercent{Fixed: max(v.Fixed, zones)}
	case v.Calculated > 0:
		return &compute.FixedOrPercent{Fixed: max(v.Calculated, zones)}
	}
	return nil
}

// backendServicesOf names the backend services (global ones, and
// regional ones of the groups' region) whose backends include one of
// the groups' instance groups, as projects/P/global/backendServices/N
// or projects/P/regions/R/backendServices/N.
func (n *NodeGroup) backendServicesOf(ctx context.Context, igms []*compute.InstanceGroupManager) ([]string, error) {
	mine := map[string]bool{}
	for _, igm := range igms {
		if igm.InstanceGroup != "" {
			mine[partialURL(igm.InstanceGroup)] = true
		}
	}
	var out []string
	match := func(items []*compute.BackendService) {
		for _, bs := range items {
			for _, b := range bs.Backends {
				if mine[partialURL(b.Group)] {
					out = append(out, partialURL(bs.SelfLink))
					break
				}
			}
		}
	}
	p := n.API
	err := p.svc.BackendServices.List(p.project).Pages(ctx, func(l *compute.BackendServiceList) error { match(l.Items); return nil })
	if err != nil {
		return nil, wrap(err, "list the backend services of project %q", p.project)
	}
	err = p.svc.RegionBackendServices.List(p.project, regionOf(n.MIGs)).Pages(ctx, func(l *compute.BackendServiceList) error { match(l.Items); return nil })
	if err != nil {
		return nil, wrap(err, "list the backend services of region %q", regionOf(n.MIGs))
	}
	return out, nil
}

// partialURL is a resource URL from "projects/" on.
func partialURL(url string) string {
	if i := strings.Index(url, "projects/"); i >= 0 {
		return url[i:]
	}
	return url
}

// checkBackendServices refuses blue/green for groups that serve a
// backend service: green would never be added to it (the run does not
// change load balancers), and Compute refuses to delete an instance
// group a backend service uses (instanceGroupManagers.delete).
func (n *NodeGroup) checkBackendServices(ctx context.Context, igms []*compute.InstanceGroupManager, strategy plan.StrategyName) error {
	s, err := plan.LookupStrategy(string(strategy))
	if err != nil || !s.Traits().WholeGroup {
		return nil
	}
	used, err := n.backendServicesOf(ctx, igms)
	if err != nil || len(used) == 0 {
		return err
	}
	return inputErrorf("managed instance groups %s serve backend service %q, which blue/green cannot move to green groups; use --strategy surge or eks", n.GroupName(), used[0])
}
