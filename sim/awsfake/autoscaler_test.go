package awsfake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// waitPods lists and watches the pods of a namespace matching sel until
// cond holds for them.
func waitPods(ctx context.Context, c kubernetes.Interface, ns string, sel labels.Set, cond func([]*corev1.Pod) bool) error {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel.String()
			return c.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel.String()
			return c.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	var store cache.Store
	check := func() bool {
		var pods []*corev1.Pod
		for _, o := range store.List() {
			pods = append(pods, o.(*corev1.Pod))
		}
		return cond(pods)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{},
		func(st cache.Store) (bool, error) { store = st; return check(), nil },
		func(watch.Event) (bool, error) { return check(), nil })
	return err
}

func cordon(ctx context.Context, c kubernetes.Interface, node string) error {
	_, err := c.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	return err
}

// TestAutoscaler plays an autoscaled blue/green switch by hand: green is
// cloned from blue through the SDK (same launch template, so its nodes get
// blue's node-group label), blue's nodes are cordoned, pending pods make the
// autoscaler grow green, and blue's empty nodes are removed once nothing
// but DaemonSet pods (or a pod that is not safe to evict, until it goes)
// is on them.
func TestAutoscaler(t *testing.T) {
	c := sharedCluster(t).Client
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := StartWithKube(ctx, c, Options{LaunchDelay: 100 * time.Millisecond, Logf: t.Logf}, NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Names of this run only: nodes and namespaces outlive a test in the
	// shared cluster, and -count=N reruns it.
	run := func(name string) string { return fmt.Sprintf("%s-%d", name, s.index) }
	ns, blueName, greenName, minName, otherName := run("as-test"), run("as-blue"), run("as-green"), run("as-min"), run("as-other")
	defer func() {
		// Force-deleting the groups deletes their nodes.
		for _, name := range s.Groups() {
			if err := s.DeleteGroup(name, true); err != nil {
				t.Error(err)
			}
			if err := s.WaitDeleted(ctx, name); err != nil {
				t.Error(err)
			}
		}
	}()
	nodesOf := map[string][]string{}
	for _, spec := range []NodeGroupSpec{
		{Name: blueName, Subnets: []string{Subnet(zones[0]), Subnet(zones[1])}, Size: 2, ImageID: "ami-old"},
		{Name: minName, Zones: zones[:1], Size: 1, Min: 1, ImageID: "ami-old"}, // at its min
		{Name: otherName, Zones: zones[:1], Size: 1, ImageID: "ami-old"},       // not scaled down
	} {
		if _, err := s.NodeGroup(ctx, c, spec); err != nil {
			t.Fatal(err)
		}
		g, _ := s.Group(spec.Name)
		for _, in := range g.Instances {
			nodesOf[spec.Name] = append(nodesOf[spec.Name], in.PrivateDNS)
		}
	}
	blue, _ := s.Group(blueName)
	asg := autoscaling.NewFromConfig(sdkConfig(s))
	if _, err := asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(greenName),
		LaunchTemplate:       &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String(blueName), Version: aws.String("$Latest")},
		MinSize:              aws.Int32(0), MaxSize: aws.Int32(3), DesiredCapacity: aws.Int32(0),
		VPCZoneIdentifier: aws.String(Subnet(zones[0]) + "," + Subnet(zones[1])),
	}); err != nil {
		t.Fatal(err)
	}

	// The app starts at 0 replicas: CreateApp makes the namespace ready
	// for the other pods.
	if err := scenario.CreateApp(ctx, c, scenario.App{Namespace: ns, Name: "web", NodeSelector: map[string]string{NodeGroupLabel: blueName}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}()
	dsLabels := map[string]string{"app": "ds"}
	if _, err := c.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: dsLabels},
				Spec: corev1.PodSpec{
					NodeSelector:                 map[string]string{NodeGroupLabel: blueName},
					Containers:                   []corev1.Container{{Name: "ds", Image: scenario.Image}},
					AutomountServiceAccountToken: new(false),
				},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := nodesOf[blueName][0]
	if _, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "keep", Labels: map[string]string{"app": "keep"}, Annotations: map[string]string{SafeToEvictAnnotation: "false"}},
		Spec: corev1.PodSpec{
			NodeName: keep, Containers: []corev1.Container{{Name: "keep", Image: scenario.Image}},
			AutomountServiceAccountToken: new(false), TerminationGracePeriodSeconds: new(int64(0)),
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range slices.Concat(nodesOf[blueName], nodesOf[minName], nodesOf[otherName]) {
		if err := cordon(ctx, c, n); err != nil {
			t.Fatal(err)
		}
	}
	// The DaemonSet pods must be on blue's nodes before the autoscaler
	// looks, or the nodes would simply be empty.
	if err := waitPods(ctx, c, ns, dsLabels, func(pods []*corev1.Pod) bool {
		on := map[string]bool{}
		for _, p := range pods {
			on[p.Spec.NodeName] = true
		}
		return on[nodesOf[blueName][0]] && on[nodesOf[blueName][1]]
	}); err != nil {
		t.Fatal(err)
	}

	acCtx, acStop := context.WithCancel(ctx)
	acDone := make(chan error, 1)
	go func() {
		acDone <- s.RunAutoscaler(acCtx, c, AutoscalerOptions{
			ScaleUpGroups:   []string{greenName},
			ScaleDownGroups: []string{blueName, minName, greenName},
			Namespaces:      []string{ns},
			ScaleDownDelay:  time.Second,
			Logf:            t.Logf,
		})
	}()
	defer func() {
		acStop()
		if err := <-acDone; err != nil {
			t.Errorf("RunAutoscaler: %v", err)
		}
	}()

	t.Run("scale up green for pending pods", func(t *testing.T) {
		if _, err := c.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":15}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := scenario.WaitAppsReady(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
		// 15 pods at 10 per node: 2 nodes, and no more once they run.
		settle, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		err := s.WaitFor(settle, greenName, func(g Group) bool { return g.Desired != 2 })
		if g, _ := s.Group(greenName); !errors.Is(err, context.DeadlineExceeded) || g.Desired != 2 || !Stable(g) {
			t.Fatalf("green desired %d, stable %v (%v)", g.Desired, Stable(g), err)
		}
		g, _ := s.Group(greenName)
		green := map[string]bool{}
		for _, in := range g.Instances {
			n, err := c.CoreV1().Nodes().Get(ctx, in.PrivateDNS, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n.Labels[NodeGroupLabel] != blueName || n.Labels[SourceLTIDLabel] != blue.LaunchTemplateID {
				t.Errorf("green node %s labels %v", n.Name, n.Labels)
			}
			green[n.Name] = true
		}
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if !green[p.Spec.NodeName] {
				t.Errorf("pod %s on %q, not on green", p.Name, p.Spec.NodeName)
			}
		}
	})

	t.Run("scale down blue", func(t *testing.T) {
		// The node with only a DaemonSet pod goes; the one whose pod is not
		// safe to evict stays.
		err := s.WaitFor(ctx, blueName, func(g Group) bool {
			return g.Desired == 1 && Stable(g) && g.Instances[0].PrivateDNS == keep
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().Nodes().Get(ctx, nodesOf[blueName][1], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("removed node still there: %v", err)
		}
		if err := c.CoreV1().Pods(ns).Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitFor(ctx, blueName, func(g Group) bool { return g.Desired == 0 && len(g.Instances) == 0 }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("groups kept", func(t *testing.T) {
		for _, tc := range []struct{ group, why string }{
			{minName, "at its min"},
			{otherName, "not in ScaleDownGroups"},
			{greenName, "uncordoned nodes with pods"},
		} {
			t.Run(tc.why, func(t *testing.T) {
				g, _ := s.Group(tc.group)
				if !Stable(g) || g.Desired == 0 {
					t.Fatalf("group %s (%s) changed: desired %d, %d instances", tc.group, tc.why, g.Desired, len(g.Instances))
				}
			})
		}
	})

	t.Run("force delete removes the nodes", func(t *testing.T) {
		for _, name := range []string{otherName, blueName} {
			if _, err := asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true)}); err != nil {
				t.Fatal(err)
			}
			if err := s.WaitDeleted(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CoreV1().Nodes().Get(ctx, nodesOf[otherName][0], metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("node of a deleted group: %v", err)
		}
		if got := s.Groups(); !slices.Equal(got, []string{greenName, minName}) {
			t.Fatalf("groups %v", got)
		}
	})

	if t.Failed() {
		for _, name := range s.Groups() {
			g, _ := s.Group(name)
			t.Logf("%s: desired %d, %d instances", name, g.Desired, len(g.Instances))
		}
	}
}
