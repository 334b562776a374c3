// Command demo runs the real Karpenter beside a simulated cluster and
// makes the demo of provider karpenter there (karpenter.Demo): NodePool
// "demo" of 9 nodes, its workloads, then a new NodeClass that drifts every
// node. It prints "ready nodepool=demo" once done and keeps Karpenter
// running until it is interrupted (hack/demo.sh karpenter).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/karpenter"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the simulated cluster's admin kubeconfig")
	flag.Parse()
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "karpenter demo:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setup, cancel := context.WithTimeout(ctx, 30*time.Minute) // the first build of Karpenter
	defer cancel()
	_, took, err := karpenter.Build(setup)
	if err != nil {
		return err
	}
	if took > 0 {
		fmt.Fprintf(os.Stderr, "built Karpenter %s's KWOK provider in %s\n", karpenter.Version, took.Round(time.Second))
	}
	k, err := karpenter.Start(setup, rc, karpenter.Options{Kubeconfig: kubeconfig, Logs: os.Stderr})
	if err != nil {
		return err
	}
	defer k.Stop()
	if err := karpenter.Demo(setup, kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc), "demo"); err != nil {
		return err
	}
	fmt.Println("ready nodepool=demo")
	<-ctx.Done()
	return nil
}
