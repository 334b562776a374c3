package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// noneDemo is up's --none-demo: the demo of provider none, node group
// "demo" of nodes no cloud owns (no provider ID: nothing of a cloud keeps
// a machine running behind a deleted Node), which `--provider none` runs
// end to end where the cloud demos' nodes are refused as
// machine-left-running.
type noneDemo struct{ on *bool }

func bindNoneDemo(fs *flag.FlagSet) noneDemo {
	return noneDemo{on: fs.Bool("none-demo", false, "also build node group \"demo\" of nodes no cloud owns (6 on image ami-old, 3 on ami-new, by label) and the demo workloads, for --provider none")}
}

// check refuses what --none-demo cannot be combined with.
func (d noneDemo) check(otherDemo, noLifecycle bool) error {
	switch {
	case !*d.on:
		return nil
	case otherDemo:
		return errors.New("--none-demo goes alone: not with --aws-demo, --gce-demo or --gke-demo")
	case noLifecycle:
		return errors.New("cannot combine --none-demo with --no-node-lifecycle: the demo's nodes would keep their not-ready taint")
	}
	return nil
}

// serve builds scenario.Demo on c, prints "ready kubeconfig=PATH" and
// serves until ctx ends.
func (d noneDemo) serve(ctx context.Context, c *cluster.Cluster, started time.Time) error {
	built, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := scenario.Demo(built, c.Client); err != nil {
		return errors.Join(err, c.Stop())
	}
	fmt.Printf("ready kubeconfig=%s\n", c.Kubeconfig)
	fmt.Fprintf(os.Stderr, "simcluster: started with the demo of provider none in %s, logs in %s\n", time.Since(started).Round(time.Millisecond), filepath.Join(c.Dir, "components.log"))
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "simcluster: stopping")
	return c.Stop()
}
