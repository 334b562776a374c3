package azurefake

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// vmssScene is a fake with a scale set "ng" of two instances in resource
// group "rg" and the SDK's scale set clients on it.
type vmssScene struct {
	srv  *Server
	kube *fake.Clientset
	sets *armcompute.VirtualMachineScaleSetsClient
	vms  *armcompute.VirtualMachineScaleSetVMsClient
}

func newVMSSScene(t *testing.T) *vmssScene {
	t.Helper()
	kube := fake.NewClientset()
	srv, err := Start(context.Background(), kube, Options{PollEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	spec := ScaleSetSpec{ResourceGroup: "rg", Name: "ng", ComputerNamePrefix: "ng", Capacity: 2, Zones: []string{"1", "2"},
		Image:      armcompute.ImageReference{Publisher: to.Ptr("p"), Offer: to.Ptr("o"), SKU: to.Ptr("s"), Version: to.Ptr("1")},
		NodeLabels: map[string]string{"kops.k8s.io/instancegroup": "ng"}}
	if err := srv.CreateScaleSet(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	opts := &arm.ClientOptions{DisableRPRegistration: true}
	opts.Cloud = azcloud.Configuration{Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{azcloud.ResourceManager: {Endpoint: srv.URL, Audience: "x"}}}
	opts.InsecureAllowCredentialWithHTTP = true
	f, err := armcompute.NewClientFactory(srv.Subscription(), token{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &vmssScene{srv: srv, kube: kube, sets: f.NewVirtualMachineScaleSetsClient(), vms: f.NewVirtualMachineScaleSetVMsClient()}
}

// TestVMSSModelRules: what the fake holds a request to, each with the
// answer ARM gives.
func TestVMSSModelRules(t *testing.T) {
	sc := newVMSSScene(t)
	base := sc.srv.URL + "/subscriptions/" + sc.srv.Subscription() + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/"
	for _, tc := range []struct {
		name, method, url, body string
		want                    int
	}{
		{"a field the model lacks", http.MethodPatch, base + "ng?api-version=" + ComputeAPIVersion, `{"sku":{"capacity":3,"surge":1}}`, http.StatusBadRequest},
		{"another API version", http.MethodGet, base + "ng?api-version=2024-07-01", "", http.StatusBadRequest},
		{"a computer name prefix of 16", http.MethodPut, base + "g2?api-version=" + ComputeAPIVersion,
			`{"location":"westeurope","sku":{"capacity":1},"properties":{"virtualMachineProfile":{"osProfile":{"computerNamePrefix":"abcdefghijklmnop"},"storageProfile":{"imageReference":{"id":"/x/images/y"}}}}}`, http.StatusBadRequest},
		{"a Windows computer name prefix of 10", http.MethodPut, base + "g3?api-version=" + ComputeAPIVersion,
			`{"location":"westeurope","sku":{"capacity":1},"properties":{"virtualMachineProfile":{"osProfile":{"computerNamePrefix":"abcdefghij","windowsConfiguration":{}},"storageProfile":{"imageReference":{"id":"/x/images/y"}}}}}`, http.StatusBadRequest},
		{"a Windows OS disk's prefix of 10", http.MethodPut, base + "g4?api-version=" + ComputeAPIVersion,
			`{"location":"westeurope","sku":{"capacity":1},"properties":{"virtualMachineProfile":{"osProfile":{"computerNamePrefix":"abcdefghij"},"storageProfile":{"osDisk":{"createOption":"FromImage","osType":"Windows"},"imageReference":{"id":"/x/images/y"}}}}}`, http.StatusBadRequest},
		{"an instance that is not there", http.MethodPost, base + "ng/delete?api-version=" + ComputeAPIVersion, `{"instanceIds":["7"]}`, http.StatusNotFound},
		{"a missing scale set's delete", http.MethodDelete, base + "gone?api-version=" + ComputeAPIVersion, "", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, bytes.NewBufferString(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s: %d, want %d", tc.method, tc.url, resp.StatusCode, tc.want)
			}
		})
	}
	if ins, _ := sc.srv.ScaleSetInstances("rg", "ng"); len(ins) != 2 {
		t.Errorf("a refused request changed the scale set: %+v", ins)
	}
}

// TestVMSSBusyAndModel: a change while an operation runs is a 409; a new
// image leaves the instances on theirs, not the latest model, until
// manualupgrade, which keeps their names; DeleteInstances lowers the
// capacity and the node goes.
func TestVMSSBusyAndModel(t *testing.T) {
	sc := newVMSSScene(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img := armcompute.ImageReference{Publisher: to.Ptr("p"), Offer: to.Ptr("o"), SKU: to.Ptr("s"), Version: to.Ptr("2")}
	up := armcompute.VirtualMachineScaleSetUpdate{Properties: &armcompute.VirtualMachineScaleSetUpdateProperties{
		VirtualMachineProfile: &armcompute.VirtualMachineScaleSetUpdateVMProfile{StorageProfile: &armcompute.VirtualMachineScaleSetUpdateStorageProfile{ImageReference: &img}}}}
	p, err := sc.sets.BeginUpdate(ctx, "rg", "ng", up, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.sets.BeginUpdate(ctx, "rg", "ng", up, nil); err == nil {
		t.Error("a second change while the first runs was taken, want 409")
	}
	if _, err := p.PollUntilDone(ctx, &runtimePollOptions); err != nil {
		t.Fatal(err)
	}
	ins, _ := sc.srv.ScaleSetInstances("rg", "ng")
	if ins[0].LatestModelApplied || ins[0].Image != "p:o:s:1" {
		t.Errorf("after a new image: %+v, want the old image, not the latest model", ins[0])
	}
	pu, err := sc.sets.BeginUpdateInstances(ctx, "rg", "ng", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr("0")}}, nil)
	if err == nil {
		_, err = pu.PollUntilDone(ctx, &runtimePollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
	vm, err := sc.vms.Get(ctx, "rg", "ng", "0", nil)
	if err != nil || !*vm.Properties.LatestModelApplied || *vm.Properties.OSProfile.ComputerName != ins[0].Name || ImageString(*vm.Properties.StorageProfile.ImageReference) != "p:o:s:2" {
		t.Errorf("after manualupgrade: %v %+v, want the new image under the same name", err, vm.Properties)
	}
	pd, err := sc.sets.BeginDeleteInstances(ctx, "rg", "ng", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr("1")}}, nil)
	if err == nil {
		_, err = pd.PollUntilDone(ctx, &runtimePollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := sc.sets.Get(ctx, "rg", "ng", nil)
	if err != nil || *m.SKU.Capacity != 1 {
		t.Errorf("after DeleteInstances: %v, capacity %d, want 1", err, *m.SKU.Capacity)
	}
	if _, err := sc.kube.CoreV1().Nodes().Get(ctx, ins[1].Name, metav1.GetOptions{}); err == nil {
		t.Errorf("node %s of the deleted instance is still there", ins[1].Name)
	}
}

// runtimePollOptions poll the fake's operations quickly.
var runtimePollOptions = runtime.PollUntilDoneOptions{Frequency: 20 * time.Millisecond}

// TestVMSSManualUpgradeReimagesOnlyANewImage: manualupgrade reimages an
// instance only when the model changed its image; a model change of
// another kind (userData) is applied to the running machine, whose
// kubelet goes on and never registers anew, so a Node deleted meanwhile
// stays gone; a reimage boots it anew and its kubelet registers
// ("Modify a Virtual Machine Scale Set",
// https://learn.microsoft.com/en-us/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-upgrade-scale-set;
// VirtualMachineScaleSetsClient.BeginReimage).
func TestVMSSManualUpgradeReimagesOnlyANewImage(t *testing.T) {
	sc := newVMSSScene(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := func(what string, p interface {
		PollUntilDone(context.Context, *runtime.PollUntilDoneOptions) (any, error)
	}, err error) {
		t.Helper()
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtimePollOptions)
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	up := armcompute.VirtualMachineScaleSetUpdate{Properties: &armcompute.VirtualMachineScaleSetUpdateProperties{
		VirtualMachineProfile: &armcompute.VirtualMachineScaleSetUpdateVMProfile{UserData: to.Ptr("bmV3")}}}
	pu, err := sc.sets.BeginUpdate(ctx, "rg", "ng", up, nil)
	done("the userData update", poller(pu), err)
	ins, _ := sc.srv.ScaleSetInstances("rg", "ng")
	if ins[0].LatestModelApplied {
		t.Fatalf("after a userData update: %+v, want not the latest model", ins[0])
	}
	if err := sc.kube.CoreV1().Nodes().Delete(ctx, ins[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pm, err := sc.sets.BeginUpdateInstances(ctx, "rg", "ng", armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr("0")}}, nil)
	done("manualupgrade", poller(pm), err)
	if ins, _ := sc.srv.ScaleSetInstances("rg", "ng"); !ins[0].LatestModelApplied || ins[0].Image != "p:o:s:1" {
		t.Errorf("after manualupgrade: %+v, want the latest model on the same image", ins[0])
	}
	if _, err := sc.kube.CoreV1().Nodes().Get(ctx, ins[0].Name, metav1.GetOptions{}); err == nil {
		t.Errorf("node %s came back after a manualupgrade that reimaged nothing", ins[0].Name)
	}
	pr, err := sc.sets.BeginReimage(ctx, "rg", "ng", &armcompute.VirtualMachineScaleSetsClientBeginReimageOptions{
		VMScaleSetReimageInput: &armcompute.VirtualMachineScaleSetReimageParameters{InstanceIDs: []*string{to.Ptr("0")}}})
	done("reimage", poller(pr), err)
	// The kubelet registers once the operation ended: wait on it.
	for _, err := sc.kube.CoreV1().Nodes().Get(ctx, ins[0].Name, metav1.GetOptions{}); err != nil; _, err = sc.kube.CoreV1().Nodes().Get(ctx, ins[0].Name, metav1.GetOptions{}) {
		if ctx.Err() != nil {
			t.Fatalf("node %s after the reimage: %v, want it registered anew", ins[0].Name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// poller is an SDK poller of any response, for done.
func poller[T any](p *runtime.Poller[T]) interface {
	PollUntilDone(context.Context, *runtime.PollUntilDoneOptions) (any, error)
} {
	return anyPoller[T]{p}
}

type anyPoller[T any] struct{ p *runtime.Poller[T] }

func (a anyPoller[T]) PollUntilDone(ctx context.Context, o *runtime.PollUntilDoneOptions) (any, error) {
	if a.p == nil {
		return nil, nil
	}
	return a.p.PollUntilDone(ctx, o)
}

// TestVMSSCapacityPastTheQuotaIsRefused: a capacity raise past the
// regional vCPU quota is refused as Compute refuses it (409
// OperationNotAllowed "... exceeding approved ... quota", Learn's
// "Resolve errors for resource quotas"), the capacity unchanged; one
// that fits is taken.
func TestVMSSCapacityPastTheQuotaIsRefused(t *testing.T) {
	sc := newVMSSScene(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc.srv.SetQuota("cores", 12) // two Standard_D4s_v5 use 8
	raise := func(n int64) error {
		p, err := sc.sets.BeginUpdate(ctx, "rg", "ng", armcompute.VirtualMachineScaleSetUpdate{SKU: &armcompute.SKU{Capacity: to.Ptr(n)}}, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtimePollOptions)
		}
		return err
	}
	err := raise(4)
	if c, status := armCode(err); status != http.StatusConflict || c != "OperationNotAllowed" || !strings.Contains(err.Error(), "exceeding approved cores quota") {
		t.Errorf("capacity 4 past 12 vCPUs: %v, want 409 OperationNotAllowed naming the quota", err)
	}
	if m, err := sc.sets.Get(ctx, "rg", "ng", nil); err != nil || *m.SKU.Capacity != 2 {
		t.Errorf("after the refusal: %v, want capacity 2", err)
	}
	if err := raise(3); err != nil {
		t.Errorf("capacity 3 within the quota: %v", err)
	}
}
