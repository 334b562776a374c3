package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"
)

// ManagedTarget is what an update of a managed node group goes to, as
// UpdateNodegroupVersion takes it; empty fields leave the choice to EKS
// (the cluster's version, its latest release, the template's default
// version).
type ManagedTarget struct {
	Version, ReleaseVersion string
	// LaunchTemplate is the group's own template at another version.
	LaunchTemplate *TemplateRef
	// Force replaces nodes whose pods a PDB keeps (API Reference,
	// UpdateNodegroupVersion: force).
	Force bool
}

// ValidateTarget refuses, before anything is called, the targets EKS
// would refuse (API Reference, UpdateNodegroupVersion): a version above
// the control plane's; a version or release version with a custom AMI; a
// launch template on a group made without one, or another template than
// the group's. The errors are the user's to fix.
func ValidateTarget(g *EKSNodegroup, clusterVersion string, t ManagedTarget) error {
	if t.Version != "" && newerMinor(t.Version, clusterVersion) {
		return inputErrorf("Kubernetes version %q is above the control plane's %q of cluster %q; upgrade the cluster first or change --kubernetes-version", t.Version, clusterVersion, g.Cluster)
	}
	if g.CustomAMI() && (t.Version != "" || t.ReleaseVersion != "") {
		return inputErrorf("managed node group %q runs a custom AMI from its launch template: EKS takes no Kubernetes or release version for it; use --ami or --launch-template-version", g.Name)
	}
	lt := t.LaunchTemplate
	if lt == nil {
		return nil
	}
	if g.LaunchTemplate == nil {
		return inputErrorf("managed node group %q was not created with a launch template, so EKS cannot update it to one; drop --launch-template-version", g.Name)
	}
	if (lt.ID != "" && lt.ID != g.LaunchTemplate.ID) || (lt.Name != "" && lt.Name != g.LaunchTemplate.Name) {
		return inputErrorf("launch template %q is not the one of managed node group %q (%q); EKS updates a group only to versions of its own template", lt.ID+lt.Name, g.Name, g.LaunchTemplate.ID)
	}
	return nil
}

// newerMinor reports whether Kubernetes version a ("1.31") is above b.
func newerMinor(a, b string) bool {
	var amaj, amin, bmaj, bmin int
	if _, err := fmt.Sscanf(a, "%d.%d", &amaj, &amin); err != nil {
		return false
	}
	if _, err := fmt.Sscanf(b, "%d.%d", &bmaj, &bmin); err != nil {
		return false
	}
	return amaj > bmaj || (amaj == bmaj && amin > bmin)
}

// ConfigChange is what UpdateNodegroupConfig changes; nil and empty
// fields stay as they are.
type ConfigChange struct {
	Update                  *UpdateSettings
	Min, Desired, Max       *int32
	AddLabels               map[string]string
	RemoveLabels            []string
	AddTaints, RemoveTaints []corev1.Taint
}

// applied reports whether the group already has what c sets.
func (c ConfigChange) applied(g *EKSNodegroup) bool {
	if u := c.Update; u != nil && (u.MaxUnavailable != g.Update.MaxUnavailable ||
		u.MaxUnavailablePercentage != g.Update.MaxUnavailablePercentage || (u.Strategy != "" && u.Strategy != g.Update.Strategy)) {
		return false
	}
	for _, s := range []struct {
		want *int32
		have int32
	}{{c.Min, g.Min}, {c.Desired, g.Desired}, {c.Max, g.Max}} {
		if s.want != nil && *s.want != s.have {
			return false
		}
	}
	for k, v := range c.AddLabels {
		if have, ok := g.Labels[k]; !ok || have != v {
			return false
		}
	}
	for _, k := range c.RemoveLabels {
		if _, ok := g.Labels[k]; ok {
			return false
		}
	}
	// A taint is the same taint by key and effect; added ones need
	// their value too.
	has := func(t corev1.Taint, value bool) bool {
		return slices.ContainsFunc(g.Taints, func(h corev1.Taint) bool { return h.MatchTaint(&t) && (!value || h.Value == t.Value) })
	}
	return !slices.ContainsFunc(c.AddTaints, func(t corev1.Taint) bool { return !has(t, true) }) &&
		!slices.ContainsFunc(c.RemoveTaints, func(t corev1.Taint) bool { return has(t, false) })
}

func (c ConfigChange) input(cluster, name string) *eks.UpdateNodegroupConfigInput {
	in := &eks.UpdateNodegroupConfigInput{ClusterName: &cluster, NodegroupName: &name}
	if u := c.Update; u != nil {
		in.UpdateConfig = &ekstypes.NodegroupUpdateConfig{UpdateStrategy: ekstypes.NodegroupUpdateStrategies(u.Strategy)}
		if u.MaxUnavailablePercentage > 0 {
			in.UpdateConfig.MaxUnavailablePercentage = sdkaws.Int32(u.MaxUnavailablePercentage)
		} else {
			in.UpdateConfig.MaxUnavailable = sdkaws.Int32(max(u.MaxUnavailable, 1))
		}
	}
	if c.Min != nil || c.Desired != nil || c.Max != nil {
		in.ScalingConfig = &ekstypes.NodegroupScalingConfig{MinSize: c.Min, DesiredSize: c.Desired, MaxSize: c.Max}
	}
	if len(c.AddLabels)+len(c.RemoveLabels) > 0 {
		in.Labels = &ekstypes.UpdateLabelsPayload{AddOrUpdateLabels: maps.Clone(c.AddLabels), RemoveLabels: c.RemoveLabels}
	}
	if len(c.AddTaints)+len(c.RemoveTaints) > 0 {
		in.Taints = &ekstypes.UpdateTaintsPayload{AddOrUpdateTaints: eksTaints(c.AddTaints), RemoveTaints: eksTaints(c.RemoveTaints)}
	}
	return in
}

// UpdateConfig changes the node group's configuration and waits until
// the group is ACTIVE with it. It settles by reading: a group that
// already has it is not called; a call whose answer is lost, or refused
// because an update runs, is judged by what the group then says.
func (e *EKS) UpdateConfig(ctx context.Context, cluster, name string, c ConfigChange) (*EKSNodegroup, error) {
	g, err := e.DescribeNodegroup(ctx, cluster, name)
	if err != nil {
		return nil, err
	}
	if !c.applied(g) {
		out, callErr := e.eks.UpdateNodegroupConfig(ctx, c.input(cluster, name))
		if callErr != nil {
			if g, err = e.DescribeNodegroup(ctx, cluster, name); err != nil || !c.applied(g) {
				return nil, wrap(callErr, "update the configuration of managed node group %q", name)
			}
		} else if out.Update != nil && out.Update.Id != nil {
			if err := e.followConfig(ctx, cluster, name, *out.Update.Id); err != nil {
				return nil, err
			}
		}
	}
	return e.WaitActive(ctx, cluster, name)
}

// followConfig follows a configuration update to its end: one that ends
// Failed or Cancelled (API Reference, Update: status) changed nothing
// EKS would keep, and is an error with EKS's errors.
func (e *EKS) followConfig(ctx context.Context, cluster, name, id string) error {
	u, err := e.WaitUpdate(ctx, cluster, name, id, nil)
	if err != nil {
		return err
	}
	if u.Status == string(ekstypes.UpdateStatusSuccessful) {
		return nil
	}
	msg := fmt.Sprintf("the configuration update %s of managed node group %q ended %s", id, name, u.Status)
	for _, ue := range u.Errors {
		msg += fmt.Sprintf("; %s: %s %v", ue.Code, oneLine(ue.Message), ue.ResourceIDs)
	}
	return errors.New(msg + "; see \"aws eks describe-update\", then run again")
}

// WaitActive waits until the node group is ACTIVE. A group that can no
// longer become so (CREATE_FAILED, DELETE_FAILED, gone) is an error
// naming its health issues; so is DEGRADED, which EKS sets for issues
// that need the owner (API Reference, NodegroupHealth: a security group,
// subnet, role or launch template gone or changed, instances failing to
// launch), and which no wait mends.
func (e *EKS) WaitActive(ctx context.Context, cluster, name string) (*EKSNodegroup, error) {
	var g *EKSNodegroup
	err := e.poll(ctx, func() (bool, error) {
		var err error
		if g, err = e.DescribeNodegroup(ctx, cluster, name); err != nil {
			return false, err
		}
		switch ekstypes.NodegroupStatus(g.Status) {
		case ekstypes.NodegroupStatusActive:
			return true, nil
		case ekstypes.NodegroupStatusCreating, ekstypes.NodegroupStatusUpdating:
			return false, nil
		}
		if g.Status == string(ekstypes.NodegroupStatusDegraded) {
			return false, fmt.Errorf("managed node group %q is DEGRADED%s; fix what EKS names (\"aws eks describe-nodegroup\" shows its health), then run again", name, issues(g.Health))
		}
		return false, fmt.Errorf("managed node group %q is %s%s", name, g.Status, issues(g.Health))
	})
	return g, err
}

func issues(hs []HealthIssue) string {
	out := ""
	for _, h := range hs {
		out += fmt.Sprintf("; %s: %s %v", h.Code, oneLine(h.Message), h.ResourceIDs)
	}
	return out
}

// ManagedUpdate is an EKS update as DescribeUpdate says.
type ManagedUpdate struct {
	ID, Type, Status string
	Params           map[string]string
	Errors           []UpdateError
	Created          time.Time
}

// UpdateError is one error of a failed update: EKS names resources (for
// PodEvictionFailure, nodes) and nothing more.
type UpdateError struct {
	Code, Message string
	ResourceIDs   []string
}

// InProgress reports whether the update is still running.
func (u *ManagedUpdate) InProgress() bool { return u.Status == string(ekstypes.UpdateStatusInProgress) }

// DescribeUpdate describes an update of the node group.
func (e *EKS) DescribeUpdate(ctx context.Context, cluster, name, id string) (*ManagedUpdate, error) {
	out, err := e.eks.DescribeUpdate(ctx, &eks.DescribeUpdateInput{Name: &cluster, NodegroupName: &name, UpdateId: &id})
	if err != nil {
		return nil, wrap(err, "describe update %q of managed node group %q", id, name)
	}
	u := out.Update
	mu := &ManagedUpdate{ID: sdkaws.ToString(u.Id), Type: string(u.Type), Status: string(u.Status),
		Params: map[string]string{}, Created: sdkaws.ToTime(u.CreatedAt)}
	for _, p := range u.Params {
		mu.Params[string(p.Type)] = sdkaws.ToString(p.Value)
	}
	for _, d := range u.Errors {
		mu.Errors = append(mu.Errors, UpdateError{Code: string(d.ErrorCode), Message: sdkaws.ToString(d.ErrorMessage), ResourceIDs: d.ResourceIds})
	}
	return mu, nil
}

// InProgressUpdate finds the node group's running version update, nil if
// none: ListUpdates, then DescribeUpdate from the last listed back.
func (e *EKS) InProgressUpdate(ctx context.Context, cluster, name string) (*ManagedUpdate, error) {
	var ids []string
	pg := eks.NewListUpdatesPaginator(e.eks, &eks.ListUpdatesInput{Name: &cluster, NodegroupName: &name})
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return nil, wrap(err, "list the updates of managed node group %q", name)
		}
		ids = append(ids, out.UpdateIds...)
	}
	for _, id := range slices.Backward(ids) {
		u, err := e.DescribeUpdate(ctx, cluster, name, id)
		if err != nil {
			return nil, err
		}
		if u.InProgress() && u.Type == string(ekstypes.UpdateTypeVersionUpdate) {
			return u, nil
		}
	}
	return nil, nil
}

// StartVersionUpdate starts UpdateNodegroupVersion, unless a version
// update of the group runs already: then it returns that one, and
// started is false, so a second run follows the first update instead of
// starting another. A call whose answer is lost, or refused as in use, is
// settled by looking for the running update again.
func (e *EKS) StartVersionUpdate(ctx context.Context, cluster, name string, t ManagedTarget) (u *ManagedUpdate, started bool, err error) {
	if u, err = e.InProgressUpdate(ctx, cluster, name); err != nil || u != nil {
		return u, false, err
	}
	in := &eks.UpdateNodegroupVersionInput{ClusterName: &cluster, NodegroupName: &name, Force: t.Force}
	if t.Version != "" {
		in.Version = &t.Version
	}
	if t.ReleaseVersion != "" {
		in.ReleaseVersion = &t.ReleaseVersion
	}
	if lt := t.LaunchTemplate; lt != nil {
		in.LaunchTemplate = &ekstypes.LaunchTemplateSpecification{Id: nonEmpty(lt.ID), Name: nonEmpty(lt.Name), Version: nonEmpty(lt.Version)}
	}
	out, callErr := e.eks.UpdateNodegroupVersion(ctx, in)
	if callErr == nil {
		u, err = e.DescribeUpdate(ctx, cluster, name, sdkaws.ToString(out.Update.Id))
		return u, err == nil, err
	}
	if isCode(callErr, "InvalidParameterException") {
		return nil, false, &Error{msg: "EKS refused the update of managed node group " + strconv.Quote(name) + ": " + oneLine(errMessage(callErr)), err: callErr, input: true}
	}
	if u, err = e.InProgressUpdate(ctx, cluster, name); err == nil && u != nil {
		return u, false, nil
	}
	return nil, false, wrap(callErr, "start the update of managed node group %q", name)
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func errMessage(err error) string {
	var ae interface{ ErrorMessage() string }
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return err.Error()
}

// WaitUpdate follows an update until it ends, reading it with the polls'
// bounded backoff; each sees every read. It returns the ended update:
// Failed ones carry EKS's errors.
func (e *EKS) WaitUpdate(ctx context.Context, cluster, name, id string, each func(*ManagedUpdate)) (*ManagedUpdate, error) {
	var u *ManagedUpdate
	err := e.poll(ctx, func() (bool, error) {
		var err error
		if u, err = e.DescribeUpdate(ctx, cluster, name, id); err != nil {
			return false, err
		}
		if each != nil {
			each(u)
		}
		return !u.InProgress(), nil
	})
	return u, err
}
