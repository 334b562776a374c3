package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAWSDeadEndsAreRefusedBeforeAnythingChanges walks the dead ends a new
// user reached (each used to taint the whole group and wait for room that
// could not come): plan names the blocker, run exits 5 (2 for bad input), and afterwards no
// node is marked and neither the group nor its launch template changed.
func TestAWSDeadEndsAreRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	const name = "aws-deadend"
	g := setupAWSGroup(t, name, 3)
	ctx := testContext(t, 5*time.Minute)
	managed := g.addManagedGroup(t, ctx, name+"-managed")
	noCredentials := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+g.srv.URL, "AWS_REGION=us-east-1")
	const newImage = "eks.amazonaws.com/nodegroup-image=ami-new"
	for _, tc := range []struct {
		name  string
		group string
		args  []string
		env   []string
		setup func(t *testing.T)
		// want is in run's error; plan, when planWant is set, shows it,
		// and run exits 5 (a blocker) instead of 2 (bad input).
		want, planWant string
	}{
		// The group launches version 1 (ami-old): nothing gives ami-new.
		{name: "target label the launch template cannot give", group: name, args: []string{"--target-label", newImage},
			want: "unreachable-target (NodeGroup/aws-deadend): --target-label " + newImage + " cannot be reached", planWant: check.CheckUnreachableTarget},
		{name: "provider none on an Auto Scaling group's nodes", group: name, args: []string{"--provider", "none", "--target-label", newImage},
			want: `--provider none would delete the Node objects of 3 nodes and leave their aws machines running: they are instances of Auto Scaling group "aws-deadend"`, planWant: check.CheckMachineLeftRunning},
		{name: "provider detected from the nodes, no credentials", group: name, args: []string{"--target-label", newImage}, env: noCredentials,
			want: "no AWS credentials found"},
		{name: "EKS managed node group", group: managed, args: []string{"--ami", "ami-new"},
			want: `belongs to EKS managed node group "` + managed + `" but carries no eks:cluster-name tag`},
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
			code := nodeupgrade.ExitUsage
			if tc.planWant != "" {
				code = nodeupgrade.ExitBlockers
			}
			if r.code != code || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and a one-line error with %q, got %s", code, tc.want, r)
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

// addManagedGroup makes, on g's endpoint, the Auto Scaling group of an EKS
// managed node group (tagged eks:nodegroup-name) of 2 nodes, and returns
// its name.
func (g *awsGroup) addManagedGroup(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	if _, err := g.srv.NodeGroup(ctx, client, awsfake.NodeGroupSpec{
		Name: name, Zones: awsZones, Size: 2, Min: 1, Max: 3, ImageID: "ami-old",
		Tags: map[string]string{"eks:nodegroup-name": name},
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

func ptrIntStr(i int) *intstr.IntOrString {
	v := intstr.FromInt(i)
	return &v
}

// TestLabelPathDeadEndsAreRefusedBeforeAnythingChanges: with provider none
// nothing adds a node, so the plan proves the batches fit, in order, on
// the nodes that stay (no-room), and that no pod is held by a local volume
// of an outdated node (pod-cannot-move); plan names the blocker, run exits
// 2 and no node is marked.
func TestLabelPathDeadEndsAreRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	const name = "label-deadend"
	zones := []string{"sim-a", "sim-b"}
	ctx := testContext(t, 4*time.Minute)
	oldNodes, _, err := scenario.CreateNodeGroup(ctx, client, scenario.NodeGroup{
		LabelKey: groupKey, Name: name, Zones: zones, Outdated: 2, OldLabels: map[string]string{imageKey: "ami-old"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two 1.5-CPU pods on each 4-CPU outdated node; the one current node
	// added afterwards takes the first batch's two, not the second's.
	createPinnedApps(t, ctx, name, []scenario.App{{Name: "web", Replicas: 4, CPU: "1500m", MinAvailable: ptrIntStr(2)}})
	addCurrentNodes(t, name, zones, 1)
	// Another batch fits once no-room is ignored; db, on a local volume of
	// an outdated node, then cannot move.
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-local"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "local",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/data"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: scenario.HostnameLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{oldNodes[0]}}}}}}},
			ClaimRef: &corev1.ObjectReference{Namespace: name, Name: "data"},
		},
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("local"), VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims(name).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := []string{name, "--provider", "none", "--target-label", target, "--max-unavailable", "1"}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		args  []string
		want  string // the blocker plan shows and run's one-line error names
	}{
		{name: "the second batch's pods fit on no node that stays", want: check.CheckNoRoom + " (NodeGroup/" + name + "): batch 2 of 2"},
		{name: "a pod on a local volume of an outdated node",
			setup: func(t *testing.T) {
				createPinnedApps(t, ctx, name, []scenario.App{{Name: "db", Replicas: 2, CPU: "0", MinAvailable: ptrIntStr(1), Claim: pvc.Name}})
			},
			args: []string{"--ignore-check", check.CheckNoRoom}, want: check.CheckPodCannotMove + " (Deployment/" + name + "/db)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			args := append(slices.Clone(base), tc.args...)
			p := plugin(t, append([]string{"plan"}, args...)...)
			blocker, _, _ := strings.Cut(tc.want, " ")
			if p.code != nodeupgrade.ExitOK || !strings.Contains(p.stdout, blocker) {
				t.Errorf("plan must show the %s blocker: %s", blocker, p)
			}
			r := plugin(t, append([]string{"run", "--yes", "--post-drain-wait", "0s"}, args...)...)
			if r.code != nodeupgrade.ExitBlockers || !oneLine(r.stderr) || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit %d and a one-line error with %q, got %s", nodeupgrade.ExitBlockers, tc.want, r)
			}
			assertUntouched(t, ctx, groupKey, name)
			if n := len(groupNodes(t, ctx, groupKey, name)); n != 3 {
				t.Errorf("group has %d nodes, want the 3 it had", n)
			}
		})
	}
}
