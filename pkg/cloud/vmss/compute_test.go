package vmss

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// computeServer answers the Compute requests of the provider for the
// scale sets of resource group "rg" of subscription "sub" in westeurope,
// as ARM does: armcompute's models as JSON, a write's 202 with an
// Azure-AsyncOperation status URL at the subscription's location
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations),
// which reads InProgress once and then Succeeded, and 404 for what does
// not exist. An instance takes the model's image on manualupgrade; a
// raise of the capacity past quota is Compute's 409 OperationNotAllowed.
type computeServer struct {
	mu   sync.Mutex
	srv  *httptest.Server
	sets map[string]*armcompute.VirtualMachineScaleSet
	vms  map[string][]*armcompute.VirtualMachineScaleSetVM
	ops  map[string]int
	// quota is how many instances the capacity may reach, 0 for no limit;
	// refusal, a code and message every raise of it is refused with (409).
	quota   int64
	refusal [2]string
	// calls are the writes, as "METHOD set/action".
	calls []string
}

const oldImage, newImage = "Canonical:ubuntu-24_04-lts:server:24.04.202501010", "Canonical:ubuntu-24_04-lts:server:24.04.202502010"

func newComputeServer(t *testing.T) *computeServer {
	t.Helper()
	f := &computeServer{sets: map[string]*armcompute.VirtualMachineScaleSet{}, vms: map[string][]*armcompute.VirtualMachineScaleSetVM{}, ops: map[string]int{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	t.Setenv(EndpointEnv, f.srv.URL)
	t.Setenv(NoAuthEnv, "true")
	return f
}

// addSet adds a Manual, Uniform scale set of n instances on image.
func (f *computeServer) addSet(name, image string, n int) *armcompute.VirtualMachineScaleSet {
	img, _ := ParseImage(image)
	m := &armcompute.VirtualMachineScaleSet{Name: to.Ptr(name), Location: to.Ptr("westeurope"),
		ID:  to.Ptr("/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/" + name),
		SKU: &armcompute.SKU{Name: to.Ptr("Standard_D4s_v5"), Capacity: to.Ptr(int64(0))},
		Properties: &armcompute.VirtualMachineScaleSetProperties{UpgradePolicy: &armcompute.UpgradePolicy{Mode: to.Ptr(armcompute.UpgradeModeManual)},
			VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{OSProfile: &armcompute.VirtualMachineScaleSetOSProfile{ComputerNamePrefix: to.Ptr(name),
				LinuxConfiguration: &armcompute.LinuxConfiguration{DisablePasswordAuthentication: to.Ptr(true)}}, UserData: to.Ptr("a2luZA=="),
				StorageProfile: &armcompute.VirtualMachineScaleSetStorageProfile{ImageReference: &img}}}}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets[strings.ToLower(name)] = m
	f.scaleLocked(m, int64(n))
	return m
}

// scaleLocked adds or removes instances (the highest IDs) to reach n.
func (f *computeServer) scaleLocked(m *armcompute.VirtualMachineScaleSet, n int64) {
	key := strings.ToLower(*m.Name)
	vms := f.vms[key]
	for int64(len(vms)) < n {
		id := 0
		for _, vm := range vms {
			i, _ := strconv.Atoi(*vm.InstanceID)
			id = max(id, i+1)
		}
		img := *m.Properties.VirtualMachineProfile.StorageProfile.ImageReference
		vms = append(vms, &armcompute.VirtualMachineScaleSetVM{InstanceID: to.Ptr(strconv.Itoa(id)), Name: to.Ptr(fmt.Sprintf("%s_%d", *m.Name, id)),
			Location: to.Ptr("westeurope"), Properties: &armcompute.VirtualMachineScaleSetVMProperties{ProvisioningState: to.Ptr("Succeeded"),
				LatestModelApplied: to.Ptr(true), StorageProfile: &armcompute.StorageProfile{ImageReference: &img}}})
	}
	f.vms[key] = vms[:n]
	m.SKU.Capacity = to.Ptr(n)
}

func (f *computeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const setsPath = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/"
	const locPath = "/subscriptions/sub/providers/Microsoft.Compute/locations/westeurope/"
	switch rest := r.URL.Path; {
	case strings.HasPrefix(rest, locPath+"operations/"):
		f.operation(w, strings.TrimPrefix(rest, locPath+"operations/"))
	case strings.HasPrefix(rest, setsPath):
		parts := strings.Split(strings.TrimPrefix(rest, setsPath), "/")
		f.scaleSet(w, r, parts)
	case strings.HasSuffix(rest, "/usages"):
		writeJSON(w, armcompute.ListUsagesResult{Value: []*armcompute.Usage{
			{Name: &armcompute.UsageName{Value: to.Ptr("cores"), LocalizedValue: to.Ptr("Total Regional vCPUs")}, CurrentValue: to.Ptr(int32(12)), Limit: to.Ptr(int64(20))},
			{Name: &armcompute.UsageName{Value: to.Ptr("standardDSv5Family"), LocalizedValue: to.Ptr("Standard DSv5 Family vCPUs")}, CurrentValue: to.Ptr(int32(12)), Limit: to.Ptr(int64(100))},
		}})
	case strings.HasSuffix(rest, "/skus"):
		writeJSON(w, armcompute.ResourceSKUsResult{Value: []*armcompute.ResourceSKU{{ResourceType: to.Ptr("virtualMachines"), Name: to.Ptr("Standard_D4s_v5"),
			Family: to.Ptr("standardDSv5Family"), Capabilities: []*armcompute.ResourceSKUCapabilities{{Name: to.Ptr("vCPUs"), Value: to.Ptr("4")}}}}})
	default:
		writeARMError(w, http.StatusNotFound, "NotFound", "no route "+rest)
	}
}

// operation answers an asynchronous operation's status: InProgress on
// the first read, Succeeded after.
func (f *computeServer) operation(w http.ResponseWriter, id string) {
	f.ops[id]++
	st := "Succeeded"
	if f.ops[id] == 1 {
		st = "InProgress"
	}
	writeJSON(w, map[string]string{"name": id, "status": st})
}

// accepted answers a write with its operation's status URL: a PUT or
// PATCH with 200 and the model (the status codes armcompute's
// CreateOrUpdate and Update accept), an action or DELETE with 202.
func (f *computeServer) accepted(w http.ResponseWriter, model *armcompute.VirtualMachineScaleSet) {
	id := fmt.Sprintf("op%d", len(f.ops)+1)
	f.ops[id] = 0
	w.Header().Set("Azure-AsyncOperation", f.srv.URL+"/subscriptions/sub/providers/Microsoft.Compute/locations/westeurope/operations/"+id+"?api-version="+computeAPIVersion)
	w.Header().Set("Retry-After", "0")
	if model != nil {
		writeJSON(w, model)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (f *computeServer) scaleSet(w http.ResponseWriter, r *http.Request, parts []string) {
	key := strings.ToLower(parts[0])
	m := f.sets[key]
	if m == nil && r.Method != http.MethodPut {
		writeARMError(w, http.StatusNotFound, "ResourceNotFound", "The Resource 'Microsoft.Compute/virtualMachineScaleSets/"+parts[0]+"' under resource group 'rg' was not found.")
		return
	}
	action := strings.Join(parts[1:], "/")
	if r.Method != http.MethodGet {
		f.calls = append(f.calls, r.Method+" "+parts[0]+"/"+action)
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		writeJSON(w, m)
	case r.Method == http.MethodGet && action == "virtualMachines":
		writeJSON(w, armcompute.VirtualMachineScaleSetVMListResult{Value: f.vms[key]})
	case r.Method == http.MethodGet && strings.HasPrefix(action, "virtualMachines/"):
		if vm := f.vm(key, parts[2]); vm != nil {
			writeJSON(w, vm)
			return
		}
		writeARMError(w, http.StatusNotFound, "NotFound", "no instance "+parts[2])
	case r.Method == http.MethodPut:
		f.create(w, r, parts[0])
	case r.Method == http.MethodPatch:
		f.update(w, r, m)
	case r.Method == http.MethodDelete:
		delete(f.sets, key)
		delete(f.vms, key)
		f.accepted(w, nil)
	case r.Method == http.MethodPost:
		f.act(w, r, m, action)
	default:
		writeARMError(w, http.StatusBadRequest, "BadRequest", "unexpected "+r.Method+" "+action)
	}
}

func (f *computeServer) vm(set, id string) *armcompute.VirtualMachineScaleSetVM {
	for _, vm := range f.vms[set] {
		if *vm.InstanceID == id {
			return vm
		}
	}
	return nil
}

func (f *computeServer) create(w http.ResponseWriter, r *http.Request, name string) {
	var m armcompute.VirtualMachineScaleSet
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", err.Error())
		return
	}
	m.Name, m.ID = to.Ptr(name), to.Ptr("/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/"+name)
	n := *m.SKU.Capacity
	f.sets[strings.ToLower(name)] = &m
	f.scaleLocked(&m, n)
	f.accepted(w, &m)
}

func (f *computeServer) update(w http.ResponseWriter, r *http.Request, m *armcompute.VirtualMachineScaleSet) {
	var up armcompute.VirtualMachineScaleSetUpdate
	if err := json.NewDecoder(r.Body).Decode(&up); err != nil {
		writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", err.Error())
		return
	}
	if up.SKU != nil && up.SKU.Capacity != nil {
		if f.quota > 0 && *up.SKU.Capacity > f.quota {
			writeARMError(w, http.StatusConflict, "OperationNotAllowed", "Operation could not be completed as it results in exceeding approved standardDSv5Family Cores quota.")
			return
		}
		if f.refusal[0] != "" && *up.SKU.Capacity > *m.SKU.Capacity {
			writeARMError(w, http.StatusConflict, f.refusal[0], f.refusal[1])
			return
		}
		f.scaleLocked(m, *up.SKU.Capacity)
	}
	if p := up.Properties; p != nil && p.VirtualMachineProfile != nil && p.VirtualMachineProfile.StorageProfile != nil {
		m.Properties.VirtualMachineProfile.StorageProfile.ImageReference = p.VirtualMachineProfile.StorageProfile.ImageReference
		for _, vm := range f.vms[strings.ToLower(*m.Name)] {
			vm.Properties.LatestModelApplied = to.Ptr(false)
		}
	}
	f.accepted(w, m)
}

// act carries out deleteInstances ("delete"), manualupgrade and reimage.
func (f *computeServer) act(w http.ResponseWriter, r *http.Request, m *armcompute.VirtualMachineScaleSet, action string) {
	var ids armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs
	_ = json.NewDecoder(r.Body).Decode(&ids)
	key := strings.ToLower(*m.Name)
	for _, id := range ids.InstanceIDs {
		vm := f.vm(key, *id)
		switch {
		case vm == nil:
			writeARMError(w, http.StatusNotFound, "NotFound", "no instance "+*id)
			return
		case action == "delete":
			f.vms[key] = slices.DeleteFunc(f.vms[key], func(v *armcompute.VirtualMachineScaleSetVM) bool { return v == vm })
			m.SKU.Capacity = to.Ptr(*m.SKU.Capacity - 1)
		case action == "manualupgrade":
			img := *m.Properties.VirtualMachineProfile.StorageProfile.ImageReference
			vm.Properties.StorageProfile.ImageReference, vm.Properties.LatestModelApplied = &img, to.Ptr(true)
		}
	}
	f.accepted(w, nil)
}

// instance is the instance of set with id.
func (f *computeServer) instance(set, id string) *armcompute.VirtualMachineScaleSetVM {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.vm(strings.ToLower(set), id)
}

// writes are the writes so far.
func (f *computeServer) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeARMError writes ARM's error body with its x-ms-error-code.
func writeARMError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-ms-error-code", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// scaleSetNode is the Node of instance id of scale set set.
func scaleSetNode(set, id string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%06s", strings.ToLower(set), id), UID: types.UID("uid-" + set + id)},
		Spec: corev1.NodeSpec{ProviderID: "azure:///subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/" + set + "/virtualMachines/" + id}}
}

// openScaleSet is the provider opened on the nodes of set's instances,
// its Node objects in a fake clientset, targeting image.
func openScaleSet(t *testing.T, f *computeServer, set, image string) (*ScaleSet, *fake.Clientset) {
	t.Helper()
	kube := fake.NewClientset()
	var nodes []corev1.Node
	for _, vm := range f.vms[strings.ToLower(set)] {
		n := scaleSetNode(set, *vm.InstanceID)
		nodes = append(nodes, *n)
		_ = kube.Tracker().Add(n)
	}
	_, p, err := (vmssCloud{}).Open(t.Context(), kube, nodes, planTarget(image))
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*ScaleSet)
	s.c.pollEvery = time.Millisecond
	return s, kube
}
