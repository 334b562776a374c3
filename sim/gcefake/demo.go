package gcefake

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// The GCE demo: regional managed instance group "demo" of project
// "demo-project" over DemoZones, from template "demo-v1" (image img-old),
// its nodes labelled as kOps labels an instance group's; img-new is the
// target.
const (
	DemoProject  = "demo-project"
	DemoRegion   = "us-central1"
	DemoGroup    = "demo"
	DemoTemplate = "demo-v1"
	DemoOldImage = "img-old"
	DemoNewImage = "img-new"
	// DemoGroupLabel is the node-group label of the demo's nodes.
	DemoGroupLabel = "kops.k8s.io/instancegroup"
)

// DemoZones are the demo group's zones.
var DemoZones = []string{"us-central1-a", "us-central1-b", "us-central1-c"}

// DemoOptions configure StartDemo.
type DemoOptions struct {
	// Addr is the endpoint's listen address; default "127.0.0.1:0".
	Addr string
	// Size is the group's target size; default 9.
	Size int64
	// LaunchDelay: see Options; default 2s.
	LaunchDelay time.Duration
	// SetupTimeout bounds the wait for the nodes and apps; default 3m.
	SetupTimeout time.Duration
	Logf         func(format string, args ...any)
}

// StartDemo serves the GCE demo on the cluster of c: the group, Ready
// nodes for its instances, and the demo workloads on them
// (scenario.DemoAppsOn).
func StartDemo(ctx context.Context, c kubernetes.Interface, o DemoOptions) (*Server, error) {
	o.LaunchDelay = cmpOrDuration(o.LaunchDelay, 2*time.Second)
	o.SetupTimeout = cmpOrDuration(o.SetupTimeout, 3*time.Minute)
	if o.Size == 0 {
		o.Size = 9
	}
	s, err := StartWithKube(ctx, c, Options{Project: DemoProject, Addr: o.Addr, LaunchDelay: o.LaunchDelay, Logf: o.Logf}, NodeOptions{})
	if err != nil {
		return nil, err
	}
	setup, cancel := context.WithTimeout(ctx, o.SetupTimeout)
	defer cancel()
	if err := s.demo(setup, c, o.Size); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) demo(ctx context.Context, c kubernetes.Interface, size int64) error {
	s.RegisterImage(DemoProject, DemoOldImage, "demo")
	s.RegisterImage(DemoProject, DemoNewImage, "demo")
	if err := s.CreateTemplate(TemplateSpec{Project: DemoProject, Name: DemoTemplate, ImageProject: DemoProject, Image: DemoOldImage,
		KubeLabels: map[string]string{DemoGroupLabel: DemoGroup}}); err != nil {
		return fmt.Errorf("demo template: %w", err)
	}
	key, err := s.CreateGroup(GroupSpec{Project: DemoProject, Name: DemoGroup, Region: DemoRegion, Zones: DemoZones, Template: DemoTemplate, Size: size})
	if err != nil {
		return fmt.Errorf("demo group: %w", err)
	}
	if err := s.WaitStable(ctx, key); err != nil {
		return err
	}
	g, _ := s.Group(key)
	var names []string
	for _, in := range g.Instances {
		names = append(names, in.Name)
	}
	if err := scenario.WaitNodesReady(ctx, c, names...); err != nil {
		return err
	}
	if err := scenario.DemoAppsOn(ctx, c, map[string]string{DemoGroupLabel: DemoGroup}); err != nil {
		return fmt.Errorf("demo apps: %w", err)
	}
	return nil
}

func cmpOrDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// DemoKey is the key of the demo's group.
func DemoKey() string { return GroupKey(DemoProject, "", DemoRegion, DemoGroup) }
