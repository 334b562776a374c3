// Command simcluster runs a simulated Kubernetes cluster (see package
// cluster) and builds demo scenarios on it.
//
//	simcluster up --dir DIR [--pod-ready-delay 1s] [--aws-demo [--aws-addr 127.0.0.1:0]]
//	simcluster scenario demo --kubeconfig PATH
//
// With --aws-demo, up also serves a fake AWS endpoint (package awsfake)
// whose Auto Scaling group "demo" backs the cluster's nodes, creates the
// demo workloads on them, and prints
// "ready kubeconfig=PATH aws-endpoint=URL".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const usage = `usage:
  simcluster up --dir DIR [--pod-ready-delay 1s] [--aws-demo [--aws-addr 127.0.0.1:0]]
  simcluster scenario demo --kubeconfig PATH
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "simcluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("missing command")
	}
	switch {
	case args[0] == "up":
		return up(args[1:])
	case args[0] == "scenario" && len(args) > 1 && args[1] == "demo":
		return demo(args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "work directory for etcd data, certificates, kubeconfig and logs (required)")
	delay := fs.Duration("pod-ready-delay", time.Second, "time from a pod being scheduled to it being Running and Ready")
	awsDemo := fs.Bool("aws-demo", false, "also serve a fake AWS endpoint with Auto Scaling group \"demo\" (9 nodes) and the demo workloads")
	awsAddr := fs.String("aws-addr", "127.0.0.1:0", "listen address of the fake AWS endpoint (with --aws-demo)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: *dir, PodReadyDelay: *delay})
	if err != nil {
		return err
	}
	if !*awsDemo {
		fmt.Printf("ready kubeconfig=%s\n", c.Kubeconfig)
		fmt.Fprintf(os.Stderr, "simcluster: started in %s, logs in %s\n", time.Since(started).Round(time.Millisecond), filepath.Join(c.Dir, "components.log"))
		<-ctx.Done()
		stop()
		fmt.Fprintln(os.Stderr, "simcluster: stopping")
		return c.Stop()
	}
	// Launches and terminations go to stderr: they are the AWS side of
	// the demo, worth watching next to the plugin's output.
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	s, err := awsfake.StartDemo(ctx, c.Client, awsfake.DemoOptions{Addr: *awsAddr, LaunchDelay: 2 * time.Second, Logf: logger.Printf})
	if err != nil {
		return errors.Join(err, c.Stop())
	}
	fmt.Printf("ready kubeconfig=%s aws-endpoint=%s\n", c.Kubeconfig, s.URL)
	fmt.Fprintf(os.Stderr, "simcluster: started with the AWS demo in %s, logs in %s\n", time.Since(started).Round(time.Millisecond), filepath.Join(c.Dir, "components.log"))
	<-ctx.Done()
	stop()
	fmt.Fprintln(os.Stderr, "simcluster: stopping")
	// The endpoint first: its pending launches and terminations call the
	// apiserver.
	s.Close()
	return c.Stop()
}

func demo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the simulated cluster (required)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for nodes and apps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := scenario.Demo(ctx, c); err != nil {
		return err
	}
	fmt.Println("demo ready: node group demo (6 outdated, 3 current nodes), namespace demo (web, api, worker)")
	return nil
}
