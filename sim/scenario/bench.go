package scenario

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Bench describes the benchmark scenario of hack/bench.sh: node group Name
// (label eks.amazonaws.com/nodegroup, outdated nodes on image ami-old,
// current ones on ami-new) over three zones, and in namespace Name, Apps
// Deployments of Replicas pods each with a PDB of maxUnavailable
// MaxUnavailable, pinned to the group.
type Bench struct {
	Name                     string
	Outdated, Current        int
	Apps                     int
	Replicas, MaxUnavailable int32
}

// Labels of the bench's node groups.
const (
	BenchGroupKey = "eks.amazonaws.com/nodegroup"
	BenchImageKey = "eks.amazonaws.com/nodegroup-image"
)

// CreateBench builds b and waits until its nodes are Ready and its apps
// rolled out.
func CreateBench(ctx context.Context, c kubernetes.Interface, b Bench) error {
	if b.Name == "" || b.Outdated <= 0 || b.Apps <= 0 || b.Replicas <= 0 || b.MaxUnavailable <= 0 {
		return fmt.Errorf("bench needs a name and positive node, app, replica and budget counts")
	}
	if _, _, err := CreateNodeGroup(ctx, c, NodeGroup{
		LabelKey:     BenchGroupKey,
		Name:         b.Name,
		Zones:        []string{"sim-a", "sim-b", "sim-c"},
		Outdated:     b.Outdated,
		Current:      b.Current,
		OldLabels:    map[string]string{BenchImageKey: "ami-old"},
		TargetLabels: map[string]string{BenchImageKey: "ami-new"},
	}); err != nil {
		return err
	}
	sel := map[string]string{BenchGroupKey: b.Name}
	for i := range b.Apps {
		if err := CreateApp(ctx, c, App{
			Namespace:      b.Name,
			Name:           fmt.Sprintf("app-%03d", i),
			Replicas:       b.Replicas,
			MaxUnavailable: new(intstr.FromInt32(b.MaxUnavailable)),
			NodeSelector:   sel,
			// the current nodes alone take every pod once the outdated
			// ones are gone (provider none adds no node)
			CPU: "10m",
		}); err != nil {
			return err
		}
	}
	return WaitAppsReady(ctx, c, b.Name)
}
