package scenario

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

// Demo builds the README scenario: node group "demo" with 6 outdated and 3
// current nodes over three zones, and three Deployments pinned to it.
func Demo(ctx context.Context, c kubernetes.Interface) error {
	const key = "eks.amazonaws.com/nodegroup"
	_, _, err := CreateNodeGroup(ctx, c, NodeGroup{
		LabelKey:     key,
		Name:         "demo",
		Zones:        []string{"sim-a", "sim-b", "sim-c"},
		Outdated:     6,
		Current:      3,
		OldLabels:    map[string]string{"eks.amazonaws.com/nodegroup-image": "ami-old"},
		TargetLabels: map[string]string{"eks.amazonaws.com/nodegroup-image": "ami-new"},
	})
	if err != nil {
		return err
	}
	return DemoApps(ctx, c)
}
