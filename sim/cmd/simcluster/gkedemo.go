package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gkefake"
)

// gkeDemoFlags are up's flags of the GKE demo.
type gkeDemoFlags struct {
	on   *bool
	addr *string
}

func bindGKEDemo(fs *flag.FlagSet) gkeDemoFlags {
	return gkeDemoFlags{
		on: fs.Bool("gke-demo", false, "also serve a fake GKE endpoint (over a fake Compute Engine one) with cluster \"demo\" and node pool \"default-pool\" (3 nodes, "+
			gkefake.DemoOldVersion+", control plane "+gkefake.DemoNewVersion+") and workloads in namespace "+gkefake.DemoNamespace),
		addr: fs.String("gke-addr", "127.0.0.1:0", "listen address of the fake GKE endpoint (with --gke-demo)"),
	}
}

// serveGKEDemo serves the GKE demo on c until ctx ends, having printed
// "ready kubeconfig=PATH gke-endpoint=URL compute-endpoint=URL": the
// plugin reaches them with NODEUPGRADE_GKE_ENDPOINT and
// NODEUPGRADE_GCE_ENDPOINT (and the *_NO_AUTH variables set to true).
func serveGKEDemo(ctx context.Context, c *cluster.Cluster, f gkeDemoFlags, started time.Time) error {
	// Launches, drains and deletions go to stderr: they are GKE's side of
	// the demo, worth watching next to the plugin's output.
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	s, err := gkefake.StartDemo(ctx, c.Client, gkefake.DemoOptions{Addr: *f.addr, Logf: logger.Printf})
	if err != nil {
		return errors.Join(err, c.Stop())
	}
	return serveEndpoint(ctx, c, started, "GKE", "gke-endpoint="+s.Endpoint+" compute-endpoint="+s.Compute.Endpoint, s.Close)
}
