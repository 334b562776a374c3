package gke

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
)

// fakeGKE answers the container, Compute and Resource Manager calls the
// provider makes, from one pool of one cluster, and records each call by
// its method ID. Its behaviour is the least the provider's paths need;
// sim/gkefake is the endpoint held to GKE's documents.
type fakeGKE struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	pool    container.NodePool
	master  string
	channel string // the cluster's release channel, "" for none
	ops     []*container.Operation
	calls   []string
	granted []string // nil: every permission
	// fail answers the next calls of a method with these HTTP codes;
	// late does too, after doing the call (a lost answer).
	fail, late map[string][]int
	// updates are the bodies of nodePools.update.
	updates []container.UpdateNodePoolRequest
	// opPolls is how many operations.get an operation answers RUNNING.
	opPolls int
	// busy answers the next changes "Cluster is running incompatible
	// operation" as if for an operation operations.list does not show
	// (one that ended since, say).
	busy int
}

const (
	fakeProject  = "proj"
	fakeLocation = "us-central1"
	fakeCluster  = "c1"
	fakePool     = "pool-1"
)

func newFakeGKE(t *testing.T) *fakeGKE {
	t.Helper()
	f := &fakeGKE{t: t, master: "1.31.2-gke.1000", fail: map[string][]int{}, late: map[string][]int{}, pool: container.NodePool{
		Name: fakePool, Version: "1.30.5-gke.1000", Status: "RUNNING", Etag: "e1",
		Config:            &container.NodeConfig{ImageType: "COS_CONTAINERD"},
		Locations:         []string{"us-central1-a"},
		InstanceGroupUrls: []string{"https://x/zones/us-central1-a/instanceGroupManagers/gke-c1-pool-1-grp"},
		UpgradeSettings:   &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: 1},
	}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	old := gcpclient.FirstBackoff
	gcpclient.FirstBackoff = time.Millisecond
	t.Cleanup(func() { gcpclient.FirstBackoff = old })
	t.Setenv(EndpointEnv, f.srv.URL+"/")
	t.Setenv(NoAuthEnv, "true")
	t.Setenv(gce.EndpointEnv, f.srv.URL+"/compute/v1/")
	t.Setenv(gce.NoAuthEnv, "true")
	t.Setenv(gcpclient.ResourceManagerEnv, "")
	return f
}

// route is the method ID of a call.
func route(r *http.Request) string {
	p, verb, _ := strings.Cut(r.URL.Path, ":")
	parts := strings.Split(strings.Trim(strings.TrimPrefix(p, "/v1/"), "/"), "/")
	n := len(parts)
	switch {
	case strings.HasPrefix(p, "/compute/v1/") && r.Method == http.MethodGet:
		return methodInstanceGet
	case verb == "testIamPermissions":
		return "cloudresourcemanager.projects.testIamPermissions"
	case n == 5 && parts[4] == "serverConfig":
		return methodServerConfig
	case n == 5 && parts[4] == "operations":
		return methodOperationList
	case n == 6 && parts[4] == "operations" && verb == "cancel":
		return methodOperationCancel
	case n == 6 && parts[4] == "operations":
		return methodOperationGet
	case n == 6:
		return methodClusterGet
	case n == 8 && verb == "rollback":
		return methodPoolRollback
	case n == 8 && verb == "completeUpgrade":
		return methodPoolComplete
	case n == 8 && r.Method == http.MethodPut:
		return methodPoolUpdate
	case n == 8:
		return methodPoolGet
	}
	return ""
}

func (f *fakeGKE) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	method := route(r)
	f.calls = append(f.calls, method)
	if codes := f.fail[method]; len(codes) > 0 {
		f.fail[method] = codes[1:]
		w.WriteHeader(codes[0])
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected","status":"UNAVAILABLE"}}`, codes[0])
		return
	}
	if op := f.runningLocked(); op != nil && (method == methodPoolUpdate || method == methodPoolRollback) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"Cluster is running incompatible operation %s.","status":"FAILED_PRECONDITION"}}`, op.Name)
		return
	}
	if f.busy > 0 && method == methodPoolUpdate {
		f.busy--
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"code":400,"message":"Cluster is running incompatible operation operation-gone.","status":"FAILED_PRECONDITION"}}`)
		return
	}
	var out any
	switch method {
	case methodInstanceGet:
		v := func(s string) *string { return &s }
		out = &compute.Instance{Name: "n1", Metadata: &compute.Metadata{Items: []*compute.MetadataItems{
			{Key: "cluster-name", Value: v(fakeCluster)}, {Key: "cluster-location", Value: v(fakeLocation)}}}}
	case "cloudresourcemanager.projects.testIamPermissions":
		out = f.testPermissions(r)
	case methodServerConfig:
		out = &container.ServerConfig{ValidImageTypes: []string{"COS_CONTAINERD", "UBUNTU_CONTAINERD"},
			ValidNodeVersions: []string{"1.30.5-gke.1000", "1.31.2-gke.1000"},
			Channels:          []*container.ReleaseChannelConfig{{Channel: "REGULAR", ValidVersions: []string{"1.31.2-gke.1000", "1.30.9-gke.1300"}}}}
	case methodClusterGet:
		out = &container.Cluster{Name: fakeCluster, CurrentMasterVersion: f.master}
		if f.channel != "" {
			out.(*container.Cluster).ReleaseChannel = &container.ReleaseChannel{Channel: f.channel}
		}
	case methodPoolGet:
		out = &f.pool
	case methodOperationList:
		out = &container.ListOperationsResponse{Operations: f.ops}
	case methodOperationGet:
		out = f.operation(r)
	case methodOperationCancel:
		out = struct{}{}
	default:
		out = f.change(method, r)
	}
	if codes := f.late[method]; len(codes) > 0 {
		f.late[method] = codes[1:]
		w.WriteHeader(codes[0])
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected late","status":"DEADLINE_EXCEEDED"}}`, codes[0])
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// runningLocked is the operation not DONE, nil if none: GKE refuses a
// change while one runs ("Cluster is running incompatible operation",
// https://cloud.google.com/kubernetes-engine/docs/troubleshooting/concurrent-operations).
func (f *fakeGKE) runningLocked() *container.Operation {
	for _, op := range f.ops {
		if op.Status != "DONE" {
			return op
		}
	}
	return nil
}

func (f *fakeGKE) testPermissions(r *http.Request) any {
	var req struct{ Permissions []string }
	_ = json.NewDecoder(r.Body).Decode(&req)
	var out []string
	for _, p := range req.Permissions {
		if f.granted == nil || slices.Contains(f.granted, p) {
			out = append(out, p)
		}
	}
	return map[string]any{"permissions": out}
}

func (f *fakeGKE) operation(r *http.Request) any {
	id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	for _, op := range f.ops {
		if op.Name == id {
			if op.Status != "DONE" && f.opPolls <= 0 {
				op.Status = "DONE"
			}
			f.opPolls--
			return op
		}
	}
	return &container.Operation{Name: id, Status: "DONE"}
}

// change answers update, rollback and completeUpgrade with an operation;
// an update applies its settings and an upgrade's target to the pool.
func (f *fakeGKE) change(method string, r *http.Request) any {
	if method == methodPoolUpdate {
		var req container.UpdateNodePoolRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.updates = append(f.updates, req)
		if req.UpgradeSettings != nil {
			f.pool.UpgradeSettings = req.UpgradeSettings
		}
		if req.NodeDrainConfig != nil {
			f.pool.NodeDrainConfig = req.NodeDrainConfig
		}
		if req.NodeVersion != "" {
			f.pool.Version = req.NodeVersion
		}
		f.pool.Etag += "+"
	}
	// UPGRADE_NODES: "a node pool is being updated ... this includes
	// most forms of updates to node pools" (container-api.json,
	// Operation.operationType): the settings' update is one too.
	op := &container.Operation{Name: fmt.Sprintf("op-%d", len(f.ops)+1), OperationType: "UPGRADE_NODES", Status: "RUNNING",
		TargetLink: fmt.Sprintf("https://container.googleapis.com/v1/projects/%s/locations/%s/clusters/%s/nodePools/%s", fakeProject, fakeLocation, fakeCluster, fakePool)}
	f.ops = append(f.ops, op)
	return op
}

// called are the methods called since call number from.
func (f *fakeGKE) called(from int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls[from:])
}

func gkeNodes() []corev1.Node {
	return []corev1.Node{node("n1", fakePool, "gce://"+fakeProject+"/us-central1-a/n1"), node("n2", fakePool, "gce://"+fakeProject+"/us-central1-a/n2")}
}
