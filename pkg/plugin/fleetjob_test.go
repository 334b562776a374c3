package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/fleet"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// fleetFiles writes the kubeconfig of fleetKubeconfig (its servers answer
// nothing) with a context "mgmt" signing in with a command, and the fleet
// file with from replaced by to.
func fleetFiles(t *testing.T, from, to string) (kc, file string) {
	t.Helper()
	dir := t.TempDir()
	kc = filepath.Join(dir, "kubeconfig")
	withExec := strings.Replace(fleetKubeconfig, "contexts:\n", `- name: exec-user
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws-iam-authenticator}}
contexts:
- name: mgmt
  context: {cluster: nowhere, user: exec-user}
`, 1)
	if err := os.WriteFile(kc, []byte(withExec), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(goodFleet, from) {
		t.Fatalf("the good file has no %q", from)
	}
	file = filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(goodFleet, from, to, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, file
}

// TestFleetInClusterRefusedBeforeAnyCluster: what the coordinator's Job
// cannot do is refused in one line, exit 2, before any cluster is asked
// (the kubeconfig's servers answer nothing).
func TestFleetInClusterRefusedBeforeAnyCluster(t *testing.T) {
	tests := []struct {
		name, from, to string
		args           []string
		want           string
	}{
		{"an exec gate", "- name: prod\n", "  afterStage: {gates: [\"exec:./smoke.sh\"]}\n- name: prod\n", nil, `stage "canary" gate "exec:./smoke.sh" runs a command`},
		{"a command hook", "{context: prod-a, nodeGroup: ng1}", "{context: prod-a, nodeGroup: ng1, run: {pre-drain-hook: ./drain.sh}}", nil, `target "prod-a/ng1" runs --pre-drain-hook`},
		{"a name too long for a Job", "name: img-42", "name: " + strings.Repeat("x", 50), nil, "too long for the coordinator's Job"},
		{"no image in a dev build", "name: img-42", "name: img-42", []string{"--image-ref="}, "give --image-ref"},
		{"--image-ref without --in-cluster", "name: img-42", "name: img-42", []string{"--in-cluster=false"}, "--image-ref is only used with --in-cluster"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, file := fleetFiles(t, tc.from, tc.to)
			args := append([]string{"fleet", "run", "-f", file, "--kubeconfig", kc, "--yes", "--in-cluster", "--image-ref", "example.com/p:v1"}, tc.args...)
			var out, errOut bytes.Buffer
			cmd := NewCmdNodeUpgrade(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
			cmd.SetArgs(args)
			code := PrintError(&errOut, cmd.ExecuteContext(context.Background()))
			if code != ExitUsage || !oneLineOf(errOut.String()) || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, want %d with one line naming %q:\n%s%s", code, ExitUsage, tc.want, out.String(), errOut.String())
			}
		})
	}
}

// inClusterFleet is "fleet run --in-cluster" of goodFleet, loaded, its
// record in context dev, over the clientset c of the management cluster.
func inClusterFleet(t *testing.T, from, to string) *FleetRunOptions {
	t.Helper()
	kc, file := fleetFiles(t, from, to)
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &kc
	o := &FleetRunOptions{fleetOptions: fleetOptions{configFlags: flags, IOStreams: genericiooptions.NewTestIOStreamsDiscard(), File: file, StateNamespace: "nodeupgrade"}, verb: "run", Yes: true}
	o.ic = inClusterOptions{InCluster: true, ImageRef: "example.com/p:v1", ServiceAccount: session.DefaultServiceAccount, NodeSelector: map[string]string{"pool": "system"}}
	if err := o.load(); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestCoordinatorKubeconfig: the Secret's kubeconfig holds the fleet's
// contexts and the record's, current, with their credentials; a context
// that signs in with a command is refused naming it.
func TestCoordinatorKubeconfig(t *testing.T) {
	o := inClusterFleet(t, "name: img-42", "name: img-42")
	data, err := o.coordinatorKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"dev", "prod-a"}) || cfg.CurrentContext != "dev" || cfg.AuthInfos["u"] == nil || cfg.AuthInfos["u"].Token != "x" {
		t.Errorf("contexts %v, current %q, user u %+v: want dev and prod-a, dev current, with the token", names, cfg.CurrentContext, cfg.AuthInfos["u"])
	}
	o.RecordContext = "mgmt"
	if _, err := o.coordinatorKubeconfig(); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `context "mgmt" signs in with a command`) {
		t.Errorf("a context signing in with a command: %v, want exit %d naming it", err, ExitUsage)
	}
}

// TestStartCoordinator: the Job runs "fleet run" of the mounted file with
// the mounted kubeconfig as the in-cluster run's Job runs (image,
// ServiceAccount, node selector, failure policy), its ConfigMap and Secret
// owned by it; a start refused or failed leaves nothing behind.
func TestStartCoordinator(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: session.DefaultServiceAccount, Namespace: "nodeupgrade"}}
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-fleet-img-42", Namespace: "nodeupgrade"}}
	tests := []struct {
		name     string
		objects  []runtime.Object
		failOn   string // the resource whose create fails
		wantErr  string
		wantCode int
	}{
		{"started", []runtime.Object{sa}, "", "", 0},
		{"no ServiceAccount: refused", nil, "", "--service-account", ExitUsage},
		{"its Job still runs: refused", []runtime.Object{sa, running}, "", "still runs the coordinator", ExitUsage},
		{"the Secret cannot be made: undone", []runtime.Object{sa}, "secrets", "error when starting Job", ExitFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := inClusterFleet(t, "name: img-42", "name: img-42")
			c := fake.NewClientset(tc.objects...)
			if tc.failOn != "" {
				c.PrependReactor("create", tc.failOn, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, errors.New("etcd is away") })
			}
			job, err := o.startCoordinator(context.Background(), c, []byte("kubeconfig"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || ExitCode(err) != tc.wantCode {
					t.Fatalf("err %v (exit %d), want exit %d naming %q", err, ExitCode(err), tc.wantCode, tc.wantErr)
				}
				assertNoCoordinatorMade(t, c, tc.objects)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertCoordinatorJob(t, c, job)
		})
	}
}

func assertNoCoordinatorMade(t *testing.T, c *fake.Clientset, had []runtime.Object) {
	t.Helper()
	ctx := context.Background()
	jobs, _ := c.BatchV1().Jobs("nodeupgrade").List(ctx, metav1.ListOptions{})
	cms, _ := c.CoreV1().ConfigMaps("nodeupgrade").List(ctx, metav1.ListOptions{})
	secrets, _ := c.CoreV1().Secrets("nodeupgrade").List(ctx, metav1.ListOptions{})
	hadJob := slices.ContainsFunc(had, func(o runtime.Object) bool { _, ok := o.(*batchv1.Job); return ok })
	if len(jobs.Items) != map[bool]int{true: 1}[hadJob] || len(cms.Items) != 0 || len(secrets.Items) != 0 {
		t.Errorf("left behind: %d Jobs, %d ConfigMaps, %d Secrets", len(jobs.Items), len(cms.Items), len(secrets.Items))
	}
}

func assertCoordinatorJob(t *testing.T, c *fake.Clientset, job *batchv1.Job) {
	t.Helper()
	ctx := context.Background()
	pod := job.Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	if job.Spec.Suspend == nil || *job.Spec.Suspend || pod.ServiceAccountName != session.DefaultServiceAccount || pod.NodeSelector["pool"] != "system" ||
		pod.Containers[0].Image != "example.com/p:v1" || job.Spec.PodFailurePolicy == nil ||
		args != "fleet run -f /var/run/nodeupgrade/fleet/fleet.yaml --yes --record-context=dev --state-namespace=nodeupgrade --in-cluster-job=nodeupgrade-fleet-img-42" ||
		len(pod.Containers[0].Env) != 1 || pod.Containers[0].Env[0].Value != "/var/run/nodeupgrade/fleet-kubeconfig/kubeconfig" {
		t.Errorf("Job %+v", job)
	}
	cm, err := c.CoreV1().ConfigMaps("nodeupgrade").Get(ctx, "nodeupgrade-fleet-img-42-file", metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["fleet.yaml"], "name: img-42") || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Name != job.Name {
		t.Errorf("the file's ConfigMap %+v (%v): want the file, owned by the Job", cm, err)
	}
	s, err := c.CoreV1().Secrets("nodeupgrade").Get(ctx, "nodeupgrade-fleet-img-42-kubeconfig", metav1.GetOptions{})
	if err != nil || string(s.Data["kubeconfig"]) != "kubeconfig" || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != job.Name {
		t.Errorf("the kubeconfig's Secret %+v (%v): want the kubeconfig, owned by the Job", s, err)
	}
}

// TestRunOutcome: a target's run that exited 0 is skipped where it wrote
// no record newer than its start, unless the record is this fleet's own.
func TestRunOutcome(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 500, time.UTC)
	rec := func(updated time.Time, fleetID string) RunStatus {
		return RunStatus{Record: &state.Record{UpdatedAt: updated, Fleet: fleetID}}
	}
	tests := []struct {
		name  string
		st    RunStatus
		found bool
		err   error
		want  fleet.Outcome
	}{
		{"no record: nothing to do", RunStatus{}, false, nil, fleet.Skipped},
		{"an earlier run's record", rec(start.Add(-time.Hour), ""), true, nil, fleet.Skipped},
		{"another fleet's record", rec(start.Add(-time.Hour), "other@1"), true, nil, fleet.Skipped},
		{"recorded in the run's first second", rec(start.Truncate(time.Second), ""), true, nil, fleet.Done},
		{"recorded since", rec(start.Add(time.Minute), "f@h"), true, nil, fleet.Done},
		{"this fleet's, finished by a killed coordinator", rec(start.Add(-time.Hour), "f@h"), true, nil, fleet.Done},
		{"this fleet's name and hash, before it started again", rec(start.Add(-3*time.Hour), "f@h"), true, nil, fleet.Skipped},
		{"status unreadable: the run's word", RunStatus{}, false, errors.New("refused"), fleet.Done},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := runOutcome(tc.st, tc.found, tc.err, start, "f@h", start.Add(-2*time.Hour)); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}
