package gkefake

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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

// startSettingsScene is a pool of one node (never launched) whose
// settings' updates run d.
func startSettingsScene(t *testing.T, d time.Duration) (*Server, *container.Service, string) {
	t.Helper()
	ctx := context.Background()
	srv, err := Start(ctx, fake.NewClientset(), Options{Compute: gcefake.Options{LaunchDelay: time.Hour}, SettingsDuration: d, PollEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateCluster(ClusterSpec{Name: "c", Location: "us-central1", MasterVersion: "1.31.2-gke.1000", ValidNodeVersions: []string{"1.30.5-gke.1000"}})
	if err := srv.CreatePool(ctx, PoolSpec{Cluster: "c", Location: "us-central1", Name: "p", Zones: []string{"us-central1-a"}, NodesPerZone: 1,
		Version: "1.30.5-gke.1000", Upgrade: &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: 1}}); err != nil {
		t.Fatal(err)
	}
	svc, err := container.NewService(ctx, option.WithEndpoint(srv.Endpoint), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return srv, svc, "projects/" + srv.Project() + "/locations/us-central1/clusters/c/nodePools/p"
}

func surgeOf(n int64) *container.UpgradeSettings {
	return &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: n}
}

// awaitOp polls the operation until it is DONE.
func awaitOp(t *testing.T, svc *container.Service, op *container.Operation) *container.Operation {
	t.Helper()
	name := op.SelfLink[strings.Index(op.SelfLink, "/v1/")+4:]
	for range 200 {
		got, err := svc.Projects.Locations.Operations.Get(name).Do()
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "DONE" {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("operation %s never ended", op.Name)
	return nil
}

// TestSettingsUpdateRuns: an update of the settings alone is an
// operation that runs; while it does, the pool is RECONCILING with its
// old settings, and every other change of the pool is refused with 400
// FAILED_PRECONDITION naming it; the settings change when it is DONE.
func TestSettingsUpdateRuns(t *testing.T) {
	_, svc, name := startSettingsScene(t, 500*time.Millisecond)
	pools := svc.Projects.Locations.Clusters.NodePools
	op, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(3)}).Do()
	if err != nil {
		t.Fatal(err)
	}
	if op.Status == "DONE" || op.OperationType != "UPGRADE_NODES" {
		t.Fatalf("the settings' update answered %s %s, want a running UPGRADE_NODES operation", op.OperationType, op.Status)
	}
	if p, _ := pools.Get(name).Do(); p.Status != "RECONCILING" || p.UpgradeSettings.MaxSurge != 1 {
		t.Errorf("while it runs the pool is %s with maxSurge %d, want RECONCILING with 1", p.Status, p.UpgradeSettings.MaxSurge)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"settings", func() error {
			_, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(2)}).Do()
			return err
		}},
		{"upgrade", func() error {
			_, err := pools.Update(name, &container.UpdateNodePoolRequest{NodeVersion: "1.31.2-gke.1000"}).Do()
			return err
		}},
		{"rollback", func() error {
			_, err := pools.Rollback(name, &container.RollbackNodePoolUpgradeRequest{}).Do()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			ge, ok := err.(*googleapi.Error)
			if !ok || ge.Code != http.StatusBadRequest || !strings.Contains(ge.Message, "Cluster is running incompatible operation "+op.Name) {
				t.Errorf("want 400 naming %s, got %v", op.Name, err)
			}
		})
	}
	if done := awaitOp(t, svc, op); done.Error != nil {
		t.Fatalf("the settings' update failed: %v", done.Error.Message)
	}
	p, _ := pools.Get(name).Do()
	if p.Status != "RUNNING" || p.UpgradeSettings.MaxSurge != 3 {
		t.Errorf("once DONE the pool is %s with maxSurge %d, want RUNNING with 3", p.Status, p.UpgradeSettings.MaxSurge)
	}
	if _, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(2)}).Do(); err != nil {
		t.Errorf("an update after the operation ended: %v", err)
	}
}

// TestSettingsUpdateCancelled: a cancel ends the settings' operation
// CANCELLED, the pool's settings as they were.
func TestSettingsUpdateCancelled(t *testing.T) {
	_, svc, name := startSettingsScene(t, time.Minute)
	pools := svc.Projects.Locations.Clusters.NodePools
	op, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(3)}).Do()
	if err != nil {
		t.Fatal(err)
	}
	opName := op.SelfLink[strings.Index(op.SelfLink, "/v1/")+4:]
	if _, err := svc.Projects.Locations.Operations.Cancel(opName, &container.CancelOperationRequest{}).Do(); err != nil {
		t.Fatal(err)
	}
	done := awaitOp(t, svc, op)
	if done.Error == nil || done.Error.Code != codeCancelled {
		t.Errorf("a cancelled settings' update ended %+v, want CANCELLED", done.Error)
	}
	if p, _ := pools.Get(name).Do(); p.Status != "RUNNING" || p.UpgradeSettings.MaxSurge != 1 {
		t.Errorf("after the cancel the pool is %s with maxSurge %d, want RUNNING with 1", p.Status, p.UpgradeSettings.MaxSurge)
	}
}

// TestProviderWaitsOutSettingsPutBack: a run stopped while GKE puts the
// settings back leaves that operation running; the next run's Configure
// (the gke provider, against the fake) waits it out and reads, sending
// the same settings never again and other settings once.
func TestProviderWaitsOutSettingsPutBack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		surge       int
		wantUpdates int
	}{
		{name: "the same settings", surge: 1, wantUpdates: 0},
		{name: "other settings", surge: 2, wantUpdates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, svc, name := startSettingsScene(t, 300*time.Millisecond)
			pools := svc.Projects.Locations.Clusters.NodePools
			// The stopped run's own settings, then its put-back, cut short.
			op, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(3)}).Do()
			if err != nil {
				t.Fatal(err)
			}
			awaitOp(t, svc, op)
			if _, err := pools.Update(name, &container.UpdateNodePoolRequest{UpgradeSettings: surgeOf(1)}).Do(); err != nil {
				t.Fatal(err)
			}
			np := openProvider(t, srv)
			want, err := np.Settings(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want.MaxSurge = &tc.surge
			before := updateCalls(srv)
			if err := np.Configure(context.Background(), want); err != nil {
				t.Fatalf("Configure = %v, want the put-back waited out", err)
			}
			if n := updateCalls(srv) - before; n != tc.wantUpdates {
				t.Errorf("Configure sent %d updates, want %d", n, tc.wantUpdates)
			}
			if p, _ := pools.Get(name).Do(); p.UpgradeSettings.MaxSurge != int64(tc.surge) {
				t.Errorf("pool's maxSurge %d, want %d", p.UpgradeSettings.MaxSurge, tc.surge)
			}
		})
	}
}

// openProvider is the gke provider's node pool "p" of the fake.
func openProvider(t *testing.T, srv *Server) cloud.ManagedUpdater {
	t.Helper()
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
	return p.(cloud.ManagedUpdater)
}

// updateCalls counts the nodePools.update calls answered.
func updateCalls(srv *Server) int {
	n := 0
	for _, m := range srv.ChangingCalls() {
		if m == "container.projects.locations.clusters.nodePools.update" {
			n++
		}
	}
	return n
}
