package gcefake

import (
	"context"
	"testing"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// openGCE opens the gce provider on the group's instances for target.
func openGCE(t *testing.T, srv *Server, key string, target plan.CloudTarget) cloud.Provider {
	t.Helper()
	t.Setenv(gce.EndpointEnv, srv.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	g, _ := srv.Group(key)
	var nodes []corev1.Node
	kube := fake.NewClientset()
	for _, in := range g.Instances {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: corev1.NodeSpec{ProviderID: ProviderID(in)}}
		if _, err := kube.CoreV1().Nodes().Create(context.Background(), &n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	c, _ := cloud.Lookup(gce.Name)
	_, p, err := c.Open(context.Background(), kube, nodes, target)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openBlueGreen opens the gce provider on the group's instances for a
// blue/green run to img-new.
func openBlueGreen(t *testing.T, srv *Server, key string) cloud.BlueGreen {
	t.Helper()
	bg, ok := openGCE(t, srv, key, plan.CloudTarget{Image: "img-new", Strategy: "blue-green"}).(cloud.BlueGreen)
	if !ok {
		t.Fatal("the provider of a single MIG makes no green group")
	}
	return bg
}

// TestRegionalGreenTakesBluesPolicy: blue, a regional group of 12 over 3
// zones, has maxUnavailable 10% (1 instance) and so does a green group
// made from it, which Compute takes only as 0 or the zones (zoneRules);
// with RECREATE, green's maxSurge is 0 whatever blue's comes to.
func TestRegionalGreenTakesBluesPolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		wantSurge int64
	}{
		{"SUBSTITUTE", "", 0},
		{"RECREATE", "RECREATE", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, svc, key := newScene(t, 12, Opportunistic)
			ctx := context.Background()
			_, err := svc.RegionInstanceGroupManagers.Patch(project, "us-central1", "ng", &compute.InstanceGroupManager{
				UpdatePolicy: &compute.InstanceGroupManagerUpdatePolicy{
					ReplacementMethod: tc.method, MaxUnavailable: &compute.FixedOrPercent{Percent: 10},
					MaxSurge: &compute.FixedOrPercent{Fixed: 0, ForceSendFields: []string{"Fixed"}},
				},
			}).Context(ctx).Do()
			must(t, err)
			bg := openBlueGreen(t, srv, key)
			sizes, err := bg.Sizes(ctx)
			must(t, err)
			version, err := bg.PrepareTarget(ctx)
			must(t, err)
			green := bg.GreenName(version)
			must(t, bg.CreateGreen(ctx, green, version, sizes))
			igm, err := svc.RegionInstanceGroupManagers.Get(project, "us-central1", green).Context(ctx).Do()
			must(t, err)
			if up := igm.UpdatePolicy; up.MaxUnavailable.Fixed != 3 || up.MaxSurge.Fixed != tc.wantSurge {
				t.Errorf("green's maxUnavailable %+v, maxSurge %+v; want fixed 3 and %d", up.MaxUnavailable, up.MaxSurge, tc.wantSurge)
			}
		})
	}
}
