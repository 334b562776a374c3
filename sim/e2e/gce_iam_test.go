package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

// TestGCEActAsOnTheServiceAccountOnly: a least-privilege caller, granted
// docs/providers/gce.md's role on the project but iam.serviceAccounts.actAs
// only on the node service account (roles/iam.serviceAccountUser there,
// the documented grant), passes the permission check and runs to the end;
// without that grant, check names actAs on the account as the blocker.
func TestGCEActAsOnTheServiceAccountOnly(t *testing.T) {
	t.Parallel()
	const name = "perm-gce-sa"
	const sa = "nodes@" + gceProject + ".iam.gserviceaccount.com"
	srv, err := gcefake.StartWithKube(context.Background(), client, gcefake.Options{Project: gceProject, LaunchDelay: 500 * time.Millisecond}, gcefake.NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.RegisterImage(gceProject, "img-old", "node")
	srv.RegisterImage(gceProject, "img-new", "node")
	if err := srv.CreateTemplate(gcefake.TemplateSpec{Project: gceProject, Name: name + "-v1", ImageProject: gceProject, Image: "img-old", KubeLabels: map[string]string{kopsKey: name}, ServiceAccount: sa}); err != nil {
		t.Fatal(err)
	}
	g := &gceGroup{name: name, srv: srv}
	g.addMIG(t, gcefake.GroupSpec{Project: gceProject, Name: name, Region: "us-central1", Zones: gceZones, Template: name + "-v1", Size: 2})
	g.ready(t, nil)
	var role []string
	for _, p := range gceRole(t) {
		if p != "iam.serviceAccounts.actAs" {
			role = append(role, p)
		}
	}
	srv.Grant(role)

	r := g.run(t, "check", name, "--image", "img-new")
	if r.code != nodeupgrade.ExitBlockers || !strings.Contains(r.stdout, "missing-permission") || !strings.Contains(r.stdout, `iam.serviceAccounts.actAs`) || !strings.Contains(r.stdout, sa) {
		t.Fatalf("without actAs anywhere: want exit %d and missing-permission naming actAs on %s: %s", nodeupgrade.ExitBlockers, sa, r)
	}
	g.assertUnchanged(t, 2)

	srv.GrantOn(gcpiam.ServiceAccount(sa), "iam.serviceAccounts.actAs")
	r = g.run(t, "run", name, "--image", "img-new", "--post-drain-wait", "0s", "--yes")
	if r.code != nodeupgrade.ExitOK || strings.Contains(r.stdout+r.stderr, "permissions-unchecked") {
		t.Fatalf("actAs on the account: want exit %d, permissions checked: %s", nodeupgrade.ExitOK, r)
	}
	g.assertFinished(t, 2)
}

// gceRole is the custom role of docs/providers/gce.md.
func gceRole(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "providers", "gce.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, role, _ := strings.Cut(string(doc), "includedPermissions:\n")
	role, _, _ = strings.Cut(role, "```")
	var out []string
	for line := range strings.SplitSeq(role, "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/providers/gce.md has no includedPermissions")
	}
	return out
}
