package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// upgrader is the user bound only to deploy/rbac.yaml.
const upgrader = "upgrader"

// TestRunAsLeastPrivilegedUser runs an upgrade as a user bound only to the
// roles of deploy/rbac.yaml, so the documented RBAC is the RBAC that works.
func TestRunAsLeastPrivilegedUser(t *testing.T) {
	t.Parallel()
	const name = "rbac"
	setupGroup(t, name, 2, 1, scenario.App{Name: "web", Replicas: 3, MaxUnavailable: num(1)})
	kubeconfig := boundUser(t, upgrader)

	// Without a binding the same user gets nowhere: the test can fail.
	stranger, err := sim.KubeconfigForUser("stranger")
	if err != nil {
		t.Fatal(err)
	}
	if r := pluginAs(t, stranger, "plan", name, "--target-label", target); r.code == nodeupgrade.ExitOK {
		t.Fatalf("an unbound user could plan: %s", r)
	}

	r := pluginAs(t, kubeconfig, "run", name, "--target-label", target, "--max-unavailable", "1", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run as %q failed: %s", upgrader, r)
	}
	if strings.Contains(r.stderr, "warning") {
		t.Errorf("the run warned (missing permission?): %s", r.stderr)
	}
	if r := pluginAs(t, kubeconfig, "status", name); r.code != nodeupgrade.ExitOK {
		t.Errorf("status as %q failed: %s", upgrader, r)
	}
	assertUpgraded(t, name, 1)
}

// TestEveryCommandAsLeastPrivilegedUser runs every command as users bound
// only to deploy/rbac.yaml: plan and status -w as a user of its read-only
// roles; run, cancel, abort, rollback, resume and complete as one of its
// run roles, on an AWS blue/green run (the strategy every control acts on).
func TestEveryCommandAsLeastPrivilegedUser(t *testing.T) {
	t.Parallel()
	const name = "rbac-all"
	g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MinAvailable: num(1)})
	upgraderKC, viewerKC := boundUser(t, upgrader), viewer(t, "watcher")
	as := func(kc string, args ...string) result {
		t.Helper()
		r := runCmd(t, g.cmd(kc, args...))
		assertPermitted(t, args[0], r.stdout+r.stderr)
		return r
	}
	bg := []string{"run", name, "--strategy", "blue-green", "--ami", "ami-new", "--batch-node-count", "1",
		"--batch-soak", "1h", "--post-drain-wait", "0s", "--yes"}
	if r := as(viewerKC, append([]string{"plan"}, bg[1:len(bg)-1]...)...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("plan as a viewer: %s", r)
	}

	// run, watched by the viewer; cancel pauses it, abort undoes it
	run := startBackground(t, g.cmd(upgraderKC, bg...))
	if !run.waitFor("batch 1/2: soak") {
		t.Fatalf("the run never reached its first batch soak:\n%s", run.output())
	}
	watch := startBackground(t, g.cmd(viewerKC, "status", name, "-w"))
	if r := as(upgraderKC, "cancel", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel: %s", r)
	}
	if code, out := run.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("the cancelled run exit %d, want %d:\n%s", code, nodeupgrade.ExitPaused, out)
	}
	code, out := watch.wait(t, time.Minute)
	assertPermitted(t, "status -w", out)
	if code != nodeupgrade.ExitPaused {
		t.Errorf("status -w as a viewer: exit %d, want %d as the run paused:\n%s", code, nodeupgrade.ExitPaused, out)
	}
	if r := as(viewerKC, "status", name); r.code != nodeupgrade.ExitOK {
		t.Errorf("status as a viewer: %s", r)
	}
	if r := as(upgraderKC, "abort", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s", r)
	}

	// a second run, rolled back from its soak, once the pods abort moved
	// are Ready again (or it is refused: pdb-zero-disruptions)
	waitPDBAllows(t, name, "web", 1)
	run = startBackground(t, g.cmd(upgraderKC, bg...))
	if !run.waitFor("batch 1/2: soak") {
		t.Fatalf("the second run never reached its first batch soak:\n%s", run.output())
	}
	if r := as(upgraderKC, "rollback", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("rollback: %s", r)
	}
	if code, out := run.wait(t, 5*time.Minute); code != nodeupgrade.ExitOK || !strings.Contains(out, "rolled back") {
		t.Fatalf("the rolled back run exit %d, want %d having rolled back:\n%s", code, nodeupgrade.ExitOK, out)
	}

	// a third run, paused, resumed, and its node pool soak completed,
	// once the rollback's moved pods are Ready again (or it is refused:
	// pdb-zero-disruptions)
	waitPDBAllows(t, name, "web", 1)
	full := append(slices.Clone(bg[:len(bg)-1]), "--batch-soak", "1s", "--node-pool-soak", "1h", "--yes")
	run = startBackground(t, g.cmd(upgraderKC, full...))
	if !run.waitFor("node pool soak: ") {
		t.Fatalf("the third run never reached the node pool soak:\n%s", run.output())
	}
	if r := as(upgraderKC, "cancel", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("cancel in the soak: %s", r)
	}
	if code, out := run.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
		t.Fatalf("the run cancelled in its soak exit %d, want %d:\n%s", code, nodeupgrade.ExitPaused, out)
	}
	resume := startBackground(t, g.cmd(upgraderKC, "resume", name, "--yes"))
	if !resume.waitFor("node pool soak: ") {
		t.Fatalf("resume never reached the node pool soak:\n%s", resume.output())
	}
	if r := as(upgraderKC, "complete", name); r.code != nodeupgrade.ExitOK {
		t.Fatalf("complete: %s", r)
	}
	code, out = resume.wait(t, 5*time.Minute)
	assertPermitted(t, "resume", out)
	if code != nodeupgrade.ExitOK {
		t.Fatalf("resume exit %d:\n%s", code, out)
	}
	g.assertGreenServes(t, name+"-v2")
}

// assertPermitted fails when a command's output shows a request the
// roles did not allow, or a warning about one.
func assertPermitted(t *testing.T, cmd, out string) {
	t.Helper()
	for _, bad := range []string{"forbidden", "Forbidden", "cannot list", "cannot watch", "cannot patch"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: output shows %q (a permission missing from deploy/rbac.yaml?):\n%s", cmd, bad, out)
		}
	}
}

// rbacRoles are the roles of deploy/rbac.yaml: those a run needs, and the
// read-only ones.
type rbacRoles struct {
	cluster, clusterView rbacv1.ClusterRole
	ns, nsView           rbacv1.Role
}

var (
	rolesOnce sync.Once
	roles     rbacRoles
	rolesErr  error
)

// boundUser returns the kubeconfig of a user bound only to the roles of
// deploy/rbac.yaml a run needs (created once per process), so the
// documented RBAC is the RBAC that works.
func boundUser(t *testing.T, user string) string {
	t.Helper()
	return userBoundTo(t, user, false)
}

// viewer returns the kubeconfig of a user bound only to the read-only
// roles of deploy/rbac.yaml.
func viewer(t *testing.T, user string) string {
	t.Helper()
	return userBoundTo(t, user, true)
}

func userBoundTo(t *testing.T, user string, view bool) string {
	t.Helper()
	rolesOnce.Do(func() { roles, rolesErr = createRoles() })
	if rolesErr != nil {
		t.Fatal(rolesErr)
	}
	cr, role := roles.cluster, roles.ns
	if view {
		cr, role = roles.clusterView, roles.nsView
	}
	if err := bindRoles(user, cr, role); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := sim.KubeconfigForUser(user)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// createRoles creates the ClusterRoles and Roles of deploy/rbac.yaml: the
// run's pair, then the read-only pair.
func createRoles() (rbacRoles, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var r rbacRoles
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac.yaml"))
	if err != nil {
		return r, err
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 4 {
		return r, fmt.Errorf("deploy/rbac.yaml: want two ClusterRoles and two Roles, got %d documents", len(docs))
	}
	for i, cr := range []*rbacv1.ClusterRole{&r.cluster, &r.clusterView} {
		if err := yaml.UnmarshalStrict([]byte(docs[2*i]), cr); err != nil {
			return r, err
		}
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
			return r, err
		}
	}
	for i, role := range []*rbacv1.Role{&r.ns, &r.nsView} {
		if err := yaml.UnmarshalStrict([]byte(docs[2*i+1]), role); err != nil {
			return r, err
		}
		if _, err := client.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return r, err
		}
	}
	for _, v := range []string{"create", "update", "patch", "delete"} {
		if hasVerb(r.clusterView.Rules, v) || hasVerb(r.nsView.Rules, v) {
			return r, fmt.Errorf("deploy/rbac.yaml: a read-only role grants %q", v)
		}
	}
	return r, nil
}

func hasVerb(rules []rbacv1.PolicyRule, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*") {
			return true
		}
	}
	return false
}

// bindRoles binds user to a ClusterRole and a Role; binding a user twice
// is binding it once.
func bindRoles(user string, cr rbacv1.ClusterRole, role rbacv1.Role) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-" + user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := client.RbacV1().RoleBindings(role.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-" + user, Namespace: role.Namespace}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
