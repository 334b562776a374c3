package podproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// Register registers node n, a kwok node (unless one of its name
// exists), and waits until it is Ready.
func (k *Kubelet) Register(ctx context.Context, n scenario.Node) error {
	if _, err := k.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return err
	}
	if err := scenario.CreateNode(ctx, k.Client, n); err != nil {
		return err
	}
	return scenario.WaitNodesReady(ctx, k.Client, n.Name)
}

// ServeNode runs each pod scheduled to node as a process (Run) until ctx
// ends, writing what they print to log, each line after its pod's name.
func (k *Kubelet) ServeNode(ctx context.Context, node string, log io.Writer) {
	l := &lockedWriter{w: log}
	var wg sync.WaitGroup
	k.Serve(ctx, "", metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()}, func(p *corev1.Pod) {
		wg.Go(func() {
			fmt.Fprintf(l, "pod %s/%s: started\n", p.Namespace, p.Name)
			code, err := k.Run(ctx, p, &prefixWriter{w: l, prefix: "pod " + p.Namespace + "/" + p.Name + ": "})
			if err != nil {
				fmt.Fprintf(l, "pod %s/%s: %v\n", p.Namespace, p.Name, err)
				return
			}
			fmt.Fprintf(l, "pod %s/%s: exited %d\n", p.Namespace, p.Name, code)
		})
	})
	wg.Wait()
}

// Run runs pod p as a process until it exits, then ends the pod with its
// exit code (128 + the signal that ended it, as a container runtime
// reports it). A pod deleted meanwhile has its process sent SIGTERM, and
// SIGKILL once its grace period is over; so has every process when ctx
// ends. What the process prints goes to out.
func (k *Kubelet) Run(ctx context.Context, p *corev1.Pod, out io.Writer) (int, error) {
	cmd, err := k.Command(ctx, p)
	if err != nil {
		return -1, err
	}
	var last bytes.Buffer // the pod's message, if it fails
	w := &lockedWriter{w: io.MultiWriter(&last, out)}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		k.stopWhenDeleted(ctx, p, cmd, done)
	}()
	_ = cmd.Wait()
	close(done)
	<-stopped
	code := exitCode(cmd.ProcessState)
	return code, k.End(context.WithoutCancel(ctx), p, code, last.String())
}

// stopWhenDeleted stops cmd as a kubelet stops the container of a
// deleted pod: SIGTERM, then SIGKILL after the grace period the deletion
// gave; or at once when ctx ends. It returns when done is closed.
func (k *Kubelet) stopWhenDeleted(ctx context.Context, p *corev1.Pod, cmd *exec.Cmd, done <-chan struct{}) {
	var kill <-chan time.Time
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return
		case <-kill:
			_ = cmd.Process.Kill()
			<-done
			return
		case <-tick.C:
		}
		if kill != nil {
			continue
		}
		pod, err := k.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			kill = time.After(0)
		case err == nil && pod.DeletionTimestamp != nil:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			grace := int64(30)
			if pod.DeletionGracePeriodSeconds != nil {
				grace = *pod.DeletionGracePeriodSeconds
			}
			kill = time.After(time.Duration(grace) * time.Second)
		}
	}
}

// exitCode is the container's exit code a runtime reports for a process
// that ended as ps says.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lockedWriter serializes writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prefixWriter writes each whole line after prefix.
type prefixWriter struct {
	w      io.Writer
	prefix string
	part   []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.part[:i]); err != nil {
			return 0, err
		}
		p.part = p.part[i+1:]
	}
}
