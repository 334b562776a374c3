package gce

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

const computeURL = "https://compute.googleapis.com/compute/v1/"

// instanceCreated is every scene instance's creationTimestamp, as
// Compute writes it (RFC 3339 with the zone's offset).
const instanceCreated = "2026-01-02T03:04:05.000-08:00"

// scene is the Compute side of a node group for Open: templates t-v1
// (image img-1) and t-v2, image img-2, and groups added by zonal and
// regional, each with one instance per zone and its node.
type scene struct {
	routes map[string]any
	nodes  []corev1.Node
}

func newScene() *scene {
	tmpl := func(name, image string) *compute.InstanceTemplate {
		return &compute.InstanceTemplate{Name: name, Properties: &compute.InstanceProperties{MachineType: "e2-small", Disks: []*compute.AttachedDisk{
			{Boot: true, InitializeParams: &compute.AttachedDiskInitializeParams{SourceImage: "projects/p/global/images/" + image}},
		}}}
	}
	return &scene{routes: map[string]any{
		"GET projects/p/global/instanceTemplates/t-v1": tmpl("t-v1", "img-1"),
		"GET projects/p/global/instanceTemplates/t-v2": tmpl("t-v2", "img-2"),
		"GET projects/p/global/images/img-1":           &compute.Image{Name: "img-1"},
		"GET projects/p/global/images/img-2":           &compute.Image{Name: "img-2"},
		"GET projects/p/global/images/family/node":     &compute.Image{Name: "img-2"},
		"GET projects/p/global/backendServices":        &compute.BackendServiceList{},
	}}
}

// group adds a group of scope (zones/Z or regions/R) named name with an
// instance in each zone, created by it as created-by says (the project
// by number).
func (s *scene) group(scope, name string, zones ...string) {
	path := "projects/p/" + scope + "/instanceGroupManagers/" + name
	var mis []*compute.ManagedInstance
	for _, z := range zones {
		in := name + "-" + z[len(z)-1:]
		by := "projects/123/" + scope + "/instanceGroupManagers/" + name
		s.routes["GET projects/p/zones/"+z+"/instances/"+in] = &compute.Instance{Name: in, Metadata: &compute.Metadata{Items: []*compute.MetadataItems{{Key: "created-by", Value: &by}}}}
		mis = append(mis, &compute.ManagedInstance{Name: in, Id: 11, CurrentAction: "NONE", InstanceStatus: "RUNNING",
			Instance: computeURL + "projects/p/zones/" + z + "/instances/" + in,
			Version:  &compute.ManagedInstanceVersion{InstanceTemplate: "projects/p/global/instanceTemplates/t-v1"}})
		s.nodes = append(s.nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in, UID: types.UID("uid-" + in)}, Spec: corev1.NodeSpec{ProviderID: "gce://p/" + z + "/" + in}})
		list, _ := s.routes["GET projects/p/zones/"+z+"/instances"].(*compute.InstanceList)
		if list == nil {
			list = &compute.InstanceList{}
			s.routes["GET projects/p/zones/"+z+"/instances"] = list
		}
		list.Items = append(list.Items, &compute.Instance{Name: in, CreationTimestamp: instanceCreated})
	}
	s.routes["POST "+path+"/listManagedInstances"] = &compute.InstanceGroupManagersListManagedInstancesResponse{ManagedInstances: mis}
	s.routes["GET "+path] = &compute.InstanceGroupManager{
		Name: name, TargetSize: int64(len(zones)), SelfLink: computeURL + path,
		InstanceTemplate: computeURL + "projects/p/global/instanceTemplates/t-v1",
		InstanceGroup:    computeURL + "projects/p/" + scope + "/instanceGroups/" + name,
		UpdatePolicy:     &compute.InstanceGroupManagerUpdatePolicy{Type: "PROACTIVE", InstanceRedistributionType: "PROACTIVE"},
	}
	if _, ok := s.routes["GET projects/p/"+scope+"/autoscalers"]; !ok {
		s.routes["GET projects/p/"+scope+"/autoscalers"] = &compute.AutoscalerList{}
	}
}

// open runs the provider's Open against the scene.
func (s *scene) open(t *testing.T, target plan.CloudTarget) (*api, *plan.CloudGroup, cloud.Provider, error) {
	t.Helper()
	a, _ := newAPI(t, s.routes)
	t.Setenv(EndpointEnv, a.url+"/compute/v1/")
	t.Setenv(NoAuthEnv, "true")
	cg, p, err := gceCloud{}.Open(context.Background(), fake.NewClientset(), s.nodes, target)
	return a, cg, p, err
}

// withGoneNode adds a node whose instance Compute does not know (an
// abort deleted it; its Node is not gone yet).
func withGoneNode(s *scene, name, zone string) *scene {
	s.nodes = append(s.nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.NodeSpec{ProviderID: "gce://p/" + zone + "/" + name}})
	return s
}

func kops() *scene {
	s := newScene()
	s.group("zones/us-central1-a", "ng-a", "us-central1-a")
	s.group("zones/us-central1-b", "ng-b", "us-central1-b")
	return s
}

func regional() *scene {
	s := newScene()
	s.group("regions/us-central1", "ng", "us-central1-a", "us-central1-b")
	s.routes["GET projects/p/regions/us-central1/autoscalers"] = &compute.RegionAutoscalerList{Items: []*compute.Autoscaler{{
		Name: "ng-as", Target: computeURL + ngPath, AutoscalingPolicy: &compute.AutoscalingPolicy{Mode: "ON", MinNumReplicas: 1, MaxNumReplicas: 5},
	}}}
	return s
}

// TestOpen: the groups are found from the nodes' instances or the group
// flag, and the plan's view says what the run will do.
func TestOpen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scene  *scene
		target plan.CloudTarget
		want   plan.CloudGroup // the fields compared
		after  string          // in LaunchesAfter
	}{
		{name: "kOps: a zonal group per zone", scene: kops(),
			want:  plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-a,ng-b", GroupKind: "zonal managed instance groups"}, Launches: plan.Launches{CurrentVersion: "t-v1", TargetVersion: "t-v1"}, Sizes: plan.Sizes{Desired: 2, Max: 2}},
			after: "t-v1; ng-a: update policy PROACTIVE (OPPORTUNISTIC during the run, then back); ng-b"},
		{name: "a regional group with an autoscaler", scene: regional(),
			want:  plan.CloudGroup{GroupID: plan.GroupID{Group: "ng", GroupKind: "regional managed instance group"}, Launches: plan.Launches{CurrentVersion: "t-v1", TargetVersion: "t-v1"}, Removal: plan.Removal{Rebalance: Redistribution}, Sizes: plan.Sizes{Desired: 2, Max: 2}},
			after: `autoscaler "ng-as" ON, 1-5`},
		{name: "--image: a copy to make", scene: regional(), target: plan.CloudTarget{Image: "img-2"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng"}, Launches: plan.Launches{
				CurrentVersion: "t-v1",
				TargetVersion:  plan.NewVersion,
				TargetImage:    "projects/p/global/images/img-2",
			}},
			after: CopyName("t-v1", "projects/p/global/images/img-2") + " (new, image projects/p/global/images/img-2)"},
		{name: "--image of a family", scene: regional(), target: plan.CloudTarget{Image: "projects/p/global/images/family/node"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng"}, Launches: plan.Launches{TargetVersion: plan.NewVersion, TargetImage: "projects/p/global/images/img-2"}}},
		{name: "--image the template has", scene: regional(), target: plan.CloudTarget{Image: "img-1"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng"}, Launches: plan.Launches{TargetVersion: "t-v1", TargetImage: "projects/p/global/images/img-1"}}},
		{name: "--instance-template", scene: kops(), target: plan.CloudTarget{Version: "projects/p/global/instanceTemplates/t-v2"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-a,ng-b"}, Launches: plan.Launches{TargetVersion: "t-v2", TargetImage: "projects/p/global/images/img-2"}}},
		{name: "--mig names a regional group", scene: regional(), target: plan.CloudTarget{Group: "ng"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng", GroupKind: "regional managed instance group"}}},
		{name: "--mig names zonal groups", scene: kops(), target: plan.CloudTarget{Group: "ng-a,ng-b"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-a,ng-b", GroupKind: "zonal managed instance groups"}}},
		{name: "--mig by URL", scene: kops(), target: plan.CloudTarget{Group: "projects/p/zones/us-central1-b/instanceGroupManagers/ng-b"},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-b", GroupKind: "zonal managed instance group"}}},
		{name: "a node whose instance is gone, in a zone a group covers", scene: withGoneNode(kops(), "ng-a-x", "us-central1-a"),
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-a,ng-b", GroupKind: "zonal managed instance groups"}}},
		{name: "an excluded green", scene: kops(), target: plan.CloudTarget{Exclude: []string{"ng-b"}},
			want: plan.CloudGroup{GroupID: plan.GroupID{Group: "ng-a", GroupKind: "zonal managed instance group"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, cg, p, err := tc.scene.open(t, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			checkGroup(t, cg, tc.want)
			if !strings.Contains(cg.LaunchesAfter, tc.after) {
				t.Errorf("launches after %q, want %q in it", cg.LaunchesAfter, tc.after)
			}
			if _, isRegional := p.(RegionalNodeGroup); isRegional != (tc.want.GroupKind == "regional managed instance group") && tc.want.GroupKind != "" {
				t.Errorf("provider %T for %s", p, tc.want.GroupKind)
			}
		})
	}
}

// checkGroup compares the fields of want that are set.
func checkGroup(t *testing.T, cg *plan.CloudGroup, want plan.CloudGroup) {
	t.Helper()
	for _, f := range []struct{ name, got, want string }{
		{"name", cg.Group, want.Group}, {"group kind", cg.GroupKind, want.GroupKind},
		{"current version", cg.CurrentVersion, want.CurrentVersion}, {"target version", cg.TargetVersion, want.TargetVersion},
		{"target image", cg.TargetImage, want.TargetImage}, {"rebalance", cg.Rebalance, want.Rebalance},
	} {
		if f.want != "" && f.got != f.want {
			t.Errorf("%s %q, want %q", f.name, f.got, f.want)
		}
	}
	if want.Sizes != (plan.Sizes{}) && cg.Sizes != want.Sizes {
		t.Errorf("sizes %+v, want %+v", cg.Sizes, want.Sizes)
	}
	if !cg.TargetSizeOnly { // a MIG has no min or max to name
		t.Error("TargetSizeOnly false for a managed instance group")
	}
	if len(cg.Nodes) == 0 || cg.Green == "" || cg.Provider != Name {
		t.Errorf("nodes %v, green %q, provider %q", cg.Nodes, cg.Green, cg.Provider)
	}
	// Each machine launched when instances.list says Compute created it:
	// the estimates measure a join from there.
	created, _ := time.Parse(time.RFC3339, instanceCreated)
	for node, m := range cg.Nodes {
		if !m.Launched.Equal(created) {
			t.Errorf("node %q: machine launched %v, want its instance's creationTimestamp %v", node, m.Launched, created)
		}
	}
}

// TestOpenRefuses: what cannot be one node group, or names what is not
// there, is refused as bad input (exit 2) naming the object and the flag.
func TestOpenRefuses(t *testing.T) {
	for _, tc := range openRefusals() {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := tc.scene().open(t, tc.target)
			var e *Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &e) || e.Input() != tc.input {
				t.Fatalf("got %v, want %q (input %v)", err, tc.wantErr, tc.input)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v is not %v", err, tc.is)
			}
		})
	}
}

// openRefusal is a scene Open refuses, with the error's words, whether it
// is bad input, and the error behind it.
type openRefusal struct {
	name    string
	scene   func() *scene
	target  plan.CloudTarget
	wantErr string
	input   bool
	is      error
}

func openRefusals() []openRefusal { return append(groupRefusals(), targetRefusals()...) }

// groupRefusals are of the groups found.
func groupRefusals() []openRefusal {
	return []openRefusal{
		{name: "a GKE node pool", scene: func() *scene {
			s := kops()
			s.nodes[0].Labels = map[string]string{gkeNodePoolLabel: "pool-1"}
			return s
		}, wantErr: `belongs to GKE node pool "pool-1", which GKE upgrades itself; use --provider gke`, input: true, is: cloud.ErrManaged},
		{name: "two projects", scene: func() *scene {
			s := kops()
			s.nodes[1].Spec.ProviderID = "gce://q/us-central1-b/ng-b-b"
			return s
		}, wantErr: `projects "p" and "q"`, input: true},
		{name: "no gce provider IDs", scene: func() *scene {
			s := kops()
			for i := range s.nodes {
				s.nodes[i].Spec.ProviderID = "aws:///us-east-1a/i-1"
			}
			return s
		}, wantErr: "no gce:// provider IDs", input: true},
		{name: "an instance not found", scene: func() *scene {
			s := kops()
			delete(s.routes, "GET projects/p/zones/us-central1-a/instances/ng-a-a")
			return s
		}, wantErr: `instance "ng-a-a" not found in project "p", zone "us-central1-a"`, input: true},
		{name: "a node whose instance is gone, alone in its zone", scene: func() *scene {
			return withGoneNode(kops(), "ng-c-c", "us-central1-c")
		}, wantErr: `instance "ng-c-c" not found in project "p", zone "us-central1-c"`, input: true},
		{name: "an instance of no group beside others", scene: func() *scene {
			s := kops()
			s.routes["GET projects/p/zones/us-central1-a/instances/ng-a-a"] = &compute.Instance{Name: "ng-a-a"}
			return s
		}, wantErr: `instances ng-a-a belong to no managed instance group`, input: true},
		{name: "no group at all", scene: func() *scene {
			s := regional()
			for _, in := range []string{"ng-a", "ng-b"} {
				s.routes["GET projects/p/zones/us-central1-"+in[3:]+"/instances/"+in] = &compute.Instance{Name: in}
			}
			return s
		}, wantErr: "belong to no managed instance group; use --mig", input: true, is: cloud.ErrNoGroup},
		{name: "--mig not found", scene: kops, target: plan.CloudTarget{Group: "ng-x"}, wantErr: `"ng-x" not found in region "us-central1" or zones us-central1-a, us-central1-b`, input: true, is: cloud.ErrGroupNotFound},
		{name: "--mig URL not found", scene: kops, target: plan.CloudTarget{Group: "projects/p/zones/us-central1-a/instanceGroupManagers/ng-x"}, wantErr: "not found; check --mig", input: true, is: cloud.ErrGroupNotFound},
		{name: "--mig of another project", scene: kops, target: plan.CloudTarget{Group: "projects/q/zones/us-central1-a/instanceGroupManagers/ng-a"}, wantErr: `is in project "q"`, input: true},
	}
}

// targetRefusals are of the templates and images.
func targetRefusals() []openRefusal {
	return []openRefusal{
		{name: "--image not found", scene: regional, target: plan.CloudTarget{Image: "img-9"}, wantErr: `image "img-9" not found in project "p"; check --image`, input: true},
		{name: "--instance-template not found", scene: regional, target: plan.CloudTarget{Version: "t-9"}, wantErr: `instance template "t-9" not found in project "p"; check --instance-template`, input: true},
		{name: "a regional template", scene: func() *scene {
			s := regional()
			s.routes["GET "+ngPath].(*compute.InstanceGroupManager).InstanceTemplate = "projects/p/regions/us-central1/instanceTemplates/t-r"
			return s
		}, wantErr: "uses regional instance template", input: true},
		{name: "groups of different templates", scene: func() *scene {
			s := kops()
			s.routes["GET projects/p/zones/us-central1-b/instanceGroupManagers/ng-b"].(*compute.InstanceGroupManager).InstanceTemplate = "projects/p/global/instanceTemplates/t-v2"
			return s
		}, wantErr: `launch different instance templates ("t-v1" and "t-v2")`, input: true},
		{name: "a copy's name taken by another template", scene: func() *scene {
			s := regional()
			s.routes["GET projects/p/global/instanceTemplates/"+CopyName("t-v1", "projects/p/global/images/img-2")] = &compute.InstanceTemplate{Name: "x", Properties: &compute.InstanceProperties{}}
			return s
		}, target: plan.CloudTarget{Image: "img-2"}, wantErr: "exists but is not a copy of", input: true},
		{name: "the API failing", scene: func() *scene {
			s := regional()
			s.routes["GET projects/p/regions/us-central1/autoscalers"] = &apiErr{http.StatusForbidden, "forbidden"}
			return s
		}, wantErr: `cannot list the autoscalers of regions/us-central1: 403`},
	}
}
