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

var (
	bindOnce sync.Once
	bindErr  error
)

// boundUser returns the kubeconfig of a user bound only to the roles of
// deploy/rbac.yaml (created once per process), so the documented RBAC is
// the RBAC that works.
func boundUser(t *testing.T, user string) string {
	t.Helper()
	bindOnce.Do(func() { bindErr = bindRBAC(user) })
	if bindErr != nil {
		t.Fatal(bindErr)
	}
	kubeconfig, err := sim.KubeconfigForUser(user)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func bindRBAC(user string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac.yaml"))
	if err != nil {
		return err
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		return fmt.Errorf("deploy/rbac.yaml: want a ClusterRole and a Role, got %d documents", len(docs))
	}
	var cr rbacv1.ClusterRole
	var role rbacv1.Role
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &cr); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &role); err != nil {
		return err
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := client.RbacV1().Roles(role.Namespace).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		return err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-" + user}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := client.RbacV1().RoleBindings(role.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodeupgrade-" + user, Namespace: role.Namespace}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return nil
}
