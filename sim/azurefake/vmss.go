package azurefake

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// ComputeAPIVersion is the API version of the Compute resource provider
// the SDK this fake answers for scale sets sends (armcompute/v7 v7.3.0:
// "api-version", "2025-04-01" in virtualmachinescalesets_client.go).
const ComputeAPIVersion = "2025-04-01"

// NodeLabelsKey starts the line of a scale set's userData that the fake's
// kubelets read their node labels from ("node-labels=k=v,k2=v2", the
// kubelet's --node-labels): a self-managed cluster boots its kubelets from
// the model's userData, so a scale set created from another's model (a
// green) registers nodes with the same labels. userData, unlike
// customData, is returned by GET (with $expand=userData: armcompute
// ExpandTypesForGetVMScaleSetsUserData) and so can be copied.
const NodeLabelsKey = "node-labels="

// UserDataWithLabels is the base64 userData whose kubelets label their
// nodes with labels.
func UserDataWithLabels(labels map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+labels[k])
	}
	return base64.StdEncoding.EncodeToString([]byte(NodeLabelsKey + strings.Join(kv, ",") + "\n"))
}

// labelsOfUserData reads the node labels of a base64 userData.
func labelsOfUserData(ud *string) map[string]string {
	out := map[string]string{}
	if ud == nil {
		return out
	}
	raw, err := base64.StdEncoding.DecodeString(*ud)
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, NodeLabelsKey)
		if !ok {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

// The provisioning states of a scale set and its instances the fake goes
// through (armcompute types them as strings; the values are Compute's:
// https://learn.microsoft.com/en-us/azure/virtual-machines/states-billing#provisioning-states).
const (
	vmCreating  = "Creating"
	vmUpdating  = "Updating"
	vmDeleting  = "Deleting"
	vmSucceeded = "Succeeded"
)

// scaleSet is a Uniform scale set: its model as last written, the model's
// generation (each write of virtualMachineProfile is one), its instances
// and the operation running on it.
type scaleSet struct {
	group, name string
	model       armcompute.VirtualMachineScaleSet
	gen         int
	vms         []*vmssVM
	nextID      int
	op          *computeOp
}

// vmssVM is an instance: its ID, computer name (the node's name), the
// image it runs, the model generation it was made or last updated from,
// its provisioning state and its VM's unique ID.
type vmssVM struct {
	id    int
	name  string
	zone  string
	image armcompute.ImageReference
	gen   int
	state string
	vmID  string
	// labels are the node labels its kubelet registers with.
	labels map[string]string
	// protection is its protectionPolicy, nil for none.
	protection *armcompute.VirtualMachineScaleSetVMProtectionPolicy
	// created is when the scale set began creating it: the VM's
	// timeCreated (VirtualMachineScaleSetVMProperties.TimeCreated,
	// "Specifies the time at which the Virtual Machine resource was
	// created", armcompute's model).
	created time.Time
}

// ScaleSetSpec describes a scale set the fake makes as it is: its
// resource group, name, computer name prefix, capacity, zones, image and
// the labels its kubelets put on their nodes.
type ScaleSetSpec struct {
	ResourceGroup, Name, ComputerNamePrefix string
	Capacity                                int
	Zones                                   []string
	Image                                   armcompute.ImageReference
	NodeLabels                              map[string]string
	// UpgradeMode is the model's upgradePolicy.mode; default Manual.
	UpgradeMode armcompute.UpgradeMode
}

// CreateScaleSet makes a scale set of Capacity instances and their nodes,
// and waits for them to join.
func (s *Server) CreateScaleSet(ctx context.Context, spec ScaleSetSpec) error {
	mode := spec.UpgradeMode
	if mode == "" {
		mode = armcompute.UpgradeModeManual
	}
	img := spec.Image
	m := armcompute.VirtualMachineScaleSet{
		Location: to.Ptr(s.opts.Location),
		SKU:      &armcompute.SKU{Name: to.Ptr("Standard_D4s_v5"), Tier: to.Ptr("Standard"), Capacity: to.Ptr(int64(spec.Capacity))},
		Zones:    to.SliceOfPtrs(spec.Zones...),
		Properties: &armcompute.VirtualMachineScaleSetProperties{
			UpgradePolicy:     &armcompute.UpgradePolicy{Mode: to.Ptr(mode)},
			OrchestrationMode: to.Ptr(armcompute.OrchestrationModeUniform),
			VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{
				// SSH keys alone, as a self-managed cluster's nodes log in
				// (linuxConfiguration.disablePasswordAuthentication): a
				// password is never returned, so no copy of the model
				// could carry it.
				OSProfile: &armcompute.VirtualMachineScaleSetOSProfile{ComputerNamePrefix: to.Ptr(spec.ComputerNamePrefix), AdminUsername: to.Ptr("azureuser"),
					LinuxConfiguration: &armcompute.LinuxConfiguration{DisablePasswordAuthentication: to.Ptr(true),
						SSH: &armcompute.SSHConfiguration{PublicKeys: []*armcompute.SSHPublicKey{{Path: to.Ptr("/home/azureuser/.ssh/authorized_keys"), KeyData: to.Ptr("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake nodeupgrade-sim")}}}}},
				StorageProfile: &armcompute.VirtualMachineScaleSetStorageProfile{ImageReference: &img},
				UserData:       to.Ptr(UserDataWithLabels(spec.NodeLabels)),
			},
		},
	}
	s.mu.Lock()
	ss := &scaleSet{group: spec.ResourceGroup, name: spec.Name}
	s.setModelLocked(ss, m)
	s.scaleSetsLocked()[key(spec.ResourceGroup, spec.Name)] = ss
	var added []*vmssVM
	for range spec.Capacity {
		vm := s.newVMLocked(ss)
		vm.state = vmSucceeded
		added = append(added, vm)
	}
	s.mu.Unlock()
	for _, vm := range added {
		if err := s.joinVM(ctx, ss, vm); err != nil {
			return err
		}
	}
	return nil
}

// vmssState is the fake's scale sets, by resource group/name, and their
// operations, by ID.
type vmssState struct {
	sets map[string]*scaleSet
	ops  map[string]*computeOp
}

// scaleSetsLocked is the fake's scale sets, by resource group/name.
func (s *Server) scaleSetsLocked() map[string]*scaleSet {
	if s.vmss == nil {
		s.vmss = &vmssState{sets: map[string]*scaleSet{}, ops: map[string]*computeOp{}}
	}
	return s.vmss.sets
}

// setModelLocked stores a model written by PUT, with the fields Compute
// fills in: ID, name, type, provisioningState.
func (s *Server) setModelLocked(ss *scaleSet, m armcompute.VirtualMachineScaleSet) {
	m.ID, m.Name = to.Ptr(s.scaleSetID(ss.group, ss.name)), to.Ptr(ss.name)
	m.Type = to.Ptr("Microsoft.Compute/virtualMachineScaleSets")
	if m.Properties.UniqueID == nil {
		m.Properties.UniqueID = to.Ptr(s.nextIDLocked("vmss-"))
	}
	ss.model = m
	ss.gen++
}

func (s *Server) scaleSetID(group, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s", s.opts.Subscription, group, name)
}

// newVMLocked adds an instance made from the scale set's model now. Its
// computer name is the model's computerNamePrefix and the instance ID in
// base 36, six digits
// (https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-instance-ids#scale-set-vm-computer-name).
// Zones are taken in turn, as a zone-balanced scale set spreads them.
func (s *Server) newVMLocked(ss *scaleSet) *vmssVM {
	id := ss.nextID
	ss.nextID++
	prof := ss.model.Properties.VirtualMachineProfile
	num := itoa36(id)
	vm := &vmssVM{id: id, name: *prof.OSProfile.ComputerNamePrefix + strings.Repeat("0", max(6-len(num), 0)) + num,
		image: *prof.StorageProfile.ImageReference, gen: ss.gen, state: vmCreating, vmID: s.nextIDLocked("vm-"),
		labels: labelsOfUserData(prof.UserData), created: time.Now().UTC()}
	if zones := ss.model.Zones; len(zones) > 0 {
		vm.zone = *zones[id%len(zones)]
	}
	ss.vms = append(ss.vms, vm)
	return vm
}

// VMSSProviderID is the node's spec.providerID of a scale set instance, as
// the Azure cloud provider sets it (see ProviderID).
func (s *Server) VMSSProviderID(group, scaleSet string, id int) string {
	return fmt.Sprintf("azure:///subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s/virtualMachines/%d",
		s.opts.Subscription, strings.ToLower(group), scaleSet, id)
}

// joinVM makes the instance's node, as its kubelet registers it; a node
// of its name that is there already is taken over, as a kubelet does.
func (s *Server) joinVM(ctx context.Context, ss *scaleSet, vm *vmssVM) error {
	s.mu.Lock()
	zone := ""
	if vm.zone != "" {
		zone = s.opts.Location + "-" + vm.zone
	}
	node := scenario.Node{Name: vm.name, Zone: zone, Labels: maps.Clone(vm.labels), ProviderID: s.VMSSProviderID(ss.group, ss.name, vm.id)}
	s.mu.Unlock()
	return scenario.JoinNode(ctx, s.kube, node)
}

// ChangeUserData changes a scale set's model as a PATCH of its userData
// alone does: a new model (the instances not on it), the image and the
// node labels the same; line is added to the userData.
func (s *Server) ChangeUserData(group, name, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetsLocked()[key(group, name)]
	if ss == nil {
		return
	}
	m := ss.model
	props, prof := *m.Properties, *m.Properties.VirtualMachineProfile
	var raw []byte
	if prof.UserData != nil {
		raw, _ = base64.StdEncoding.DecodeString(*prof.UserData)
	}
	userData := base64.StdEncoding.EncodeToString(append(raw, []byte(line+"\n")...))
	prof.UserData, props.VirtualMachineProfile, m.Properties = &userData, &prof, &props
	ss.model = m
	ss.gen++
}

// ScaleSetInstance is what a test reads of an instance.
type ScaleSetInstance struct {
	ID                 int
	Name, State        string
	Image              string
	LatestModelApplied bool
}

// ScaleSetInstances lists a scale set's instances; false when it does not
// exist.
func (s *Server) ScaleSetInstances(group, name string) ([]ScaleSetInstance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetsLocked()[key(group, name)]
	if ss == nil {
		return nil, false
	}
	var out []ScaleSetInstance
	for _, vm := range ss.vms {
		out = append(out, ScaleSetInstance{ID: vm.id, Name: vm.name, State: vm.state, Image: ImageString(vm.image), LatestModelApplied: vm.gen == ss.gen})
	}
	return out, true
}

// ScaleSetNames lists the scale sets of a resource group.
func (s *Server) ScaleSetNames(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ss := range s.scaleSetsLocked() {
		if strings.EqualFold(ss.group, group) {
			out = append(out, ss.name)
		}
	}
	slices.Sort(out)
	return out
}

// ImageString names an image reference: its ID (a gallery image version
// or managed image), else publisher:offer:sku:version.
func ImageString(r armcompute.ImageReference) string {
	for _, id := range []*string{r.ID, r.SharedGalleryImageID, r.CommunityGalleryImageID} {
		if id != nil && *id != "" {
			return *id
		}
	}
	return strings.Join([]string{derefString(r.Publisher), derefString(r.Offer), derefString(r.SKU), derefString(r.Version)}, ":")
}

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// vmssDelay is how long Compute takes to make or delete an instance
// here; reimageDelay to reimage one (a reboot with a new OS disk, several
// times as long: the caller deletes the old Node object meanwhile, before
// the new image's kubelet registers).
func (s *Server) vmssDelay() time.Duration    { return s.opts.PollEvery }
func (s *Server) reimageDelay() time.Duration { return 10 * s.opts.PollEvery }

// ScaleSetModel names what a test compares of a scale set's model: its
// image, capacity and model generation; "" when it does not exist.
func (s *Server) ScaleSetModel(group, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetsLocked()[key(group, name)]
	if ss == nil {
		return ""
	}
	var capacity int64
	if ss.model.SKU != nil && ss.model.SKU.Capacity != nil {
		capacity = *ss.model.SKU.Capacity
	}
	var image string
	if p := ss.model.Properties; p != nil && p.VirtualMachineProfile != nil && p.VirtualMachineProfile.StorageProfile != nil && p.VirtualMachineProfile.StorageProfile.ImageReference != nil {
		image = ImageString(*p.VirtualMachineProfile.StorageProfile.ImageReference)
	}
	return fmt.Sprintf("image %s, capacity %d, generation %d", image, capacity, ss.gen)
}
