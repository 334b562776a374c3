package awsfake

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// StartWithKube starts a Server whose instances become kwok nodes of the
// cluster c: OnLaunch and OnTerminate are KubeNodes(c, nodes), so opts must
// not set them.
func StartWithKube(ctx context.Context, c kubernetes.Interface, opts Options, nodes NodeOptions) (*Server, error) {
	if opts.OnLaunch != nil || opts.OnTerminate != nil {
		return nil, errors.New("awsfake: StartWithKube sets OnLaunch and OnTerminate itself")
	}
	opts.OnLaunch, opts.OnTerminate = KubeNodes(c, nodes)
	s, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.nodes = &nodes // how RunAutoscaler labels a new node
	s.kube = c       // whose nodes EKS's updates drain
	s.mu.Unlock()
	return s, nil
}

// NodeGroupSpec describes a ready-made node group: a launch template and an
// Auto Scaling group named Name.
type NodeGroupSpec struct {
	Name  string
	Zones []string // instances are spread over them
	Size  int32    // desired capacity
	Min   int32    // default 0
	Max   int32    // default Size
	// ImageID is the image of launch template version 1 (required).
	ImageID string
	// InstanceType defaults to m5.large.
	InstanceType string
	// VersionSpec is how the group names its launch template version:
	// "$Default" (the default), "$Latest" or a number such as "1".
	VersionSpec string
	// Subnets and Tags are the group's (see GroupSpec); with Subnets,
	// Zones may be left empty.
	Subnets []string
	Tags    map[string]string
}

// NodeGroup creates a launch template named spec.Name (version 1 with
// spec.ImageID; the name is also the nodes' node-group label value, see
// NodeOptions) and an Auto Scaling group of spec.Size instances spread over
// spec.Zones, then waits until the group is stable and every instance's
// node (found by its provider ID, so any node naming works) exists in c
// and is Ready. It returns the launch template's id.
//
// The Server must turn instances into nodes of c (StartWithKube, or
// KubeNodes by hand); with NodeOptions.NotReady true for an instance,
// NodeGroup waits until ctx ends.
func (s *Server) NodeGroup(ctx context.Context, c kubernetes.Interface, spec NodeGroupSpec) (string, error) {
	if spec.ImageID == "" {
		return "", fmt.Errorf("node group %q: no image", spec.Name)
	}
	if spec.Size < 0 {
		return "", fmt.Errorf("node group %q: negative size %d", spec.Name, spec.Size)
	}
	if spec.Max == 0 {
		spec.Max = spec.Size
	}
	ltID := s.CreateLaunchTemplate(spec.Name, spec.ImageID, spec.InstanceType)
	err := s.CreateGroup(GroupSpec{
		Name: spec.Name, Min: spec.Min, Max: spec.Max, Desired: spec.Size, Zones: spec.Zones, Subnets: spec.Subnets,
		LaunchTemplateID: ltID, LaunchTemplateVersion: spec.VersionSpec, Tags: spec.Tags,
	})
	if err != nil {
		// No half-made scene: a retry with a fixed spec starts clean.
		s.mu.Lock()
		delete(s.templates, ltID)
		s.mu.Unlock()
		return "", err
	}
	if err := s.WaitStable(ctx, spec.Name); err != nil {
		return "", err
	}
	if err := s.waitNodesReady(ctx, c, spec.Name); err != nil {
		return "", err
	}
	return ltID, nil
}

// waitNodesReady lists the nodes once and watches them until every current
// member of the group has a node with its provider ID that pods can be
// scheduled to (scenario.NodeUsable).
func (s *Server) waitNodesReady(ctx context.Context, c kubernetes.Interface, group string) error {
	var store cache.Store
	var missing []string
	done := func() bool {
		g, ok := s.Group(group)
		if !ok {
			missing = []string{"group " + group}
			return false
		}
		ready := map[string]bool{}
		for _, o := range store.List() {
			n := o.(*corev1.Node)
			ready[n.Spec.ProviderID] = scenario.NodeUsable(n)
		}
		missing = missing[:0]
		for _, in := range g.Instances {
			if !ready[ProviderID(in)] {
				missing = append(missing, in.ID)
			}
		}
		return len(missing) == 0
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{},
		func(st cache.Store) (bool, error) {
			store = st
			return done(), nil
		},
		// The store is updated before the event is delivered, so it is
		// at least as fresh as the event.
		func(watch.Event) (bool, error) { return done(), nil },
	)
	if err != nil {
		return fmt.Errorf("group %q: nodes not ready for instances %v: %w", group, missing, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The AWS demo: what `simcluster up --aws-demo` serves.
const (
	DemoRegion       = "us-east-1"
	DemoGroup        = "demo"
	DemoOldImage     = "ami-old"
	DemoOldImageName = "demo-node-v1"
	DemoNewImage     = "ami-new"
	DemoNewImageName = "demo-node-v2"
)

// DemoZones are the zones of the demo node group.
var DemoZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// DemoOptions configure StartDemo.
type DemoOptions struct {
	Addr         string        // listen address; default 127.0.0.1:0
	Size         int32         // instances of the group; default 9
	LaunchDelay  time.Duration // default 2s
	SetupTimeout time.Duration // bounds the node group and apps; default 3m
	Logf         func(format string, args ...any)
	// Managed adds an EKS managed node group beside the self-managed one
	// (see StartManagedDemo).
	Managed bool
}

// StartDemo sets up the AWS demo on cluster c and returns its Server, which
// lives until ctx ends or Close: region us-east-1, images ami-old
// (demo-node-v1, the template's) and ami-new (demo-node-v2), node group
// "demo" of 9 instances (Size) over us-east-1a/b/c (min 3 or Size if
// smaller, max Size+3) whose nodes are Ready, and the demo workloads
// (scenario.DemoApps) rolled out on them.
func StartDemo(ctx context.Context, c kubernetes.Interface, o DemoOptions) (*Server, error) {
	if o.LaunchDelay == 0 {
		o.LaunchDelay = 2 * time.Second
	}
	if o.SetupTimeout == 0 {
		o.SetupTimeout = 3 * time.Minute
	}
	if o.Size == 0 {
		o.Size = 9
	}
	s, err := StartWithKube(ctx, c, Options{Region: DemoRegion, Addr: o.Addr, LaunchDelay: o.LaunchDelay, Logf: o.Logf}, NodeOptions{})
	if err != nil {
		return nil, err
	}
	setup, cancel := context.WithTimeout(ctx, o.SetupTimeout)
	defer cancel()
	s.RegisterImage(DemoOldImage, DemoOldImageName)
	s.RegisterImage(DemoNewImage, DemoNewImageName)
	if _, err := s.NodeGroup(setup, c, NodeGroupSpec{
		Name: DemoGroup, Zones: DemoZones, Size: o.Size, Min: min(3, o.Size), Max: o.Size + 3, ImageID: DemoOldImage,
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("demo node group: %w", err)
	}
	if err := scenario.DemoApps(setup, c); err != nil {
		s.Close()
		return nil, fmt.Errorf("demo apps: %w", err)
	}
	if o.Managed {
		if err := s.StartManagedDemo(setup); err != nil {
			s.Close()
			return nil, fmt.Errorf("demo managed node group: %w", err)
		}
		if err := DemoManagedApps(setup, c); err != nil {
			s.Close()
			return nil, fmt.Errorf("demo managed node group's apps: %w", err)
		}
	}
	return s, nil
}

// DemoManagedApps puts on the demo's managed node group the Deployment
// "ledger" (namespace demo, 3 replicas, a PDB of maxUnavailable 1) whose
// pods are Ready 20 s after they are scheduled: however the 3 pods lie
// on the group's 3 nodes, EKS (draining 2 nodes at a time) drains two of
// them in the same round, and has the second one's eviction refused
// until the first one's replacement is Ready. Beside it, Deployment
// "frontend" (no PDB) has a pod on every node, whose eviction is what shows
// the run that EKS drains a node (a node whose only pod is refused shows
// none: internal/upgrade's heldOn), so the run names the held pod
// wherever the scheduler put the ledger's.
func DemoManagedApps(ctx context.Context, c kubernetes.Interface) error {
	onGroup := map[string]string{NodeGroupLabel: DemoManagedGroup}
	if err := scenario.CreateApp(ctx, c, scenario.App{Namespace: "demo", Name: "ledger", Replicas: 3,
		MaxUnavailable: new(intstr.FromInt32(1)), NodeSelector: onGroup,
		PodAnnotations: map[string]string{scenario.ReadyDelayAnnotation: "20s"}}); err != nil {
		return err
	}
	if err := scenario.CreateApp(ctx, c, scenario.App{Namespace: "demo", Name: "frontend", Replicas: 3,
		NodeSelector: onGroup, OnePerNode: true}); err != nil {
		return err
	}
	if err := scenario.WaitAppsReady(ctx, c, "demo"); err != nil {
		return err
	}
	return scenario.WaitPDBsCount(ctx, c, "demo")
}

// The managed part of the AWS demo.
const (
	DemoCluster        = "demo"
	DemoClusterVersion = "1.31"
	DemoManagedGroup   = "demo-managed"
)

// DemoReleases are the EKS AMI releases the demo publishes: the managed
// group starts on the 1.30 one; 1.31's last is the recommended target.
var DemoReleases = []Release{
	{KubernetesVersion: "1.30", ReleaseVersion: "1.30.9-20250101", ImageID: "ami-eks-130"},
	{KubernetesVersion: "1.31", ReleaseVersion: "1.31.1-20250101", ImageID: "ami-eks-131a"},
	{KubernetesVersion: "1.31", ReleaseVersion: "1.31.2-20250201", ImageID: "ami-eks-131b"},
}

// StartManagedDemo adds to the Server EKS cluster "demo" (control plane
// 1.31), the DemoReleases, and managed node group "demo-managed" of 3
// nodes (min 1, max 6) at 1.30 over DemoZones, and waits until it is
// ACTIVE.
func (s *Server) StartManagedDemo(ctx context.Context) error {
	s.CreateEKSCluster(DemoCluster, DemoClusterVersion)
	for _, r := range DemoReleases {
		s.AddRelease(r)
	}
	ng, err := s.ManagedNodeGroup(ctx, ManagedNodeGroupSpec{Cluster: DemoCluster, Name: DemoManagedGroup, Zones: DemoZones,
		Min: 1, Desired: 3, Max: 6, Version: "1.30"})
	if err == nil && ng.Status != NodegroupActive {
		err = fmt.Errorf("node group is %s: %+v", ng.Status, ng.Health)
	}
	return err
}
