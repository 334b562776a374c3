package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedoptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// newRegistry gives every component its own version/feature-gate registry:
// the process-wide default one can only be Set once, and two clusters (or
// three components) in one process would fight over it.
func newRegistry() (basecompatibility.ComponentGlobalsRegistry, error) {
	fg := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	ev := utilcompatibility.DefaultBuildEffectiveVersion()
	ev.SetEmulationVersion(fg.EmulationVersion())
	ev.SetMinCompatibilityVersion(fg.MinCompatibilityVersion())
	reg := basecompatibility.NewComponentGlobalsRegistry()
	if err := reg.Register(basecompatibility.DefaultKubeComponent, ev, fg); err != nil {
		return nil, err
	}
	return reg, nil
}

// freePort asks the kernel for an unused loopback port. It is only used for
// etcd, whose embed API takes URLs rather than listeners.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loopbackListener() (net.Listener, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

func startEtcd(dir string, logs io.Writer) (*embed.Etcd, string, error) {
	var lastErr error
	// a port picked by freePort can be taken before etcd binds it; retry then
	for range 3 {
		clientPort, err := freePort()
		if err != nil {
			return nil, "", err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, "", err
		}
		cfg := embed.NewConfig()
		cfg.Name = "sim"
		cfg.Dir = filepath.Join(dir, "etcd")
		clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
		peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
		cfg.ListenClientUrls = []url.URL{clientURL}
		cfg.AdvertiseClientUrls = []url.URL{clientURL}
		cfg.ListenPeerUrls = []url.URL{peerURL}
		cfg.AdvertisePeerUrls = []url.URL{peerURL}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		cfg.UnsafeNoFsync = true // throwaway data: durability only costs time
		cfg.Logger = "zap"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapTo(logs))
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			if strings.Contains(err.Error(), "address already in use") {
				continue
			}
			return nil, "", fmt.Errorf("start etcd: %w", err)
		}
		select {
		case <-e.Server.ReadyNotify():
			return e, clientURL.String(), nil
		case err := <-e.Err():
			e.Close()
			return nil, "", fmt.Errorf("etcd failed: %w", err)
		case <-time.After(60 * time.Second):
			e.Server.Stop()
			e.Close()
			return nil, "", errors.New("etcd did not become ready within 60s")
		}
	}
	return nil, "", fmt.Errorf("start etcd: %w", lastErr)
}

func zapTo(w io.Writer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), zapcore.WarnLevel))
}

// runAPIServer builds the aggregated kube-apiserver chain and runs it on l
// until ctx ends. The returned channel yields the result of Run.
func runAPIServer(ctx context.Context, l net.Listener, port int, args []string) (<-chan error, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, err
	}
	s := apiserveroptions.NewServerRunOptions()
	s.GenericServerRunOptions.ComponentGlobalsRegistry = reg
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := reg.Set(); err != nil {
		return nil, err
	}
	s.SecureServing.Listener = l
	s.SecureServing.BindPort = port
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	cfg, err := apiserverapp.NewConfig(completed)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	cc, err := cfg.Complete()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	server, err := apiserverapp.CreateServerChain(cc)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	prepared, err := server.PrepareRun()
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- exitErr(ctx, prepared.Run(ctx)) }()
	return done, nil
}

func runControllerManager(ctx context.Context, args []string) (<-chan error, int, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, 0, err
	}
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, 0, err
	}
	s.ComponentGlobalsRegistry = reg
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, 0, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := reg.Set(); err != nil {
		return nil, 0, err
	}
	l, port, err := loopbackListener()
	if err != nil {
		return nil, 0, err
	}
	s.SecureServing.Listener = l
	s.SecureServing.BindPort = port
	cfg, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		l.Close()
		return nil, 0, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- exitErr(ctx, kcmapp.Run(ctx, cfg.Complete()))
		// configz names are process-global; free them for the next cluster
		configz.Delete(kcmapp.ConfigzName)
	}()
	return done, port, nil
}

func runScheduler(ctx context.Context, args []string) (<-chan error, int, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, 0, err
	}
	opts := schedoptions.NewOptionsWithComponentGlobalsRegistry(reg)
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, 0, fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := reg.Set(); err != nil {
		return nil, 0, err
	}
	l, port, err := loopbackListener()
	if err != nil {
		return nil, 0, err
	}
	opts.SecureServing.Listener = l
	opts.SecureServing.BindPort = port
	cc, sched, err := schedapp.Setup(ctx, opts)
	if err != nil {
		l.Close()
		return nil, 0, fmt.Errorf("kube-scheduler setup: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- exitErr(ctx, schedapp.Run(ctx, cc, sched))
		configz.Delete("componentconfig")
	}()
	return done, port, nil
}

// exitErr drops the error a component returns because it was told to stop
// (the scheduler, for one, reports "finished without leader elect").
func exitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
