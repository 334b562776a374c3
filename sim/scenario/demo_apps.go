package scenario

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// maxUnavailable 1) and worker (3, no PDB), their pods placed in a fixed
// layout (CreateAppsPlaced), so that a plan of the demo is the same on
// every start. It waits until they are rolled out and their PDBs count
// them.
func DemoAppsOn(ctx context.Context, c kubernetes.Interface, sel map[string]string) error {
	apps := []App{
		{Namespace: "demo", Name: "web", Replicas: 6, MinAvailable: new(intstr.FromInt32(4)), NodeSelector: sel},
		{Namespace: "demo", Name: "api", Replicas: 4, MaxUnavailable: new(intstr.FromInt32(1)), NodeSelector: sel},
		{Namespace: "demo", Name: "worker", Replicas: 3, NodeSelector: sel},
	}
	if err := CreateAppsPlaced(ctx, c, sel, apps); err != nil {
		return err
	}
	if err := WaitAppsReady(ctx, c, "demo"); err != nil {
		return err
	}
	return WaitPDBsCount(ctx, c, "demo")
}

// WaitPDBsCount waits until every PDB in namespace has seen its current
// spec and counts every pod it selects as healthy: a plan made before
// would read a budget of 0 and order its batches otherwise.
func WaitPDBsCount(ctx context.Context, c kubernetes.Interface, namespace string) error {
	for {
		pdbs, err := c.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		settled := true
		for _, p := range pdbs.Items {
			st := p.Status
			if st.ObservedGeneration < p.Generation || st.ExpectedPods == 0 || st.CurrentHealthy != st.ExpectedPods {
				settled = false
			}
		}
		if settled {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the PodDisruptionBudgets of namespace %s do not count their pods yet: %w", namespace, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// PoolApps creates the workloads of a managed service's demo (GKE's,
// AKS's) on the nodes sel selects, in namespace ns: web (3 replicas, PDB
// maxUnavailable 1) and api (2 replicas, PDB minAvailable 1); it waits
// until they are rolled out.
func PoolApps(ctx context.Context, c kubernetes.Interface, ns string, sel map[string]string) error {
	for _, a := range []App{
		{Namespace: ns, Name: "web", Replicas: 3, MaxUnavailable: new(intstr.FromInt32(1)), NodeSelector: sel},
		{Namespace: ns, Name: "api", Replicas: 2, MinAvailable: new(intstr.FromInt32(1)), NodeSelector: sel},
	} {
		if err := CreateApp(ctx, c, a); err != nil {
			return fmt.Errorf("demo apps: %w", err)
		}
	}
	if err := WaitAppsReady(ctx, c, ns); err != nil {
		return fmt.Errorf("demo apps: %w", err)
	}
	return nil
}
