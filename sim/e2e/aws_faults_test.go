package e2e

import (
	"slices"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The local AWS endpoint fails 5% of the cloud requests (issue 38):
// refusedRate of them are refused before anything is done, as the
// services refuse under load (throttling, 5xx); lostRate are carried out
// and their answer lost (a 5xx instead), which only the idempotency
// tokens the SDK sends keep from being done twice.
const (
	refusedRate = 0.03
	lostRate    = 0.02
)

// runThroughCloudFaults lets the endpoint fail refusedRate and lostRate
// of its requests from now on, and lose the first answer to each call in
// lose, runs the plugin with args, and fails unless the run finished with
// no PDB of group violated and those faults were met.
func runThroughCloudFaults(t *testing.T, g *awsGroup, seed uint64, lose []string, args ...string) result {
	t.Helper()
	watcher, err := scenario.WatchPDBs(testContext(t, 10*time.Minute), client, g.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range lose {
		g.srv.LoseAnswer(call)
	}
	g.srv.SetFaults(refusedRate, lostRate, seed)
	start := time.Now()
	r := g.run(t, args...)
	t.Logf("%s through cloud faults: %s, %d faults made, the answers lost of %v", g.name, time.Since(start).Round(time.Millisecond), g.srv.Faults(), g.srv.LostCalls())
	violations := watcher.Stop()
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("run failed: %s", r)
	}
	assertNoViolations(t, violations)
	if g.srv.Faults() == 0 {
		t.Error("no cloud fault made: the run was not tested against them")
	}
	for _, call := range lose {
		if !slices.Contains(g.srv.LostCalls(), call) {
			t.Errorf("the answer to %s was never lost: the run made no such call", call)
		}
	}
	return r
}

// TestAWSCloudFaultsAutoScaling: an Auto Scaling group upgraded (eks
// strategy) while 5% of the Auto Scaling and EC2 requests are throttled
// or fail, before or after they are carried out, and the answer to each
// kind of change the run makes is lost once: the run finishes, every
// instance runs the new version at the group's old sizes, no other group,
// instance or template version is left, no PDB violated.
func TestAWSCloudFaultsAutoScaling(t *testing.T) {
	t.Parallel()
	const name = "cloudfaults-asg"
	g := setupAWSGroup(t, name, 6, faultApps()...)
	lose := []string{"CreateLaunchTemplateVersion", "ModifyLaunchTemplate", "UpdateAutoScalingGroup", "TerminateInstanceInAutoScalingGroup"}
	runThroughCloudFaults(t, g, 11, lose, "run", name, "--ami", "ami-new", "--max-unavailable", "2", "--seed", "3", "--post-drain-wait", "0s", "--yes")
	g.srv.SetFaults(0, 0, 0) // what follows inspects the end state
	g.assertFinished(t)
	if groups := g.srv.Groups(); !slices.Equal(groups, []string{name}) {
		t.Errorf("groups %v left, want only %q", groups, name)
	}
}

// TestAWSCloudFaultsManagedNodeGroup: an EKS managed node group updated
// to 1.31 while 5% of the EKS, SSM and Auto Scaling requests are throttled
// or fail, before or after they are carried out, and the answers to the
// first configuration and version updates are lost: the run finishes,
// every node runs the new release, the group keeps its sizes and update
// config, nothing else is left, no PDB violated.
func TestAWSCloudFaultsManagedNodeGroup(t *testing.T) {
	t.Parallel()
	const name = "cloudfaults-mng"
	m := setupManagedGroup(t, name, 4, time.Minute,
		scenario.App{Name: "web", Replicas: 8, MinAvailable: pct("75%")},
		scenario.App{Name: "api", Replicas: 4, MaxUnavailable: num(1)})
	path := "/clusters/" + m.cluster + "/node-groups/" + name
	lose := []string{"POST " + path + "/update-config", "POST " + path + "/update-version"}
	runThroughCloudFaults(t, &m.awsGroup, 12, lose, "run", name, "--kubernetes-version", "1.31", "--max-unavailable", "2", "--yes")
	m.srv.SetFaults(0, 0, 0)
	m.assertUpdated(t)
	m.assertNothingLeft(t)
}

// assertNothingLeft checks that the node group is the cluster's only one,
// at its sizes of before the run, with exactly its desired instances and
// nodes.
func (m *managedGroup) assertNothingLeft(t *testing.T) {
	t.Helper()
	if ngs := m.srv.Nodegroups(m.cluster); !slices.Equal(ngs, []string{m.name}) {
		t.Errorf("node groups %v, want only %q", ngs, m.name)
	}
	ng, _ := m.srv.Nodegroup(m.cluster, m.name)
	if got, want := *ng.ScalingConfig, *m.before.ScalingConfig; *got.MinSize != *want.MinSize || *got.DesiredSize != *want.DesiredSize || *got.MaxSize != *want.MaxSize {
		t.Errorf("sizes min/desired/max %d/%d/%d, want %d/%d/%d", *got.MinSize, *got.DesiredSize, *got.MaxSize, *want.MinSize, *want.DesiredSize, *want.MaxSize)
	}
	asg, _ := m.srv.NodegroupASG(m.cluster, m.name)
	ctx := testContext(t, 2*time.Minute)
	if err := m.srv.WaitStable(ctx, asg); err != nil {
		t.Fatal(err)
	}
	gr, _ := m.srv.Group(asg)
	if len(gr.Instances) != int(*m.before.ScalingConfig.DesiredSize) {
		t.Errorf("%d instances in %s, want %d", len(gr.Instances), asg, *m.before.ScalingConfig.DesiredSize)
	}
	if nodes := groupNodes(t, ctx, "eks.amazonaws.com/nodegroup", m.name); len(nodes) != len(gr.Instances) {
		t.Errorf("%d nodes, want one per instance (%d)", len(nodes), len(gr.Instances))
	}
	assertUntouched(t, ctx, "eks.amazonaws.com/nodegroup", m.name)
	if groups := m.srv.Groups(); !slices.Equal(groups, []string{asg}) {
		t.Errorf("Auto Scaling groups %v, want only %q", groups, asg)
	}
}
