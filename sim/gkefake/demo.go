package gkefake

import (
	"context"
	"fmt"
	"time"

	container "google.golang.org/api/container/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The GKE demo: cluster "demo" in us-central1, its control plane on
// DemoNewVersion, and node pool "default-pool" of one node per zone on
// DemoOldVersion, whose workloads run in namespace DemoNamespace.
const (
	DemoCluster    = "demo"
	DemoLocation   = "us-central1"
	DemoPool       = "default-pool"
	DemoNamespace  = "gke-demo"
	DemoOldVersion = "1.30.5-gke.1000"
	DemoNewVersion = "1.31.2-gke.1000"
)

// DemoZones are the demo pool's zones.
var DemoZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// DemoOptions configure StartDemo.
type DemoOptions struct {
	// Addr is the GKE endpoint's listen address; default "127.0.0.1:0".
	Addr string
	// LaunchDelay is how long a new instance takes to become a node;
	// default 2s.
	LaunchDelay time.Duration
	// SetupTimeout bounds the wait for the pool's nodes and the
	// workloads; default 3 minutes.
	SetupTimeout time.Duration
	Logf         func(format string, args ...any)
}

// StartDemo starts a Server with the demo's cluster and pool (demoUpgrade)
// and its workloads: web (3 replicas, PDB maxUnavailable 1)
// and api (2 replicas, PDB minAvailable 1), pinned to the pool.
func StartDemo(ctx context.Context, kube kubernetes.Interface, o DemoOptions) (*Server, error) {
	if o.LaunchDelay == 0 {
		o.LaunchDelay = 2 * time.Second
	}
	if o.SetupTimeout == 0 {
		o.SetupTimeout = 3 * time.Minute
	}
	s, err := Start(ctx, kube, Options{Addr: o.Addr, Logf: o.Logf,
		Compute: gcefake.Options{LaunchDelay: o.LaunchDelay, DeleteDelay: o.LaunchDelay / 4, Logf: o.Logf}})
	if err != nil {
		return nil, err
	}
	setup, cancel := context.WithTimeout(ctx, o.SetupTimeout)
	defer cancel()
	if err := s.demoPool(setup, kube); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) demoPool(ctx context.Context, kube kubernetes.Interface) error {
	s.CreateCluster(ClusterSpec{Name: DemoCluster, Location: DemoLocation, MasterVersion: DemoNewVersion, ValidNodeVersions: []string{DemoOldVersion}})
	if err := s.CreatePool(ctx, PoolSpec{Cluster: DemoCluster, Location: DemoLocation, Name: DemoPool, Zones: DemoZones, NodesPerZone: 1,
		Version: DemoOldVersion, Upgrade: demoUpgrade()}); err != nil {
		return fmt.Errorf("demo node pool: %w", err)
	}
	return scenario.PoolApps(ctx, kube, DemoNamespace, map[string]string{NodePoolLabel: DemoPool})
}

// demoUpgrade are the demo pool's upgrade settings: blue/green, a node per
// batch, no soak between batches and an hour's pool soak, as a team that
// upgrades its pool blue/green keeps them; the demo's run asks for the
// same, which needs no update of the settings.
func demoUpgrade() *container.UpgradeSettings {
	return &container.UpgradeSettings{Strategy: "BLUE_GREEN", MaxSurge: 1, BlueGreenSettings: &container.BlueGreenSettings{
		NodePoolSoakDuration:  "3600s",
		StandardRolloutPolicy: &container.StandardRolloutPolicy{BatchNodeCount: 1, BatchSoakDuration: "0s"},
	}}
}
