package gcefake

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcpiam"
)

const (
	nodeSA     = "nodes@sim-project.iam.gserviceaccount.com"
	hostSubnet = "projects/host-project/regions/us-central1/subnetworks/nodes"
)

// sceneWithAccount is newScene's group on template tmpl-sa, which runs as
// nodeSA on a Shared VPC host's subnetwork; tmpl-sa-new is its like with
// img-new.
func sceneWithAccount(t *testing.T) (*Server, string) {
	t.Helper()
	srv, _, _ := newScene(t, 0, Opportunistic)
	srv.RegisterSubnetwork("host-project", "us-central1", "nodes")
	for name, img := range map[string]string{"tmpl-sa": "img-old", "tmpl-sa-new": "img-new"} {
		must(t, srv.CreateTemplate(TemplateSpec{Project: project, Name: name, ImageProject: project, Image: img, ServiceAccount: nodeSA, Subnetwork: hostSubnet}))
	}
	key, err := srv.CreateGroup(GroupSpec{Project: project, Name: "sa", Zone: "us-central1-a", Template: "tmpl-sa", Size: 1})
	must(t, err)
	waitStable(t, srv, key)
	return srv, key
}

// TestResourceLevelGrants: the provider's permission probe asks the node
// service account, the subnetwork, the template --instance-template names
// and the group's instance group for what the project does not grant; a
// grant on the resource alone passes, none anywhere is named with the
// resource, and the fake's own calls hold the same grants.
func TestResourceLevelGrants(t *testing.T) {
	all, _ := rolePermissions(t)
	tmpl := "projects/" + project + "/global/instanceTemplates/tmpl-sa-new"
	group := "projects/" + project + "/zones/us-central1-a/instanceGroups/sa"
	for _, tc := range []struct {
		name        string
		target      plan.CloudTarget
		notOnProj   []string
		grantOn     map[string][]string
		wantMissing string // "": none
	}{
		{"actAs on the service account only", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"iam.serviceAccounts.actAs"},
			map[string][]string{gcpiam.ServiceAccount(nodeSA): {"iam.serviceAccounts.actAs"}}, ""},
		{"actAs nowhere", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"iam.serviceAccounts.actAs"},
			nil, `iam.serviceAccounts.actAs: new instances' service account on service account "` + nodeSA + `"`},
		{"subnetworks.use on the host's subnet only", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"compute.subnetworks.use"},
			map[string][]string{hostSubnet: {"compute.subnetworks.use"}}, ""},
		{"subnetworks.use nowhere", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"compute.subnetworks.use"},
			nil, `compute.subnetworks.use: new instances' subnetwork on subnetwork "` + hostSubnet + `"`},
		{"useReadOnly on --instance-template's template only", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"compute.instanceTemplates.useReadOnly"},
			map[string][]string{tmpl: {"compute.instanceTemplates.useReadOnly"}}, ""},
		{"useReadOnly nowhere", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"compute.instanceTemplates.useReadOnly"},
			nil, `compute.instanceTemplates.useReadOnly: instanceGroupManagers.setInstanceTemplate (the target template's use) on instance template "tmpl-sa-new"`},
		{"the group's update on its instance group only", plan.CloudTarget{Version: "tmpl-sa-new"}, []string{"compute.instanceGroupManagers.update"},
			map[string][]string{group: {"compute.instanceGroupManagers.update"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, key := sceneWithAccount(t)
			srv.Grant(slices.DeleteFunc(slices.Clone(all), func(p string) bool { return slices.Contains(tc.notOnProj, p) }))
			for r, ps := range tc.grantOn {
				srv.GrantOn(r, ps...)
			}
			p := openGCE(t, srv, key, tc.target)
			perms, err := p.(cloud.PermissionProber).ProbePermissions(context.Background())
			must(t, err)
			var got []string
			for _, m := range perms.Missing {
				got = append(got, m.Permission+": "+m.Call)
			}
			if strings.Join(got, "; ") != tc.wantMissing || perms.CannotAsk != "" {
				t.Fatalf("missing %q, cannot ask %q; want missing %q", got, perms.CannotAsk, tc.wantMissing)
			}
			// The fake's own calls: setInstanceTemplate to the target.
			_, err = p.(cloud.Scaler).Setup(context.Background())
			if (err == nil) != (tc.wantMissing == "") {
				t.Errorf("setup: %v, want it refused only with a permission missing", err)
			}
		})
	}
}
