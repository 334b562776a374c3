package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
)

func bindAKSDemo(fs *flag.FlagSet) *bool {
	return fs.Bool("aks-demo", false, "also serve a local Azure Resource Manager endpoint with AKS cluster \""+azurefake.DemoCluster+"\" (resource group "+
		azurefake.DemoResourceGroup+") and agent pool \""+azurefake.DemoPool+"\" (3 nodes, "+azurefake.DemoOldVersion+", control plane "+
		azurefake.DemoNewVersion+") and workloads in namespace "+azurefake.DemoNamespace)
}

// serveAKSDemo serves the AKS demo on c until ctx ends, having printed
// "ready kubeconfig=PATH aks-endpoint=URL": the plugin reaches it with
// NODEUPGRADE_AKS_ENDPOINT (and NODEUPGRADE_AKS_NO_AUTH=true).
func serveAKSDemo(ctx context.Context, c *cluster.Cluster, started time.Time) error {
	// AKS's surges, drains and deletions go to stderr, as GKE's do.
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	s, err := azurefake.StartDemo(ctx, c.Client, azurefake.DemoOptions{Logf: logger.Printf})
	if err != nil {
		return errors.Join(err, c.Stop())
	}
	return serveEndpoint(ctx, c, started, "AKS", "aks-endpoint="+s.URL, s.Close)
}
