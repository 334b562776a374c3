package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

// The permission check under deploy/iam-policy.json, narrowed further to
// one group by name, as the simulated cloud evaluates it (resources, tags,
// conditions; awsfake/iampolicy.go): a policy less one action is refused
// by name before anything changes, a condition on a key the plugin cannot
// give is a warning, and an IAM Identity Center role under its path
// passes the check and runs to the end, every call held to the policy.

// ssoRole is a role IAM Identity Center makes for permission set
// NodeUpgrade, under its reserved path.
const ssoRole = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_NodeUpgrade_0123456789abcdef"

func TestAWSLeastPrivilegePolicy(t *testing.T) {
	t.Parallel()
	const name = "lp-aws"
	g, policy := leastPrivilegeGroup(t, name)
	target := []string{"--ami", "ami-new"}

	t.Run("a policy less one action is refused naming it", func(t *testing.T) {
		less := strings.Replace(policy, `"autoscaling:TerminateInstanceInAutoScalingGroup",`, "", 1)
		if less == policy {
			t.Fatal("the policy grants no autoscaling:TerminateInstanceInAutoScalingGroup to take away")
		}
		setPolicy(t, g, less)
		assertMissing(t, func(args ...string) result { return g.run(t, args...) }, name, target,
			"autoscaling:TerminateInstanceInAutoScalingGroup", "docs/providers/aws.md#permissions")
		if lt, _ := g.srv.LaunchTemplate(g.template); len(lt.Versions) != 1 {
			t.Errorf("a launch template version was created")
		}
		if gr, _ := g.srv.Group(name); gr.Desired != 2 || gr.LaunchTemplateVersion != "$Default" {
			t.Errorf("the group changed: desired %d version %q", gr.Desired, gr.LaunchTemplateVersion)
		}
	})

	t.Run("a condition on the launch template's tags cannot be told", func(t *testing.T) {
		conditioned := strings.Replace(policy, `"Resource": "arn:aws:ec2:*:*:launch-template/*"`,
			`"Resource": "arn:aws:ec2:*:*:launch-template/*", "Condition": {"StringEquals": {"ec2:ResourceTag/team": "nodes"}}`, 1)
		setPolicy(t, g, conditioned)
		r := g.run(t, append([]string{"check", name}, target...)...)
		if r.code != nodeupgrade.ExitOK || strings.Contains(r.stdout, "missing-permission") ||
			!strings.Contains(r.stdout, "permissions-unchecked") || !strings.Contains(r.stdout, "ec2:ResourceTag/team") {
			t.Errorf("want exit %d and the warning permissions-unchecked naming ec2:ResourceTag/team, no blocker: %s", nodeupgrade.ExitOK, r)
		}
	})

	t.Run("an IAM Identity Center role runs to the end", func(t *testing.T) {
		g.srv.AddRole(ssoRole)
		g.srv.SetCaller("arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_NodeUpgrade_0123456789abcdef/alice@example.com")
		setPolicy(t, g, policy)
		for _, strategy := range []string{"surge", "blue-green"} {
			r := g.run(t, append([]string{"check", name, "--strategy", strategy}, target...)...)
			if r.code != nodeupgrade.ExitOK || strings.Contains(r.stdout, "missing-permission") || strings.Contains(r.stdout, "permissions-unchecked") {
				t.Errorf("check --strategy %s: want exit %d, no missing-permission and no permissions-unchecked: %s", strategy, nodeupgrade.ExitOK, r)
			}
		}
		r := g.run(t, append([]string{"run", name, "--yes", "--post-drain-wait", "0s"}, target...)...)
		if r.code != nodeupgrade.ExitOK {
			t.Fatalf("run: want exit %d: %s", nodeupgrade.ExitOK, r)
		}
		g.assertFinished(t)
	})
}

// leastPrivilegeGroup is a group of 2 tagged as the shipped policy asks,
// and that policy narrowed to the group by name, not any group's.
func leastPrivilegeGroup(t *testing.T, name string) (*awsGroup, string) {
	t.Helper()
	g := setupAWSGroup(t, name, 2)
	tagGroup(t, g, name, "nodeupgrade.dev/allowed", "true")
	shipped, err := os.ReadFile(filepath.Join("..", "..", "deploy", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	return g, strings.ReplaceAll(string(shipped), "autoScalingGroupName/*", "autoScalingGroupName/"+name+"*")
}

// setPolicy makes doc the caller's policy on the simulated cloud.
func setPolicy(t *testing.T, g *awsGroup, doc string) {
	t.Helper()
	if err := g.srv.SetPolicy(doc); err != nil {
		t.Fatal(err)
	}
}

// tagGroup tags the group through Auto Scaling's CreateOrUpdateTags.
func tagGroup(t *testing.T, g *awsGroup, name, key, value string) {
	t.Helper()
	client := autoscaling.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(g.srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	_, err := client.CreateOrUpdateTags(testContext(t, time.Minute), &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{{
		ResourceId: aws.String(name), ResourceType: aws.String("auto-scaling-group"), Key: aws.String(key), Value: aws.String(value), PropagateAtLaunch: aws.Bool(true)}}})
	if err != nil {
		t.Fatal(err)
	}
}

// Under the shipped policy, as the IAM Identity Center role, the controls
// finish what a run left: a run paused by cancel is rolled back; a second,
// paused, is aborted, and nothing is left tainted or cordoned; a third,
// paused, is resumed to the end. Every call is held to the policy.
func TestAWSLeastPrivilegeControls(t *testing.T) {
	t.Parallel()
	const name = "lp-ctl"
	g, policy := leastPrivilegeGroup(t, name)
	g.srv.AddRole(ssoRole)
	g.srv.SetCaller("arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_NodeUpgrade_0123456789abcdef/alice@example.com")
	setPolicy(t, g, policy)
	paused := func() {
		t.Helper()
		// The wait after the first batch's drain holds the run where a
		// cancel finds a safe point ahead.
		run := startBackground(t, g.cmd(sim.Kubeconfig, "run", name, "--ami", "ami-new", "--max-unavailable", "1", "--post-drain-wait", "15s", "--yes"))
		if !run.waitFor("batch 1/", "draining") {
			t.Fatalf("the run never reached its first batch:\n%s", run.output())
		}
		if r := g.run(t, "cancel", name); r.code != nodeupgrade.ExitOK {
			t.Fatalf("cancel: %s", r)
		}
		if code, out := run.wait(t, 2*time.Minute); code != nodeupgrade.ExitPaused {
			t.Fatalf("the cancelled run: exit %d, want %d:\n%s", code, nodeupgrade.ExitPaused, out)
		}
	}
	status := func(want string) {
		t.Helper()
		if st := g.run(t, "status", name, "-o", "jsonpath={.status}"); st.stdout != want {
			t.Errorf("status: %s, want %q", st, want)
		}
	}
	paused()
	if r := g.run(t, "rollback", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("rollback: %s", r)
	}
	status("rolled back")

	paused()
	if r := g.run(t, "abort", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("abort: %s", r)
	}
	status("aborted")
	assertUntouched(t, testContext(t, time.Minute), groupKey, name)

	paused()
	if r := g.run(t, "resume", name, "--yes"); r.code != nodeupgrade.ExitOK {
		t.Fatalf("resume: %s", r)
	}
	status("finished")
	g.assertFinished(t)
}
