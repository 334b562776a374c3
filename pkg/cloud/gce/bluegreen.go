package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// greenMark starts the description of a green group, followed by blue's
// URL: a re-run recognises its own group by it and adopts no other.
const greenMark = "kubectl nodeupgrade: green of "

// PrepareTarget implements cloud.BlueGreen: the target template is made
// if it must be; blue keeps its own.
func (n *NodeGroup) PrepareTarget(ctx context.Context) (string, error) { return n.target(ctx) }

// CheckQuota implements cloud.BlueGreen from the region's
// INSTANCE_GROUP_MANAGERS quota.
func (n *NodeGroup) CheckQuota(ctx context.Context) error {
	m := n.MIGs[0]
	region := m.Region
	if !m.Regional() {
		region = RegionOf(m.Zone)
	}
	r, err := n.Provider.svc.Regions.Get(m.Project, region).Context(ctx).Do()
	if err != nil {
		return wrap(err, "get the quotas of region %q", region)
	}
	for _, q := range r.Quotas {
		if q.Metric == "INSTANCE_GROUP_MANAGERS" && q.Usage+1 > q.Limit {
			return inputErrorf("region %q has %.0f managed instance groups, the project's quota of %.0f, and blue/green needs one more; delete an unused group or have the quota raised, or use another --strategy", region, q.Usage, q.Limit)
		}
	}
	return nil
}

// GreenName implements cloud.BlueGreen: blue's name, cut to fit, with a
// hash of the template.
func (n *NodeGroup) GreenName(version string) string {
	sum := sha256.Sum256([]byte(version))
	suffix := "-g" + hex.EncodeToString(sum[:3])
	blue := n.MIGs[0].Name
	if keep := 63 - len(suffix); len(blue) > keep {
		blue = strings.TrimRight(blue[:keep], "-")
	}
	return blue + suffix
}

func (n *NodeGroup) greenMIG(name string) MIG {
	g := n.MIGs[0]
	g.Name = name
	return g
}

// CreateGreen implements cloud.BlueGreen: a group beside blue, in its zone
// or region and zones, with its policies, launching version, or the one an
// interrupted run made.
func (n *NodeGroup) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	blue, err := n.Provider.getMIG(ctx, n.MIGs[0])
	if err != nil {
		return err
	}
	if blue == nil {
		return missingMIG(n.MIGs[0])
	}
	g := n.greenMIG(name)
	igm := &compute.InstanceGroupManager{
		Name: name, BaseInstanceName: name, Description: greenMark + n.MIGs[0].String(),
		InstanceTemplate: "projects/" + n.Provider.project + "/global/instanceTemplates/" + version,
		TargetSize:       int64(sizes.Desired), ForceSendFields: []string{"TargetSize"},
		UpdatePolicy: blue.UpdatePolicy, DistributionPolicy: blue.DistributionPolicy,
		NamedPorts: blue.NamedPorts, AutoHealingPolicies: blue.AutoHealingPolicies, TargetPools: blue.TargetPools,
	}
	err = n.Provider.insertMIG(ctx, g, igm)
	if isCode(err, http.StatusConflict) {
		return n.ownGreen(ctx, g, version)
	}
	if err != nil {
		return wrap(err, "create managed instance group %q", g.String())
	}
	return nil
}

// ownGreen accepts a group of green's name that an earlier call made for
// version.
func (n *NodeGroup) ownGreen(ctx context.Context, g MIG, version string) error {
	igm, err := n.Provider.getMIG(ctx, g)
	if err != nil {
		return err
	}
	if igm == nil || igm.Description != greenMark+n.MIGs[0].String() {
		return inputErrorf("managed instance group %q already exists and is not a green group of %q; delete it or use another --strategy", g.String(), n.MIGs[0].Name)
	}
	if got := lastSegment(igm.InstanceTemplate); got != version {
		return inputErrorf("green managed instance group %q, made earlier, launches instance template %q, not %q; delete it and run again", g.String(), got, version)
	}
	return nil
}

// UseGreen implements cloud.BlueGreen.
func (n *NodeGroup) UseGreen(name string) {
	g := n.greenMIG(name)
	n.green = &g
}

// groupMIG is the group a BlueGreen call names: blue or green.
func (n *NodeGroup) groupMIG(group string) MIG {
	if group == n.GroupName() {
		return n.MIGs[0]
	}
	return n.greenMIG(group)
}

// GroupSizes implements cloud.BlueGreen.
func (n *NodeGroup) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	s, err := n.sizes(ctx, []MIG{n.groupMIG(group)})
	return targetSizes(s), err
}

// SetGroupSizes implements cloud.BlueGreen: the target size only.
func (n *NodeGroup) SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error {
	return n.Provider.resize(ctx, n.groupMIG(group), int64(s.Desired))
}

// DeleteGroup implements cloud.BlueGreen.
func (n *NodeGroup) DeleteGroup(ctx context.Context, group string) error {
	if group == n.GroupName() && len(n.MIGs) != 1 {
		return fmt.Errorf("cannot delete %d managed instance groups as one", len(n.MIGs))
	}
	return n.Provider.deleteMIG(ctx, n.groupMIG(group))
}
