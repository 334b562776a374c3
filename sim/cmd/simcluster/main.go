// Command simcluster runs a simulated Kubernetes cluster (see package
// cluster) and builds demo scenarios on it.
//
//	simcluster up --dir DIR [--pod-ready-delay 1s] [--no-node-lifecycle] [--aws-demo [--aws-addr 127.0.0.1:0] [--aws-demo-managed] | --gce-demo [--gce-addr 127.0.0.1:0] | --gke-demo [--gke-addr 127.0.0.1:0] | --aks-demo | --none-demo]
//	simcluster scenario demo --kubeconfig PATH
//	simcluster scenario plan-scale --kubeconfig PATH --name NAME [--nodes 5000 --pods-per-node 30 --replicas 100 --namespaces 10]
//	simcluster scenario bench --kubeconfig PATH --name NAME [--outdated 24 --current 6 --apps 24 --replicas 20 --max-unavailable 2]
//	simcluster replay plan-scale --name NAME --kubeconfig-out PATH [--nodes 5000 --pods-per-node 30 --replicas 100 --namespaces 10 --tls]
//	simcluster watch-pdbs --kubeconfig PATH --namespace NS
//	simcluster list-pods [--kubeconfig PATH]
//	simcluster kubelet --kubeconfig PATH --node NAME [--labels K=V,...] --binary PATH
//
// With --aws-demo, up also serves a fake AWS endpoint (package awsfake)
// whose Auto Scaling group "demo" backs the cluster's nodes, creates the
// demo workloads on them, and prints
// "ready kubeconfig=PATH aws-endpoint=URL". With --gce-demo, the same with
// a local Compute Engine endpoint (package gcefake) and its managed
// instance group "demo"; it prints "ready kubeconfig=PATH gce-endpoint=URL".
// With --gke-demo, it serves a
// fake GKE endpoint over a fake Compute Engine one instead (package
// gkefake: cluster "demo", node pool "default-pool") and prints
// "ready kubeconfig=PATH gke-endpoint=URL compute-endpoint=URL". With
// --aks-demo, it serves a local Azure Resource Manager endpoint (package
// azurefake: AKS cluster "demo", agent pool "demopool") and prints
// "ready kubeconfig=PATH aks-endpoint=URL". With --none-demo, it builds
// the demo of provider none (scenario.Demo: nodes no cloud owns) and
// prints "ready kubeconfig=PATH".
//
// kubelet registers a node whose pods run as local processes (package
// podproc: the plugin's in-cluster Job on the demo), prints
// "ready node=NAME" and serves them until SIGINT/SIGTERM.
//
// replay plan-scale serves, read-only, the objects scenario plan-scale
// would make, as kube-apiserver would list them (scenario.Replay), at
// scales the simulated control plane cannot hold; it prints
// "ready kubeconfig=PATH" once serving and logs each request to stderr.
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
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

const usage = `usage:
  simcluster up --dir DIR [--pod-ready-delay 1s] [--no-node-lifecycle] [--aws-demo [--aws-addr 127.0.0.1:0] [--aws-demo-managed] | --gce-demo [--gce-addr 127.0.0.1:0] | --gke-demo [--gke-addr 127.0.0.1:0] | --aks-demo | --none-demo]
  simcluster scenario demo --kubeconfig PATH
  simcluster scenario plan-scale --kubeconfig PATH --name NAME [--nodes 5000 --pods-per-node 30 --replicas 100 --namespaces 10]
  simcluster scenario bench --kubeconfig PATH --name NAME [--outdated 24 --current 6 --apps 24 --replicas 20 --max-unavailable 2]
  simcluster replay plan-scale --name NAME --kubeconfig-out PATH [--nodes 5000 --pods-per-node 30 --replicas 100 --namespaces 10 --tls]
  simcluster watch-pdbs --kubeconfig PATH --namespace NS
  simcluster list-pods [--kubeconfig PATH]
  simcluster kubelet --kubeconfig PATH --node NAME [--labels K=V,...] --binary PATH
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
	case args[0] == "scenario" && len(args) > 1 && args[1] == "bench":
		return bench(args[2:])
	case args[0] == "scenario" && len(args) > 1 && args[1] == "plan-scale":
		return planScale(args[2:])
	case args[0] == "replay" && len(args) > 1 && args[1] == "plan-scale":
		return replayPlanScale(args[2:])
	case args[0] == "watch-pdbs":
		return watchPDBs(args[1:])
	case args[0] == "list-pods":
		return listPods(args[1:])
	case args[0] == "kubelet":
		return kubelet(args[1:])
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "work directory for etcd data, certificates, kubeconfig and logs (required)")
	delay := fs.Duration("pod-ready-delay", time.Second, "time from a pod being scheduled to it being Running and Ready")
	noLifecycle := fs.Bool("no-node-lifecycle", false, "run without the node lifecycle and taint eviction controllers (for nodes nothing heartbeats: scenario plan-scale)")
	controllerQPS := fs.Int("controller-qps", 0, "the controller manager's client rate limit in requests per second (burst twice that); 0 keeps upstream's 20")
	aws := bindAWSDemo(fs)
	gkeDemo := bindGKEDemo(fs)
	aksDemo := bindAKSDemo(fs)
	gce := bindGCEDemo(fs)
	none := bindNoneDemo(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--dir is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := checkDemos(aws, gkeDemo, *aksDemo, gce, none, *noLifecycle); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: *dir, PodReadyDelay: *delay, NoNodeLifecycle: *noLifecycle, ControllerQPS: *controllerQPS})
	if err != nil {
		return err
	}
	switch {
	case *gkeDemo.on:
		return serveGKEDemo(ctx, c, gkeDemo, started)
	case *aksDemo:
		return serveAKSDemo(ctx, c, started)
	case *gce.on:
		return gce.serve(ctx, c, started)
	case *aws.on:
		return aws.serve(ctx, stop, c, started)
	case *none.on:
		return none.serve(ctx, c, started)
	}
	fmt.Printf("ready kubeconfig=%s\n", c.Kubeconfig)
	fmt.Fprintf(os.Stderr, "simcluster: started in %s, logs in %s\n", time.Since(started).Round(time.Millisecond), filepath.Join(c.Dir, "components.log"))
	<-ctx.Done()
	stop()
	fmt.Fprintln(os.Stderr, "simcluster: stopping")
	return c.Stop()
}

// checkDemos refuses the demos given that do not go together.
func checkDemos(aws awsDemo, gkeDemo gkeDemoFlags, aksDemo bool, gce gceDemo, none noneDemo, noLifecycle bool) error {
	if err := aws.check(noLifecycle); err != nil {
		return err
	}
	if *gkeDemo.on && (*aws.on || *gce.on || noLifecycle) {
		return errors.New("--gke-demo goes alone: not with --aws-demo, --gce-demo or --no-node-lifecycle")
	}
	if aksDemo && (*aws.on || *gce.on || *gkeDemo.on || noLifecycle) {
		return errors.New("--aks-demo goes alone: not with --aws-demo, --gce-demo, --gke-demo or --no-node-lifecycle")
	}
	if err := gce.check(*aws.on, noLifecycle); err != nil {
		return err
	}
	return none.check(*aws.on || *gce.on || *gkeDemo.on || aksDemo, noLifecycle)
}

// awsDemo is the fake AWS endpoint up serves with --aws-demo.
type awsDemo struct {
	on, managed *bool
	addr        *string
}

func bindAWSDemo(fs *flag.FlagSet) awsDemo {
	return awsDemo{
		on:      fs.Bool("aws-demo", false, "also serve a fake AWS endpoint with Auto Scaling group \"demo\" (9 nodes) and the demo workloads"),
		addr:    fs.String("aws-addr", "127.0.0.1:0", "listen address of the fake AWS endpoint (with --aws-demo)"),
		managed: fs.Bool("aws-demo-managed", false, "with --aws-demo, also EKS cluster \"demo\" and its managed node group \"demo-managed\" (3 nodes)"),
	}
}

func (a awsDemo) check(noLifecycle bool) error {
	if *a.managed && !*a.on {
		return errors.New("--aws-demo-managed needs --aws-demo")
	}
	if *a.on && noLifecycle {
		// the demo's launched nodes are usable once the node lifecycle
		// controller takes their startup taint off: without it they never are
		return errors.New("cannot combine --aws-demo with --no-node-lifecycle: the demo's nodes would keep their not-ready taint")
	}
	return nil
}

// serve runs the AWS demo until ctx ends.
func (a awsDemo) serve(ctx context.Context, stop func(), c *cluster.Cluster, started time.Time) error {
	// Launches and terminations go to stderr: they are the AWS side of
	// the demo, worth watching next to the plugin's output.
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	s, err := awsfake.StartDemo(ctx, c.Client, awsfake.DemoOptions{Addr: *a.addr, LaunchDelay: 2 * time.Second, Logf: logger.Printf, Managed: *a.managed})
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
	c, err := clientFor(*kubeconfig)
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

// clientFor is a client of the cluster kubeconfig points at, not paced
// client-side: the bench creates thousands of objects.
func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS = -1
	return kubernetes.NewForConfig(rc)
}

// bench builds one node group of hack/bench.sh's scenario.
func bench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the simulated cluster (required)")
	var b scenario.Bench
	fs.StringVar(&b.Name, "name", "", "node group and namespace name (required)")
	fs.IntVar(&b.Outdated, "outdated", 24, "outdated nodes (image ami-old)")
	fs.IntVar(&b.Current, "current", 6, "current nodes (image ami-new)")
	fs.IntVar(&b.Apps, "apps", 24, "Deployments, each with a PDB")
	replicas := fs.Int("replicas", 20, "replicas of each Deployment")
	maxUnavailable := fs.Int("max-unavailable", 2, "maxUnavailable of each PDB")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for nodes and apps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if b.Name == "" {
		return errors.New("--name is required")
	}
	b.Replicas, b.MaxUnavailable = int32(*replicas), int32(*maxUnavailable)
	c, err := clientFor(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := scenario.CreateBench(ctx, c, b); err != nil {
		return err
	}
	fmt.Printf("bench ready: node group %s (%d outdated, %d current nodes), namespace %s (%d Deployments x %d replicas, PDB maxUnavailable %d)\n",
		b.Name, b.Outdated, b.Current, b.Name, b.Apps, b.Replicas, b.MaxUnavailable)
	return nil
}

// planScaleFlags defines the flags that describe a scenario plan-scale,
// which its build and its replay share.
func planScaleFlags(fs *flag.FlagSet) *scenario.PlanScale {
	p := &scenario.PlanScale{Progress: os.Stderr}
	fs.StringVar(&p.Name, "name", "", "node group name and namespace prefix (required)")
	fs.IntVar(&p.Nodes, "nodes", 5000, "nodes (a tenth current, image ami-new; the rest ami-old)")
	fs.IntVar(&p.PodsPerNode, "pods-per-node", 30, "pods bound to each node")
	fs.IntVar(&p.Replicas, "replicas", 100, "replicas of each Deployment, each with a PDB of maxUnavailable 10%")
	fs.IntVar(&p.Namespaces, "namespaces", 10, "namespaces the Deployments are spread over")
	return p
}

// planScale builds hack/bench.sh --plan-scale's read-only cluster.
func planScale(args []string) error {
	fs := flag.NewFlagSet("plan-scale", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the simulated cluster, started with --no-node-lifecycle (required)")
	p := planScaleFlags(fs)
	fs.IntVar(&p.Workers, "workers", 64, "requests in flight")
	timeout := fs.Duration("timeout", time.Hour, "how long to wait for the whole build")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if p.Name == "" || *kubeconfig == "" {
		return errors.New("--name and --kubeconfig are required")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	started := time.Now()
	if err := scenario.CreatePlanScale(ctx, rc, *p); err != nil {
		return err
	}
	fmt.Printf("plan-scale ready in %s: node group %s (%d nodes), %d pods from %d Deployments with PDBs in namespaces %s-0..%d\n",
		time.Since(started).Round(time.Second), p.Name, p.Nodes, p.Nodes*p.PodsPerNode, p.Nodes*p.PodsPerNode/p.Replicas, p.Name, p.Namespaces-1)
	return nil
}

// replayPlanScale serves the objects of scenario plan-scale read-only from
// memory, for hack/bench.sh --plan-replay: "ready kubeconfig=PATH" on
// stdout once serving, then until SIGINT/SIGTERM.
func replayPlanScale(args []string) error {
	fs := flag.NewFlagSet("replay plan-scale", flag.ContinueOnError)
	kubeconfigOut := fs.String("kubeconfig-out", "", "where to write the kubeconfig of the replay (required)")
	p := planScaleFlags(fs)
	useTLS := fs.Bool("tls", false, "serve https (HTTP/2, a certificate of its own, as kube-apiserver) instead of plain http")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if p.Name == "" || *kubeconfigOut == "" {
		return errors.New("--name and --kubeconfig-out are required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	started := time.Now()
	r, err := scenario.StartPlanScaleReplay(*p, scenario.ReplayOptions{RequestLog: os.Stderr, TLS: *useTLS})
	if err != nil {
		return err
	}
	defer r.Close()
	// After the build: a signal during it ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["replay"] = &clientcmdapi.Cluster{Server: r.URL, CertificateAuthorityData: r.CAData}
	// The replay asks for no credentials, but over https kubectl prompts
	// for a password when it has none to send.
	kubeconfig.AuthInfos["replay"] = &clientcmdapi.AuthInfo{Token: "replay"}
	kubeconfig.Contexts["replay"] = &clientcmdapi.Context{Cluster: "replay", AuthInfo: "replay"}
	kubeconfig.CurrentContext = "replay"
	if err := clientcmd.WriteToFile(*kubeconfig, *kubeconfigOut); err != nil {
		return err
	}
	fmt.Printf("ready kubeconfig=%s\n", *kubeconfigOut)
	fmt.Fprintf(os.Stderr, "simcluster: replaying plan-scale %s (%d nodes, %d pods) at %s, built in %s\n",
		p.Name, p.Nodes, p.Nodes*p.PodsPerNode, r.URL, time.Since(started).Round(time.Millisecond))
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "simcluster: stopping")
	return r.Close()
}

// watchPDBs records PDB violations in a namespace until SIGINT/SIGTERM, then
// prints their count and each of them.
func watchPDBs(args []string) error {
	fs := flag.NewFlagSet("watch-pdbs", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the simulated cluster (required)")
	ns := fs.String("namespace", "", "namespace whose PDBs are watched (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ns == "" {
		return errors.New("--namespace is required")
	}
	c, err := clientFor(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := scenario.WatchPDBs(ctx, c, *ns)
	if err != nil {
		return err
	}
	fmt.Println("watching")
	<-ctx.Done()
	vs := w.Stop()
	fmt.Printf("pdb violations: %d\n", len(vs))
	for _, v := range vs {
		fmt.Println(v)
	}
	return nil
}
