package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
)

// serveEndpoint prints "ready kubeconfig=PATH ENDPOINTS", says the demo
// of what started, and serves until ctx ends; then it closes the demo's
// endpoint first (its pending work calls the apiserver) and stops c.
func serveEndpoint(ctx context.Context, c *cluster.Cluster, started time.Time, what, endpoints string, closeEndpoint func()) error {
	fmt.Printf("ready kubeconfig=%s %s\n", c.Kubeconfig, endpoints)
	fmt.Fprintf(os.Stderr, "simcluster: started with the %s demo in %s, logs in %s\n", what, time.Since(started).Round(time.Millisecond), filepath.Join(c.Dir, "components.log"))
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "simcluster: stopping")
	closeEndpoint()
	return c.Stop()
}
