package vmss

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// ScaleSet is a node group backed by one Uniform scale set: the provider
// "vmss" of a run.
type ScaleSet struct {
	c    *clients
	kube kubernetes.Interface
	// sub, group and name name the scale set, blue's in a blue/green run.
	sub, group, name string
	// target is the image the run moves the instances to.
	target armcompute.ImageReference
	// greens are the scale sets Machines reports too (blue/green).
	greens []string
	// overprovision: the scale set overprovisions (overprovision.go).
	overprovision bool
	// before is the model's image Setup replaced, for a scale-up refused
	// for the quota to put back (see undoSetup); nil when Setup found the
	// target.
	before *armcompute.ImageReference
}

var (
	_ cloud.Scaler    = (*ScaleSet)(nil)
	_ cloud.BlueGreen = (*ScaleSet)(nil)
)

// Name implements cloud.Provider.
func (s *ScaleSet) Name() string { return Name }

// GroupName implements cloud.Pool.
func (s *ScaleSet) GroupName() string { return s.name }

// Describe implements cloud.Provider.
func (s *ScaleSet) Describe() string {
	return "bring the instance to the scale set's latest model (manualupgrade: reimaged under its name; its old Node object is deleted)"
}

// cloudGroup is the plan's view of the scale set.
func (s *ScaleSet) cloudGroup(ctx context.Context, m *armcompute.VirtualMachineScaleSet, nodes []corev1.Node) (*plan.CloudGroup, error) {
	ptrs := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		ptrs[i] = &nodes[i]
	}
	s.overprovision = overprovisions(m)
	ins, err := s.instances(ctx, append([]string{s.name}, s.greens...))
	if err != nil {
		return nil, err
	}
	byNode, pending := mapNodes(ins, ptrs), pendingOf(ins, ptrs)
	target := ImageString(&s.target)
	cg := &plan.CloudGroup{
		GroupID: plan.GroupID{Provider: Name, Region: str(m.Location), Group: s.name, GroupKind: "scale set",
			Template: s.group, TemplateKind: "scale set model in resource group", MachineKind: "instance"},
		Launches: plan.Launches{CurrentVersion: ImageString(m.Properties.VirtualMachineProfile.StorageProfile.ImageReference),
			TargetVersion: target, TargetImage: target},
		TemplateKey: "resource-group", VersionKey: "image",
		Sizes: capacitySizes(*m.SKU.Capacity), TargetSizeOnly: true, Nodes: byNode, Unjoined: pending,
		Green: s.GreenName(target), Findings: protectedFindings(ins, ptrs),
	}
	cg.LaunchesAfter = fmt.Sprintf("%s; upgradePolicy.mode %s", target, upgradeMode(m))
	if s.overprovision {
		cg.Notes = append(cg.Notes, overprovisionNote(m, s.group))
	}
	return cg, nil
}

// capacitySizes are a capacity as plan.Sizes: a scale set has no min or
// max of its own.
func capacitySizes(c int64) plan.Sizes {
	return plan.Sizes{Desired: int32(c), Max: int32(c)}
}

// mustGet reads a scale set that must exist.
func (s *ScaleSet) mustGet(ctx context.Context, name string) (*armcompute.VirtualMachineScaleSet, error) {
	m, err := s.get(ctx, name)
	if err == nil && m == nil {
		err = &Error{Msg: fmt.Sprintf("scale set %q not found in resource group %q", name, s.group), Err: cloud.ErrGroupNotFound}
	}
	return m, err
}

// Sizes implements cloud.Pool.
func (s *ScaleSet) Sizes(ctx context.Context) (plan.Sizes, error) { return s.GroupSizes(ctx, s.name) }

// instance is a scale set's instance with its scale set's name and
// resource group.
type instance struct {
	group, set string
	vm         *armcompute.VirtualMachineScaleSetVM
	// surplus marks an extra instance of overprovisioning (markSurplus).
	surplus bool
}

// instances lists the instances of scale sets; those of one that
// overprovisions past its capacity marked (markSurplus).
func (s *ScaleSet) instances(ctx context.Context, sets []string) ([]instance, error) {
	var out []instance
	for _, set := range sets {
		ins, err := s.setInstances(ctx, set)
		if err != nil {
			return nil, err
		}
		if s.overprovision && len(ins) > 0 {
			m, err := s.get(ctx, set)
			if err != nil {
				return nil, err
			}
			if m != nil && m.SKU != nil && m.SKU.Capacity != nil {
				markSurplus(ins, *m.SKU.Capacity)
			}
		}
		out = append(out, ins...)
	}
	return out, nil
}

// setInstances lists one scale set's instances; none of one deleted.
func (s *ScaleSet) setInstances(ctx context.Context, set string) ([]instance, error) {
	var out []instance
	pg := s.c.vms.NewListPager(s.group, set, nil)
	for pg.More() {
		page, err := pg.NextPage(ctx)
		if status(err) == http.StatusNotFound {
			return nil, nil // a green deleted already
		}
		if err != nil {
			return nil, wrap(err, "list the instances of scale set %q", set)
		}
		for _, vm := range page.Value {
			out = append(out, instance{group: s.group, set: set, vm: vm})
		}
	}
	return out, nil
}

// Machines implements cloud.Pool: instances joined to nodes by provider
// ID, those no node stands for pending.
func (s *ScaleSet) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	ins, err := s.instances(ctx, append([]string{s.name}, s.greens...))
	if err != nil {
		return nil, nil, err
	}
	return mapNodes(ins, nodes), pendingOf(ins, nodes), nil
}

// key names an instance as a node's provider ID does: scale set (lower
// case, as ARM names are) and instance ID.
func key(set, id string) string { return lower(set) + "/" + id }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func mapNodes(ins []instance, nodes []*corev1.Node) map[string]plan.Machine {
	byKey := map[string]instance{}
	for _, in := range ins {
		byKey[key(in.set, str(in.vm.InstanceID))] = in
	}
	out := map[string]plan.Machine{}
	for _, n := range nodes {
		if id, ok := parseProviderID(n.Spec.ProviderID); ok {
			if in, ok := byKey[key(id.scaleSet, id.instance)]; ok {
				out[n.Name] = machine(in)
			}
		}
	}
	return out
}

func pendingOf(ins []instance, nodes []*corev1.Node) []plan.Machine {
	joined := map[string]bool{}
	for _, n := range nodes {
		if id, ok := parseProviderID(n.Spec.ProviderID); ok {
			joined[key(id.scaleSet, id.instance)] = true
		}
	}
	var out []plan.Machine
	for _, in := range ins {
		if !joined[key(in.set, str(in.vm.InstanceID))] {
			out = append(out, machine(in))
		}
	}
	slices.SortFunc(out, func(a, b plan.Machine) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// staleModel marks the version of an instance whose latestModelApplied
// is false: outdated whatever its image.
const staleModel = " (not the latest model)"

// machine is an instance in neutral terms: its version is its image,
// marked when it runs an older model than the scale set's; its state
// from its provisioning state.
func machine(in instance) plan.Machine {
	p := in.vm.Properties
	m := plan.Machine{ID: in.set + "/" + str(in.vm.InstanceID), Template: in.group}
	if len(in.vm.Zones) > 0 {
		// The node's topology.kubernetes.io/zone: region and zone
		// (https://learn.microsoft.com/en-us/azure/aks/availability-zones#verify-node-distribution-across-zones).
		m.Zone = str(in.vm.Location) + "-" + str(in.vm.Zones[0])
	}
	if p == nil {
		return m
	}
	if p.StorageProfile != nil {
		m.Version = ImageString(exact(p.StorageProfile.ImageReference))
		m.Image = m.Version
	}
	if p.LatestModelApplied != nil && !*p.LatestModelApplied {
		m.Version += staleModel
	}
	if p.TimeCreated != nil {
		// From the VM's creation to its node's Ready is the whole of a
		// join (plan.MachineJoinPace), boot included.
		m.Launched = *p.TimeCreated
	}
	m.Lifecycle = str(p.ProvisioningState)
	switch {
	case in.surplus:
		m.State, m.Lifecycle = plan.MachineLeaving, m.Lifecycle+" (an extra instance of overprovisioning)"
		return m
	}
	switch m.Lifecycle {
	case "Deleting":
		m.State = plan.MachineLeaving
	case "Succeeded":
		m.State = plan.MachineInService
	default:
		m.State = plan.MachinePending
	}
	return m
}

// exact is an instance's image reference with the version it runs: a
// marketplace image made from "latest" reports that version in
// exactVersion (see floatingWhy), which is what the target is compared
// with.
func exact(r *armcompute.ImageReference) *armcompute.ImageReference {
	if r == nil || !strings.EqualFold(str(r.Version), "latest") || str(r.ExactVersion) == "" {
		return r
	}
	c := *r
	c.Version = c.ExactVersion
	return &c
}

// Current implements cloud.Pool.
func (s *ScaleSet) Current(m plan.Machine, version string) bool {
	return m.Version == version && !m.Leaving()
}

// Setup implements cloud.Scaler: the model's image becomes the target (a
// PATCH of its imageReference alone), once.
func (s *ScaleSet) Setup(ctx context.Context) (string, error) {
	version := ImageString(&s.target)
	err := s.retry(ctx, "point scale set "+quote(s.name)+" at image "+quote(version), func() (bool, error) {
		m, err := s.mustGet(ctx, s.name)
		if err != nil {
			return true, err
		}
		img := m.Properties.VirtualMachineProfile.StorageProfile.ImageReference
		if ImageString(img) == version {
			return true, nil
		}
		if s.before == nil && img != nil {
			prev := *img
			s.before = &prev
		}
		return false, s.patch(ctx, s.name, imagePatch(s.target))
	})
	return version, err
}

// imagePatch is the PATCH of a scale set model's imageReference alone.
func imagePatch(img armcompute.ImageReference) armcompute.VirtualMachineScaleSetUpdate {
	return armcompute.VirtualMachineScaleSetUpdate{Properties: &armcompute.VirtualMachineScaleSetUpdateProperties{
		VirtualMachineProfile: &armcompute.VirtualMachineScaleSetUpdateVMProfile{StorageProfile: &armcompute.VirtualMachineScaleSetUpdateStorageProfile{ImageReference: &img}}}}
}

// refusedScaleUp ends a scale-up Compute refused for its quota or
// capacity (azarm.LaunchRefused): no instance was added and the run has
// drained nothing yet, so it stops there with NodeCreationFailure (exit
// 7), naming Compute's code and words and whether undoSetup put the model
// back at the image it had.
func refusedScaleUp(name string, n int64, putBack *armcompute.ImageReference, code, msg string, cause error) error {
	done := "no instance was added and no node drained"
	if putBack != nil {
		done += fmt.Sprintf("; the model is back at image %q", ImageString(putBack))
	}
	fix := "use another VM size or zone, or free the capacity, then run again"
	if azarm.QuotaExceeded(cause) {
		fix = "free vCPUs or ask for more quota (plan and check read it), or lower --max-surge, then run again"
	}
	return azarm.NodeCreationFailure(code, msg, fmt.Sprintf("cannot raise scale set %q to %d instances", name, n), done+": "+fix)
}

// undoSetup puts the model back at the image Setup found, after Compute
// refused the scale-up for the quota (cause) before any instance came
// from the target: the refused start leaves the scale set as it was, so
// that its autoscaler or a repair launches no instance of an image no
// run is rolling out. An instance already on the target keeps the model
// where it is, for the run to go on from.
func (s *ScaleSet) undoSetup(ctx context.Context, name string, cause error) error {
	if s.before == nil || !strings.EqualFold(name, s.name) {
		return cause
	}
	ins, err := s.instances(ctx, []string{name})
	if err != nil {
		return cause
	}
	for _, in := range ins {
		if machine(in).Version == ImageString(&s.target) {
			return cause
		}
	}
	if err := s.patch(ctx, name, imagePatch(*s.before)); err != nil {
		return fmt.Errorf("%w; and cannot put scale set %q back at image %q: %v", cause, name, ImageString(s.before), err)
	}
	s.before = nil
	return cause
}

// patch sends a PATCH and waits for it.
func (s *ScaleSet) patch(ctx context.Context, name string, up armcompute.VirtualMachineScaleSetUpdate) error {
	p, err := s.c.sets.BeginUpdate(ctx, s.group, name, up, nil)
	if err != nil {
		return wrap(err, "update scale set %q", name)
	}
	return wait(ctx, s.c, p, "the update of scale set "+quote(name))
}

// retry does one write until done says the cloud holds what it is for:
// done is asked first (a re-run, or an answer lost after the write was
// carried out), and again after a write that failed with what passes
// (throttling, 5xx, 409 while the scale set is busy with an earlier
// operation).
func (s *ScaleSet) retry(ctx context.Context, what string, step func() (done bool, err error)) error {
	for failures := 0; ; {
		done, err := step()
		switch {
		case done:
			return err
		case err != nil && !cloud.Transient(err):
			return err
		case err != nil:
			failures++
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot %s: %w", what, ctx.Err())
		case <-time.After(cloud.Backoff(s.c.pollEvery, failures)):
		}
	}
}

// SetMax implements cloud.Scaler: a scale set has no max.
func (s *ScaleSet) SetMax(context.Context, int32) error { return nil }

// SetDesiredAndMax implements cloud.Scaler: the capacity (see resize).
func (s *ScaleSet) SetDesiredAndMax(ctx context.Context, desired, _ int32) error {
	return s.resize(ctx, s.name, int64(desired))
}

// resize brings a scale set's capacity to n: up by a PATCH of
// sku.capacity; down by DeleteInstances of instances the run picks (see
// victims), never by a lower capacity, with which Compute's scale-in
// policy would pick them, a node nobody drained maybe among them.
func (s *ScaleSet) resize(ctx context.Context, name string, n int64) error {
	return s.retry(ctx, fmt.Sprintf("resize scale set %q to %d", name, n), func() (bool, error) {
		m, err := s.mustGet(ctx, name)
		if err != nil {
			return false, err
		}
		switch c := *m.SKU.Capacity; {
		case c == n:
			return true, nil
		case c < n:
			err := s.patch(ctx, name, armcompute.VirtualMachineScaleSetUpdate{SKU: &armcompute.SKU{Capacity: to.Ptr(n)}})
			if code, msg, refused := azarm.LaunchRefusal(err); refused {
				had := s.before
				if uerr := s.undoSetup(ctx, name, err); uerr != err {
					return false, uerr
				}
				if s.before != nil {
					had = nil // the model was not put back
				}
				return false, refusedScaleUp(name, n, had, code, msg, err)
			}
			return false, err
		}
		ins, err := s.instances(ctx, []string{name})
		if err != nil {
			return false, err
		}
		return false, s.deleteInstances(ctx, name, victims(ins, ImageString(&s.target), int(*m.SKU.Capacity-n)))
	})
}

// victims are the n instances a scale-down deletes: those not on the
// target (version) before those that are, not yet in service before
// those that are, the highest instance ID first; never one leaving.
func victims(ins []instance, version string, n int) []string {
	var cands []plan.Machine
	for _, in := range ins {
		if m := machine(in); !m.Leaving() {
			m.ID = str(in.vm.InstanceID)
			cands = append(cands, m)
		}
	}
	rank := func(m plan.Machine) int {
		r := 0
		if m.Version == version {
			r += 2
		}
		if m.State == plan.MachineInService {
			r++
		}
		return r
	}
	slices.SortStableFunc(cands, func(a, b plan.Machine) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		na, _ := strconv.Atoi(a.ID)
		nb, _ := strconv.Atoi(b.ID)
		return cmp.Compare(nb, na)
	})
	var out []string
	for _, m := range cands[:min(n, len(cands))] {
		out = append(out, m.ID)
	}
	return out
}

// deleteInstances deletes instances, lowering the capacity by as many
// (DeleteInstances), and waits for it.
func (s *ScaleSet) deleteInstances(ctx context.Context, name string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	p, err := s.c.sets.BeginDeleteInstances(ctx, s.group, name, armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: to.SliceOfPtrs(ids...)}, nil)
	if status(err) == http.StatusNotFound {
		return nil // gone already (an answer lost after the call was done): the caller looks again
	}
	if err != nil {
		return wrap(err, "delete instances %v of scale set %q", ids, name)
	}
	return wait(ctx, s.c, p, fmt.Sprintf("the deletion of instances %v of scale set %q", ids, name))
}

// nodeInstance reads a node: its scale set, instance ID and UID; an empty
// set when the node is gone.
func (s *ScaleSet) nodeInstance(ctx context.Context, node string) (set, id, uid string, err error) {
	obj, err := s.kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", "", "", nil
	}
	if err != nil {
		return "", "", "", fmt.Errorf("error when reading node %q: %w", node, err)
	}
	rid, ok := parseProviderID(obj.Spec.ProviderID)
	if !ok {
		return "", "", "", fmt.Errorf("node %q has no scale set instance in its provider ID %q", node, obj.Spec.ProviderID)
	}
	return rid.scaleSet, rid.instance, string(obj.UID), nil
}

// instanceState is an instance's provisioning state, whether it runs
// the latest model on the target (current) and the latest model
// whatever its image; "" when it is gone.
func (s *ScaleSet) instanceState(ctx context.Context, set, id string) (state string, current, latest bool, err error) {
	r, err := s.c.vms.Get(ctx, s.group, set, id, nil)
	if status(err) == http.StatusNotFound {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, wrap(err, "get instance %s of scale set %q", id, set)
	}
	m := machine(instance{group: s.group, set: set, vm: &r.VirtualMachineScaleSetVM})
	return m.Lifecycle, m.Version == ImageString(&s.target), !strings.HasSuffix(m.Version, staleModel), nil
}

// Shrink implements cloud.Shrinker: DeleteInstances of the node's
// instance, which lowers the capacity; once, however often it is asked.
func (s *ScaleSet) Shrink(ctx context.Context, node string) error {
	set, id, _, err := s.nodeInstance(ctx, node)
	if err != nil || set == "" {
		return err
	}
	return s.retry(ctx, fmt.Sprintf("delete instance %s of node %q", id, node), func() (bool, error) {
		state, _, _, err := s.instanceState(ctx, set, id)
		switch {
		case err != nil:
			return false, err
		case state == "":
			return true, nil
		case state == "Deleting":
			return false, nil // under way: look again
		}
		return false, s.deleteInstances(ctx, set, []string{id})
	})
}

// RemoveNode implements cloud.Remover: the instance is brought to the
// scale set's latest model (manualupgrade). That reimages it under its
// instance ID and computer name only when the model changed its image;
// any other model change is applied to the running machine, whose
// kubelet goes on and never registers anew ("Modify a Virtual Machine
// Scale Set":
// https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-scale-set),
// so an instance already on the target image is then reimaged
// explicitly (reimage), as the strategy needs a new machine. Its Node
// object, drained and cordoned, is deleted once a reimage is under way
// (by UID, so never one the new kubelet registers), or the kubelet would
// take it over, cordon included; never for an update that reimages
// nothing, whose kubelet would not bring it back.
func (s *ScaleSet) RemoveNode(ctx context.Context, node string) error {
	set, id, uid, err := s.nodeInstance(ctx, node)
	if err != nil || set == "" {
		return err
	}
	r, err := s.c.vms.Get(ctx, s.group, set, id, nil)
	if status(err) == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return wrap(err, "get instance %s of scale set %q", id, set)
	}
	onTarget := machine(instance{group: s.group, set: set, vm: &r.VirtualMachineScaleSetVM}).Image == ImageString(&s.target)
	if err := s.updateInstance(ctx, node, set, id, uid, !onTarget); err != nil || !onTarget {
		return err
	}
	return s.reimage(ctx, node, set, id, uid)
}

// updateInstance brings the instance to the latest model, once; its Node
// is deleted when the update reimages it.
func (s *ScaleSet) updateInstance(ctx context.Context, node, set, id, uid string, reimages bool) error {
	deleteNode := func() error {
		if !reimages {
			return nil
		}
		return s.deleteNode(ctx, node, uid)
	}
	return s.retry(ctx, fmt.Sprintf("update instance %s of node %q to the latest model", id, node), func() (bool, error) {
		state, current, latest, err := s.instanceState(ctx, set, id)
		switch {
		case err != nil:
			return false, err
		case state == "" || latest && state == "Succeeded" && (current || !reimages):
			// Done: a Node object of uid now is the new image's kubelet's,
			// which took it over.
			return true, nil
		case state == "Updating":
			return false, deleteNode() // under way: look again
		}
		p, err := s.c.sets.BeginUpdateInstances(ctx, s.group, set, armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr(id)}}, nil)
		if status(err) == http.StatusNotFound {
			return false, nil // gone meanwhile: look again
		}
		if err != nil {
			return false, wrap(err, "update instance %s of scale set %q", id, set)
		}
		if err := deleteNode(); err != nil {
			return false, err
		}
		return false, wait(ctx, s.c, p, fmt.Sprintf("the update of instance %s of scale set %q", id, set))
	})
}

// reimage reimages the instance on its image, once, its Node deleted
// when the reimage is under way (VirtualMachineScaleSetsClient.BeginReimage).
func (s *ScaleSet) reimage(ctx context.Context, node, set, id, uid string) error {
	started := false
	return s.retry(ctx, fmt.Sprintf("reimage instance %s of node %q", id, node), func() (bool, error) {
		state, _, _, err := s.instanceState(ctx, set, id)
		switch {
		case err != nil:
			return false, err
		case state == "" || started && state == "Succeeded":
			return true, nil
		case started:
			return false, s.deleteNode(ctx, node, uid) // under way: look again
		}
		p, err := s.c.sets.BeginReimage(ctx, s.group, set, &armcompute.VirtualMachineScaleSetsClientBeginReimageOptions{
			VMScaleSetReimageInput: &armcompute.VirtualMachineScaleSetReimageParameters{InstanceIDs: []*string{to.Ptr(id)}}})
		if status(err) == http.StatusNotFound {
			return false, nil // gone meanwhile: look again
		}
		if err != nil {
			return false, wrap(err, "reimage instance %s of scale set %q", id, set)
		}
		started = true
		if err := s.deleteNode(ctx, node, uid); err != nil {
			return false, err
		}
		return false, wait(ctx, s.c, p, fmt.Sprintf("the reimage of instance %s of scale set %q", id, set))
	})
}

// deleteNode deletes the Node object of uid; one gone or of another UID
// is left.
func (s *ScaleSet) deleteNode(ctx context.Context, node, uid string) error {
	err := s.kube.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(uid)})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("error when deleting node %q of reimaged instance: %w", node, err)
	}
	return nil
}
