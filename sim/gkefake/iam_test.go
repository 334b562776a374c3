package gkefake

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	crm "google.golang.org/api/cloudresourcemanager/v1"
	container "google.golang.org/api/container/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// readOnly is a role without container.clusters.update.
var readOnly = []string{"container.clusters.get", "container.clusters.list", "container.operations.get", "container.operations.list", "container.operations.cancel", "compute.instances.get"}

func startIAMScene(t *testing.T) (*Server, string) {
	t.Helper()
	ctx := context.Background()
	srv, err := Start(ctx, fake.NewClientset(), Options{Compute: gcefake.Options{LaunchDelay: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateCluster(ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: "1.31.2-gke.1000", ValidNodeVersions: []string{"1.30.5-gke.1000", "1.31.2-gke.1000"}})
	if err := srv.CreatePool(ctx, PoolSpec{Cluster: "c", Location: "us-central1", Name: "p", Zones: []string{"us-central1-a"}, NodesPerZone: 1, Version: "1.30.5-gke.1000"}); err != nil {
		t.Fatal(err)
	}
	return srv, "projects/" + srv.Project() + "/locations/us-central1/clusters/c/nodePools/p"
}

// TestPermissionDenied: a call whose permission the caller lacks is
// refused with 403 PERMISSION_DENIED naming it, and changes nothing; the
// calls it has go on.
func TestPermissionDenied(t *testing.T) {
	srv, name := startIAMScene(t)
	srv.Grant(readOnly)
	ctx := context.Background()
	svc, err := container.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	before, err := svc.Projects.Locations.Clusters.NodePools.Get(name).Do()
	if err != nil {
		t.Fatalf("nodePools.get needs container.clusters.get, granted: %v", err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"update", func() error {
			_, err := svc.Projects.Locations.Clusters.NodePools.Update(name, &container.UpdateNodePoolRequest{NodeVersion: "1.31.2-gke.1000"}).Do()
			return err
		}},
		{"rollback", func() error {
			_, err := svc.Projects.Locations.Clusters.NodePools.Rollback(name, &container.RollbackNodePoolUpgradeRequest{}).Do()
			return err
		}},
		{"completeUpgrade", func() error {
			_, err := svc.Projects.Locations.Clusters.NodePools.CompleteUpgrade(name, &container.CompleteNodePoolUpgradeRequest{}).Do()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ge *googleapi.Error
			if err := tc.call(); !errorsAs(err, &ge) || ge.Code != http.StatusForbidden || !strings.Contains(ge.Message, `Required "container.clusters.update" permission(s)`) {
				t.Errorf("want 403 naming container.clusters.update, got %v", err)
			}
		})
	}
	after, _ := svc.Projects.Locations.Clusters.NodePools.Get(name).Do()
	if after.Etag != before.Etag || srv.UpgradeCalls() != 0 {
		t.Errorf("a refused call changed the pool: etag %s -> %s", before.Etag, after.Etag)
	}
}

func errorsAs(err error, ge **googleapi.Error) bool {
	e, ok := err.(*googleapi.Error)
	*ge = e
	return ok
}

// TestTestIamPermissions: Resource Manager's answer is the subset granted;
// a wildcard is refused.
func TestTestIamPermissions(t *testing.T) {
	srv, _ := startIAMScene(t)
	srv.Grant(readOnly)
	ctx := context.Background()
	svc, err := crm.NewService(ctx, option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := svc.Projects.TestIamPermissions(srv.Project(), &crm.TestIamPermissionsRequest{Permissions: []string{"container.clusters.get", "container.clusters.update"}}).Do()
	if err != nil || !slices.Equal(resp.Permissions, []string{"container.clusters.get"}) {
		t.Errorf("granted %v, %v; want container.clusters.get", resp, err)
	}
	if _, err := svc.Projects.TestIamPermissions(srv.Project(), &crm.TestIamPermissionsRequest{Permissions: []string{"container.*"}}).Do(); err == nil {
		t.Errorf("a wildcard was taken")
	}
}

// TestProviderProbesPermissions: the gke provider's probe, against the
// fake, names the permission a read-only role lacks.
func TestProviderProbesPermissions(t *testing.T) {
	srv, _ := startIAMScene(t)
	srv.Grant(readOnly[:len(readOnly)-1])
	t.Setenv(gke.EndpointEnv, srv.Endpoint)
	t.Setenv(gke.NoAuthEnv, "true")
	t.Setenv(gce.EndpointEnv, srv.Compute.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{gke.NodePoolLabel: "p"}},
		Spec: corev1.NodeSpec{ProviderID: "gce://" + srv.Project() + "/us-central1-a/n1"}}
	c, _ := cloud.Lookup(gke.Name)
	_, p, err := c.Open(context.Background(), nil, []corev1.Node{n}, plan.CloudTarget{Options: map[string]string{"gke-cluster": "c", "location": "us-central1"}})
	if err != nil {
		t.Fatal(err)
	}
	perms, err := p.(cloud.PermissionProber).ProbePermissions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, m := range perms.Missing {
		missing = append(missing, m.Permission)
	}
	if !slices.Equal(missing, []string{"container.clusters.update"}) || perms.CannotAsk != "" {
		t.Errorf("missing %v (cannot ask %q), want container.clusters.update", missing, perms.CannotAsk)
	}
}

// TestModelBreakingRequestRefused: a request the discovery document
// refuses (here a field UpdateNodePoolRequest does not have) is refused
// with 400 INVALID_ARGUMENT and changes nothing.
func TestModelBreakingRequestRefused(t *testing.T) {
	srv, name := startIAMScene(t)
	req, _ := http.NewRequest(http.MethodPut, srv.Endpoint+"v1/"+name, strings.NewReader(`{"nodeVersion":"1.31.2-gke.1000","version":"1.31"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ge struct {
		Error struct {
			Code            int
			Message, Status string
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&ge)
	if resp.StatusCode != http.StatusBadRequest || ge.Error.Status != "INVALID_ARGUMENT" || !strings.Contains(ge.Error.Message, `Unknown name "version"`) {
		t.Errorf("want 400 INVALID_ARGUMENT naming the field, got %d %+v", resp.StatusCode, ge)
	}
	if srv.UpgradeCalls() != 0 {
		t.Errorf("a refused request started an upgrade")
	}
}
