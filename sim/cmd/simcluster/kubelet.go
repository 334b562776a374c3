package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/podproc"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// kubelet is "simcluster kubelet": a node of the simulated cluster whose
// pods run as local processes (package podproc), for the plugin's
// in-cluster Job on the demo (hack/demo.sh in-cluster). The processes
// get this command's environment (a cloud's endpoint, say) but for
// KUBECONFIG: they reach the cluster as a pod does.
func kubelet(args []string) error {
	fs := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the simulated cluster (required)")
	node := fs.String("node", "", "the node to register and serve (required)")
	labels := fs.String("labels", "", "the node's labels, KEY=VALUE,...")
	binary := fs.String("binary", "", "the program the pods' container command stands for (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *node == "" || *binary == "" || *kubeconfig == "" {
		return errors.New("--kubeconfig, --node and --binary are required")
	}
	n := scenario.Node{Name: *node, Labels: map[string]string{}}
	for kv := range strings.SplitSeq(*labels, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--labels: %q is not KEY=VALUE", kv)
		}
		n.Labels[k] = v
	}
	unshare, err := podproc.Namespaces()
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	c, err := clientFor(*kubeconfig)
	if err != nil {
		return err
	}
	k := &podproc.Kubelet{Client: c, Host: rc.Host, Binary: *binary, Env: os.Environ(), Unshare: unshare}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := k.Register(ctx, n); err != nil {
		return err
	}
	fmt.Printf("ready node=%s\n", *node)
	k.ServeNode(ctx, *node, os.Stdout)
	return nil
}
