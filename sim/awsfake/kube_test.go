package awsfake

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestKubeNodes launches instances as kwok nodes of a real simulated
// cluster and removes the node when its instance is terminated.
func TestKubeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	nodes := NodeOptions{GroupLabelValues: map[string]string{"asg-ng1": "ng1"}}
	onLaunch, onTerminate := KubeNodes(c.Client, nodes)
	s, err := Start(ctx, Options{LaunchDelay: 100 * time.Millisecond, OnLaunch: onLaunch, OnTerminate: onTerminate, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lt := s.CreateLaunchTemplate("ng1", "ami-old", "")
	if err := s.CreateGroup(GroupSpec{Name: "asg-ng1", Min: 1, Max: 3, Desired: 3, Zones: zones, LaunchTemplateID: lt}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitStable(ctx, "asg-ng1"); err != nil {
		t.Fatal(err)
	}
	g, _ := s.Group("asg-ng1")
	var names []string
	for _, in := range g.Instances {
		names = append(names, nodes.NodeName(in))
	}
	if err := scenario.WaitNodesReady(ctx, c.Client, names...); err != nil {
		t.Fatal(err)
	}
	for _, in := range g.Instances {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, nodes.NodeName(in), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := n.Labels
		if n.Spec.ProviderID != "aws:///"+in.Zone+"/"+in.ID || l[scenario.ZoneLabel] != in.Zone || l[scenario.RegionLabel] != "us-east-1" ||
			l[NodeGroupLabel] != "ng1" || l[ImageLabel] != "ami-old" || l[SourceLTIDLabel] != lt || l[SourceLTVersionLbl] != "1" {
			t.Fatalf("node %s: providerID %q labels %v", n.Name, n.Spec.ProviderID, l)
		}
	}

	victim := g.Instances[0]
	asg := autoscaling.NewFromConfig(sdkConfig(s))
	if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(victim.ID), ShouldDecrementDesiredCapacity: aws.Bool(false),
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, "asg-ng1", func(g Group) bool { return Stable(g) && g.Instances[0].ID != victim.ID }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, nodes.NodeName(victim), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node of terminated instance: %v", err)
	}
	g, _ = s.Group("asg-ng1")
	if err := scenario.WaitNodesReady(ctx, c.Client, nodes.NodeName(g.Instances[2])); err != nil {
		t.Fatal(err)
	}
}
