package scenario

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

// Demo builds the README scenario: node group "demo" with 6 outdated and 3
// current nodes over three zones, and three Deployments pinned to it.
func Demo(ctx context.Context, c kubernetes.Interface) error {
	return DemoOfSize(ctx, c, 6, 3)
}

// DemoOfSize is Demo with another number of outdated and current nodes
// (tests keep it small: every batch of a run costs the default 60 s
// post-drain wait).
func DemoOfSize(ctx context.Context, c kubernetes.Interface, outdated, current int) error {
	_, _, err := CreateNodeGroup(ctx, c, NodeGroup{
		LabelKey:     "eks.amazonaws.com/nodegroup",
		Name:         "demo",
		Zones:        []string{"sim-a", "sim-b", "sim-c"},
		Outdated:     outdated,
		Current:      current,
		OldLabels:    map[string]string{"eks.amazonaws.com/nodegroup-image": "ami-old"},
		TargetLabels: map[string]string{"eks.amazonaws.com/nodegroup-image": "ami-new"},
	})
	if err != nil {
		return err
	}
	return DemoApps(ctx, c)
}
