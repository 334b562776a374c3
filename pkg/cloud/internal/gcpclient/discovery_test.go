package gcpclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	crm "google.golang.org/api/cloudresourcemanager/v1"
	compute "google.golang.org/api/compute/v1"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/option"
)

// computeMethod is what compute-api.json says of a method.
type computeMethod struct {
	HTTPMethod string                     `json:"httpMethod"`
	Path       string                     `json:"path"`
	Parameters map[string]json.RawMessage `json:"parameters"`
}

// computeDoc are the methods of the discovery document that ships beside
// the compute client, by id ("compute.instanceGroupManagers.resize").
func computeDoc(t *testing.T) map[string]computeMethod {
	t.Helper()
	file, _ := runtime.FuncForPC(reflect.ValueOf(compute.NewService).Pointer()).FileLine(reflect.ValueOf(compute.NewService).Pointer())
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "compute-api.json"))
	if err != nil {
		t.Fatalf("cannot read compute-api.json beside the compute client: %v", err)
	}
	type resource struct {
		Methods   map[string]computeMethod `json:"methods"`
		Resources map[string]json.RawMessage
	}
	var doc struct{ Resources map[string]resource }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]computeMethod{}
	for name, r := range doc.Resources {
		for m, cm := range r.Methods {
			out["compute."+name+"."+m] = cm
		}
	}
	return out
}

// uuid is a version 4 UUID, as requestId takes ("must be a valid UUID
// with the exception that zero UUID is not supported", compute-api.json).
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestComputeCallsAsDocumented: every Compute method the gce and gke
// providers call (pkg/cloud/gce, pkg/cloud/gke: svc.<Resource>.<Method>)
// gets a requestId (a UUID) from the transport exactly when compute-api.json
// gives the method one, the same on every attempt, and is sent again after a
// 503: a read, or a change its requestId keeps from being done twice.
func TestComputeCallsAsDocumented(t *testing.T) {
	doc := computeDoc(t)
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, id := range []string{
		"instances.get", "images.get", "images.getFromFamily", "regions.get", "instanceTemplates.get", "instanceTemplates.insert",
		"autoscalers.list", "regionAutoscalers.list", "backendServices.list", "regionBackendServices.list", "globalOperations.wait",
		"instanceGroupManagers.get", "instanceGroupManagers.listManagedInstances", "instanceGroupManagers.insert", "instanceGroupManagers.delete",
		"instanceGroupManagers.resize", "instanceGroupManagers.setInstanceTemplate", "instanceGroupManagers.patch",
		"instanceGroupManagers.deleteInstances", "instanceGroupManagers.recreateInstances",
		"regionInstanceGroupManagers.get", "regionInstanceGroupManagers.listManagedInstances", "regionInstanceGroupManagers.insert",
		"regionInstanceGroupManagers.delete", "regionInstanceGroupManagers.resize", "regionInstanceGroupManagers.setInstanceTemplate",
		"regionInstanceGroupManagers.patch", "regionInstanceGroupManagers.deleteInstances", "regionInstanceGroupManagers.recreateInstances",
	} {
		t.Run(id, func(t *testing.T) {
			m, ok := doc["compute."+id]
			if !ok {
				t.Fatalf("compute-api.json has no method %s", id)
			}
			_, documented := m.Parameters["requestId"]
			url, sent := firstFails(t)
			c := &http.Client{Transport: &Transport{Base: http.DefaultTransport, API: Compute, Attempts: maxAttempts, Backoff: time.Millisecond}}
			req, _ := http.NewRequestWithContext(context.Background(), m.HTTPMethod, url+"/compute/v1/"+param.ReplaceAllString(m.Path, "x")+"?alt=json", strings.NewReader("{}"))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			ids := sent()
			if len(ids) != 2 || resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d after %d attempts, want 200 after 2", m.HTTPMethod, m.Path, resp.StatusCode, len(ids))
			}
			if (ids[0] != "") != documented || ids[1] != ids[0] || documented && !uuid.MatchString(ids[0]) {
				t.Errorf("%s %s: requestIds %q; compute-api.json gives it a requestId: %v", m.HTTPMethod, m.Path, ids, documented)
			}
		})
	}
}

// TestWithRetries: the options WithRetries makes give Google's own
// clients the transport, at the endpoint and with the credentials given:
// Compute's resize is sent again with its requestId, Resource Manager's
// testIamPermissions (a POST) is sent again, a GKE node pool update (no
// request ID) is not.
func TestWithRetries(t *testing.T) {
	defer func(d time.Duration) { FirstBackoff = d }(FirstBackoff)
	FirstBackoff = time.Millisecond
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		api      API
		call     func(opts []option.ClientOption) error
		attempts int
		fails    bool
	}{
		{name: "Compute resize", api: Compute, attempts: 2, call: func(opts []option.ClientOption) error {
			svc, err := compute.NewService(ctx, opts...)
			if err == nil {
				_, err = svc.InstanceGroupManagers.Resize("p", "z", "g", 3).Context(ctx).Do()
			}
			return err
		}},
		{name: "Resource Manager testIamPermissions", api: ResourceManager, attempts: 2, call: func(opts []option.ClientOption) error {
			svc, err := crm.NewService(ctx, opts...)
			if err == nil {
				_, err = svc.Projects.TestIamPermissions("p", &crm.TestIamPermissionsRequest{Permissions: []string{"a"}}).Context(ctx).Do()
			}
			return err
		}},
		{name: "GKE node pool update", api: Container, attempts: 1, fails: true, call: func(opts []option.ClientOption) error {
			svc, err := container.NewService(ctx, opts...)
			if err == nil {
				_, err = svc.Projects.Locations.Clusters.NodePools.Update("projects/p/locations/l/clusters/c/nodePools/n", &container.UpdateNodePoolRequest{}).Context(ctx).Do()
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, sent := firstFails(t)
			opts, err := WithRetries(ctx, tc.api, []option.ClientOption{option.WithEndpoint(url + "/"), option.WithoutAuthentication()})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(opts)
			ids := sent()
			if len(ids) != tc.attempts || (err != nil) != tc.fails {
				t.Fatalf("%d attempts, error %v; want %d, failing: %v", len(ids), err, tc.attempts, tc.fails)
			}
			if tc.api == Compute && (ids[0] == "" || ids[1] != ids[0]) {
				t.Errorf("requestIds %q, want one kept across attempts", ids)
			}
		})
	}
}

// firstFails is a server that answers its first call 503, the others {};
// sent are the requestIds of the calls it got.
func firstFails(t *testing.T) (url string, sent func() []string) {
	var mu sync.Mutex
	var ids []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if ids = append(ids, r.URL.Query().Get("requestId")); len(ids) == 1 {
			w.WriteHeader(503)
			_, _ = w.Write([]byte(googleError(503, "backendError")))
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}
}
