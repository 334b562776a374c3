package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// gceDemo is up's --gce-demo: a local Compute Engine endpoint (package
// gcefake) whose regional managed instance group "demo" backs the
// cluster's nodes, with the demo workloads on them.
type gceDemo struct {
	on   *bool
	addr *string
}

func bindGCEDemo(fs *flag.FlagSet) gceDemo {
	return gceDemo{
		on:   fs.Bool("gce-demo", false, "also serve a local Compute Engine endpoint with managed instance group \"demo\" (9 nodes) and the demo workloads"),
		addr: fs.String("gce-addr", "127.0.0.1:0", "listen address of the local Compute Engine endpoint (with --gce-demo)"),
	}
}

// check refuses what --gce-demo cannot be combined with.
func (d gceDemo) check(awsDemo, noLifecycle bool) error {
	switch {
	case !*d.on:
		return nil
	case awsDemo:
		return errors.New("cannot combine --gce-demo with --aws-demo: both make node group \"demo\"")
	case noLifecycle:
		return errors.New("cannot combine --gce-demo with --no-node-lifecycle: the demo's nodes would keep their not-ready taint")
	}
	return nil
}

// serve starts the endpoint and the demo on c, prints
// "ready kubeconfig=PATH gce-endpoint=URL" and serves until ctx ends.
func (d gceDemo) serve(ctx context.Context, c *cluster.Cluster, started time.Time) error {
	// Creations and deletions go to stderr: they are the Compute side of
	// the demo, worth watching next to the plugin's output.
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	s, err := gcefake.StartDemo(ctx, c.Client, gcefake.DemoOptions{Addr: *d.addr, Logf: logger.Printf})
	if err != nil {
		return errors.Join(err, c.Stop())
	}
	return serveEndpoint(ctx, c, started, "GCE", "gce-endpoint="+s.Endpoint, s.Close)
}
