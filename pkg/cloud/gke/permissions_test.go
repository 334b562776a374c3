package gke

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// docPermissions reads the custom role of docs/providers/gke.md.
func docPermissions(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "providers", "gke.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, role, ok := strings.Cut(string(doc), "includedPermissions:\n")
	role, _, _ = strings.Cut(role, "```")
	if !ok {
		t.Fatal("docs/providers/gke.md has no includedPermissions")
	}
	var out []string
	for line := range strings.SplitSeq(role, "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, p)
		}
	}
	return out
}

// openPool opens the fake's pool as plan does, with a target.
func openPool(t *testing.T, opts map[string]string) *NodePool {
	t.Helper()
	_, p, err := gkeCloud{}.Open(context.Background(), nil, gkeNodes(), plan.CloudTarget{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*NodePool)
}

// driveEveryCall makes every call planning and running make.
func driveEveryCall(t *testing.T, np *NodePool) {
	t.Helper()
	ctx := context.Background()
	if _, err := np.Plan(plan.Input{Strategy: plan.StrategySurge, MaxSurge: 2, MaxUnavailable: "0"}, 2, 1); err != nil {
		t.Fatal(err)
	}
	before, err := np.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	during := before
	two := 2
	during.MaxSurge = &two
	for _, step := range []func() error{
		func() error { return np.Configure(ctx, during) },
		func() error { _, err := np.StartUpdate(ctx, false); return err },
		func() error { _, err := np.Progress(ctx, "op-2"); return err },
		func() error { return np.CancelUpdate(ctx, "op-2") },
		func() error { _, err := np.AbortAdvice(ctx, "op-2", "g"); return err },
		func() error { _, err := np.ResumeUpdate(ctx, "op-2"); return err },
		// GKE rolls back only once the resumed upgrade stopped.
		func() error { return np.waitDone(ctx, "op-3") },
		func() error { _, err := np.RollbackUpdate(ctx, "op-3"); return err },
		func() error { return np.CompleteUpdate(ctx, "op-4") },
		func() error { return np.Configure(ctx, before) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPermissionsOfEveryCall drives every call the provider makes against
// a fake that names each by its method ID, and holds the three lists to
// one another: each call has its documented permission in calls, calls
// has no method the code does not call, and the docs' role is exactly
// calls' permissions.
func TestPermissionsOfEveryCall(t *testing.T) {
	f := newFakeGKE(t)
	np := openPool(t, map[string]string{optNodeVersion: "1.31"})
	driveEveryCall(t, np)
	if _, err := np.ProbePermissions(context.Background()); err != nil {
		t.Fatal(err)
	}
	known := map[string]string{}
	var want []string
	for _, c := range calls {
		known[c.Method] = c.Permission
		if !slices.Contains(want, c.Permission) {
			want = append(want, c.Permission)
		}
	}
	made := f.called(0)
	for _, m := range made {
		if _, ok := known[m]; !ok && m != "cloudresourcemanager.projects.testIamPermissions" {
			t.Errorf("the provider calls %s, whose permission calls does not list: add it there and to docs/providers/gke.md", m)
		}
	}
	for m := range known {
		if !slices.Contains(made, m) {
			t.Errorf("calls lists %s, which the provider never called", m)
		}
	}
	slices.Sort(want)
	if got := docPermissions(t); !slices.Equal(got, want) {
		t.Errorf("docs/providers/gke.md lists %v; the calls need %v", got, want)
	}
}

func TestProbePermissions(t *testing.T) {
	f := newFakeGKE(t)
	for _, tc := range []struct {
		name    string
		opts    map[string]string
		granted []string
		fail    []int
		missing []string
		cannot  bool
	}{
		{name: "everything granted", opts: map[string]string{}},
		{name: "a read-only role", opts: map[string]string{}, granted: []string{"container.clusters.get", "container.clusters.list", "container.operations.get", "container.operations.list", "compute.instances.get"},
			missing: []string{"container.clusters.update", "container.operations.cancel"}},
		{name: "no Compute permission, cluster from the metadata", opts: map[string]string{}, granted: []string{"container.clusters.get", "container.clusters.list", "container.clusters.update", "container.operations.get", "container.operations.list", "container.operations.cancel"},
			missing: []string{"compute.instances.get"}},
		{name: "no Compute permission, cluster from the flags", opts: map[string]string{optCluster: fakeCluster, optLocation: fakeLocation},
			granted: []string{"container.clusters.get", "container.clusters.list", "container.clusters.update", "container.operations.get", "container.operations.list", "container.operations.cancel"}},
		{name: "Resource Manager refuses to answer", opts: map[string]string{}, fail: []int{403}, cannot: true},
		{name: "Resource Manager unavailable a while", opts: map[string]string{}, fail: []int{503, 503}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := openPool(t, tc.opts)
			f.mu.Lock()
			f.granted, f.fail["cloudresourcemanager.projects.testIamPermissions"] = tc.granted, tc.fail
			f.mu.Unlock()
			p, err := np.ProbePermissions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var missing []string
			for _, m := range p.Missing {
				if m.For != 0 || m.Call == "" {
					t.Errorf("missing %+v: every run needs it, and a call needs it", m)
				}
				missing = append(missing, m.Permission)
			}
			slices.Sort(missing)
			if !slices.Equal(missing, tc.missing) || (p.CannotAsk != "") != tc.cannot || p.Policy != Policy {
				t.Errorf("missing %v, cannot ask %q, policy %q; want %v, cannot ask %v", missing, p.CannotAsk, p.Policy, tc.missing, tc.cannot)
			}
		})
	}
	var _ cloud.PermissionProber = (*NodePool)(nil)
}
