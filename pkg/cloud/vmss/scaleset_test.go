package vmss

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func planTarget(image string) plan.CloudTarget { return plan.CloudTarget{Image: image} }

// TestOpenReadsTheScaleSet: Open finds the nodes' scale set, reads its
// model and instances into the plan's group, and refuses, naming what
// to change, the scale sets it cannot drive.
func TestOpenReadsTheScaleSet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(m *armcompute.VirtualMachineScaleSet, nodes []corev1.Node, tg *plan.CloudTarget)
		is     error
		want   string
	}{
		{name: "a Manual Uniform scale set"},
		{name: "--vmss names one that does not exist", change: func(_ *armcompute.VirtualMachineScaleSet, _ []corev1.Node, tg *plan.CloudTarget) { tg.Group = "other" },
			is: cloud.ErrGroupNotFound, want: `scale set "other" not found in resource group "rg"; check --vmss`},
		{name: "Flexible", change: func(m *armcompute.VirtualMachineScaleSet, _ []corev1.Node, _ *plan.CloudTarget) {
			m.Properties.OrchestrationMode = to.Ptr(armcompute.OrchestrationModeFlexible)
		}, want: "orchestration mode Flexible"},
		{name: "Automatic", change: func(m *armcompute.VirtualMachineScaleSet, _ []corev1.Node, _ *plan.CloudTarget) {
			m.Properties.UpgradePolicy.Mode = to.Ptr(armcompute.UpgradeModeAutomatic)
		}, want: "upgradePolicy.mode=Manual"},
		{name: "no image anywhere", change: func(m *armcompute.VirtualMachineScaleSet, _ []corev1.Node, tg *plan.CloudTarget) {
			m.Properties.VirtualMachineProfile.StorageProfile.ImageReference, tg.Image = nil, ""
		}, want: "names no image in its model; give --image"},
		{name: "an AKS node", change: func(_ *armcompute.VirtualMachineScaleSet, nodes []corev1.Node, _ *plan.CloudTarget) {
			nodes[0].Labels = map[string]string{aksAgentPoolLabel: "pool1"}
		}, is: cloud.ErrManaged, want: "use --provider aks"},
		{name: "no scale set provider ID", change: func(_ *armcompute.VirtualMachineScaleSet, nodes []corev1.Node, _ *plan.CloudTarget) {
			for i := range nodes {
				nodes[i].Spec.ProviderID = "aws:///us-east-1a/i-0abc"
			}
		}, is: cloud.ErrNoGroup, want: "no azure:// scale set provider IDs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newComputeServer(t)
			m := f.addSet("ng", oldImage, 2)
			nodes := []corev1.Node{*scaleSetNode("ng", "0"), *scaleSetNode("ng", "1")}
			tg := planTarget(newImage)
			if tc.change != nil {
				tc.change(m, nodes, &tg)
			}
			cg, p, err := (vmssCloud{}).Open(context.Background(), fake.NewClientset(), nodes, tg)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("Open: %v, want an error with %q (%v)", err, tc.want, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cg.Group != "ng" || cg.CurrentVersion != oldImage || cg.TargetVersion != newImage || len(cg.Nodes) != 2 || len(cg.Unjoined) != 0 ||
				cg.Sizes != (plan.Sizes{Desired: 2, Max: 2}) || cg.Region != "westeurope" || !strings.HasPrefix(cg.Green, "ng-g") {
				t.Errorf("group %+v", cg)
			}
			if p.Name() != Name || p.(*ScaleSet).GroupName() != "ng" || p.(*ScaleSet).Describe() == "" {
				t.Errorf("provider %+v", p)
			}
		})
	}
}

// TestOpenRefusesTwoScaleSets: nodes of two scale sets are refused,
// naming both and how to narrow them; those of a green the run was told
// to leave out (Exclude) are not counted.
func TestOpenRefusesTwoScaleSets(t *testing.T) {
	f := newComputeServer(t)
	f.addSet("ng", oldImage, 1)
	f.addSet("ng2", oldImage, 1)
	nodes := []corev1.Node{*scaleSetNode("ng", "0"), *scaleSetNode("ng2", "0")}
	_, _, err := (vmssCloud{}).Open(context.Background(), fake.NewClientset(), nodes, planTarget(""))
	if err == nil || !strings.Contains(err.Error(), `"rg/ng", "rg/ng2"`) || !strings.Contains(err.Error(), "--selector") {
		t.Errorf("Open on two scale sets: %v", err)
	}
	tg := planTarget("")
	tg.Exclude = []string{"ng2"}
	if cg, _, err := (vmssCloud{}).Open(context.Background(), fake.NewClientset(), nodes, tg); err != nil || cg.Group != "ng" || cg.TargetVersion != oldImage {
		t.Errorf("Open with ng2 excluded: %+v, %v; want ng on its own image", cg, err)
	}
}

// TestARunOnTheScaleSet drives the steps of a surge run against the
// server: the model pointed at the target once, the capacity raised
// (the new instance pending until its node joins), an old instance
// brought to the latest model (reimaged: its Node deleted), one already
// on the target reimaged explicitly, a drained node's instance deleted,
// and a scale-down deleting the instances the run picks.
func TestARunOnTheScaleSet(t *testing.T) {
	f := newComputeServer(t)
	f.addSet("ng", oldImage, 3)
	s, kube := openScaleSet(t, f, "ng", newImage)
	ctx := context.Background()
	for range 2 {
		if v, err := s.Setup(ctx); err != nil || v != newImage {
			t.Fatalf("Setup: %q, %v", v, err)
		}
	}
	if got := f.writes(); !slices.Equal(got, []string{"PATCH ng/"}) {
		t.Errorf("writes after two Setups: %v, want one PATCH", got)
	}
	if err := s.SetDesiredAndMax(ctx, 4, 4); err != nil {
		t.Fatal(err)
	}
	nodes := nodePtrs(t, kube)
	byNode, pending, err := s.Machines(ctx, nodes)
	if err != nil || len(byNode) != 3 || len(pending) != 1 || pending[0].ID != "ng/3" || !s.Current(pending[0], newImage) {
		t.Fatalf("Machines: %v, pending %+v, %v", byNode, pending, err)
	}
	if m := byNode["ng000000"]; s.Current(m, newImage) || !strings.HasSuffix(m.Version, staleModel) || m.State != plan.MachineInService {
		t.Errorf("an old instance: %+v, want outdated by its model", m)
	}
	_ = kube.Tracker().Add(scaleSetNode("ng", "3"))
	for _, node := range []string{"ng000000", "ng000003"} {
		if err := s.RemoveNode(ctx, node); err != nil {
			t.Fatalf("RemoveNode(%s): %v", node, err)
		}
		if _, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("node %s after RemoveNode: %v, want it deleted for its reimage", node, err)
		}
	}
	if err := s.Shrink(ctx, "ng000001"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDesiredAndMax(ctx, 2, 2); err != nil {
		t.Fatal(err)
	}
	want := []string{"PATCH ng/", "PATCH ng/", "POST ng/manualupgrade", "POST ng/reimage", "POST ng/delete", "POST ng/delete"}
	if got := f.writes(); !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if vm := f.instance("ng", "0"); vm == nil || ImageString(vm.Properties.StorageProfile.ImageReference) != newImage {
		t.Errorf("instance 0 after its manual upgrade: %+v", vm)
	}
	if sz, err := s.Sizes(ctx); err != nil || sz.Desired != 2 {
		t.Errorf("Sizes %+v, %v", sz, err)
	}
	// A node gone, or whose instance is gone, is removed already.
	if err := s.RemoveNode(ctx, "ng000001"); err != nil {
		t.Errorf("RemoveNode of a deleted node: %v", err)
	}
	if err := s.Shrink(ctx, "ng000001"); err != nil {
		t.Errorf("Shrink of a deleted node: %v", err)
	}
}

// TestScaleUpRefusedForQuotaPutsTheImageBack: Compute's refusal of the
// scale-up for the vCPU quota (Learn, "Resolve errors for resource
// quotas") or its capacity (SkuNotAvailable, AllocationFailed: Learn's
// error pages) ends the step as NodeCreationFailure (exit 7) naming
// Compute's code and words, not retried, and the model Setup pointed at
// the target goes back to the image it had, no instance being on the
// target yet: the refused start leaves the scale set as it was.
func TestScaleUpRefusedForQuotaPutsTheImageBack(t *testing.T) {
	for _, tc := range []struct {
		name, code, says string
		quota            int64
		refusal          [2]string
	}{
		{"the quota", "OperationNotAllowed", "ask for more quota", 2, [2]string{}},
		{"the size not offered", "SkuNotAvailable", "another VM size or zone", 0,
			[2]string{"SkuNotAvailable", "The requested size for resource 'ng' is currently not available in location 'westeurope' zones '1' for subscription 'sub'."}},
		{"no capacity", "AllocationFailed", "another VM size or zone", 0,
			[2]string{"AllocationFailed", "Allocation failed. We do not have sufficient capacity for the requested VM size in this region."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newComputeServer(t)
			m := f.addSet("ng", oldImage, 2)
			f.quota, f.refusal = tc.quota, tc.refusal
			s, _ := openScaleSet(t, f, "ng", newImage)
			ctx := context.Background()
			if _, err := s.Setup(ctx); err != nil {
				t.Fatal(err)
			}
			err := s.SetDesiredAndMax(ctx, 3, 3)
			var ue cloud.UpdateError
			if !errors.As(err, &ue) || ue.Code != cloud.CodeNodeCreation || cloud.Transient(err) || !strings.Contains(err.Error(), tc.code+": ") || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "no node drained") {
				t.Fatalf("scale-up refused: %v, want a NodeCreationFailure naming %s and saying %q, not retried", err, tc.code, tc.says)
			}
			if got := ImageString(m.Properties.VirtualMachineProfile.StorageProfile.ImageReference); got != oldImage {
				t.Errorf("model image %q after the refusal, want %q back", got, oldImage)
			}
		})
	}
}

// TestProveCapacity: the regional and family vCPU quotas the added
// instances count against, by the SKU's vCPUs.
func TestProveCapacity(t *testing.T) {
	f := newComputeServer(t)
	f.addSet("ng", oldImage, 3)
	s, _ := openScaleSet(t, f, "ng", newImage)
	cp, err := s.ProveCapacity(context.Background(), 2)
	// this server's model has no network profile, so its subnets are the
	// one thing not proven
	if err != nil || len(cp.Unprovable) != 1 || !strings.Contains(cp.Unprovable[0], "names no subnet") || len(cp.Quotas) != 2 {
		t.Fatalf("ProveCapacity: %+v, %v", cp, err)
	}
	for _, q := range cp.Quotas {
		if q.Needed != 8 || q.PerNode != 4 || q.Unit != "vCPU" || !q.Fits() {
			t.Errorf("quota %+v, want 8 vCPUs needed, 4 a node, fitting", q)
		}
	}
	if q := cp.Quotas[0]; q.Free != 8 || q.Limit != 20 || q.Scope != "azure/sub/westeurope/cores" {
		t.Errorf("regional quota %+v, want 8 of 20 free", q)
	}
}

// TestBlueGreenOnTheServer: green is created beside blue from its model
// with the target image and the green tag, adopted when a re-run finds
// it, refused when a scale set of its name is no green of blue's, sized
// and deleted (a deleted one stays deleted).
func TestBlueGreenOnTheServer(t *testing.T) {
	f := newComputeServer(t)
	f.addSet("ng", oldImage, 2)
	s, kube := openScaleSet(t, f, "ng", newImage)
	ctx := context.Background()
	green := s.GreenName(newImage)
	if v, err := s.PrepareTarget(ctx); err != nil || v != newImage || s.CheckQuota(ctx) != nil {
		t.Fatalf("PrepareTarget %q, %v", v, err)
	}
	for range 2 {
		if err := s.CreateGreen(ctx, green, newImage, plan.Sizes{Desired: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.writes(); !slices.Equal(got, []string{"PUT " + green + "/"}) {
		t.Errorf("writes %v, want one PUT of green", got)
	}
	g := f.sets[strings.ToLower(green)]
	if str(g.Tags[GreenTag]) != strings.ToLower(str(f.sets["ng"].ID)) || ImageString(g.Properties.VirtualMachineProfile.StorageProfile.ImageReference) != newImage {
		t.Errorf("green %+v", g)
	}
	s.UseGreen(green)
	if _, pending, err := s.Machines(ctx, nodePtrs(t, kube)); err != nil || len(pending) != 2 {
		t.Errorf("green's instances pending: %+v, %v", pending, err)
	}
	if err := s.SetGroupSizes(ctx, green, plan.Sizes{Desired: 1}); err != nil {
		t.Fatal(err)
	}
	if sz, err := s.GroupSizes(ctx, green); err != nil || sz.Desired != 1 {
		t.Errorf("GroupSizes %+v, %v", sz, err)
	}
	f.addSet("ng-other", oldImage, 0)
	if err := s.CreateGreen(ctx, "ng-other", newImage, plan.Sizes{Desired: 1}); err == nil || !strings.Contains(err.Error(), "is not a green scale set") {
		t.Errorf("CreateGreen over a scale set of another: %v", err)
	}
	for range 2 {
		if err := s.DeleteGroup(ctx, green); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GroupSizes(ctx, green); !errors.Is(err, cloud.ErrGroupNotFound) {
		t.Errorf("GroupSizes of deleted green: %v", err)
	}
}

func nodePtrs(t *testing.T, kube *fake.Clientset) []*corev1.Node {
	t.Helper()
	list, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Node
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out
}

// TestFloatingImagesAreNoTarget: an image whose version Azure resolves
// for each instance ("latest", a gallery image without a version) is
// refused as the target, from --image (exit 2, before any call) or from
// the model, naming the version to give; a fixed one is taken.
func TestFloatingImagesAreNoTarget(t *testing.T) {
	const gallery = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/galleries/gal/images/node"
	for _, tc := range []struct {
		image    string
		floating bool
	}{
		{newImage, false},
		{"Canonical:ubuntu-24_04-lts:server:latest", true},
		{gallery, true},
		{gallery + "/versions/1.2.3", false},
		{"/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/images/node-2025", false},
		{"/SharedGalleries/abc/Images/node", true},
		{"/CommunityGalleries/abc/Images/node/Versions/1.0.0", false},
	} {
		t.Run(tc.image, func(t *testing.T) {
			err := (vmssCloud{}).Validate(planTarget(tc.image))
			if (err != nil) != tc.floating || err != nil && (!isInputErr(err) || !strings.Contains(err.Error(), "name the version")) {
				t.Errorf("Validate(--image %s) = %v, refused want %v", tc.image, err, tc.floating)
			}
			f := newComputeServer(t)
			img, _ := ParseImage(tc.image)
			f.addSet("ng", oldImage, 1).Properties.VirtualMachineProfile.StorageProfile.ImageReference = &img
			_, _, err = (vmssCloud{}).Open(context.Background(), fake.NewClientset(), []corev1.Node{*scaleSetNode("ng", "0")}, planTarget(""))
			if (err != nil) != tc.floating || err != nil && !strings.Contains(err.Error(), "give --image with the version") {
				t.Errorf("Open on a model of %s: %v, refused want %v", tc.image, err, tc.floating)
			}
		})
	}
}

// TestInstanceVersionIsItsExactVersion: an instance made from "latest"
// runs the version its exactVersion names, and is current when that is
// the target.
func TestInstanceVersionIsItsExactVersion(t *testing.T) {
	vm := &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr("0"), Properties: &armcompute.VirtualMachineScaleSetVMProperties{
		ProvisioningState: to.Ptr("Succeeded"), StorageProfile: &armcompute.StorageProfile{ImageReference: &armcompute.ImageReference{
			Publisher: to.Ptr("Canonical"), Offer: to.Ptr("ubuntu-24_04-lts"), SKU: to.Ptr("server"), Version: to.Ptr("latest"), ExactVersion: to.Ptr("24.04.202502010")}}}}
	s := &ScaleSet{}
	if m := machine(instance{set: "ng", vm: vm}); m.Version != newImage || !s.Current(m, newImage) || s.Current(m, oldImage) {
		t.Errorf("machine %+v, want version %s", m, newImage)
	}
}

// TestInstanceLaunchedIsItsTimeCreated: an instance launched when its VM
// was created (timeCreated), from where the plan measures a join; one
// Compute gives no time for has none.
func TestInstanceLaunchedIsItsTimeCreated(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   *time.Time
		want time.Time
	}{
		{"timeCreated given", &created, created},
		{"none given", nil, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr("0"), Properties: &armcompute.VirtualMachineScaleSetVMProperties{ProvisioningState: to.Ptr("Succeeded"), TimeCreated: tc.at}}
			if m := machine(instance{set: "ng", vm: vm}); !m.Launched.Equal(tc.want) {
				t.Errorf("launched %v, want %v", m.Launched, tc.want)
			}
		})
	}
}

func isInputErr(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.IsInput
}
