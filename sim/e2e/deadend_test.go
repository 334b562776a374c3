package e2e

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAWSDeadEndsAreRefusedBeforeAnythingChanges walks the dead ends a new
// user reached (each used to taint the whole group and wait for room that
// could not come): plan names the blocker, run exits 2, and afterwards no
// node is marked and neither the group nor its launch template changed.
func TestAWSDeadEndsAreRefusedBeforeAnythingChanges(t *testing.T) {
	const name = "aws-deadend"
	g := setupAWSGroup(t, name, 3)
	ctx := testContext(t, 5*time.Minute)
	managed := name + "-managed"
	if _, err := g.srv.NodeGroup(ctx, client, awsfake.NodeGroupSpec{
		Name: managed, Zones: awsZones, Size: 2, Min: 1, Max: 3, ImageID: "ami-old",
		Tags: map[string]string{"eks:nodegroup-name": managed},
	}); err != nil {
		t.Fatal(err)
	}
	noCredentials := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+g.srv.URL, "AWS_REGION=us-east-1")
	const newImage = "eks.amazonaws.com/nodegroup-image=ami-new"
	for _, tc := range []struct {
		name  string
		group string
		args  []string
		env   []string
		setup func(t *testing.T)
		// want is in run's error; plan, when planWant is set, shows it.
		want, planWant string
	}{
		// The group launches version 1 (ami-old): nothing gives ami-new.
		{name: "target label the launch template cannot give", group: name, args: []string{"--target-label", newImage},
			want: "unreachable-target (NodeGroup/aws-deadend): --target-label " + newImage + " cannot be reached", planWant: check.CheckUnreachableTarget},
		{name: "provider none on an Auto Scaling group's nodes", group: name, args: []string{"--provider", "none", "--target-label", newImage},
			want: `machines of Auto Scaling group "aws-deadend": --provider none would delete their Node objects`},
		{name: "provider detected from the nodes, no credentials", group: name, args: []string{"--target-label", newImage}, env: noCredentials,
			want: "--provider none with --target-label"},
		{name: "EKS managed node group", group: managed, args: []string{"--ami", "ami-new"},
			want: `aws eks update-nodegroup-version --cluster-name CLUSTER --nodegroup-name ` + managed},
		{name: "pods pinned to an outdated node", group: name, args: []string{"--ami", "ami-new"},
			setup: func(t *testing.T) {
				node := groupNodes(t, ctx, groupKey, name)[0].Name
				app := scenario.App{Namespace: name, Name: "pinned", Replicas: 2, MinAvailable: ptrIntStr(1), NodeSelector: map[string]string{scenario.HostnameLabel: node}}
				if err := scenario.CreateApp(ctx, client, app); err != nil {
					t.Fatal(err)
				}
				if err := scenario.WaitAppsReady(ctx, client, name); err != nil {
					t.Fatal(err)
				}
			},
			want: "pod-cannot-move (Deployment/aws-deadend/pinned)", planWant: check.CheckPodCannotMove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			args := append([]string{"run", tc.group, "--yes", "--post-drain-wait", "0s"}, tc.args...)
			cmd := g.cmd(sim.Kubeconfig, args...)
			if tc.env != nil {
				cmd.Env = tc.env
			}
			r := runCmd(t, cmd)
			if r.code != nodeupgrade.ExitUsage || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and a one-line error with %q, got %s", nodeupgrade.ExitUsage, tc.want, r)
			}
			if tc.planWant != "" {
				p := g.run(t, append([]string{"plan", tc.group}, tc.args...)...)
				if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, tc.planWant) || !strings.Contains(p.stdout, "Blocker") {
					t.Errorf("plan must show the %s blocker: %s", tc.planWant, p)
				}
			}
			for _, group := range []string{name, managed} {
				assertUntouched(t, ctx, groupKey, group)
				for _, n := range groupNodes(t, ctx, groupKey, group) {
					if _, ok := n.Annotations[upgrade.ScaleDownDisabledAnnotation]; ok {
						t.Errorf("node %q is annotated %s", n.Name, upgrade.ScaleDownDisabledAnnotation)
					}
				}
				gr, _ := g.srv.Group(group)
				if lt, _ := g.srv.LaunchTemplate(gr.LaunchTemplateID); len(lt.Versions) != 1 || gr.LaunchTemplateVersion != "$Default" {
					t.Errorf("group %q: launch template %d versions, launching %q", group, len(lt.Versions), gr.LaunchTemplateVersion)
				}
			}
			if gr, _ := g.srv.Group(name); gr.Desired != 3 || gr.Max != 4 || len(groupNodes(t, ctx, groupKey, name)) != 3 {
				t.Errorf("group changed: desired %d, max %d, %d nodes", gr.Desired, gr.Max, len(groupNodes(t, ctx, groupKey, name)))
			}
		})
	}
}

func ptrIntStr(i int) *intstr.IntOrString {
	v := intstr.FromInt(i)
	return &v
}
