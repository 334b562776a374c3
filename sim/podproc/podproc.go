// Package podproc plays the kubelet's part for pods of the simulated
// cluster that must really run: kwok nodes run no containers (kwok marks
// their pods Running), so a pod whose work matters (the plugin's own Job,
// for an in-cluster run) is run here as a local process, with the pod's
// own identity and files, in a mount and UTS namespace of its own
// (unshare), so that it reads them where a container does:
//   - its volumes as the pod spec has them: the ServiceAccount token the
//     API server's TokenRequest gives for the pod (audience, expiry and the
//     pod it is bound to as the projected volume asks), the cluster's CA
//     from kube-root-ca.crt, the namespace, ConfigMaps and Secrets, each
//     bind-mounted at its mountPath;
//   - the in-cluster environment (KUBERNETES_SERVICE_HOST and _PORT), the
//     container's env (plain values), and the pod's name as its hostname;
//   - the pod's args, given to Binary, which stands in for the image's
//     command.
//
// When the process ends, the pod ends with its exit code and its last
// lines as its message (terminationMessagePolicy FallbackToLogsOnError),
// as a kubelet reports it, and the pod's controller does the rest. A pod
// deleted while its process runs gets SIGTERM, and SIGKILL when its grace
// period is over, as a kubelet stops a container.
package podproc

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Kubelet runs pods as processes.
type Kubelet struct {
	Client kubernetes.Interface
	Host   string   // the API server's URL, as the pods reach it
	Binary string   // what the pods' container command stands for
	Env    []string // the processes' environment besides the in-cluster one (a cloud's endpoint, say)
	// Unshare is unshare's flags for the pods' namespaces (Namespaces
	// finds them); nil: -m -u.
	Unshare []string
}

// Namespaces returns the unshare flags that give a process a mount and
// UTS namespace of its own on this machine: -m -u as root, with -r
// (a user namespace, mapped to root) otherwise; an error if neither.
func Namespaces() ([]string, error) {
	var errs []error
	for _, flags := range [][]string{{"-m", "-u"}, {"-r", "-m", "-u"}} {
		err := exec.Command("unshare", append(slices.Clone(flags), "true")...).Run()
		if err == nil {
			return flags, nil
		}
		errs = append(errs, fmt.Errorf("unshare %s: %w", strings.Join(flags, " "), err))
	}
	return nil, fmt.Errorf("cannot give a pod's process a mount and UTS namespace of its own (root, or user namespaces, needed): %w", errors.Join(errs...))
}

// Serve calls start once for each pod that lists selects in namespace ns
// ("" all) once it is Running (kwok marked it so) and not being deleted,
// until ctx ends. start must not block.
func (k *Kubelet) Serve(ctx context.Context, ns string, list metav1.ListOptions, start func(p *corev1.Pod)) {
	started := map[string]bool{}
	for ctx.Err() == nil {
		pods, err := k.Client.CoreV1().Pods(ns).List(ctx, list)
		if err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if started[string(p.UID)] || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
					continue
				}
				started[string(p.UID)] = true
				start(p)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Command is the pod's first container as a process: its volumes in a
// directory of their own, mounted at their mountPaths in the process's own
// mount namespace, its hostname the pod's name. Only mountPaths under
// /var/run are mounted (a tmpfs is put there first).
func (k *Kubelet) Command(ctx context.Context, p *corev1.Pod) (*exec.Cmd, error) {
	c := p.Spec.Containers[0]
	dir, err := os.MkdirTemp("", "pod-"+p.Name+"-")
	if err != nil {
		return nil, err
	}
	script := `set -e; hostname "$0"; mount -t tmpfs tmpfs /var/run`
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(m.MountPath, "/var/run/") {
			return nil, fmt.Errorf("volume %s mounted at %s: only mounts under /var/run are made", m.Name, m.MountPath)
		}
		src := filepath.Join(dir, m.Name)
		if err := k.writeVolume(ctx, p, m.Name, src); err != nil {
			return nil, err
		}
		script += fmt.Sprintf("; mkdir -p %q; mount --bind %q %q", m.MountPath, src, m.MountPath)
	}
	script += `; shift; exec "$@"`
	u, err := url.Parse(k.Host)
	if err != nil {
		return nil, err
	}
	flags := k.Unshare
	if flags == nil {
		flags = []string{"-m", "-u"}
	}
	args := append(slices.Clone(flags), "--propagation", "private", "sh", "-c", script, p.Name, "--", k.Binary)
	cmd := exec.Command("unshare", append(args, c.Args...)...)
	cmd.Env = append(slices.Clone(k.Env), "HOME="+dir, "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port())
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "KUBECONFIG=") })
	// The container's own environment last, as it is set over the image's.
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, fmt.Errorf("env %s: valueFrom, which podproc does not resolve", e.Name)
		}
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	return cmd, nil
}

// writeVolume writes pod volume name into dir as the kubelet would.
func (k *Kubelet) writeVolume(ctx context.Context, p *corev1.Pod, name, dir string) error {
	i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		return fmt.Errorf("no volume %q", name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	v := p.Spec.Volumes[i]
	switch {
	case v.ConfigMap != nil:
		return k.writeConfigMap(ctx, p.Namespace, v.ConfigMap.Name, dir)
	case v.Secret != nil:
		return k.writeSecret(ctx, p.Namespace, v.Secret.SecretName, dir)
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			if err := k.writeProjected(ctx, p, src, dir); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("volume %q: a kind podproc does not mount", name)
}

func (k *Kubelet) writeConfigMap(ctx context.Context, ns, name, dir string) error {
	var cm *corev1.ConfigMap
	var err error
	for range 50 { // kube-root-ca.crt is published soon after the namespace
		if cm, err = k.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	for key, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (k *Kubelet) writeSecret(ctx context.Context, ns, name, dir string) error {
	s, err := k.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for key, v := range s.Data {
		if err := os.WriteFile(filepath.Join(dir, key), v, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeProjected writes one source of a projected volume: the token as the
// API server gives it for the pod, the CA, the namespace.
func (k *Kubelet) writeProjected(ctx context.Context, p *corev1.Pod, src corev1.VolumeProjection, dir string) error {
	switch {
	case src.ServiceAccountToken != nil:
		s := src.ServiceAccountToken
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: s.ExpirationSeconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
		}}
		if s.Audience != "" {
			req.Spec.Audiences = []string{s.Audience}
		}
		tok, err := k.Client.CoreV1().ServiceAccounts(p.Namespace).CreateToken(ctx, p.Spec.ServiceAccountName, req, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, s.Path), []byte(tok.Status.Token), 0o600)
	case src.ConfigMap != nil:
		return k.writeConfigMap(ctx, p.Namespace, src.ConfigMap.Name, dir)
	case src.DownwardAPI != nil:
		for _, f := range src.DownwardAPI.Items {
			if f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.namespace" {
				return fmt.Errorf("downward API item %q: a field podproc does not write", f.Path)
			}
			if err := os.WriteFile(filepath.Join(dir, f.Path), []byte(p.Namespace), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// End ends the pod as its kubelet reports a container that exited: its
// exit code, and its last lines as its message.
func (k *Kubelet) End(ctx context.Context, p *corev1.Pod, code int, out string) error {
	pod, err := k.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(out) > 2048 {
		out = out[len(out)-2048:]
	}
	now := metav1.Now()
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(max(code, 0)), Reason: reason, Message: out, FinishedAt: now}},
	}}
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, now
		}
	}
	_, err = k.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}
