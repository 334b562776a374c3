package awsfake

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	awsprov "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/cluster"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// One simulated cluster per test process (klog and configz are
// process-global): the tests that need one share it, each with its own
// node group names.
var (
	kubeOnce sync.Once
	kube     *cluster.Cluster
	kubeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if kube != nil {
		if err := kube.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the simulated cluster:", err)
		}
	}
	os.Exit(code)
}

// sharedCluster starts the cluster on first use.
func sharedCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster; skipped with -short")
	}
	kubeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		kube, kubeErr = cluster.Start(ctx, cluster.Options{})
		t.Logf("simulated cluster up in %s", time.Since(start).Round(time.Millisecond))
	})
	if kubeErr != nil {
		t.Fatal(kubeErr)
	}
	return kube
}

// TestKubeNodes launches instances as kwok nodes of a real simulated
// cluster and removes the node when its instance is terminated.
func TestKubeNodes(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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

// TestNodeGroup makes two node groups through two Servers feeding the
// one cluster, then breaks and mends the bootstrap of new nodes at run time.
func TestNodeGroup(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var broken atomic.Bool
	a, err := StartWithKube(ctx, c.Client, Options{LaunchDelay: 100 * time.Millisecond, Logf: t.Logf},
		NodeOptions{NotReady: func(Instance) bool { return broken.Load() }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := StartWithKube(ctx, c.Client, Options{LaunchDelay: 100 * time.Millisecond, Logf: t.Logf}, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := StartWithKube(ctx, c.Client, Options{OnLaunch: func(context.Context, Instance) error { return nil }}, NodeOptions{}); err == nil {
		t.Fatal("StartWithKube accepted an OnLaunch of its own")
	}

	nodeNames := map[string]string{} // node -> group, across both servers
	for _, tc := range []struct {
		s           *Server
		spec        NodeGroupSpec
		wantMax     int32
		wantVersion string
		wantType    string
	}{
		{a, NodeGroupSpec{Name: "ng-a", Zones: zones, Size: 3, ImageID: "ami-a1"}, 3, "$Default", "m5.large"},
		{b, NodeGroupSpec{Name: "ng-b", Zones: zones[:2], Size: 4, Min: 1, Max: 6, ImageID: "ami-b1", InstanceType: "c5.xlarge", VersionSpec: "1"}, 6, "1", "c5.xlarge"},
	} {
		t.Run(tc.spec.Name, func(t *testing.T) {
			lt, err := tc.s.NodeGroup(ctx, c.Client, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := tc.s.Group(tc.spec.Name)
			if !Stable(g) || g.Desired != tc.spec.Size || g.Min != tc.spec.Min || g.Max != tc.wantMax || g.LaunchTemplateID != lt || g.LaunchTemplateVersion != tc.wantVersion {
				t.Fatalf("group %+v", g.GroupSpec)
			}
			if im, ok := tc.s.Image(tc.spec.ImageID); !ok || im.Name != tc.spec.ImageID {
				t.Fatalf("image %s registered as %+v, %v", tc.spec.ImageID, im, ok)
			}
			perZone := map[string]int{}
			for _, in := range g.Instances {
				name := NodeOptions{}.NodeName(in)
				n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				l := n.Labels
				if !nodeReady(n) || n.Spec.ProviderID != "aws:///"+in.Zone+"/"+in.ID || l[scenario.ZoneLabel] != in.Zone ||
					l[NodeGroupLabel] != tc.spec.Name || l[ImageLabel] != tc.spec.ImageID || l[SourceLTIDLabel] != lt ||
					l[SourceLTVersionLbl] != "1" || l["node.kubernetes.io/instance-type"] != tc.wantType {
					t.Errorf("node %s: ready %v providerID %q labels %v", n.Name, nodeReady(n), n.Spec.ProviderID, l)
				}
				if prev, dup := nodeNames[name]; dup {
					t.Errorf("node %s made for %s and %s", name, prev, tc.spec.Name)
				}
				nodeNames[name] = tc.spec.Name
				perZone[in.Zone]++
			}
			if len(perZone) != len(tc.spec.Zones) {
				t.Errorf("instances per zone %v, want all of %v", perZone, tc.spec.Zones)
			}
		})
	}

	t.Run("bad specs", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			spec NodeGroupSpec
		}{
			{"no image", NodeGroupSpec{Name: "ng-c", Zones: zones, Size: 1}},
			{"no zones", NodeGroupSpec{Name: "ng-c", Size: 1, ImageID: "ami-c"}},
			{"taken name", NodeGroupSpec{Name: "ng-a", Zones: zones, Size: 1, ImageID: "ami-c"}},
			{"min above size", NodeGroupSpec{Name: "ng-c", Zones: zones, Size: 1, Min: 2, Max: 3, ImageID: "ami-c"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, err := a.NodeGroup(ctx, c.Client, tc.spec); err == nil {
					t.Fatal("accepted")
				}
			})
		}
	})

	// Replace an instance of ng-a with bootstrap broken, then replace the
	// broken one with bootstrap mended.
	asg := autoscaling.NewFromConfig(sdkConfig(a))
	replace := func(t *testing.T, victim string) Instance {
		t.Helper()
		if _, err := asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{
			InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false),
		}); err != nil {
			t.Fatal(err)
		}
		if err := a.WaitFor(ctx, "ng-a", func(g Group) bool {
			return Stable(g) && !slices.ContainsFunc(g.Instances, func(in Instance) bool { return in.ID == victim })
		}); err != nil {
			t.Fatal(err)
		}
		g, _ := a.Group("ng-a")
		return g.Instances[len(g.Instances)-1] // members are in launch order
	}
	var bad Instance
	t.Run("NotReady flipped on", func(t *testing.T) {
		broken.Store(true)
		g, _ := a.Group("ng-a")
		bad = replace(t, g.Instances[0].ID)
		n, err := c.Client.CoreV1().Nodes().Get(ctx, NodeOptions{}.NodeName(bad), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if nodeReady(n) || n.Annotations[scenario.KwokAnnotation] != "" || n.Spec.ProviderID != ProviderID(bad) {
			t.Fatalf("node %s of a broken bootstrap: ready %v annotations %v providerID %q", n.Name, nodeReady(n), n.Annotations, n.Spec.ProviderID)
		}
	})
	t.Run("NotReady flipped off", func(t *testing.T) {
		if bad.ID == "" {
			t.Fatal("the previous subtest made no broken instance to replace")
		}
		broken.Store(false)
		replace(t, bad.ID)
		if err := a.waitNodesReady(ctx, c.Client, "ng-a"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDemo checks what `simcluster up --aws-demo` serves: the 9 Ready nodes
// of group "demo" with their labels, the group and images through the
// SDK, the plugin's provider finding the group from the env the demo
// script exports, and the workloads.
func TestDemo(t *testing.T) {
	c := sharedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	s, err := StartDemo(ctx, c.Client, DemoOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("demo ready in %s", time.Since(start).Round(time.Millisecond))

	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.Set{NodeGroupLabel: DemoGroup}.String()})
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	onDemo := map[string]bool{}
	var ids []string
	for _, n := range nodes.Items {
		l := n.Labels
		zone := l[scenario.ZoneLabel]
		id, ok := strings.CutPrefix(n.Spec.ProviderID, "aws:///"+zone+"/")
		if !nodeReady(&n) || l[ImageLabel] != DemoOldImage || l[SourceLTVersionLbl] != "1" || l[scenario.RegionLabel] != "us-east-1" ||
			!ok || !strings.HasPrefix(id, "i-") {
			t.Errorf("node %s: ready %v providerID %q labels %v", n.Name, nodeReady(&n), n.Spec.ProviderID, l)
		}
		perZone[zone]++
		onDemo[n.Name] = true
		ids = append(ids, id)
	}
	if len(nodes.Items) != 9 || perZone["us-east-1a"] != 3 || perZone["us-east-1b"] != 3 || perZone["us-east-1c"] != 3 {
		t.Fatalf("%d demo nodes, per zone %v", len(nodes.Items), perZone)
	}

	cfg := sdkConfig(s)
	t.Run("auto scaling group", func(t *testing.T) {
		out, err := autoscaling.NewFromConfig(cfg).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{DemoGroup}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.AutoScalingGroups) != 1 {
			t.Fatalf("%d groups", len(out.AutoScalingGroups))
		}
		g := out.AutoScalingGroups[0]
		if *g.MinSize != 3 || *g.DesiredCapacity != 9 || *g.MaxSize != 12 || len(g.Instances) != 9 || *g.LaunchTemplate.Version != "$Default" {
			t.Fatalf("group: min %d desired %d max %d, %d instances, version %s", *g.MinSize, *g.DesiredCapacity, *g.MaxSize, len(g.Instances), *g.LaunchTemplate.Version)
		}
	})
	t.Run("images", func(t *testing.T) {
		out, err := ec2.NewFromConfig(cfg).DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{DemoOldImage, DemoNewImage}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Images) != 2 || *out.Images[0].Name != DemoOldImageName || *out.Images[1].Name != DemoNewImageName {
			t.Fatalf("images %+v", out.Images)
		}
	})
	t.Run("instances", func(t *testing.T) {
		out, err := ec2.NewFromConfig(cfg).DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:aws:autoscaling:groupName"), Values: []string{DemoGroup}},
			{Name: aws.String("instance-state-name"), Values: []string{"running"}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Reservations {
			in := r.Instances[0]
			if !onDemo[*in.PrivateDnsName] || *in.ImageId != DemoOldImage {
				t.Errorf("instance %s: dns %s image %s", *in.InstanceId, *in.PrivateDnsName, *in.ImageId)
			}
		}
		if len(out.Reservations) != 9 {
			t.Fatalf("%d running instances", len(out.Reservations))
		}
	})
	t.Run("plugin provider from the demo env", func(t *testing.T) {
		demoEnv(t, s)
		p, err := awsprov.New(ctx, awsprov.Options{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.FindGroup(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if g.Name != DemoGroup || g.Desired != 9 || len(g.Instances) != 9 || len(g.Zones) != 3 {
			t.Fatalf("group %+v", g)
		}
	})
	t.Run("workloads", func(t *testing.T) {
		ds, err := c.Client.AppsV1().Deployments("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdbs, err := c.Client.PolicyV1().PodDisruptionBudgets("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := c.Client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Items) != 3 || len(pdbs.Items) != 2 || len(pods.Items) != 13 {
			t.Fatalf("%d deployments, %d pdbs, %d pods", len(ds.Items), len(pdbs.Items), len(pods.Items))
		}
		for _, p := range pods.Items {
			if !onDemo[p.Spec.NodeName] || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s on %q, %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	})
}

// demoEnv sets what hack/demo.sh exports, and keeps any local AWS
// configuration out.
func demoEnv(t *testing.T, s *Server) {
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL":            s.URL,
		"AWS_ACCESS_KEY_ID":           "demo",
		"AWS_SECRET_ACCESS_KEY":       "demo",
		"AWS_REGION":                  "us-east-1",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             t.TempDir() + "/config",
		"AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/credentials",
	} {
		t.Setenv(k, v)
	}
}
