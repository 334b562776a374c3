package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/session"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/podproc"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The simulated cluster's nodes run no containers: kwok marks the Job's
// pods Running. These tests play the kubelet's part for them with package
// podproc, as the in-cluster demo does (simcluster kubelet): each pod of
// the Job runs as a process of the plugin, with the pod's own identity and
// files (its ServiceAccount token, the cluster's CA, the plan's
// ConfigMap) where a container reads them, its hostname the pod's name,
// so the lock names the pod. So the run is authorized as the Job's
// ServiceAccount, by the roles deploy/rbac.yaml and deploy/in-cluster.yaml
// grant. When the process ends, the pod ends with its exit code and its
// last lines as its message, and the Job controller does the rest. The
// cloud's workload identity is stood in for by the AWS endpoint's
// environment, as for the other AWS tests.

// inClusterEnv applies deploy/in-cluster.yaml in namespace ns (its
// ServiceAccount, bindings and submitter role), with the Role of
// deploy/rbac.yaml's state role in ns as edit leaves it.
func inClusterEnv(t *testing.T, ns string, edit func(*rbacv1.Role)) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	boundUser(t, upgrader) // deploy/rbac.yaml's roles exist
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := roles.ns.DeepCopy()
	role.Namespace, role.ResourceVersion, role.UID = ns, "", ""
	if edit != nil {
		edit(role)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "in-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The manifests as documented, in namespace ns: the ClusterRoleBinding
	// named after it, so that each test's binding is its own.
	text := strings.ReplaceAll(string(data), "namespace: kube-system", "namespace: "+ns)
	text = strings.Replace(text, "name: kubectl-nodeupgrade-in-cluster\nroleRef", "name: kubectl-nodeupgrade-in-cluster-"+ns+"\nroleRef", 1)
	for _, doc := range strings.Split(text, "\n---\n") {
		if err := applyDoc(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
}

// applyDoc creates one object of deploy/in-cluster.yaml.
func applyDoc(ctx context.Context, doc string) error {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		return err
	}
	var err error
	switch meta.Kind {
	case "ServiceAccount":
		var o corev1.ServiceAccount
		if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
			_, err = client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	case "ClusterRoleBinding":
		var o rbacv1.ClusterRoleBinding
		if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
			_, err = client.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		}
	case "RoleBinding":
		var o rbacv1.RoleBinding
		if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
			_, err = client.RbacV1().RoleBindings(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	case "Role":
		var o rbacv1.Role
		if err = yaml.UnmarshalStrict([]byte(doc), &o); err == nil {
			_, err = client.RbacV1().Roles(o.Namespace).Create(ctx, &o, metav1.CreateOptions{})
		}
	default:
		return fmt.Errorf("deploy/in-cluster.yaml: unexpected kind %q", meta.Kind)
	}
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// kubelet runs the pods of one Job as processes, as the comment above
// says; kill says, for the n-th pod (0-based), after which line of its
// output to kill it ("" never): killAfter later.
type kubelet struct {
	t        *testing.T
	ns       string
	job      string
	proc     *podproc.Kubelet
	notOn    func(node string) bool
	kill     []string
	mu       sync.Mutex
	pods     []string // the pods started, in order
	killed   int
	killedAt []time.Time
}

// killAfter is how long after its kill point's line a pod is killed:
// longer than a run takes to write its report (at most every 3 s), so
// that what came before the line is in it.
const killAfter = 5 * time.Second

// serve starts each Running pod of the Job as it comes, until ctx ends.
func (k *kubelet) serve(ctx context.Context) {
	k.proc.Serve(ctx, k.ns, metav1.ListOptions{LabelSelector: "job-name=" + k.job}, func(p *corev1.Pod) {
		if !k.notOn(p.Spec.NodeName) {
			k.t.Errorf("pod %s runs on node %s, of the group it upgrades", p.Name, p.Spec.NodeName)
		}
		go k.run(ctx, p)
	})
}

// run runs pod p as a process until it ends (or is killed at its kill
// point), then ends the pod as the kubelet would.
func (k *kubelet) run(ctx context.Context, p *corev1.Pod) {
	k.mu.Lock()
	n := len(k.pods)
	k.pods = append(k.pods, p.Name)
	k.mu.Unlock()
	cmd, err := k.proc.Command(ctx, p)
	if err != nil {
		k.t.Errorf("starting pod %s: %v", p.Name, err)
		return
	}
	b := startBackground(k.t, cmd)
	if n < len(k.kill) && k.kill[n] != "" && b.waitFor(k.kill[n]) {
		time.Sleep(killAfter)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		k.mu.Lock()
		k.killed++
		k.killedAt = append(k.killedAt, time.Now())
		k.mu.Unlock()
	}
	code, out := b.wait(k.t, 10*time.Minute)
	k.t.Logf("pod %s exited %d:\n%s", p.Name, code, out)
	if err := k.proc.End(context.WithoutCancel(ctx), p, code, out); err != nil {
		k.t.Errorf("ending pod %s: %v", p.Name, err)
	}
}

func (k *kubelet) started() (pods []string, killed int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.pods), k.killed
}

// startKubelet serves the pods of group's Job in ns.
func startKubelet(t *testing.T, ns, group string, env []string, kill ...string) *kubelet {
	t.Helper()
	unshare, err := podproc.Namespaces()
	if err != nil {
		t.Skip(err)
	}
	// A node outside the group, for the Job's pods.
	if _, _, err := scenario.CreateNodeGroup(testContext(t, time.Minute), client, scenario.NodeGroup{
		LabelKey: groupKey, Name: systemGroup(group), Zones: []string{"sim-a"}, Current: 1,
	}); err != nil {
		t.Fatal(err)
	}
	proc := &podproc.Kubelet{Client: client, Host: sim.RestConfig.Host, Binary: binary, Env: env, Unshare: unshare}
	k := &kubelet{t: t, ns: ns, job: session.JobName(group), proc: proc, kill: kill, notOn: func(node string) bool {
		n, err := client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return err == nil && n.Labels[groupKey] != group
	}}
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go k.serve(ctx)
	return k
}

// TestInClusterRunSurvivesItsPodKilledTwice submits a run to the cluster
// as a user of deploy/rbac.yaml's and deploy/in-cluster.yaml's roles; its
// Job's pod is killed mid-run twice; each next pod waits out the lock of
// the one before and resumes the run, which finishes as an uninterrupted
// one: 0 PDB violations, nothing left tainted, cordoned or annotated.
func TestInClusterRunSurvivesItsPodKilledTwice(t *testing.T) {
	t.Parallel()
	const name, ns = "incl", state.DefaultNamespace
	sc := setupInClusterAWS(t, name, ns, "cordoned", "cordoned")
	g, submitter, watcher, k := sc.g, sc.submitter, sc.watcher, sc.kubelet
	// A post-drain wait longer than killAfter: each pod is killed in its
	// batch, before the batch's end, after its report has written the drain.
	run := startBackground(t, g.cmd(submitter, append([]string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "10s"},
		inClusterFlags(ns, name)...)...))
	code, out := run.wait(t, 9*time.Minute)
	t.Logf("run --in-cluster:\n%s", out)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("run --in-cluster exit %d, want %d", code, nodeupgrade.ExitOK)
	}
	pods, killed := k.started()
	if killed != 2 || len(pods) != 3 {
		t.Fatalf("pods %v, %d killed: want 3 pods, the first two killed", pods, killed)
	}
	for _, p := range pods {
		if !strings.Contains(out, "pod "+p) {
			t.Errorf("the followed run never named pod %s", p)
		}
	}
	if !strings.Contains(out, "runs in the cluster: Job "+ns+"/"+session.JobName(name)) {
		t.Errorf("the followed lines never said where the run runs")
	}
	assertNoViolations(t, watcher.Stop())
	g.assertFinished(t)
	k.mu.Lock()
	firstKill := k.killedAt[0]
	k.mu.Unlock()
	assertReportedDrainedBefore(t, ns, name, firstKill)
}

// assertReportedDrainedBefore checks that the report of group's last run
// has a node drained before a pod of the run was killed at kill: written
// by the killed pod, not only by the one that resumed.
func assertReportedDrainedBefore(t *testing.T, ns, group string, kill time.Time) {
	t.Helper()
	h, err := (&state.Store{Client: client, Namespace: ns}).LoadReports(testContext(t, time.Minute), group)
	if err != nil || len(h.Runs) == 0 {
		t.Fatalf("report of %q: %v, %d runs", group, err, len(h.Runs))
	}
	run := h.Runs[0] // the newest
	for _, a := range run.Attempts {
		for _, n := range a.Nodes {
			if n.Drained != nil && !n.Drained.After(kill) {
				t.Logf("node %s drained at %s by the attempt of %s (%s), its pod killed at %s", n.Name, n.Drained.Format(time.RFC3339), a.Kind, a.Pod, kill.UTC().Format(time.RFC3339))
				return
			}
		}
	}
	t.Errorf("the report (%d attempts) has no node drained before the first pod was killed at %s: the killed pod's journal was lost", len(run.Attempts), kill.UTC().Format(time.RFC3339))
}

// TestInClusterRunWithoutAVerbFails runs a Job whose ServiceAccount's Role
// lacks one verb of deploy/rbac.yaml's: its pod stops before it changes
// anything, naming the verb, and the Job fails at once (exit 2 ends it).
func TestInClusterRunWithoutAVerbFails(t *testing.T) {
	t.Parallel()
	const name, ns = "incl-rbac", "nodeupgrade-incl-rbac"
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	inClusterEnv(t, ns, func(r *rbacv1.Role) {
		for i := range r.Rules {
			if slices.Contains(r.Rules[i].Resources, "leases") {
				r.Rules[i].Verbs = slices.DeleteFunc(r.Rules[i].Verbs, func(v string) bool { return v == "update" })
			}
		}
	})
	k := startKubelet(t, ns, name, cleanAWSEnv())
	r := plugin(t, append([]string{"run", name, "--target-label", target}, inClusterFlags(ns, name)...)...)
	t.Logf("run --in-cluster: %s", r)
	want := `may not update leases.coordination.k8s.io in namespace "` + ns + `"`
	if r.code != nodeupgrade.ExitUsage || !strings.Contains(r.stdout+r.stderr, want) {
		t.Fatalf("exit %d, want %d naming the missing right (%s)", r.code, nodeupgrade.ExitUsage, want)
	}
	if pods, _ := k.started(); len(pods) != 1 {
		t.Errorf("pods %v: want one, the Job failed at once", pods)
	}
	ctx := testContext(t, time.Minute)
	assertUntouched(t, ctx, groupKey, name)
	if rec, err := (&state.Store{Client: client, Namespace: ns}).Load(ctx, name); err != nil || rec != nil {
		t.Errorf("record %+v (%v): want none, the run never started", rec, err)
	}
}

// bindSubmitter binds user to deploy/in-cluster.yaml's submitter role in ns.
func bindSubmitter(t *testing.T, user, ns string) {
	t.Helper()
	ctx := testContext(t, time.Minute)
	_, err := client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-submit-" + user, Namespace: ns},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "kubectl-nodeupgrade-submit"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestInClusterAbortPutsTheGroupBack aborts an in-cluster run from a Job
// of its own: refused while the run is alive, then with --wait the run is
// asked to stop (its pod exits 8 and its Job ends), and the abort's Job
// puts the group back: its original sizes, nothing tainted, cordoned or
// inClusterFlags send a command on group to a Job in ns whose pods run
// on the group's system node (startKubelet's): other tests' groups'
// nodes, which their runs drain, would evict it at any moment.
func inClusterFlags(ns, group string) []string {
	return []string{"--state-namespace", ns, "--in-cluster", "--image-ref", "example.com/kubectl-nodeupgrade:e2e",
		"--job-node-selector", groupKey + "=" + systemGroup(group), "--yes"}
}

// systemGroup is the node group of startKubelet's node for group's Jobs.
func systemGroup(group string) string { return group + "-system" }

// setupInClusterAWS is the scene of the in-cluster control tests: an
// AWS group of 3 nodes running an app whose PDB keeps 2 of 3, the
// in-cluster environment in ns, a submitter bound as the docs bind one,
// a PDB watch, the kubelet that runs the Jobs' pods, and the flags that
// send a command to a Job. The kubelet kills the pods of the Job as
// startKubelet's kill says.
func setupInClusterAWS(t *testing.T, name, ns string, kill ...string) inClusterScene {
	t.Helper()
	g := setupAWSGroup(t, name, 3, scenario.App{Name: "web", Replicas: 3, MinAvailable: num(2)})
	inClusterEnv(t, ns, nil)
	submitter := boundUser(t, "submitter")
	bindSubmitter(t, "submitter", ns)
	ctx := testContext(t, 10*time.Minute)
	watcher, err := scenario.WatchPDBs(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	k := startKubelet(t, ns, name, g.env(), kill...)
	inCluster := inClusterFlags(ns, name)
	return inClusterScene{g: g, ctx: ctx, submitter: submitter, watcher: watcher, kubelet: k, flags: inCluster}
}

type inClusterScene struct {
	g         *awsGroup
	ctx       context.Context
	submitter string
	watcher   *scenario.PDBWatcher
	kubelet   *kubelet
	flags     []string // send a command to a Job
}

// annotated, the record marked aborted.
func TestInClusterAbortPutsTheGroupBack(t *testing.T) {
	t.Parallel()
	const name, ns = "incl-abort", state.DefaultNamespace
	sc := setupInClusterAWS(t, name, ns)
	g, ctx, submitter, watcher, k, inCluster := sc.g, sc.ctx, sc.submitter, sc.watcher, sc.kubelet, sc.flags
	run := startBackground(t, g.cmd(submitter, append([]string{"run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "2s"}, inCluster...)...))
	if !run.waitFor("in flight") { // the followed run is draining a node
		t.Fatalf("the run never drained a node:\n%s", run.output())
	}
	live := runCmd(t, g.cmd(submitter, append([]string{"abort", name}, inCluster...)...))
	if live.code != nodeupgrade.ExitUsage || !strings.Contains(live.stderr, "abort --wait") {
		t.Fatalf("abort --in-cluster of a live run: %s; want exit %d, refused, naming abort --wait", live, nodeupgrade.ExitUsage)
	}
	abort := runCmd(t, g.cmd(submitter, append([]string{"abort", name, "--wait"}, inCluster...)...))
	t.Logf("abort --in-cluster --wait: %s", abort)
	if abort.code != nodeupgrade.ExitOK || !strings.Contains(abort.stdout, "aborted") {
		t.Fatalf("abort --in-cluster --wait exit %d, want %d and the run aborted", abort.code, nodeupgrade.ExitOK)
	}
	if code, out := run.wait(t, time.Minute); code != nodeupgrade.ExitPaused {
		t.Errorf("the run abort stopped: exit %d, want %d:\n%s", code, nodeupgrade.ExitPaused, out)
	}
	pods, _ := k.started()
	if len(pods) != 2 || !strings.Contains(abort.stdout, "pod "+pods[1]) {
		t.Errorf("pods %v: want the run's, then the abort's, which abort followed", pods)
	}
	g.stableAtOriginalSizes(t, ctx)
	for _, n := range groupNodes(t, ctx, groupKey, name) {
		if _, ok := n.Annotations[scaleDownDisabled]; ok {
			t.Errorf("node %q still has %s", n.Name, scaleDownDisabled)
		}
	}
	assertUntouched(t, ctx, groupKey, name)
	if rec, err := (&state.Store{Client: client, Namespace: ns}).Load(ctx, name); err != nil || rec == nil || rec.AbortedAt == nil {
		t.Errorf("record %+v (%v): want it marked aborted", rec, err)
	}
	assertNoViolations(t, watcher.Stop())
}

// TestInClusterBlueGreenRollback rolls a blue/green in-cluster run back
// from a Job: the run left soaking (--no-wait), rollback --in-cluster
// hands the rollback to a new Job, whose pod runs it (not a run forward):
// green drained and deleted, blue back at its sizes and schedulable.
func TestInClusterBlueGreenRollback(t *testing.T) {
	t.Parallel()
	const name, ns = "incl-bg", state.DefaultNamespace
	sc := setupInClusterAWS(t, name, ns)
	g, ctx, submitter, watcher, k, inCluster := sc.g, sc.ctx, sc.submitter, sc.watcher, sc.kubelet, sc.flags
	r := runCmd(t, g.cmd(submitter, append([]string{"run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "3",
		"--node-pool-soak", "1h", "--no-wait", "--post-drain-wait", "0s"}, inCluster...)...))
	if r.code != nodeupgrade.ExitPaused {
		t.Fatalf("run --in-cluster --no-wait: %s; want exit %d at the soak", r, nodeupgrade.ExitPaused)
	}
	rb := runCmd(t, g.cmd(submitter, append([]string{"rollback", name}, inCluster...)...))
	t.Logf("rollback --in-cluster: %s", rb)
	if rb.code != nodeupgrade.ExitOK || !strings.Contains(rb.stdout, "rolled back") {
		t.Fatalf("rollback --in-cluster exit %d, want %d and the run rolled back", rb.code, nodeupgrade.ExitOK)
	}
	if pods, _ := k.started(); len(pods) != 2 || !strings.Contains(rb.stdout, "pod "+pods[1]) {
		t.Errorf("pods %v: want the run's, then the rollback's, which rollback followed", pods)
	}
	assertNoViolations(t, watcher.Stop())
	if slices.Contains(g.srv.Groups(), name+"-v2") {
		t.Errorf("green was not deleted: %v", g.srv.Groups())
	}
	g.stableAtOriginalSizes(t, ctx)
	assertUntouched(t, ctx, groupKey, name)
	if rec, err := (&state.Store{Client: client, Namespace: ns}).Load(ctx, name); err != nil || rec == nil || rec.FinishedAt == nil || rec.LastError != "" {
		t.Errorf("record %+v (%v): want the rollback finished", rec, err)
	}
}
