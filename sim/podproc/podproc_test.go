package podproc

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRun runs a pod's container as a process (sh standing in for the
// image's command) and ends the pod as a kubelet reports it: its exit
// code, or, for a pod deleted while it runs, SIGTERM's outcome, or
// SIGKILL's (137) once the grace period is over for a process that
// ignores SIGTERM. The process runs with the pod's name as its hostname
// and the in-cluster environment.
func TestRun(t *testing.T) {
	unshare, err := Namespaces()
	if err != nil {
		t.Skip(err)
	}
	cases := []struct {
		name   string
		script string
		delete bool
		code   int
		phase  corev1.PodPhase
	}{
		{"exits on its own", `echo "host $(hostname) api $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; exit 0`, false, 0, corev1.PodSucceeded},
		{"fails on its own", `echo "host $(hostname)"; echo the last words; exit 2`, false, 2, corev1.PodFailed},
		{"deleted: stops on SIGTERM", `trap 'echo stopping; exit 4' TERM; echo "host $(hostname)"; while :; do sleep 0.1; done`, true, 4, corev1.PodFailed},
		{"deleted: killed after its grace", `trap '' TERM; echo "host $(hostname)"; while :; do sleep 0.1; done`, true, 137, corev1.PodFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "job-x7k2p", Namespace: "kube-system", UID: "u1"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Args: []string{"-c", c.script}}}},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning},
			}
			client := fake.NewClientset(pod)
			k := &Kubelet{Client: client, Host: "https://127.0.0.1:6443", Binary: "/bin/sh", Env: []string{"PATH=/usr/bin:/bin", "KUBECONFIG=/nowhere"}, Unshare: unshare}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out syncBuffer
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, err := k.Run(ctx, pod, &out)
				done <- result{code, err}
			}()
			if c.delete {
				for !strings.Contains(out.String(), "host ") {
					time.Sleep(20 * time.Millisecond)
				}
				deleted := pod.DeepCopy()
				deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now().Add(time.Second)}, new(int64(1))
				if _, err := client.CoreV1().Pods(pod.Namespace).Update(ctx, deleted, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := <-done
			if r.err != nil || r.code != c.code {
				t.Fatalf("Run: exit %d, %v; want %d\n%s", r.code, r.err, c.code, out.String())
			}
			if !strings.Contains(out.String(), "host job-x7k2p") {
				t.Errorf("output %q: want the pod's name as its hostname", out.String())
			}
			if c.code == 0 && !strings.Contains(out.String(), "api 127.0.0.1:6443") {
				t.Errorf("output %q: want the in-cluster environment", out.String())
			}
			got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := got.Status.ContainerStatuses
			if got.Status.Phase != c.phase || len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != int32(c.code) {
				t.Fatalf("pod status %+v: want %s, exit %d", got.Status, c.phase, c.code)
			}
			if !strings.Contains(st[0].State.Terminated.Message, "host job-x7k2p") {
				t.Errorf("message %q: want the process's last lines", st[0].State.Terminated.Message)
			}
		})
	}
}

// TestSecretAndEnv: a Secret volume is mounted at its mountPath as a
// kubelet mounts it, and the container's env is set over the kubelet's
// (KUBECONFIG, which the kubelet's own is never passed on).
func TestSecretAndEnv(t *testing.T) {
	unshare, err := Namespaces()
	if err != nil {
		t.Skip(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-s3cr3", Namespace: "kube-system", UID: "u2"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img", Args: []string{"-c", `echo "config $KUBECONFIG: $(cat "$KUBECONFIG")"`},
				Env:          []corev1.EnvVar{{Name: "KUBECONFIG", Value: "/var/run/kc/config"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kc", MountPath: "/var/run/kc", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "kc", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "kc"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kc", Namespace: "kube-system"}, Data: map[string][]byte{"config": []byte("apiVersion: v1")}}
	k := &Kubelet{Client: fake.NewClientset(pod, secret), Host: "https://127.0.0.1:6443", Binary: "/bin/sh", Env: []string{"PATH=/usr/bin:/bin", "KUBECONFIG=/nowhere"}, Unshare: unshare}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out syncBuffer
	code, err := k.Run(ctx, pod, &out)
	if err != nil || code != 0 || !strings.Contains(out.String(), "config /var/run/kc/config: apiVersion: v1") {
		t.Fatalf("Run: exit %d, %v; want 0 and the Secret's key read where KUBECONFIG names it:\n%s", code, err, out.String())
	}
}
