package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/internal/plugin"
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

var (
	rolesOnce sync.Once
	roles     struct {
		cluster rbacv1.ClusterRole
		ns      rbacv1.Role
		err     error
	}
)

// boundUser returns the kubeconfig of a user bound only to the roles of
// deploy/rbac.yaml (created once per process), so the documented RBAC is
// the RBAC that works.
func boundUser(t *testing.T, user string) string {
	t.Helper()
	rolesOnce.Do(func() { roles.cluster, roles.ns, roles.err = createRoles() })
	if roles.err != nil {
		t.Fatal(roles.err)
	}
	if err := bindRoles(user, roles.cluster, roles.ns); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := sim.KubeconfigForUser(user)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// createRoles creates the ClusterRole and the Role of deploy/rbac.yaml.
func createRoles() (rbacv1.ClusterRole, rbacv1.Role, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var cr rbacv1.ClusterRole
	var role rbacv1.Role
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac.yaml"))
	if err != nil {
		return cr, role, err
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		return cr, role, fmt.Errorf("deploy/rbac.yaml: want a ClusterRole and a Role, got %d documents", len(docs))
	}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cr); err != nil {
		return cr, role, err
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &role); err != nil {
		return cr, role, err
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		return cr, role, err
	}
	if _, err := client.RbacV1().Roles(role.Namespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		return cr, role, err
	}
	return cr, role, nil
}

// bindRoles binds user to the roles of deploy/rbac.yaml; binding a user
// twice is binding it once.
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
