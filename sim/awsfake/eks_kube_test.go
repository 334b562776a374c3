package awsfake

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsprov "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// patientEKS gives an eviction time to wait for the replacement pod a
// PDB waits on: on a loaded CI machine a kwok pod can take longer than
// fastEKS's 3 s to be scheduled and Ready, and the update then fails with
// PodEvictionFailure though nothing blocks it for good.
var patientEKS = func() EKSOptions { o := fastEKS; o.EvictionTimeout = 30 * time.Second; return o }()

// managedScene starts a Server on the shared cluster with cluster c1 at
// 1.31 and a managed node group of 3 nodes over zones at 1.30, and an app
// of 3 replicas pinned to it with the given PDB.
func managedScene(t *testing.T, ctx context.Context, name string, pdb *intstr.IntOrString, opts EKSOptions) (*Server, Nodegroup) {
	t.Helper()
	c := sharedCluster(t)
	s, err := StartWithKube(ctx, c.Client, Options{LaunchDelay: 100 * time.Millisecond, EKS: opts, Logf: t.Logf}, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.CreateEKSCluster("c1", "1.31")
	s.AddRelease(Release{"1.30", "1.30.9-20250101", "ami-130"})
	s.AddRelease(Release{"1.31", "1.31.2-20250201", "ami-131"})
	ng, err := s.ManagedNodeGroup(ctx, ManagedNodeGroupSpec{Cluster: "c1", Name: name, Zones: zones, Min: 1, Desired: 3, Max: 4, Version: "1.30",
		Labels: map[string]string{"pool": name}, Taints: []Taint{{Key: "dedicated", Value: name, Effect: "NO_SCHEDULE"}}})
	if err != nil || ng.Status != NodegroupActive {
		t.Fatalf("node group %+v, %v", ng, err)
	}
	app := scenario.App{Namespace: name, Name: "web", Replicas: 3, MaxUnavailable: pdb, NodeSelector: map[string]string{"pool": name},
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: name, Effect: corev1.TaintEffectNoSchedule}}}
	if err := scenario.CreateApp(ctx, c.Client, app); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, c.Client, name); err != nil {
		t.Fatal(err)
	}
	return s, ng
}

// pluginEKS is the plugin's EKS client on the Server, polling fast.
func pluginEKS(s *Server) *awsprov.EKS {
	e := awsprov.NewEKSFromConfig(sdkConfig(s))
	e.SetPoll(50*time.Millisecond, 200*time.Millisecond)
	return e
}

// TestEKSUpdateDrainsHonouringPDBs runs an update on real nodes: every
// node replaced, no PDB violated, the new nodes labelled and tainted as
// EKS does.
func TestEKSUpdateDrainsHonouringPDBs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	one := intstr.FromInt32(1)
	s, _ := managedScene(t, ctx, "mng-ok", &one, patientEKS)
	c := sharedCluster(t)
	w, err := scenario.WatchPDBs(ctx, c.Client, "mng-ok")
	if err != nil {
		t.Fatal(err)
	}
	e := pluginEKS(s)
	u, started, err := e.StartVersionUpdate(ctx, "c1", "mng-ok", awsprov.ManagedTarget{})
	if err != nil || !started {
		t.Fatalf("update %+v started %v: %v", u, started, err)
	}
	end, err := e.WaitUpdate(ctx, "c1", "mng-ok", u.ID, nil)
	if err != nil || end.Status != UpdateSuccessful {
		t.Fatalf("update ended %+v, %v", end, err)
	}
	if v := w.Stop(); len(v) > 0 {
		t.Errorf("PDB violations: %v", v)
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeGroupLabel + "=mng-ok"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		l := n.Labels
		if l[ImageLabel] != "ami-131" || l[CapacityTypeLabel] != "ON_DEMAND" || n.Spec.Unschedulable ||
			!slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "dedicated" }) {
			t.Errorf("node %s: labels %v taints %v", n.Name, l, n.Spec.Taints)
		}
	}
	if len(nodes.Items) != 3 {
		t.Errorf("%d nodes after the update, want 3", len(nodes.Items))
	}
}

// TestEKSPodEvictionFailure: a PDB allowing no disruption fails the
// update after the eviction limit with PodEvictionFailure naming the node
// only; the node is tainted unschedulable and excluded from load
// balancers, and a forced update then replaces it.
func TestEKSPodEvictionFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zero := intstr.FromInt32(0)
	s, _ := managedScene(t, ctx, "mng-pdb", &zero, fastEKS)
	c := sharedCluster(t)
	e := pluginEKS(s)
	u, _, err := e.StartVersionUpdate(ctx, "c1", "mng-pdb", awsprov.ManagedTarget{})
	if err != nil {
		t.Fatal(err)
	}
	// A second start follows the running update.
	again, started, err := e.StartVersionUpdate(ctx, "c1", "mng-pdb", awsprov.ManagedTarget{})
	if err != nil || started || again.ID != u.ID {
		t.Fatalf("second start: %+v started %v, %v", again, started, err)
	}
	end, err := e.WaitUpdate(ctx, "c1", "mng-pdb", u.ID, nil)
	if err != nil || end.Status != UpdateFailed || len(end.Errors) != 1 {
		t.Fatalf("update ended %+v, %v", end, err)
	}
	fe := end.Errors[0]
	if fe.Code != PodEvictionFailure || len(fe.ResourceIDs) != 1 || !strings.HasPrefix(fe.ResourceIDs[0], "ip-") ||
		fe.Message != "Reached max retries while trying to evict pods from nodes in node group mng-pdb" {
		t.Fatalf("error %+v", fe)
	}
	n, err := c.Client.CoreV1().Nodes().Get(ctx, fe.ResourceIDs[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels[ExcludeLBLabel] != "true" || !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == NodeGroupLabel && t.Value == UnschedulableTaintValue && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("stuck node %s: labels %v taints %v", n.Name, n.Labels, n.Spec.Taints)
	}
	forced, _, err := e.StartVersionUpdate(ctx, "c1", "mng-pdb", awsprov.ManagedTarget{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if end, err := e.WaitUpdate(ctx, "c1", "mng-pdb", forced.ID, nil); err != nil || end.Status != UpdateSuccessful {
		t.Fatalf("forced update ended %+v, %v", end, err)
	}
}

// TestEKSBlueGreenCalls is the plugin's blue/green use of EKS against the
// fake: find blue from its Auto Scaling group's tags, create green from
// it (twice: the second finds the first), wait ACTIVE, delete blue, which
// drains and goes.
func TestEKSBlueGreenCalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	one := intstr.FromInt32(1)
	s, blueNG := managedScene(t, ctx, "mng-bg", &one, patientEKS)
	p := awsprov.NewFromConfig(sdkConfig(s), awsprov.Options{})
	g, _ := s.Group(blueNG.Resources.AutoScalingGroups[0].Name)
	_, cluster, name, ok, err := p.FindManagedGroup(ctx, []string{g.Instances[0].ID})
	if err != nil || !ok || cluster != "c1" || name != "mng-bg" {
		t.Fatalf("found %q %q %v, %v", cluster, name, ok, err)
	}
	e := p.EKS()
	e.SetPoll(50*time.Millisecond, 200*time.Millisecond)
	blue, err := e.DescribeNodegroup(ctx, cluster, name)
	if err != nil {
		t.Fatal(err)
	}
	spec := awsprov.GreenSpec{Name: "mng-bg-green", Version: "1.31", Min: 1, Desired: 3, Max: 4}
	for range 2 {
		if _, err := e.CreateGreen(ctx, blue, spec); err != nil {
			t.Fatal(err)
		}
	}
	green, err := e.WaitActive(ctx, cluster, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if green.ReleaseVersion != "1.31.2-20250201" || !slices.Equal(green.Subnets, blue.Subnets) || len(green.Taints) != 1 || green.NodeRole != blue.NodeRole {
		t.Errorf("green %+v", green)
	}
	if names, err := e.ListNodegroups(ctx, cluster); err != nil || len(names) != 2 {
		t.Errorf("node groups %v, %v", names, err)
	}
	if err := e.DeleteNodegroup(ctx, cluster, name); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitDeleted(ctx, cluster, name); err != nil {
		t.Fatal(err)
	}
	if err := scenario.WaitAppsReady(ctx, sharedCluster(t).Client, "mng-bg"); err != nil {
		t.Fatal(err)
	}
}

// TestManagedDemo sets up the demo's managed node group: ACTIVE, its
// nodes Ready with EKS's labels, its Auto Scaling group tagged.
func TestManagedDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := sharedCluster(t)
	s, err := StartWithKube(ctx, c.Client, Options{LaunchDelay: 100 * time.Millisecond, EKS: fastEKS, Logf: t.Logf}, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.StartManagedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	ng, _ := s.Nodegroup(DemoCluster, DemoManagedGroup)
	if ng.Version != "1.30" || ng.ReleaseVersion != "1.30.9-20250101" || s.GroupTags(ng.Resources.AutoScalingGroups[0].Name)["eks:nodegroup-name"] != DemoManagedGroup {
		t.Errorf("node group %+v", ng)
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeGroupLabel + "=" + DemoManagedGroup})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if !nodeReady(&n) || n.Labels[ImageLabel] != "ami-eks-130" {
			t.Errorf("node %s ready %v labels %v", n.Name, nodeReady(&n), n.Labels)
		}
	}
	if len(nodes.Items) != 3 {
		t.Errorf("%d nodes, want 3", len(nodes.Items))
	}
}
