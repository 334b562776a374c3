// Package cluster runs a complete Kubernetes control plane in-process: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and a kwok
// controller that plays the kubelet for fake nodes. Nothing needs Docker.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	kwokclient "sigs.k8s.io/kwok/pkg/utils/client"
)

// Options configures Start.
type Options struct {
	Dir           string        // work dir for etcd data, certs, kubeconfig, logs; a temp dir when empty
	PodReadyDelay time.Duration // kwok: from pod scheduled to Running+Ready (default 1s)
	Logs          io.Writer     // component logs; nil = file <Dir>/components.log
	// NoNodeLifecycle leaves out the node lifecycle and taint eviction
	// controllers, so nodes no kubelet (nor kwok) heartbeats stay as
	// created instead of turning Unknown and having their pods marked
	// NotReady and evicted (hack/bench.sh --plan-scale)
	NoNodeLifecycle bool
	// ControllerQPS, when above 0, is the controller manager's client rate
	// limit (--kube-api-qps, burst twice that) instead of upstream's 20
	// (burst 30), which paces how fast the ReplicaSet controller replaces
	// evicted pods (hack/bench.sh BENCH_CONTROLLER_QPS)
	ControllerQPS int
}

// Cluster is a running simulated cluster.
type Cluster struct {
	Dir        string
	Kubeconfig string // path of an admin kubeconfig (context name "sim")
	RestConfig *rest.Config
	Client     kubernetes.Interface

	server  string
	pki     *pki
	etcd    *embed.Etcd
	cancel  context.CancelFunc // stops scheduler, controller manager and kwok
	apiStop context.CancelFunc
	apiDone <-chan error
	done    []<-chan error // scheduler, controller manager, kwok
	logFile *os.File
	logs    *gatedWriter
	tempDir bool

	stopOnce sync.Once
	stopErr  error
}

// one cluster at a time per process: klog and configz are process-global
var startMu sync.Mutex

// Start brings up the control plane and returns once the apiserver is
// healthy, the default namespace and service account exist and the
// scheduler and controller manager answer their health checks. ctx bounds
// the start only: the cluster runs until Stop.
//
// Only one cluster can run at a time in a process (klog and the components'
// configz registrations are process-global); a second Start fails until the
// first cluster is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if !startMu.TryLock() {
		return nil, errors.New("another simulated cluster is running in this process")
	}
	defer func() {
		if err != nil {
			startMu.Unlock()
		}
	}()
	if opts.PodReadyDelay == 0 {
		opts.PodReadyDelay = time.Second
	}
	c := &Cluster{Dir: opts.Dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	logs, err := c.openDir(opts.Logs)
	if err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, logs); err != nil {
		return nil, err
	}
	health, err := c.startComponents(opts, logs)
	if err != nil {
		return nil, err
	}
	if err := c.waitComponents(ctx, health); err != nil {
		return nil, err
	}
	return c, nil
}

// openDir makes the cluster's directory (a temporary one where Options
// names none) and the components' log, where Options gives no writer.
func (c *Cluster) openDir(logs io.Writer) (io.Writer, error) {
	var err error
	if c.Dir == "" {
		d, err := os.MkdirTemp("", "simcluster-")
		if err != nil {
			return nil, err
		}
		c.Dir, c.tempDir = d, true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	if c.Dir, err = filepath.Abs(c.Dir); err != nil {
		return nil, err
	}
	if logs == nil {
		f, err := os.OpenFile(filepath.Join(c.Dir, "components.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		c.logFile, logs = f, f
	}
	c.logs = &gatedWriter{w: logs}
	logs = c.logs
	redirectKlog(logs)
	return logs, nil
}

// makeCerts makes the cluster's CA, the service account key and the API
// server's serving certificate.
func (c *Cluster) makeCerts() (err error) {
	if c.pki, err = newPKI(filepath.Join(c.Dir, "pki")); err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	if err := c.pki.serviceAccountKey(); err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	if _, _, err := c.pki.issue("apiserver", "kube-apiserver", nil, true); err != nil {
		return fmt.Errorf("generate serving certificate: %w", err)
	}
	return nil
}

// startAPIServer makes the certificates, starts etcd and kube-apiserver,
// and waits until it is ready.
func (c *Cluster) startAPIServer(ctx context.Context, logs io.Writer) (err error) {
	if err := c.makeCerts(); err != nil {
		return err
	}

	var etcdURL string
	if c.etcd, etcdURL, err = startEtcd(c.Dir, logs); err != nil {
		return err
	}

	l, port, err := loopbackListener()
	if err != nil {
		return err
	}
	c.server = "https://127.0.0.1:" + strconv.Itoa(port)
	if err := c.writeKubeconfigs(); err != nil {
		l.Close()
		return err
	}

	p := c.pki.path
	apiCtx, apiStop := context.WithCancel(context.Background())
	c.apiStop = apiStop
	c.apiDone, err = runAPIServer(apiCtx, l, port, []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--client-ca-file=" + c.pki.caFile(),
		"--tls-cert-file=" + p("apiserver.crt"),
		"--tls-private-key-file=" + p("apiserver.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p("sa.pub"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=Node,RBAC",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	})
	if err != nil {
		l.Close()
		return err
	}
	if c.RestConfig, err = c.restConfigFor(c.Kubeconfig); err != nil {
		return err
	}
	if c.Client, err = kubernetes.NewForConfig(c.RestConfig); err != nil {
		return err
	}
	if err := c.waitHealthy(ctx, c.server+"/readyz", c.apiDone, 60*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return nil
}

// componentHealth is where the controller manager and the scheduler
// answer health checks, and how each tells it stopped.
type componentHealth struct {
	kcmPort, schedPort int
	kcmDone, schedDone <-chan error
}

// startComponents starts the controller manager, the scheduler and kwok.
func (c *Cluster) startComponents(opts Options, logs io.Writer) (h componentHealth, err error) {
	p := c.pki.path
	compCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	controllers := "*"
	if opts.NoNodeLifecycle {
		controllers = "*,-node-lifecycle-controller,-taint-eviction-controller"
	}
	kcmArgs := []string{
		"--kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--authentication-kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--authorization-kubeconfig=" + filepath.Join(c.Dir, "controller-manager.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + p("sa.key"),
		"--root-ca-file=" + c.pki.caFile(),
		"--cluster-signing-cert-file=" + p("ca.crt"),
		"--cluster-signing-key-file=" + p("ca.key"),
		"--controllers=" + controllers,
		"--profiling=false",
	}
	if opts.ControllerQPS > 0 {
		kcmArgs = append(kcmArgs, fmt.Sprintf("--kube-api-qps=%d", opts.ControllerQPS), fmt.Sprintf("--kube-api-burst=%d", 2*opts.ControllerQPS))
	}
	kcmDone, kcmPort, err := runControllerManager(compCtx, kcmArgs)
	if err != nil {
		return h, err
	}
	c.done = append(c.done, kcmDone)
	schedDone, schedPort, err := runScheduler(compCtx, []string{
		"--kubeconfig=" + filepath.Join(c.Dir, "scheduler.kubeconfig"),
		"--authentication-kubeconfig=" + filepath.Join(c.Dir, "scheduler.kubeconfig"),
		"--authorization-kubeconfig=" + filepath.Join(c.Dir, "scheduler.kubeconfig"),
		"--bind-address=127.0.0.1",
		"--leader-elect=false",
		"--profiling=false",
	})
	if err != nil {
		return h, err
	}
	c.done = append(c.done, schedDone)
	kwokDone, err := runKwok(compCtx, c.Kubeconfig, opts.PodReadyDelay, logs)
	if err != nil {
		return h, err
	}
	c.done = append(c.done, kwokDone)
	return componentHealth{kcmPort, schedPort, kcmDone, schedDone}, nil
}

// waitComponents waits until the controller manager and the scheduler are
// healthy and the controllers work.
func (c *Cluster) waitComponents(ctx context.Context, h componentHealth) error {
	if err := c.waitHealthy(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", h.kcmPort), h.kcmDone, 60*time.Second); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	if err := c.waitHealthy(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", h.schedPort), h.schedDone, 60*time.Second); err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	// the default service account is created by the controller manager, so
	// seeing it also proves the controllers are working
	waitCtx, waitCancel := context.WithTimeout(ctx, 60*time.Second)
	defer waitCancel()
	if err := waitServiceAccount(waitCtx, c.Client, metav1.NamespaceDefault, "default"); err != nil {
		return fmt.Errorf("wait for the default service account: %w", err)
	}
	return nil
}

// Stop stops every component and frees the ports. It is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stop()
		startMu.Unlock()
	})
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	if c.cancel != nil {
		c.cancel()
		for _, d := range c.done {
			if err := waitDone(d, 30*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.apiStop != nil {
		c.apiStop()
		if err := waitDone(c.apiDone, 60*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("kube-apiserver: %w", err))
		}
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	// goroutines of the components can outlive Stop; keep them from writing
	// to a caller's writer (a testing.T log, say) once it may be gone
	if c.logs != nil {
		c.logs.close()
	}
	if c.logFile != nil {
		c.logFile.Close()
	}
	if c.tempDir {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func waitDone(d <-chan error, timeout time.Duration) error {
	select {
	case err := <-d:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("did not stop within %s", timeout)
	}
}

var userName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// KubeconfigForUser writes a client-certificate kubeconfig for user (with
// the given groups) and returns its path. RBAC applies to that user.
func (c *Cluster) KubeconfigForUser(user string, groups ...string) (string, error) {
	if user == "" {
		return "", errors.New("empty user name")
	}
	name := "user-" + userName.ReplaceAllString(user, "_")
	certPEM, keyPEM, err := c.pki.issue(name, user, groups, false)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir, name+".kubeconfig")
	return path, c.writeKubeconfig(path, user, certPEM, keyPEM)
}

func (c *Cluster) writeKubeconfigs() error {
	for _, k := range []struct{ file, cn, org string }{
		{"kubeconfig", "kubernetes-admin", "system:masters"},
		{"controller-manager.kubeconfig", "system:kube-controller-manager", ""},
		{"scheduler.kubeconfig", "system:kube-scheduler", ""},
	} {
		var orgs []string
		if k.org != "" {
			orgs = []string{k.org}
		}
		certPEM, keyPEM, err := c.pki.issue(k.file, k.cn, orgs, false)
		if err != nil {
			return err
		}
		if err := c.writeKubeconfig(filepath.Join(c.Dir, k.file), k.cn, certPEM, keyPEM); err != nil {
			return err
		}
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	return nil
}

func (c *Cluster) writeKubeconfig(path, user string, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sim"] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthorityData: c.pki.caPEM()}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["sim"] = &clientcmdapi.Context{Cluster: "sim", AuthInfo: user, Namespace: metav1.NamespaceDefault}
	cfg.CurrentContext = "sim"
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) restConfigFor(kubeconfig string) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// tests create many objects quickly; client-side throttling only slows them
	rc.QPS, rc.Burst = 200, 400
	return rc, nil
}

// waitHealthy polls a health endpoint; a short poll is the only way to see
// a server come up, and it fails fast if the component has already exited.
func (c *Cluster) waitHealthy(ctx context.Context, url string, done <-chan error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe only
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, b)
		} else {
			last = err.Error()
		}
		select {
		case err := <-done:
			return fmt.Errorf("exited: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not healthy (%s): %w", last, ctx.Err())
		case <-tick.C:
		}
	}
}

func waitServiceAccount(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return client.CoreV1().ServiceAccounts(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return client.CoreV1().ServiceAccounts(ns).Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.ServiceAccount{}, func(store cache.Store) (bool, error) {
		_, exists, err := store.GetByKey(ns + "/" + name)
		return exists, err
	}, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Added || ev.Type == watch.Modified, nil
	})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s not found", ns)
	}
	return err
}

// gatedWriter forwards writes until closed and drops them afterwards.
type gatedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w == nil {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *gatedWriter) close() {
	g.mu.Lock()
	g.w = nil
	g.mu.Unlock()
}

var klogOnce sync.Once

// redirectKlog sends every component's klog output to w instead of stderr;
// klog is process-global, so this affects the whole process.
func redirectKlog(w io.Writer) {
	klogOnce.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		_ = fs.Set("one_output", "true")
		_ = fs.Set("skip_headers", "false")
	})
	klog.SetOutput(w)
}

// kwokClients are the clients kwok's controllers work with, from the
// kubeconfig, in a controllers.Config of their own.
func kwokClients(kubeconfig string) (controllers.Config, error) {
	var cfg controllers.Config
	cs, err := kwokclient.NewClientset("", kubeconfig)
	if err != nil {
		return cfg, err
	}
	rc, err := cs.ToRESTConfig()
	if err != nil {
		return cfg, err
	}
	if cfg.DynamicClient, err = cs.ToDynamicClient(); err != nil {
		return cfg, err
	}
	if cfg.RESTMapper, err = cs.ToRESTMapper(); err != nil {
		return cfg, err
	}
	if cfg.RESTClient, err = rest.RESTClientFor(rc); err != nil {
		return cfg, err
	}
	if cfg.TypedClient, err = kubernetes.NewForConfig(rc); err != nil {
		return cfg, err
	}
	cfg.ImpersonatingDynamicClient, cfg.ImpersonatingTypedClient = cs.ToImpersonatingDynamicClient(), cs.ToImpersonatingTypedClient()
	return cfg, nil
}

func runKwok(ctx context.Context, kubeconfig string, podReadyDelay time.Duration, logs io.Writer) (<-chan error, error) {
	st, err := stages(podReadyDelay)
	if err != nil {
		return nil, err
	}
	cfg, err := kwokClients(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Clock, cfg.LocalStages = clock.RealClock{}, st
	cfg.ManageNodesWithAnnotationSelector = "kwok.x-k8s.io/node=fake"
	cfg.CIDR = "10.244.0.0/16"
	cfg.NodeIP = "10.0.0.1"
	cfg.PodPlayStageParallelism = 8
	cfg.NodePlayStageParallelism = 4
	cfg.NodeLeaseDurationSeconds = 40
	cfg.NodeLeaseParallelism = 4
	cfg.PodsOnNodeSyncParallelism = 2
	cfg.EnablePodsOnNodeSyncListPager = true
	cfg.ID = "sim-kwok"
	ctr, err := controllers.NewController(cfg)
	if err != nil {
		return nil, fmt.Errorf("kwok: %w", err)
	}
	ctx = kwoklog.NewContext(ctx, kwoklog.NewLogger(logs, kwoklog.LevelWarn))
	if err := ctr.Start(ctx); err != nil {
		return nil, fmt.Errorf("kwok: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		done <- nil
	}()
	return done, nil
}
