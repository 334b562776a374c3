package gce

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	compute "google.golang.org/api/compute/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

var (
	ngA = MIG{Project: "p", Zone: "us-central1-a", Name: "ng-a"}
	ngB = MIG{Project: "p", Zone: "us-central1-b", Name: "ng-b"}
)

// nodeGroup is the scene's node group of migs, its nodes in a fake
// cluster.
func (s *scene) nodeGroup(t *testing.T, migs ...MIG) (*api, *NodeGroup) {
	t.Helper()
	a, p := newAPI(t, s.routes)
	var objs []runtime.Object
	for i := range s.nodes {
		objs = append(objs, &s.nodes[i])
	}
	return a, &NodeGroup{API: p, Client: fake.NewClientset(objs...), MIGs: migs}
}

// igm is the scene's group at path.
func (s *scene) igm(path string) *compute.InstanceGroupManager {
	return s.routes["GET "+path].(*compute.InstanceGroupManager)
}

// TestSetup: every group is pointed at the target, the first last, and a
// group on it already is left alone.
func TestSetup(t *testing.T) {
	copyURL := "projects/p/global/instanceTemplates/" + CopyName("t-v1", "projects/p/global/images/img-2")
	setA, setB := "POST "+ngA.String()+"/setInstanceTemplate", "POST "+ngB.String()+"/setInstanceTemplate"
	for _, tc := range []struct {
		name, image, template string
		bOnTarget             bool
		want                  []string // the setInstanceTemplate calls, in order
		wantTmpl              string
	}{
		{name: "a copy for --image", image: "img-2", want: []string{setB, setA}, wantTmpl: copyURL},
		{name: "--instance-template", template: "t-v2", want: []string{setB, setA}, wantTmpl: "projects/p/global/instanceTemplates/t-v2"},
		{name: "a re-run: the last group is on it", template: "t-v2", bOnTarget: true, want: []string{setA}, wantTmpl: "projects/p/global/instanceTemplates/t-v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := kops()
			s.routes["POST projects/p/global/instanceTemplates"], s.routes[setA], s.routes[setB] = done, done, done
			if tc.bOnTarget {
				s.igm(ngB.String()).InstanceTemplate = "projects/p/global/instanceTemplates/t-v2"
			}
			a, n := s.nodeGroup(t, ngA, ngB)
			n.Image, n.Template = tc.image, tc.template
			got, err := n.Setup(context.Background())
			if err != nil || !strings.HasSuffix(tc.wantTmpl, "/"+got) {
				t.Fatalf("Setup = %q, %v; want %s", got, err, tc.wantTmpl)
			}
			var sets []string
			for _, c := range a.calls {
				if strings.HasSuffix(c, "/setInstanceTemplate") {
					sets = append(sets, c)
				}
			}
			if !slices.Equal(sets, tc.want) || !strings.Contains(a.body(tc.want[0]), tc.wantTmpl) {
				t.Errorf("set %v (%s), want %v to %s", sets, a.body(tc.want[0]), tc.want, tc.wantTmpl)
			}
		})
	}
}

// sizesSent records the target sizes resize calls send, by group.
type sizesSent struct {
	mu   sync.Mutex
	sent map[string]string
}

func (r *sizesSent) route(s *scene, m MIG) {
	s.routes["POST "+m.String()+"/resize"] = func(q url.Values) any {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sent[m.Name] = q.Get("size")
		return done
	}
}

// TestResizeSpreadsOverZonalGroups: a raise goes first to the zone the
// surge works in, up to its old instances, then to the fewest; a cut
// comes off the most; no change sends nothing.
func TestResizeSpreadsOverZonalGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total int32
		want  map[string]string
	}{
		{name: "one more: the zone worked on", total: 3, want: map[string]string{"ng-a": "2"}},
		{name: "two more: then the fewest", total: 4, want: map[string]string{"ng-a": "2", "ng-b": "2"}},
		{name: "a cut", total: 1, want: map[string]string{"ng-a": "0"}},
		{name: "no change", total: 2, want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := kops()
			for _, m := range []MIG{ngA, ngB} {
				s.igm(m.String()).InstanceTemplate = "projects/p/global/instanceTemplates/t-v2"
			}
			// ng-b's instance is on the new template already; ng-a's not.
			s.routes["POST "+ngB.String()+"/listManagedInstances"].(*compute.InstanceGroupManagersListManagedInstancesResponse).ManagedInstances[0].Version.InstanceTemplate = "t-v2"
			r := &sizesSent{sent: map[string]string{}}
			r.route(s, ngA)
			r.route(s, ngB)
			_, n := s.nodeGroup(t, ngA, ngB)
			if err := n.SetDesiredAndMax(context.Background(), tc.total, tc.total); err != nil {
				t.Fatal(err)
			}
			if len(r.sent) != len(tc.want) {
				t.Errorf("resized %v, want %v", r.sent, tc.want)
			}
			for g, size := range tc.want {
				if r.sent[g] != size {
					t.Errorf("resized %v, want %v", r.sent, tc.want)
				}
			}
			if sizes, err := n.Sizes(context.Background()); err != nil || sizes != (plan.Sizes{Desired: 2, Max: 2}) {
				t.Errorf("Sizes = %+v, %v", sizes, err)
			}
		})
	}
}

// TestRemoveNode: the instance is recreated under its name and its node
// deleted; a node gone already is done; an instance outside the groups
// is an error.
func TestRemoveNode(t *testing.T) {
	recreate := "POST " + ngA.String() + "/recreateInstances"
	s := kops()
	s.routes[recreate] = done
	a, n := s.nodeGroup(t, ngA, ngB)
	ctx := context.Background()
	if err := n.RemoveNode(ctx, "ng-a-a"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.body(recreate), `"projects/p/zones/us-central1-a/instances/ng-a-a"`) {
		t.Errorf("recreated %q", a.body(recreate))
	}
	if _, err := n.Client.CoreV1().Nodes().Get(ctx, "ng-a-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node ng-a-a after its removal: %v, want deleted", err)
	}
	a.calls = nil
	if err := n.RemoveNode(ctx, "ng-a-a"); err != nil || a.called(recreate) {
		t.Errorf("removing a node gone already: %v, calls %v", err, a.calls)
	}
	n.MIGs = []MIG{ngA}
	if err := n.RemoveNode(ctx, "ng-b-b"); err == nil || !strings.Contains(err.Error(), `instance "ng-b-b" of node "ng-b-b" is in none of managed instance groups ng-a`) {
		t.Errorf("removing a node of another group: %v", err)
	}
}

// TestShrinkAndDepartures: Shrink deletes the instance (not one being
// deleted already); MachineOf names the VM, and Leaving says when it, or
// the VM a recreation replaced, is gone.
func TestShrinkAndDepartures(t *testing.T) {
	del := "POST " + ngA.String() + "/deleteInstances"
	s := kops()
	s.routes[del] = done
	a, n := s.nodeGroup(t, ngA, ngB)
	ctx := context.Background()
	id, err := n.MachineOf(ctx, "ng-a-a")
	if err != nil || id != "ng-a-a#11" {
		t.Fatalf("MachineOf = %q, %v", id, err)
	}
	if err := n.Shrink(ctx, "ng-a-a"); err != nil || !strings.Contains(a.body(del), "instances/ng-a-a") {
		t.Fatalf("Shrink: %v, sent %q", err, a.body(del))
	}
	mis := s.routes["POST "+ngA.String()+"/listManagedInstances"].(*compute.InstanceGroupManagersListManagedInstancesResponse)
	mis.ManagedInstances[0].CurrentAction = "DELETING"
	a.calls = nil
	if err := n.Shrink(ctx, "ng-a-a"); err != nil || a.called(del) {
		t.Errorf("Shrink of an instance being deleted: %v, calls %v", err, a.calls)
	}
	left, err := n.Leaving(ctx, []string{id, "ng-b-b#11", "ng-b-b#10", "ng-x#1"})
	if err != nil {
		t.Fatal(err)
	}
	if d := left[id]; d.Gone || d.Lifecycle != "DELETING" {
		t.Errorf("ng-a-a: %+v, want DELETING", d)
	}
	if !left["ng-x#1"].Gone || !left["ng-b-b#10"].Gone || left["ng-b-b#11"].Gone {
		t.Errorf("Leaving = %+v: want the missing and the replaced VM gone, the running one not", left)
	}
	m := plan.Machine{Version: "t-v2"}
	if !n.Current(m, "t-v2") || n.Current(m, "t-v1") || n.Current(plan.Machine{Version: "t-v2", State: plan.MachineLeaving}, "t-v2") {
		t.Error("Current is not the version of a machine staying")
	}
}
