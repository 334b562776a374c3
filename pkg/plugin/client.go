package plugin

import (
	"context"
	goflag "flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// Client-side rate limit of every request the plugin sends. client-go's
// default (5 requests a second, bursts of 10) is for controllers that share
// an API server without API Priority and Fairness; with it (GA since 1.29, on
// by default since 1.20) the server queues and, where it must, answers 429
// with Retry-After, which the retries (transport.Retrying) wait out. A batch of 10 nodes sends
// about 200 evictions at once, and tainting 150 nodes 150 patches: the burst
// takes both without a wait, and the rate caps a runaway loop well below what
// APF's lowest priority level admits.
const (
	DefaultQPS   = 100
	DefaultBurst = 400
)

// DefaultRequestRetryTimeout is how long one request is retried while the
// API server fails: a managed control plane's own upgrade or a leader
// change lasts seconds to a minute, a run of hours should ride it out.
const DefaultRequestRetryTimeout = 3 * time.Minute

// clientLimits are set by the global --qps, --burst and
// --request-retry-timeout flags (see AddGlobalFlags); like kubectl's
// connection flags they apply to every command.
var clientLimits = struct {
	qps          float32
	burst        int
	retryTimeout time.Duration
}{qps: DefaultQPS, burst: DefaultBurst, retryTimeout: DefaultRequestRetryTimeout}

// restConfig is the client configuration of every command: the kubectl
// connection flags with the plugin's rate limit and retries.
func restConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	if clientLimits.retryTimeout < 0 {
		return nil, usageErrorf("invalid --request-retry-timeout %s: must be 0 (no retries) or more", clientLimits.retryTimeout)
	}
	// No kubeconfig at all is refused before anything is sent (client-go
	// would try http://localhost:8080), and only here, so that a bad flag
	// value is named first, by the command's Validate.
	if noKubeconfig(flags) {
		return nil, errNoKubeconfig
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, &usageError{err: fmt.Errorf("cannot load kubeconfig: %w", err)}
	}
	// a negative --qps turns client-go's limiter off (rest.Config.QPS)
	cfg.QPS, cfg.Burst = clientLimits.qps, clientLimits.burst
	// Protobuf, as the control plane's own components use: a page of 5,000
	// pods decodes several times faster than as JSON, and the server encodes
	// it faster too. Every type the plugin sends and reads is built in.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	transport.GunzipFaster(cfg)
	// The retries' notices go where the command's context says
	// (reportRetries, the run's progress line).
	transport.Retrying(cfg, transport.RetryOptions{Timeout: clientLimits.retryTimeout})
	return cfg, nil
}

// reportRetries has the retries of requests sent with ctx told on w, one
// line each, as the run's log lines are; requests sent side by side tell
// theirs one at a time.
func reportRetries(ctx context.Context, w io.Writer) context.Context {
	var mu sync.Mutex
	return transport.WithRetryReport(ctx, func(n transport.RetryNotice) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), n)
	})
}

// AddGlobalFlags adds the flags every command shares beside kubectl's
// connection flags: the client's rate limit and klog's -v/--vmodule. Until -v
// or --vmodule is given, what the libraries log (client-go's throttling and
// reflector messages among them) is discarded: the plugin reports its own
// progress and errors, and klog lines would break into them.
func AddGlobalFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&clientLimits.qps, "qps", DefaultQPS,
		"Requests per second the client sends at most, after a burst of --burst; a negative value turns the client-side limit off and leaves pacing to the API server (API Priority and Fairness answers 429 with Retry-After, which is honoured)")
	fs.IntVar(&clientLimits.burst, "burst", DefaultBurst, "Requests the client sends at once before --qps paces it")
	fs.DurationVar(&clientLimits.retryTimeout, "request-retry-timeout", DefaultRequestRetryTimeout,
		"How long one request to the API server is retried, with backoff, while the server answers 429 or 5xx, resets the connection or cuts an answer off; 0 turns these retries off (client-go's own, of a 429 or 5xx with Retry-After, remain)")
	silenceKlog()
	gfs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gfs)
	for _, name := range []string{"v", "vmodule"} {
		gf := gfs.Lookup(name)
		pf := pflag.PFlagFromGoFlag(gf)
		pf.Value = &loudValue{Value: pf.Value}
		if name == "v" {
			pf.Usage = "Log level of the Kubernetes client libraries, to stderr (e.g. 6 logs every request); without it they log nothing"
		}
		fs.AddFlag(pf)
	}
}

// silenceKlog sends klog's output nowhere: a contextual discard logger makes
// every V(n) check false, so nothing is even formatted.
func silenceKlog() {
	klog.SetLoggerWithOptions(logr.Discard(), klog.ContextualLogger(true))
}

// loudValue is a klog flag whose setting turns klog's own stderr output back
// on.
type loudValue struct{ pflag.Value }

func (v *loudValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	klog.ClearLogger()
	return nil
}

// String keeps the wrapped flag's rendering for help output.
func (v *loudValue) String() string { return strings.TrimSpace(v.Value.String()) }

// newSession is a command's session over client, whose hooks get a
// kubeconfig of the connection the flags describe.
func newSession(flags *genericclioptions.ConfigFlags, client kubernetes.Interface, kubeContext string, streams genericiooptions.IOStreams, stateNamespace string) *session.Session {
	return &session.Session{
		Client: client, KubeContext: kubeContext, IOStreams: streams, StateNamespace: stateNamespace,
		HookKubeconfig: func() (string, func(), error) { return hookKubeconfig(flags) },
		Live:           output.IsTerminal(streams.Out),
	}
}
