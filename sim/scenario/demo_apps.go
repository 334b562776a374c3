package scenario

import (
	"context"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// DemoApps creates the demo workloads of Demo on whatever nodes carry
// eks.amazonaws.com/nodegroup=demo (the AWS demo makes them through
// awsfake): see DemoAppsOn.
func DemoApps(ctx context.Context, c kubernetes.Interface) error {
	return DemoAppsOn(ctx, c, map[string]string{"eks.amazonaws.com/nodegroup": "demo"})
}

// DemoAppsOn creates the demo workloads on the nodes sel selects: in
// namespace demo, web (6 replicas, PDB minAvailable 4), api (4, PDB
// maxUnavailable 1) and worker (3, no PDB). It waits until they are
// rolled out.
func DemoAppsOn(ctx context.Context, c kubernetes.Interface, sel map[string]string) error {
	for _, a := range []App{
		{Namespace: "demo", Name: "web", Replicas: 6, MinAvailable: new(intstr.FromInt32(4)), NodeSelector: sel},
		{Namespace: "demo", Name: "api", Replicas: 4, MaxUnavailable: new(intstr.FromInt32(1)), NodeSelector: sel},
		{Namespace: "demo", Name: "worker", Replicas: 3, NodeSelector: sel},
	} {
		if err := CreateApp(ctx, c, a); err != nil {
			return err
		}
	}
	return WaitAppsReady(ctx, c, "demo")
}
