package aks

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// aksServer answers the requests of the provider on cluster "c1" of
// resource group "rg" (subscription "sub", westeurope, control plane
// 1.32.2) as ARM and AKS do, the pools kept as JSON documents of the
// REST spec's AgentPool: a pool's PUT answered 200 with the pool and an
// Azure-AsyncOperation status URL
// (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations),
// upgradeNodeImageVersion and DELETE 202 with one; an operation reads
// InProgress once, then Succeeded, which ends the pool's upgrade;
// abort refuses with 409 when nothing runs; 404 for what does not exist.
type aksServer struct {
	mu    sync.Mutex
	srv   *httptest.Server
	pools map[string]map[string]any
	// ops are the operations by ID: the pool each ends, and its reads.
	ops   map[string]*testOp
	calls []string
	// failOps makes an operation end Failed with this error message.
	failOps string
	// statusReads are the operation status reads, path and query.
	statusReads []string
	// racedPuts are PUTs another client's write beats: the pool's eTag
	// changes just before each.
	racedPuts int
	// ifMatches are the If-Match headers of the PUTs.
	ifMatches []string
}

type testOp struct {
	pool  string
	reads int
}

const (
	testOldImage    = "AKSUbuntu-2204gen2containerd-202501.01.0"
	testLatestImage = "AKSUbuntu-2204gen2containerd-202502.01.0"
	clusterPath     = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1"
)

func newAKSServer(t *testing.T) *aksServer {
	t.Helper()
	f := &aksServer{pools: map[string]map[string]any{}, ops: map[string]*testOp{}}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	t.Setenv(EndpointEnv, f.srv.URL)
	t.Setenv(NoAuthEnv, "true")
	return f
}

// addPool adds a Succeeded pool of n Standard_D4s_v5 nodes on 1.31.5 and
// the old node image, its properties changed by set.
func (f *aksServer) addPool(name string, n int, set map[string]any) {
	props := map[string]any{"count": n, "vmSize": "Standard_D4s_v5", "eTag": "etag-0", "osType": "Linux", "mode": "User", "provisioningState": "Succeeded",
		"orchestratorVersion": "1.31.5", "currentOrchestratorVersion": "1.31.5", "nodeImageVersion": testOldImage,
		"upgradeSettings": map[string]any{"maxSurge": "10%"}}
	maps.Copy(props, set)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pools[name] = map[string]any{"name": name, "id": clusterPath + "/agentPools/" + name, "properties": props}
}

func (f *aksServer) props(name string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.pools[name]; p != nil {
		return maps.Clone(p["properties"].(map[string]any))
	}
	return nil
}

func (f *aksServer) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *aksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// ARM paths are case-insensitive: the SDK sends "managedclusters" in
	// some methods' paths.
	opsPath, clusterPath := strings.ToLower("/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/"), strings.ToLower(clusterPath)
	p := strings.ToLower(r.URL.Path)
	switch {
	case strings.HasPrefix(p, opsPath):
		f.statusReads = append(f.statusReads, r.URL.RequestURI())
		f.operation(w, strings.TrimPrefix(p, opsPath))
	case p == clusterPath:
		writeJSON(w, http.StatusOK, map[string]any{"name": "c1", "location": "westeurope", "properties": map[string]any{"currentKubernetesVersion": "1.32.2"}})
	case p == clusterPath+"/agentpools":
		var list []map[string]any
		for _, k := range slices.Sorted(maps.Keys(f.pools)) {
			list = append(list, f.pools[k])
		}
		writeJSON(w, http.StatusOK, map[string]any{"value": list})
	case strings.HasPrefix(p, clusterPath+"/agentpools/"):
		parts := strings.Split(strings.TrimPrefix(p, clusterPath+"/agentpools/"), "/")
		f.pool(w, r, parts[0], strings.Join(parts[1:], "/"))
	case strings.HasSuffix(p, "/providers/microsoft.authorization/permissions"):
		writeJSON(w, http.StatusOK, map[string]any{"value": []any{map[string]any{"actions": []string{"*"}}}})
	case strings.HasSuffix(p, "/providers/microsoft.compute/skus"):
		writeJSON(w, http.StatusOK, map[string]any{"value": []any{map[string]any{"resourceType": "virtualMachines", "name": "Standard_D4s_v5",
			"family": "standardDSv5Family", "capabilities": []any{map[string]string{"name": "vCPUs", "value": "4"}}}}})
	case strings.HasSuffix(p, "/locations/westeurope/usages"):
		writeJSON(w, http.StatusOK, map[string]any{"value": []any{
			map[string]any{"name": map[string]string{"value": "cores", "localizedValue": "Total Regional vCPUs"}, "currentValue": 12, "limit": 100, "unit": "Count"},
			map[string]any{"name": map[string]string{"value": "standardDSv5Family", "localizedValue": "Standard DSv5 Family vCPUs"}, "currentValue": 12, "limit": 100, "unit": "Count"}}})
	default:
		writeJSON(w, http.StatusNotFound, armErr("NotFound", "no route "+p))
	}
}

func (f *aksServer) pool(w http.ResponseWriter, r *http.Request, name, action string) {
	doc := f.pools[name]
	if r.Method != http.MethodGet {
		f.calls = append(f.calls, strings.TrimSuffix(r.Method+" "+name+"/"+action, "/"))
	}
	if doc == nil && r.Method != http.MethodPut {
		writeJSON(w, http.StatusNotFound, armErr("NotFound", fmt.Sprintf("agent pool %q not found", name)))
		return
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		writeJSON(w, http.StatusOK, doc)
		// A pool being created is read Creating once, then Succeeded (its
		// nodes joined).
		if props := doc["properties"].(map[string]any); props["provisioningState"] == "Creating" {
			props["provisioningState"] = "Succeeded"
		}
	case r.Method == http.MethodGet && action == "upgradeprofiles/default":
		writeJSON(w, http.StatusOK, map[string]any{"properties": map[string]any{"kubernetesVersion": "1.31.5", "osType": "Linux",
			"latestNodeImageVersion": testLatestImage, "upgrades": []any{map[string]any{"kubernetesVersion": "1.32.1"}, map[string]any{"kubernetesVersion": "1.32.2"}}}})
	case r.Method == http.MethodPut:
		f.put(w, r, name)
	case r.Method == http.MethodPost && action == "upgradenodeimageversion":
		props := doc["properties"].(map[string]any)
		props["provisioningState"] = "UpgradingNodeImageVersion"
		f.accepted(w, name, http.StatusAccepted, nil)
	case r.Method == http.MethodPost && action == "abort":
		props := doc["properties"].(map[string]any)
		if !runningStates[props["provisioningState"].(string)] {
			writeJSON(w, http.StatusConflict, armErr("OperationNotAllowed", "There is no ongoing operation on agent pool "+name+" to abort."))
			return
		}
		props["provisioningState"] = "Canceled"
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		delete(f.pools, name)
		f.accepted(w, "", http.StatusAccepted, nil)
	default:
		writeJSON(w, http.StatusBadRequest, armErr("BadRequest", "unexpected "+r.Method+" "+action))
	}
}

// put takes a pool's document: a new pool gets the latest node image;
// a version change starts an upgrade (Upgrading until its operation
// ends), any other change ends Succeeded.
func (f *aksServer) put(w http.ResponseWriter, r *http.Request, name string) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, armErr("InvalidRequestContent", err.Error()))
		return
	}
	props, _ := in["properties"].(map[string]any)
	old := f.pools[name]
	f.ifMatches = append(f.ifMatches, r.Header.Get("If-Match"))
	if old != nil {
		oldProps := old["properties"].(map[string]any)
		if f.racedPuts > 0 {
			f.racedPuts--
			oldProps["eTag"] = fmt.Sprintf("etag-other-%d", f.racedPuts)
		}
		// AKS's optimistic concurrency (armcontainerservice
		// ManagedClusterAgentPoolProfileProperties.ETag).
		if m := r.Header.Get("If-Match"); m != "" && m != oldProps["eTag"] {
			writeJSON(w, http.StatusPreconditionFailed, armErr("PreconditionFailed", "the eTag does not match"))
			return
		}
	}
	props["eTag"] = fmt.Sprintf("etag-%d", len(f.calls))
	state := "Succeeded"
	switch {
	case old == nil:
		props["nodeImageVersion"], props["currentOrchestratorVersion"], state = testLatestImage, props["orchestratorVersion"], "Creating"
	case props["orchestratorVersion"] != old["properties"].(map[string]any)["currentOrchestratorVersion"]:
		state = "Upgrading"
	}
	props["provisioningState"] = state
	in["name"] = name
	f.pools[name] = in
	f.accepted(w, name, http.StatusOK, in)
}

// accepted answers a write with its operation's status URL, which ends
// the pool's operation (pool "" for none).
func (f *aksServer) accepted(w http.ResponseWriter, pool string, status int, body any) {
	id := fmt.Sprintf("op%d", len(f.ops)+1)
	f.ops[id] = &testOp{pool: pool}
	// AKS names the status at the api-version of the request that started
	// the operation: here the raw pool's, which a URL rebuilt with
	// operationsAPIVersion would not be.
	w.Header().Set("Azure-AsyncOperation", f.srv.URL+"/subscriptions/sub/providers/Microsoft.ContainerService/locations/westeurope/operations/"+id+"?api-version="+poolAPIVersion)
	w.Header().Set("Retry-After", "0")
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

// operation answers an operation's status; its second read ends it,
// the pool's upgrade with it.
func (f *aksServer) operation(w http.ResponseWriter, id string) {
	op := f.ops[id]
	if op == nil {
		writeJSON(w, http.StatusNotFound, armErr("NotFound", "no operation "+id))
		return
	}
	op.reads++
	if op.reads == 1 {
		writeJSON(w, http.StatusOK, map[string]any{"name": id, "status": "InProgress"})
		return
	}
	doc := map[string]any{"name": id, "status": "Succeeded"}
	if f.failOps != "" {
		doc = map[string]any{"name": id, "status": "Failed", "error": map[string]string{"code": "UpgradeFailed", "message": f.failOps}}
	}
	if p := f.pools[op.pool]; p != nil {
		props := p["properties"].(map[string]any)
		props["provisioningState"] = doc["status"]
		if doc["status"] == "Succeeded" {
			props["currentOrchestratorVersion"], props["nodeImageVersion"] = props["orchestratorVersion"], testLatestImage
		}
	}
	writeJSON(w, http.StatusOK, doc)
}

func armErr(code, msg string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if e, ok := v.(map[string]any)["error"].(map[string]string); ok {
		w.Header().Set("x-ms-error-code", e["code"])
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// poolNode is node i of pool, on version and image, in the node
// resource group AKS names MC_rg_c1_westeurope.
func poolNode(pool string, i int, version, image string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("aks-%s-vmss%06d", pool, i), Labels: map[string]string{AgentPoolLabel: pool, NodeImageLabel: image}},
		Spec:   corev1.NodeSpec{ProviderID: fmt.Sprintf("azure:///subscriptions/sub/resourceGroups/MC_rg_c1_westeurope/providers/Microsoft.Compute/virtualMachineScaleSets/aks-%s-vmss/virtualMachines/%d", pool, i)},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v" + version}}}
}

// openPool opens the pool's n nodes with the options, their Node
// objects in a fake clientset.
func openPool(t *testing.T, pool string, n int, strategy plan.StrategyName, opts map[string]string) (*plan.CloudGroup, any, *fake.Clientset, error) {
	t.Helper()
	kube := fake.NewClientset()
	var nodes []corev1.Node
	for i := range n {
		nodes = append(nodes, poolNode(pool, i, "1.31.5", testOldImage))
		_ = kube.Tracker().Add(&nodes[i])
	}
	cg, p, err := (aksCloud{}).Open(t.Context(), kube, nodes, plan.CloudTarget{Options: opts, Strategy: strategy})
	switch p := p.(type) {
	case *AgentPool:
		p.c.pollEvery = time.Millisecond
	case *PoolBlueGreen:
		p.blue.c.pollEvery = time.Millisecond
	}
	return cg, p, kube, err
}

var metaList = metav1.ListOptions{}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// surgePool is a server with pool "pool" of n nodes (its properties
// changed by set) and the provider opened on them for a surge run with
// opts.
func surgePool(t *testing.T, n int, set map[string]any, opts map[string]string) (*aksServer, *AgentPool) {
	t.Helper()
	f := newAKSServer(t)
	f.addPool("pool", n, set)
	_, p, _, err := openPool(t, "pool", n, plan.StrategySurge, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, p.(*AgentPool)
}
