package plugin

import (
	goflag "flag"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// Client-side rate limit of every request the plugin sends. client-go's
// default (5 requests a second, bursts of 10) is for controllers that share
// an API server without API Priority and Fairness; with it (GA since 1.29, on
// by default since 1.20) the server queues and, where it must, answers 429
// with Retry-After, which client-go already honours: rest.Request retries a
// 429 or 5xx carrying Retry-After up to 10 times, sleeping the given seconds
// (rest/with_retry.go), so nothing is added here. A batch of 10 nodes sends
// about 200 evictions at once, and tainting 150 nodes 150 patches: the burst
// takes both without a wait, and the rate caps a runaway loop well below what
// APF's lowest priority level admits.
const (
	DefaultQPS   = 100
	DefaultBurst = 400
)

// clientLimits are set by the global --qps and --burst flags (see
// AddGlobalFlags); like kubectl's connection flags they apply to every
// command.
var clientLimits = struct {
	qps   float32
	burst int
}{qps: DefaultQPS, burst: DefaultBurst}

// restConfig is the client configuration of every command: the kubectl
// connection flags with the plugin's rate limit.
func restConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
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
	return cfg, nil
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
