package gcefake

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// rolePermissions reads the custom role of docs/providers/gce.md: all its
// permissions, and those of its first, read-only block.
func rolePermissions(t *testing.T) (all, read []string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers", "gce.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, role, ok := strings.Cut(string(doc), "includedPermissions:\n")
	role, _, _ = strings.Cut(role, "```")
	if !ok {
		t.Fatal("docs/providers/gce.md has no includedPermissions")
	}
	inRead := true
	for line := range strings.SplitSeq(role, "\n") {
		if strings.HasPrefix(line, "# run") {
			inRead = false
		}
		if p, ok := strings.CutPrefix(line, "- "); ok {
			all = append(all, p)
			if inRead {
				read = append(read, p)
			}
		}
	}
	return all, read
}

// calledPermissions maps calls to their permissions; a method with none
// known fails the test, so a new call cannot slip past the role.
func calledPermissions(t *testing.T, calls []Call) []string {
	t.Helper()
	var out []string
	for _, c := range calls {
		p, ok := permissionOf[c.Method]
		if !ok {
			t.Errorf("the provider calls %s (%s), whose permission the test does not know: add it here and to docs/providers/gce.md", c.Method, c.HTTPMethod)
			continue
		}
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// TestRolePermitsEveryProviderCall drives every call the gce provider
// makes, through planning and running, against the fake, and checks the
// documented role allows each, and planning only its read block.
func TestRolePermitsEveryProviderCall(t *testing.T) {
	srv, _, key := newScene(t, 3, Proactive)
	if err := srv.AddAutoscaler(key, 1, 6); err != nil {
		t.Fatal(err)
	}
	t.Setenv(gce.EndpointEnv, srv.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	ctx := context.Background()
	g, _ := srv.Group(key)
	var nodes []corev1.Node
	var objs []*corev1.Node
	for _, in := range g.Instances {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name, UID: types.UID("uid-" + in.Name)}, Spec: corev1.NodeSpec{ProviderID: ProviderID(in)}}
		nodes, objs = append(nodes, n), append(objs, &n)
	}
	kube := fake.NewClientset(&nodes[0], &nodes[1], &nodes[2])
	c, _ := cloud.Lookup(gce.Name)
	var bg cloud.BlueGreen
	for _, target := range []plan.CloudTarget{
		{Version: "tmpl-new"},
		{Group: "ng", Image: "projects/sim-project/global/images/family/node"},
		{Image: "img-new", Strategy: "blue-green"},
	} {
		cg, b, err := c.Open(ctx, kube, nodes, target)
		if err != nil || cg.Rebalance != gce.Redistribution {
			t.Fatalf("open %+v: %+v %v", target, cg, err)
		}
		var ok bool
		if bg, ok = b.(cloud.BlueGreen); !ok {
			t.Fatalf("open %+v: the provider of a single MIG makes no green group", target)
		}
	}
	if err := bg.CheckQuota(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := bg.(cloud.CapacityProver).ProveCapacity(ctx, 1); err != nil || len(c.Unprovable) > 0 {
		t.Fatalf("prove capacity: %+v %v", c, err)
	}
	planCalls := srv.Calls()
	runAll(t, ctx, srv, key, bg, objs)
	all, read := rolePermissions(t)
	for _, p := range calledPermissions(t, planCalls) {
		if !slices.Contains(read, p) {
			t.Errorf("plan needs %s, not in the role's read-only block", p)
		}
	}
	for _, p := range calledPermissions(t, srv.Calls()[len(planCalls):]) {
		if !slices.Contains(all, p) {
			t.Errorf("run needs %s, not in docs/providers/gce.md", p)
		}
	}
}

// runAll makes every call a run makes, checking each does its part.
func runAll(t *testing.T, ctx context.Context, srv *Server, key string, bg cloud.BlueGreen, nodes []*corev1.Node) {
	t.Helper()
	u := bg.(cloud.SelfUpdater)
	g := bg.(cloud.Scaler) // blue/green alone needs only a Pool
	r := bg.(cloud.Rebalancer)
	d := bg.(cloud.Departures)
	was, err := u.SelfUpdates(ctx)
	must(t, err)
	must(t, u.HoldUpdates(ctx))
	version, err := g.Setup(ctx)
	must(t, err)
	must(t, g.SetDesiredAndMax(ctx, 4, 4))
	waitStable(t, srv, key)
	_, _, err = bg.Machines(ctx, nodes)
	must(t, err)
	_, err = r.RebalanceHeld(ctx)
	must(t, err)
	_, err = r.RebalanceZones(ctx)
	must(t, err)
	must(t, r.HoldRebalance(ctx))
	id, err := d.MachineOf(ctx, nodes[0].Name)
	must(t, err)
	must(t, g.Shrink(ctx, nodes[0].Name))
	must(t, g.RemoveNode(ctx, nodes[1].Name))
	must(t, g.RemoveNode(ctx, nodes[2].Name)) // the last on the old template
	_, err = d.Leaving(ctx, []string{id})
	must(t, err)
	must(t, r.ReleaseRebalance(ctx))
	waitStable(t, srv, key)
	note, err := u.RestoreUpdates(ctx, was)
	if err != nil || note != "" {
		t.Fatalf("restore: %q %v", note, err)
	}
	sizes, err := bg.Sizes(ctx)
	must(t, err)
	_, err = bg.PrepareTarget(ctx)
	must(t, err)
	green := bg.GreenName(version)
	must(t, bg.CreateGreen(ctx, green, version, sizes))
	must(t, bg.CreateGreen(ctx, green, version, sizes)) // a re-run finds it
	_, err = bg.GroupSizes(ctx, green)
	must(t, err)
	must(t, bg.SetGroupSizes(ctx, green, plan.Sizes{Desired: 1}))
	must(t, bg.DeleteGroup(ctx, green))
	if g, _ := srv.Group(key); g.UpdateType != Proactive || g.Redistribution != Proactive || g.TargetSize != 3 {
		t.Errorf("after the run's calls: %+v", g)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
