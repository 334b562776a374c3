package aws

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// policy is deploy/iam-policy.json, the permissions docs/providers/aws.md documents.
type policy struct {
	Statement []struct {
		Sid       string
		Action    any // a string or a list
		Resource  any
		Condition map[string]map[string]any
	}
}

// actions are the actions of the statements whose Sid starts with sid.
func (p policy) actions(sid string) []string {
	var out []string
	for _, s := range p.Statement {
		if strings.HasPrefix(s.Sid, sid) {
			out = append(out, stringsOf(s.Action)...)
		}
	}
	return out
}

// stringsOf is a policy element that is a string or a list of them.
func stringsOf(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// readPolicy is deploy/iam-policy.json.
func readPolicy(t *testing.T) policy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pol policy
	if err := json.Unmarshal(data, &pol); err != nil {
		t.Fatalf("deploy/iam-policy.json: %v", err)
	}
	return pol
}

// calledActions returns the IAM actions (service:Action) of the calls the
// fake has seen since call number from; the query-protocol Version tells
// the service. Actions IAM also checks for what a call carries are added:
// tags on a new Auto Scaling group need autoscaling:CreateOrUpdateTags,
// and a group given a launch template needs ec2:RunInstances.
func (f *fakeAWS) calledActions(from int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, c := range f.calls[from:] {
		prefix := "ec2:"
		switch c.Get("Version") {
		case "2011-01-01":
			prefix = "autoscaling:"
		case "2015-12-01", "2012-06-01": // target groups, classic load balancers
			prefix = "elasticloadbalancing:"
		}
		add(prefix + c.Get("Action"))
		if c.Get("Action") == "CreateAutoScalingGroup" && c.Has("Tags.member.1.Key") {
			add("autoscaling:CreateOrUpdateTags")
		}
		if prefix == "autoscaling:" && c.Has("LaunchTemplate.LaunchTemplateId") {
			add("ec2:RunInstances")
		}
	}
	return out
}

// TestIAMPolicyCoversEveryCall drives every provider call and checks the
// documented policy allows it, and that planning needs only the read
// statement.
func TestIAMPolicyCoversEveryCall(t *testing.T) {
	pol := readPolicy(t)
	ctx := context.Background()
	replies := baseReplies()
	replies["DescribeAutoScalingInstances"] = asgInstances("i-1", "ng1", "i-2", "ng1")
	// Blue/green's calls: groups the run creates, over ng1.
	(&fakeGroups{groups: map[string]AutoScalingGroup{}}).install(replies)
	replies["SuspendProcesses"] = fixed(200, processesXML("SuspendProcesses"))
	replies["ResumeProcesses"] = fixed(200, processesXML("ResumeProcesses"))
	(&lbFake{tg: "registered", clb: "registered", drainPolls: 1}).install(replies)
	replies["DescribeLifecycleHooks"] = fixed(200, hooksXML)
	replies["DescribeWarmPool"] = fixed(200, warmPoolXML)
	replies["ModifyLaunchTemplate"] = fixed(200, modifiedXML)
	p, f := newTestProvider(t, replies, Options{})
	p.pollEvery = time.Millisecond
	// What plan does: find the group, resolve the target, check there is
	// room for a green group.
	g, err := p.FindGroup(ctx, []string{"i-1", "i-2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ResolveTarget(ctx, g, "ami-next", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckGroupQuota(ctx); err != nil {
		t.Fatal(err)
	}
	// The load balancers the plan lists.
	if _, err := p.LoadBalancers(ctx, &AutoScalingGroup{TargetGroups: []string{webTG}, LoadBalancers: []string{"web-clb"}}); err != nil {
		t.Fatal(err)
	}
	// The group's hooks on termination, warm pool and protection.
	if err := p.openLifecycle(ctx, g, &plan.CloudGroup{}); err != nil {
		t.Fatal(err)
	}
	planCalls := f.calledActions(0)
	mark := len(f.actions())
	// What run does besides.
	if _, err := p.SetTarget(ctx, g, "ami-next", ""); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return p.SetSize(ctx, "ng1", 5, 6) },
		func() error { return p.SetMax(ctx, "ng1", 4) },
		func() error { _, _, _, err := p.Sizes(ctx, "ng1"); return err },
		func() error { return p.Terminate(ctx, "i-1") },
		func() error { return p.TerminateShrink(ctx, "i-2") },
		// Waiting for a terminated instance to be gone.
		func() error {
			_, err := (&NodeGroup{API: p, ASG: "ng1"}).Leaving(ctx, []string{"i-1"})
			return err
		},
		// AZRebalance held off the scale-down's terminations.
		func() error { _, err := p.ProcessSuspended(ctx, "ng1", AZRebalance); return err },
		func() error { return p.SuspendProcess(ctx, "ng1", AZRebalance) },
		func() error { return p.ResumeProcess(ctx, "ng1", AZRebalance) },
		// Load balancers let go of a node before its termination.
		func() error {
			return p.Deregister(ctx, []string{webTG}, []string{"web-clb"}, []string{"i-1"}, time.Minute, nil)
		},
		// A group that launches $Default keeps it: the target made the default.
		func() error { return p.SetDefaultVersion(ctx, g.LaunchTemplateID, "3") },
		// Blue/green: pin blue, clone it, delete a group.
		func() error { return p.SetSizes(ctx, "ng1", 3, 3, 3) },
		func() error { _, err := p.CloneGroup(ctx, g, GreenName("ng1", "3"), "3"); return err },
		func() error { return p.DeleteGroup(ctx, GreenName("ng1", "3")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	runCalls := f.calledActions(mark)
	t.Run("plan needs only the read statements", func(t *testing.T) {
		read := pol.actions("NodeUpgradePlan")
		for _, a := range planCalls {
			if !slices.Contains(read, a) {
				t.Errorf("plan calls %s, not in a statement NodeUpgradePlan*", a)
			}
		}
	})
	t.Run("run is allowed every call", func(t *testing.T) {
		all := pol.actions("")
		for _, a := range append(planCalls, runCalls...) {
			if !slices.Contains(all, a) {
				t.Errorf("run calls %s, not in deploy/iam-policy.json", a)
			}
		}
	})
}

// TestDocsShowThePolicy keeps the policy the provider's page shows the
// tested one.
func TestDocsShowThePolicy(t *testing.T) {
	policy, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	const page = "docs/providers/aws.md"
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(policy)) {
		t.Errorf("%s does not show deploy/iam-policy.json as it is; copy it in", page)
	}
}

// TestPolicyIsLeastPrivilege: only the Describe actions, which take no
// resource-level permission, are granted on "*" unconditioned;
// iam:SimulatePrincipalPolicy and iam:GetRole are granted on named roles,
// iam:PassRole only to EC2 and EKS.
func TestPolicyIsLeastPrivilege(t *testing.T) {
	for _, st := range readPolicy(t).Statement {
		resources := stringsOf(st.Resource)
		for _, a := range stringsOf(st.Action) {
			_, op, _ := strings.Cut(a, ":")
			if slices.Contains(resources, "*") && st.Condition == nil && !strings.HasPrefix(op, "Describe") {
				t.Errorf("statement %s grants %s on any resource", st.Sid, a)
			}
			if strings.HasPrefix(a, "iam:") && a != "iam:PassRole" && slices.ContainsFunc(resources, func(r string) bool { return strings.HasSuffix(r, ":role/*") || r == "*" }) {
				t.Errorf("statement %s grants %s on any role", st.Sid, a)
			}
			if a == "iam:PassRole" && st.Condition["StringEquals"]["iam:PassedToService"] == nil {
				t.Errorf("statement %s passes roles to any service", st.Sid)
			}
		}
	}
}
