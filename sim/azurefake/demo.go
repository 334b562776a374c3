package azurefake

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The AKS demo: cluster "demo" in resource group "demo-rg", its control
// plane on DemoNewVersion, and agent pool "demopool" of three nodes over
// three zones on DemoOldVersion and node image DemoOldImage (AKS offers
// DemoNewImage), whose workloads run in namespace DemoNamespace.
const (
	DemoResourceGroup = "demo-rg"
	DemoCluster       = "demo"
	DemoPool          = "demopool"
	DemoNamespace     = "aks-demo"
	DemoOldVersion    = "1.31.5"
	DemoNewVersion    = "1.32.2"
	DemoOldImage      = "AKSUbuntu-2204gen2containerd-202501.01.0"
	DemoNewImage      = "AKSUbuntu-2204gen2containerd-202502.01.0"
)

// DemoOptions configure StartDemo.
type DemoOptions struct {
	// SetupTimeout bounds the wait for the pool's nodes and the
	// workloads; default 3 minutes.
	SetupTimeout time.Duration
	Logf         func(format string, args ...any)
}

// StartDemo starts a Server with the demo's cluster and pool (AKS's
// default upgrade settings) and its workloads: web (3 replicas, PDB
// maxUnavailable 1) and api (2 replicas, PDB minAvailable 1), pinned to
// the pool. One of AKS's minutes (drain timeout, soak) lasts a second.
func StartDemo(ctx context.Context, kube kubernetes.Interface, o DemoOptions) (*Server, error) {
	if o.SetupTimeout == 0 {
		o.SetupTimeout = 3 * time.Minute
	}
	s, err := Start(ctx, kube, Options{PollEvery: 250 * time.Millisecond, EvictRetry: time.Second, MinuteIs: time.Second,
		NodeReadyTimeout: 2 * time.Minute, SettingsDuration: time.Second, Logf: o.Logf})
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
	s.CreateCluster(ClusterSpec{ResourceGroup: DemoResourceGroup, Name: DemoCluster, Version: DemoNewVersion, Versions: []string{DemoOldVersion, DemoNewVersion}})
	if err := s.CreatePool(ctx, PoolSpec{ResourceGroup: DemoResourceGroup, Cluster: DemoCluster, Name: DemoPool, Count: 3, Zones: []string{"1", "2", "3"},
		Version: DemoOldVersion, Image: DemoOldImage, LatestImage: DemoNewImage}); err != nil {
		return fmt.Errorf("demo agent pool: %w", err)
	}
	return scenario.PoolApps(ctx, kube, DemoNamespace, map[string]string{AgentPoolLabel: DemoPool})
}
