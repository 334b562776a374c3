package gcefake

import (
	"context"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestAutoscaledRegionalGroupIsNoted: compute-api.json documents
// instanceRedistributionType NONE "For non-autoscaled groups" only; the
// safe reading is that the run's hold of redistribution may not hold on
// an autoscaled regional group, which the plan says, naming the
// autoscaler; not for an autoscaler OFF, nor a zonal group.
func TestAutoscaledRegionalGroupIsNoted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		regional bool
		mode     string // "": none; set through the API
		want     bool
	}{
		{"regional, autoscaler ON", true, "ON", true},
		{"regional, autoscaler ONLY_SCALE_OUT", true, "ONLY_SCALE_OUT", true},
		{"regional, autoscaler OFF", true, "OFF", false},
		{"regional, no autoscaler", true, "", false},
		{"zonal, autoscaler ON", false, "ON", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, svc, key := newScene(t, 2, Opportunistic)
			if !tc.regional {
				var err error
				key, err = srv.CreateGroup(GroupSpec{Project: project, Name: "zonal", Zone: "us-central1-a", Template: "tmpl-old", Size: 2})
				must(t, err)
				waitStable(t, srv, key)
			}
			g, _ := srv.Group(key)
			if tc.mode != "" {
				a := &compute.Autoscaler{Name: g.Name, Target: targetLink(srv, g), AutoscalingPolicy: &compute.AutoscalingPolicy{Mode: tc.mode, MinNumReplicas: 1, MaxNumReplicas: 6}}
				var err error
				if tc.regional {
					_, err = svc.RegionAutoscalers.Insert(project, "us-central1", a).Context(context.Background()).Do()
				} else {
					_, err = svc.Autoscalers.Insert(project, "us-central1-a", a).Context(context.Background()).Do()
				}
				must(t, err)
			}
			t.Setenv(gce.EndpointEnv, srv.Endpoint)
			t.Setenv(gce.NoAuthEnv, "true")
			var nodes []corev1.Node
			for _, in := range g.Instances {
				nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: corev1.NodeSpec{ProviderID: ProviderID(in)}})
			}
			c, _ := cloud.Lookup(gce.Name)
			cg, _, err := c.Open(context.Background(), fake.NewClientset(), nodes, plan.CloudTarget{Image: "img-new"})
			must(t, err)
			got := strings.Contains(strings.Join(cg.Notes, "\n"), "is autoscaled")
			if got != tc.want || got && !strings.Contains(strings.Join(cg.Notes, "\n"), `autoscaler "`+g.Name+`"`) {
				t.Errorf("notes %q; want a note naming the autoscaler: %v", cg.Notes, tc.want)
			}
		})
	}
}

// targetLink is the group's URL, an autoscaler's target.
func targetLink(srv *Server, g Group) string {
	scope := "zones/" + g.Zones[0]
	if g.Regional {
		scope = "regions/us-central1"
	}
	return srv.Endpoint + "projects/" + g.Project + "/" + scope + "/instanceGroupManagers/" + g.Name
}
