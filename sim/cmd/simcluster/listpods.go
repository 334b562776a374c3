package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// listPods is the floor under a plan's CPU, for hack/bench.sh: the pods a
// plan lists (those not finished), asked for as the plugin asks (protobuf,
// gzip, gunzipped by transport.GunzipFaster), in one list, read and thrown
// away undecoded. What a plan spends beyond it is its own work: decoding,
// planning, printing.
func listPods(args []string) error {
	fs := flag.NewFlagSet("list-pods", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	// hack/bench.sh's measure runs every command once more with -v=6 to
	// count its requests; this one logs none
	fs.Int("v", 0, "ignored")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig or KUBECONFIG is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	transport.GunzipFaster(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := client.CoreV1().RESTClient().Get().Resource("pods").
		Param("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed").Stream(context.Background())
	if err != nil {
		return err
	}
	defer body.Close()
	n, err := io.CopyBuffer(io.Discard, body, make([]byte, 256<<10))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "simcluster: listed %d bytes of pods (unzipped)\n", n)
	return nil
}
