package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// A role lacking one permission the run needs: check and plan name it and
// the provider's policy (exit 5, blockers), and run refuses before it
// changes anything, --force or not. The clouds are asked as the
// providers ask them (AWS iam:SimulatePrincipalPolicy for the caller's
// role, GCP testIamPermissions), and the fakes also refuse the calls
// themselves, as the clouds would.

func TestAWSCheckNamesAMissingPermission(t *testing.T) {
	t.Parallel()
	const name = "perm-aws"
	g := setupAWSGroup(t, name, 2)
	g.srv.Deny("autoscaling:TerminateInstanceInAutoScalingGroup")
	target := []string{"--ami", "ami-new"}
	assertMissing(t, func(args ...string) result { return runCmd(t, g.cmd(sim.Kubeconfig, args...)) }, name, target,
		"autoscaling:TerminateInstanceInAutoScalingGroup", "docs/providers/aws.md#permissions")
	if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 1 {
		t.Errorf("a launch template version was created")
	}
	if gr, _ := g.srv.Group(name); gr.Desired != 2 || gr.LaunchTemplateVersion != "$Default" {
		t.Errorf("the group changed: desired %d version %q", gr.Desired, gr.LaunchTemplateVersion)
	}
	assertUntouched(t, testContext(t, time.Minute), groupKey, name)

	t.Run("a caller who may not simulate is warned", func(t *testing.T) {
		g.srv.Deny("iam:SimulatePrincipalPolicy")
		r := runCmd(t, g.cmd(sim.Kubeconfig, append([]string{"check", name}, target...)...))
		if r.code != nodeupgrade.ExitOK || !strings.Contains(r.stdout, "permissions-unchecked") || !strings.Contains(r.stdout, "iam:SimulatePrincipalPolicy") {
			t.Errorf("want exit %d and the warning permissions-unchecked naming iam:SimulatePrincipalPolicy: %s", nodeupgrade.ExitOK, r)
		}
	})
}

func TestManagedNodeGroupCheckNamesAMissingPermission(t *testing.T) {
	t.Parallel()
	const name = "perm-mng"
	m := setupManagedGroup(t, name, 2, time.Minute)
	m.srv.Deny("eks:UpdateNodegroupVersion")
	assertMissing(t, func(args ...string) result { return m.run(t, args...) }, name, []string{"--kubernetes-version", "1.31"},
		"eks:UpdateNodegroupVersion", "docs/providers/aws.md#permissions")
	if calls := m.changingCalls(); len(calls) != 0 {
		t.Errorf("refused runs changed the node group: %v", calls)
	}
}

func TestGKECheckNamesAMissingPermission(t *testing.T) {
	t.Parallel()
	const name = "perm-gke"
	g := setupGKEPool(t, name, gkePoolSpec{})
	g.srv.Deny("container.clusters.update")
	assertMissing(t, func(args ...string) result { return g.run(t, args...) }, name, []string{"--strategy", "surge", "--node-version", gkeNew},
		"container.clusters.update", "docs/providers/gke.md#iam-permissions")
	if calls := g.srv.ChangingCalls(); len(calls) != 0 {
		t.Errorf("refused runs changed the pool: %v", calls)
	}
}

func TestGCECheckNamesAMissingPermission(t *testing.T) {
	t.Parallel()
	const name = "perm-gce"
	g := setupGCEGroup(t, name, 2)
	g.srv.Deny("compute.instanceGroupManagers.update")
	assertMissing(t, func(args ...string) result { return runCmd(t, g.cmd(args...)) }, name, []string{"--image", "img-new"},
		"compute.instanceGroupManagers.update", "docs/providers/gce.md#permissions")
	g.assertUnchanged(t, 2)

	t.Run("blue/green's own permissions only for blue/green", func(t *testing.T) {
		g.srv.Deny("compute.instanceGroupManagers.create")
		surge := runCmd(t, g.cmd("check", name, "--image", "img-new", "--strategy", "surge"))
		green := runCmd(t, g.cmd("check", name, "--image", "img-new", "--strategy", "blue-green"))
		if strings.Contains(surge.stdout, "compute.instanceGroupManagers.create") || !strings.Contains(green.stdout, "compute.instanceGroupManagers.create") {
			t.Errorf("compute.instanceGroupManagers.create must be named for blue-green only:\nsurge: %s\nblue-green: %s", surge, green)
		}
	})
}

// assertMissing runs check, plan and run (plain and with --force) towards
// target and wants each to name permission as a blocker; check and run
// exit 5, plan 0 (it shows what run would refuse).
func assertMissing(t *testing.T, run func(args ...string) result, name string, target []string, permission, policy string) {
	t.Helper()
	for _, args := range [][]string{
		append([]string{"check", name}, target...),
		append([]string{"plan", name}, target...),
		append([]string{"run", name, "--yes"}, target...),
		append([]string{"run", name, "--yes", "--force"}, target...),
	} {
		r := run(args...)
		out := r.stdout + r.stderr
		want := nodeupgrade.ExitBlockers
		if args[0] == "plan" {
			want = nodeupgrade.ExitOK
		}
		if r.code != want || !strings.Contains(out, "missing-permission") || !strings.Contains(out, permission) {
			t.Errorf("%s: want exit %d and missing-permission naming %s: %s", strings.Join(args, " "), want, permission, r)
		}
		if args[0] == "check" && !strings.Contains(out, policy) {
			t.Errorf("check does not name the policy %s: %s", policy, r)
		}
	}
}
