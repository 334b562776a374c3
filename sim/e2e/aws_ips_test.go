package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// createAWSNode makes the Amazon VPC CNI's DaemonSet, kube-system/aws-node,
// with its default settings (no WARM_* variables: WARM_ENI_TARGET=1) and a
// node selector no node matches, so that it runs no pod; only groups with
// subnets read it (the others' addresses are not proven).
func createAWSNode(t *testing.T, ctx context.Context) {
	t.Helper()
	labels := map[string]string{"k8s-app": "aws-node"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "aws-node"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"nodeupgrade.dev/no-node": "true"},
				Containers:   []corev1.Container{{Name: "aws-node", Image: "amazon-k8s-cni:v1.19.0"}}}}}}
	if _, err := client.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.AppsV1().DaemonSets("kube-system").Delete(context.Background(), "aws-node", metav1.DeleteOptions{})
	})
}

// TestAWSSubnetShortOfIPs: a surge whose nodes and pods need more addresses
// than a subnet of the group has free is refused by plan
// --detailed-exitcode and by run, naming the subnet, what is needed and
// free and the surge that fits, with nothing changed; the run with that
// surge finishes.
func TestAWSSubnetShortOfIPs(t *testing.T) {
	t.Parallel()
	const name = "aws-ips"
	createAWSNode(t, testContext(t, time.Minute))
	g := setupAWSGroupSpec(t, awsfake.NodeGroupSpec{Name: name, Size: 2, Min: 1, Max: 4, ImageID: "ami-old",
		Subnets: []string{awsfake.Subnet("us-east-1a"), awsfake.Subnet("us-east-1b")}},
		awsfake.Options{}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	// An m5.large has 3 ENIs of 10 addresses; with 1 to 9 pods and the VPC
	// CNI's default, ipamd holds 2 ENIs: 20 addresses a node. 2 surge
	// nodes need 40; 30 free hold 1.
	g.srv.SetSubnetFree(awsfake.Subnet("us-east-1a"), 30)
	over := []string{"--strategy", "surge", "--max-surge", "2", "--max-unavailable", "0", "--ami", "ami-new"}
	pl := g.run(t, append([]string{"plan", name, "--detailed-exitcode"}, over...)...)
	for _, want := range []string{"insufficient-ips", "subnet subnet-us-east-1a (us-east-1a)", "need 40 IPs", "which has 30 free", "--max-surge 1 fits"} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	if r := g.run(t, append([]string{"run", name, "--yes"}, over...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-ips") {
		t.Fatalf("run must refuse the surge the subnet cannot hold with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	g.assertAsBefore(t)
	fits := []string{"--strategy", "surge", "--max-surge", "1", "--max-unavailable", "0", "--ami", "ami-new", "--post-drain-wait", "0s"}
	if r := g.run(t, append([]string{"run", name, "--yes"}, fits...)...); r.code != nodeupgrade.ExitOK {
		t.Fatalf("run with the surge that fits: %s", r)
	}
	g.assertFinished(t)
}

// TestAWSTypeNotOfferedInAZone: a zone of the group where EC2 does not
// offer its instance type is a blocker of plan --detailed-exitcode and of
// run, naming the type and the zone, with nothing changed.
func TestAWSTypeNotOfferedInAZone(t *testing.T) {
	t.Parallel()
	const name = "aws-offer"
	g := setupAWSGroup(t, name, 2, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
	g.srv.WithholdOffering("us-east-1c", "m5.large")
	args := []string{"--strategy", "surge", "--max-surge", "1", "--ami", "ami-new"}
	pl := g.run(t, append([]string{"plan", name, "--detailed-exitcode"}, args...)...)
	for _, want := range []string{"insufficient-quota", "m5.large in zone us-east-1c, where EC2 does not offer it", `Auto Scaling group "aws-offer"`} {
		if pl.code != nodeupgrade.ExitBlockers || !strings.Contains(pl.stdout+pl.stderr, want) {
			t.Fatalf("plan must exit %d naming %q: %s", nodeupgrade.ExitBlockers, want, pl)
		}
	}
	if r := g.run(t, append([]string{"run", name, "--yes"}, args...)...); r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stderr, "insufficient-quota") {
		t.Fatalf("run must refuse a zone that does not offer the type with exit %d: %s", nodeupgrade.ExitBlockers, r)
	}
	g.assertAsBefore(t)
}
