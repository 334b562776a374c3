package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
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
// INSTANCE_GROUP_MANAGERS quota: one green group per blue group.
func (n *NodeGroup) CheckQuota(ctx context.Context) error {
	region, more := regionOf(n.MIGs), float64(len(n.MIGs))
	r, err := n.API.svc.Regions.Get(n.API.project, region).Context(ctx).Do()
	if err != nil {
		return wrap(err, "get the quotas of region %q", region)
	}
	if q := quotaOf(r, "INSTANCE_GROUP_MANAGERS"); q != nil && q.Usage+more > q.Limit {
		return inputErrorf("region %q has %.0f managed instance groups, the project's quota of %.0f, and blue/green needs %.0f more; delete unused groups or have the quota raised, or use another --strategy", region, q.Usage, q.Limit, more)
	}
	return nil
}

// GreenName implements cloud.BlueGreen: one green group per blue group,
// as the group flag takes them, each blue's name without the green suffix
// of an earlier blue/green run (so names do not grow run after run) with
// "-g" and a hash of the template. A green group's name is also its
// baseInstanceName, which compute-api.json (InstanceGroupManager) allows
// 58 characters of [a-z][-a-z0-9]*, where the name may have 63: a longer
// blue name is cut, with a hash of all of it so that blues alike in their
// first characters keep distinct greens.
func (n *NodeGroup) GreenName(version string) string {
	names := make([]string, len(n.MIGs))
	for i, m := range n.MIGs {
		names[i] = greenName(m.Name, version)
	}
	return strings.Join(names, ",")
}

// maxBaseName is the longest baseInstanceName compute-api.json allows.
const maxBaseName = 58

// greenSuffix is what greenName appends: "-g" and 6 hex digits.
var greenSuffix = regexp.MustCompile(`-g[0-9a-f]{6}$`)

func greenName(blue, version string) string {
	blue = greenSuffix.ReplaceAllString(blue, "")
	suffix := "-g" + shortHash(version, 3)
	if len(blue)+len(suffix) > maxBaseName {
		tag := "-" + shortHash(blue, 2)
		blue = strings.TrimRight(blue[:maxBaseName-len(suffix)-len(tag)], "-") + tag
	}
	return blue + suffix
}

// shortHash is the first n bytes of s's SHA-256, in hex.
func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:n])
}

// greenMIGs are the groups a green name stands for: the i-th beside the
// i-th blue group, in its zone or region.
func (n *NodeGroup) greenMIGs(name string) []MIG {
	var out []MIG
	for i, g := range strings.Split(name, ",") {
		m := n.MIGs[min(i, len(n.MIGs)-1)]
		m.Name = g
		out = append(out, m)
	}
	return out
}

// CreateGreen implements cloud.BlueGreen: beside each blue group, in its
// zone or region and zones, with its policies, a group launching version
// with blue's share of sizes, or the one an interrupted run made.
func (n *NodeGroup) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	blues, err := n.igms(ctx, n.MIGs)
	if err != nil {
		return err
	}
	greens := n.greenMIGs(name)
	if len(greens) != len(n.MIGs) {
		return fmt.Errorf("cannot create green %q: %d groups for %d blue groups", name, len(greens), len(n.MIGs))
	}
	share := spread(targetSizesOf(blues), int64(sizes.Desired), -1, 0)
	for i, g := range greens {
		if err := n.createGreen(ctx, i, blues[i], g, version, share[i]); err != nil {
			return err
		}
	}
	return nil
}

func (n *NodeGroup) createGreen(ctx context.Context, i int, blue *compute.InstanceGroupManager, g MIG, version string, size int64) error {
	igm := &compute.InstanceGroupManager{
		Name: g.Name, BaseInstanceName: g.Name, Description: greenMark + n.MIGs[i].String(),
		InstanceTemplate: "projects/" + n.API.project + "/global/instanceTemplates/" + version,
		TargetSize:       size, ForceSendFields: []string{"TargetSize"},
		UpdatePolicy: greenPolicy(blue.UpdatePolicy, zonesOf(blue)), DistributionPolicy: blue.DistributionPolicy,
		NamedPorts: blue.NamedPorts, AutoHealingPolicies: blue.AutoHealingPolicies, TargetPools: blue.TargetPools,
	}
	err := n.API.insertMIG(ctx, g, igm)
	if isCode(err, http.StatusConflict) {
		return n.ownGreen(ctx, n.MIGs[i], g, version)
	}
	if err != nil {
		return wrap(err, "create managed instance group %q", g.String())
	}
	return nil
}

// zonesOf is how many zones a group runs in: a regional group's
// distribution policy's, 1 for a zonal group.
func zonesOf(igm *compute.InstanceGroupManager) int64 {
	if igm.DistributionPolicy == nil || len(igm.DistributionPolicy.Zones) == 0 {
		return 1
	}
	return int64(len(igm.DistributionPolicy.Zones))
}

// ownGreen accepts a group of green's name that an earlier call made
// beside blue for version.
func (n *NodeGroup) ownGreen(ctx context.Context, blue, g MIG, version string) error {
	igm, err := n.API.getMIG(ctx, g)
	if err != nil {
		return err
	}
	if igm == nil || igm.Description != greenMark+blue.String() {
		return inputErrorf("managed instance group %q already exists and is not a green group of %q; delete it or use another --strategy", g.String(), blue.Name)
	}
	if got := lastSegment(igm.InstanceTemplate); got != version {
		return inputErrorf("green managed instance group %q, made earlier, launches instance template %q, not %q; delete it and run again", g.String(), got, version)
	}
	return nil
}

// UseGreen implements cloud.BlueGreen.
func (n *NodeGroup) UseGreen(name string) { n.greens = n.greenMIGs(name) }

// groupMIGs are the groups a BlueGreen call names: blue's or green's.
func (n *NodeGroup) groupMIGs(group string) []MIG {
	if group == n.GroupName() {
		return n.MIGs
	}
	return n.greenMIGs(group)
}

// GroupSizes implements cloud.BlueGreen.
func (n *NodeGroup) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	s, err := n.sizes(ctx, n.groupMIGs(group))
	return targetSizes(s), err
}

// SetGroupSizes implements cloud.BlueGreen: the target size only, spread
// over the groups as SetDesiredAndMax does.
func (n *NodeGroup) SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error {
	return n.resizeTo(ctx, n.groupMIGs(group), int64(s.Desired))
}

// DeleteGroup implements cloud.BlueGreen: every group of blue's or
// green's.
func (n *NodeGroup) DeleteGroup(ctx context.Context, group string) error {
	for _, m := range n.groupMIGs(group) {
		if err := n.API.deleteMIG(ctx, m); err != nil {
			return err
		}
	}
	return nil
}
