// Package karpenter runs the real Karpenter beside the simulated cluster:
// its own KWOK cloud provider (the main package sigs.k8s.io/karpenter/kwok
// of the release below), built from the module proxy in its own module
// context, since it pins other Kubernetes libraries than this module, and
// run as a process pointed at the cluster's kubeconfig, with the CRDs its
// chart installs. Its nodes carry the annotation kwok.x-k8s.io/node=fake,
// which the simulated cluster's kwok plays the kubelet for.
package karpenter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Module and Version are the Karpenter release the simulated cluster runs.
const (
	Module  = "sigs.k8s.io/karpenter"
	Version = "v1.15.0"
)

// Toolchain is the Go release Karpenter's go.mod asks for at least (its
// "go" line); a local Go that is older fetches it, as GOTOOLCHAIN=auto does.
const Toolchain = "go1.26.9"

// crdFiles are the CRDs the KWOK chart installs (kwok/charts/crds: the
// core ones with the kwok label domain allowed) and the KWOKNodeClass,
// which the project's Makefile applies from kwok/apis/crds.
var crdFiles = []string{
	"kwok/charts/crds/karpenter.sh_nodepools.yaml",
	"kwok/charts/crds/karpenter.sh_nodeclaims.yaml",
	"kwok/charts/crds/karpenter.sh_nodeoverlays.yaml",
	"kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml",
	"kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
}

// buildMu keeps two Builds of one process from writing one binary.
var buildMu sync.Mutex

// CacheDir is where Build keeps the binary: the user's cache, so later
// runs on one machine build nothing.
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "kubectl-nodeupgrade-sim", "karpenter-"+Version+"-"+runtime.GOOS+"-"+runtime.GOARCH), nil
}

// goEnv is the environment of the go commands that fetch and build
// Karpenter: its own module graph (-mod=mod, outside this module), and
// the toolchain its go.mod asks for where the local one is older.
func goEnv() []string {
	return append(os.Environ(), "GOTOOLCHAIN="+Toolchain+"+auto", "GOFLAGS=-mod=mod", "GOWORK=off")
}

// Build builds Karpenter's KWOK binary once per machine and returns its
// path; took says how long this call spent building (0 when cached).
func Build(ctx context.Context) (path string, took time.Duration, err error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	dir, err := CacheDir()
	if err != nil {
		return "", 0, err
	}
	path = filepath.Join(dir, "karpenter-kwok")
	if _, err := os.Stat(path); err == nil {
		return path, 0, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", 0, err
	}
	// Another process (the e2e tests beside this package's) may be
	// building: wait for it, then take its binary.
	unlock, err := lockFile(filepath.Join(filepath.Dir(dir), "karpenter-"+Version+".lock"))
	if err != nil {
		return "", 0, err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		return path, 0, nil
	}
	start := time.Now()
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", 0, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "install", Module+"/kwok@"+Version)
	cmd.Dir = tmp // outside any module: go install pkg@version uses Karpenter's own go.mod
	cmd.Env = append(goEnv(), "GOBIN="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("cannot build %s/kwok@%s: %w\n%s", Module, Version, err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	// a rename, so a process that finds the file finds it whole
	if err := os.Rename(filepath.Join(tmp, "kwok"), path); err != nil {
		return "", 0, err
	}
	return path, time.Since(start), nil
}

// lockFile holds an exclusive lock on path until the returned func.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// SourceDir is Karpenter's module source in the module cache, fetched
// when missing: the CRDs come from there.
func SourceDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = os.TempDir()
	cmd.Env = goEnv()
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Dir == "" {
		return "", fmt.Errorf("cannot download %s@%s: %v %s", Module, Version, err, info.Error)
	}
	return info.Dir, nil
}

// InstallCRDs creates Karpenter's CRDs from its module source and waits
// until the API server serves them.
func InstallCRDs(ctx context.Context, rc *rest.Config) error {
	src, err := SourceDir(ctx)
	if err != nil {
		return err
	}
	cs, err := apiextclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	for _, f := range crdFiles {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(b, &crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %q: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, cs, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func waitEstablished(ctx context.Context, cs apiextclient.Interface, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Options configures Start.
type Options struct {
	Kubeconfig string    // the cluster's admin kubeconfig
	Logs       io.Writer // Karpenter's log; nil = discarded
	// Env are more variables, NAME=value, after the chart's.
	Env []string
}

// Karpenter is a running Karpenter process.
type Karpenter struct {
	cmd    *exec.Cmd
	done   chan error
	health string
	once   sync.Once
}

// Start builds (or finds) the binary, installs the CRDs and runs
// Karpenter until Stop, returning once it reports ready.
func Start(ctx context.Context, rc *rest.Config, opts Options) (*Karpenter, error) {
	bin, _, err := Build(ctx)
	if err != nil {
		return nil, err
	}
	if err := InstallCRDs(ctx, rc); err != nil {
		return nil, err
	}
	metrics, err := freePort()
	if err != nil {
		return nil, err
	}
	health, err := freePort()
	if err != nil {
		return nil, err
	}
	k := &Karpenter{done: make(chan error, 1), health: fmt.Sprintf("http://127.0.0.1:%d/readyz", health)}
	// Karpenter's root context is Background: its lifetime is Stop's, not ctx's.
	k.cmd = exec.Command(bin) //nolint:gosec // the binary Build made
	k.cmd.Env = append(chartEnv(opts.Kubeconfig, metrics, health), opts.Env...)
	logs := opts.Logs
	if logs == nil {
		logs = io.Discard
	}
	k.cmd.Stdout, k.cmd.Stderr = logs, logs
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start Karpenter: %w", err)
	}
	go func() { k.done <- k.cmd.Wait() }()
	if err := k.waitReady(ctx); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// chartEnv is the environment the KWOK chart's Deployment gives the
// controller (kwok/charts/templates/deployment.yaml with its default
// values), out of a cluster: the kubeconfig instead of the service
// account, no leader election (one replica), loopback ports of its own.
func chartEnv(kubeconfig string, metrics, health int) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"KUBECONFIG=" + kubeconfig,
		"KUBERNETES_MIN_VERSION=1.19.0-0",
		"KARPENTER_SERVICE=karpenter",
		"LOG_LEVEL=info",
		"METRICS_PORT=" + strconv.Itoa(metrics),
		"HEALTH_PROBE_PORT=" + strconv.Itoa(health),
		"SYSTEM_NAMESPACE=kube-system",
		"FEATURE_GATES=SpotToSpotConsolidation=false,NodeRepair=false,PodDeletionCostManagement=false",
		"BATCH_MAX_DURATION=10s",
		"BATCH_IDLE_DURATION=1s",
		"PREFERENCE_POLICY=Respect",
		"MIN_VALUES_POLICY=Strict",
		"DISABLE_LEADER_ELECTION=true",
	}
}

// waitReady polls Karpenter's readiness probe, as the chart's does.
func (k *Karpenter) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	c := &http.Client{Timeout: 2 * time.Second}
	defer c.CloseIdleConnections()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.health, nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(b))
		} else {
			last = err.Error()
		}
		select {
		case err := <-k.done:
			k.done <- err
			return fmt.Errorf("karpenter exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("karpenter not ready (%s): %w", last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop ends the process; it may be called more than once.
func (k *Karpenter) Stop() {
	k.once.Do(func() {
		_ = k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(20 * time.Second):
			_ = k.cmd.Process.Kill()
			<-k.done
		}
	})
}

// Exited reports whether the process has ended, and how.
func (k *Karpenter) Exited() (bool, error) {
	select {
	case err := <-k.done:
		k.done <- err
		return true, err
	default:
		return false, nil
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
