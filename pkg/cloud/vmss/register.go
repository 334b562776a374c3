package vmss

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The flags of the provider, as messages name them: --image is shared
// with gce (the target's image), --vmss names the scale set.
const (
	flagImage = "--image"
	flagGroup = "--vmss"
)

// aksAgentPoolLabel marks the nodes of an AKS agent pool, whose scale
// sets AKS owns (provider aks).
const aksAgentPoolLabel = "kubernetes.azure.com/agentpool"

func init() { cloud.Register(vmssCloud{}) }

// vmssCloud is the provider "vmss" as planning and running see it.
type vmssCloud struct{}

var (
	_ cloud.FlagBinder = vmssCloud{}
	_ cloud.Helper     = vmssCloud{}
	_ cloud.Claimer    = vmssCloud{}
)

func (vmssCloud) Name() string { return Name }

// Owns reports whether a provider ID names a scale set instance.
func (vmssCloud) Owns(providerID string) bool {
	_, ok := parseProviderID(providerID)
	return ok
}

// Claims takes the scale set instances that are no AKS agent pool's: an
// AKS node's provider ID is a scale set instance too, and aks serves it.
func (c vmssCloud) Claims(n *corev1.Node) bool {
	return c.Owns(n.Spec.ProviderID) && n.Labels[aksAgentPoolLabel] == ""
}

// Help describes the provider for --provider's help.
func (vmssCloud) Help() string {
	return "bring the instance to the scale set's latest model (manualupgrade: reimaged under its name)"
}

// BindFlags binds the provider's flags.
func (vmssCloud) BindFlags(f *cloud.Flags) {
	t := f.Target()
	f.String(&t.Image, strings.TrimPrefix(flagImage, "--"), "Compute Engine, Azure scale sets: upgrade to this image")
	f.String(&t.Group, strings.TrimPrefix(flagGroup, "--"), "Azure scale sets: the scale set of the node group (default: from the nodes' provider IDs, which also give its subscription and resource group)")
}

// scaleSetName is what Azure allows of a scale set's name: 1 to 64
// letters, digits, '-', '_' and '.', starting with a letter or digit
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/resource-name-rules#microsoftcompute).
var scaleSetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks the flags without calling Azure.
func (vmssCloud) Validate(t plan.CloudTarget) error {
	if t.Image != "" {
		r, err := ParseImage(t.Image)
		if err != nil {
			return err
		}
		if floating(r) {
			return inputErrorf("invalid %s %q: %s; name the version (publisher:offer:sku:VERSION, or the gallery image's .../versions/VERSION)", flagImage, t.Image, floatingWhy)
		}
	}
	if t.Group != "" && !scaleSetName.MatchString(t.Group) {
		return inputErrorf("invalid %s %q: want a scale set's name (1 to 64 letters, digits, '-', '_' or '.')", flagGroup, t.Group)
	}
	return nil
}

// ParseImage reads --image: an image's resource ID (a gallery image
// version, a gallery image for its latest version, which Validate refuses
// as a target (floating), or a managed image:
// /subscriptions/...), a shared or community gallery image ID
// (/SharedGalleries/..., /CommunityGalleries/...), or a marketplace
// image's publisher:offer:sku:version (armcompute.ImageReference's
// fields; "Please do not use field 'version' for gallery image
// deployment, gallery image should always use 'id' field").
func ParseImage(s string) (armcompute.ImageReference, error) {
	switch {
	case strings.HasPrefix(strings.ToLower(s), "/subscriptions/") && strings.Contains(strings.ToLower(s), "/providers/microsoft.compute/") &&
		(strings.Contains(strings.ToLower(s), "/images/")) && !strings.HasSuffix(s, "/"):
		return armcompute.ImageReference{ID: to.Ptr(s)}, nil
	case strings.HasPrefix(strings.ToLower(s), "/sharedgalleries/") && !strings.HasSuffix(s, "/"):
		return armcompute.ImageReference{SharedGalleryImageID: to.Ptr(s)}, nil
	case strings.HasPrefix(strings.ToLower(s), "/communitygalleries/") && !strings.HasSuffix(s, "/"):
		return armcompute.ImageReference{CommunityGalleryImageID: to.Ptr(s)}, nil
	}
	p := strings.Split(s, ":")
	if len(p) != 4 || slices.Contains(p, "") {
		return armcompute.ImageReference{}, inputErrorf("invalid %s %q: want an image's resource ID (/subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/galleries/GAL/images/DEF/versions/V), a /SharedGalleries/ or /CommunityGalleries/ image ID, or publisher:offer:sku:version", flagImage, s)
	}
	return armcompute.ImageReference{Publisher: to.Ptr(p[0]), Offer: to.Ptr(p[1]), SKU: to.Ptr(p[2]), Version: to.Ptr(p[3])}, nil
}

// ImageString names an image reference as --image takes it.
func ImageString(r *armcompute.ImageReference) string {
	if r == nil {
		return ""
	}
	for _, id := range []*string{r.ID, r.SharedGalleryImageID, r.CommunityGalleryImageID} {
		if id != nil && *id != "" {
			return *id
		}
	}
	return strings.Join([]string{str(r.Publisher), str(r.Offer), str(r.SKU), str(r.Version)}, ":")
}

// Open finds the nodes' scale set and resolves the target; it only
// reads.
func (vmssCloud) Open(ctx context.Context, client kubernetes.Interface, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	ids, err := scaleSetsOf(nodes, t)
	if err != nil {
		return nil, nil, err
	}
	c, err := newClients(ids[0].subscription)
	if err != nil {
		return nil, nil, err
	}
	s, m, err := openOne(ctx, c, ids)
	if err != nil {
		return nil, nil, err
	}
	s.kube = client
	if m == nil {
		return nil, nil, &Error{Msg: "scale set " + quote(s.name) + " not found in resource group " + quote(s.group) + "; check " + flagGroup, Err: cloud.ErrGroupNotFound, IsInput: true}
	}
	if err := checkModel(m); err != nil {
		return nil, nil, err
	}
	if s.target, err = targetOf(m, t.Image); err != nil {
		return nil, nil, err
	}
	if t.Strategy == plan.StrategyBlueGreen {
		if err := greenCopyRefusal(m); err != nil {
			return nil, nil, err
		}
	}
	cg, err := s.cloudGroup(ctx, m, nodes)
	if err == nil && t.Strategy == plan.StrategyBlueGreen {
		cg.Notes = append(cg.Notes, greenCopyNotes(m)...)
	}
	return cg, s, err
}

func quote(s string) string { return `"` + s + `"` }

// openOne reads the one scale set of ids that exists: the nodes of a
// scale set deleted a moment ago (blue/green's green, by abort) stay
// until the cloud node controller deletes them.
func openOne(ctx context.Context, c *clients, ids []resourceID) (*ScaleSet, *armcompute.VirtualMachineScaleSet, error) {
	var found []*ScaleSet
	var model *armcompute.VirtualMachineScaleSet
	for _, id := range ids {
		s := &ScaleSet{c: c, sub: id.subscription, group: id.group, name: id.scaleSet}
		m, err := s.get(ctx, s.name)
		if err != nil {
			return nil, nil, err
		}
		if m != nil || len(ids) == 1 {
			found, model = append(found, s), m
		}
	}
	switch {
	case len(found) == 0:
		return nil, nil, &Error{Msg: fmt.Sprintf("none of the nodes' scale sets (%s) exists", joinIDs(ids)), Err: cloud.ErrGroupNotFound, IsInput: true}
	case len(found) > 1:
		return nil, nil, inputErrorf("the nodes belong to scale sets %s; narrow the nodes with --selector or name one with %s", joinIDs(ids), flagGroup)
	}
	return found[0], model, nil
}

func joinIDs(ids []resourceID) string {
	var out []string
	for _, id := range ids {
		out = append(out, quote(id.String()))
	}
	return strings.Join(out, ", ")
}

// scaleSetsOf finds the scale sets of the nodes (those of the scale sets
// t.Exclude names left out), or the one --vmss names in their resource
// group. A node of an AKS agent pool is refused: AKS owns it.
func scaleSetsOf(nodes []corev1.Node, t plan.CloudTarget) ([]resourceID, error) {
	exclude := strings.Split(strings.Join(t.Exclude, ","), ",")
	var found []resourceID
	for i := range nodes {
		if pool := nodes[i].Labels[aksAgentPoolLabel]; pool != "" {
			return nil, &Error{Msg: "node " + quote(nodes[i].Name) + " belongs to AKS agent pool " + quote(pool) + ", whose scale set AKS manages; use --provider aks", Err: cloud.ErrManaged, IsInput: true}
		}
		id, ok := parseProviderID(nodes[i].Spec.ProviderID)
		if !ok || slices.Contains(exclude, id.scaleSet) {
			continue
		}
		id.instance = ""
		if t.Group != "" {
			id.scaleSet = t.Group
		}
		if !slices.ContainsFunc(found, func(f resourceID) bool { return strings.EqualFold(f.String(), id.String()) }) {
			found = append(found, id)
		}
	}
	if len(found) == 0 {
		return nil, &Error{Msg: "the nodes have no azure:// scale set provider IDs to find their scale set from", Err: cloud.ErrNoGroup, IsInput: true}
	}
	for _, f := range found[1:] {
		if !strings.EqualFold(f.subscription, found[0].subscription) {
			return nil, inputErrorf("the nodes' scale sets are in subscriptions %q and %q; narrow the nodes with --selector", found[0].subscription, f.subscription)
		}
	}
	return found, nil
}

// String names a scale set by resource group and name.
func (r resourceID) String() string { return r.group + "/" + r.scaleSet }

// checkModel refuses scale sets the run cannot drive instance by
// instance: a Flexible one (its instances are VMs of their own, without
// the instance IDs of Uniform's API), and one whose upgradePolicy.mode is
// not Manual, which Compute updates by itself once the model changes
// ("Automatic - All virtual machines in the scale set are automatically
// updated at the same time", armcompute UpgradeModeAutomatic; Rolling
// "in batches"), nobody draining them.
func checkModel(m *armcompute.VirtualMachineScaleSet) error {
	p := m.Properties
	if p == nil || p.VirtualMachineProfile == nil || p.VirtualMachineProfile.StorageProfile == nil || m.SKU == nil || m.SKU.Capacity == nil {
		return inputErrorf("scale set %q has no virtual machine profile or capacity to upgrade", str(m.Name))
	}
	if p.OrchestrationMode != nil && *p.OrchestrationMode == armcompute.OrchestrationModeFlexible {
		return inputErrorf("scale set %q has orchestration mode Flexible; the vmss provider upgrades Uniform scale sets only", str(m.Name))
	}
	if mode := upgradeMode(m); mode != armcompute.UpgradeModeManual {
		return inputErrorf("scale set %q has upgradePolicy.mode %s: Compute would replace its instances itself, undrained, once the run changes the model; set it to Manual for the run (az vmss update --name %s --resource-group RG --set upgradePolicy.mode=Manual)", str(m.Name), mode, str(m.Name))
	}
	return nil
}

// upgradeMode is the model's upgradePolicy.mode, Manual when unset (the
// API's default).
func upgradeMode(m *armcompute.VirtualMachineScaleSet) armcompute.UpgradeMode {
	if p := m.Properties; p != nil && p.UpgradePolicy != nil && p.UpgradePolicy.Mode != nil {
		return *p.UpgradePolicy.Mode
	}
	return armcompute.UpgradeModeManual
}

// targetOf is the image the run moves the instances to: --image, or the
// model's, which must name a fixed version (see floating).
func targetOf(m *armcompute.VirtualMachineScaleSet, image string) (armcompute.ImageReference, error) {
	if image != "" {
		return ParseImage(image)
	}
	r := m.Properties.VirtualMachineProfile.StorageProfile.ImageReference
	switch {
	case r == nil:
		return armcompute.ImageReference{}, inputErrorf("scale set %q names no image in its model; give %s", str(m.Name), flagImage)
	case floating(*r):
		return armcompute.ImageReference{}, inputErrorf("scale set %q's model names image %q: %s; give %s with the version to upgrade to", str(m.Name), ImageString(r), floatingWhy, flagImage)
	}
	return *r, nil
}

// floatingWhy says why an image without a fixed version cannot be a
// target: Azure picks the version when it creates or reimages each
// instance, and records it in the instance's
// storageProfile.imageReference.exactVersion (armcompute
// ImageReference.ExactVersion: "the version of platform image or
// marketplace image used to create the virtual machine. This readonly
// field differs from 'version', only if the value specified in 'version'
// field is 'latest'"), so instances made at different times run
// different versions under one name.
const floatingWhy = "a version Azure resolves anew for each instance (\"latest\", or a gallery image without a version), so the run cannot tell which instances run it (each instance's exactVersion is its own)"

// floating reports whether an image reference names no fixed version: a
// marketplace image at version "latest", or a gallery image (by resource,
// shared or community ID) without /versions/, which Azure resolves to
// the gallery image's latest version. A managed image's ID is one image.
func floating(r armcompute.ImageReference) bool {
	for _, id := range []*string{r.ID, r.SharedGalleryImageID, r.CommunityGalleryImageID} {
		if l := strings.ToLower(str(id)); l != "" {
			gallery := r.ID == nil || strings.Contains(l, "/providers/microsoft.compute/galleries/")
			return gallery && !strings.Contains(l, "/versions/")
		}
	}
	return strings.EqualFold(str(r.Version), "latest")
}

// get reads a scale set's model with its userData (which a green copies),
// nil when it does not exist.
func (s *ScaleSet) get(ctx context.Context, name string) (*armcompute.VirtualMachineScaleSet, error) {
	r, err := s.c.sets.Get(ctx, s.group, name, &armcompute.VirtualMachineScaleSetsClientGetOptions{Expand: to.Ptr(armcompute.ExpandTypesForGetVMScaleSetsUserData)})
	if status(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "get scale set %q in resource group %q", name, s.group)
	}
	return &r.VirtualMachineScaleSet, nil
}
