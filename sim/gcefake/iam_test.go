package gcefake

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestProviderProbesPermissions: the gce provider's probe asks the fake's
// Resource Manager endpoint, and names what a role lacks with the
// capability that needs it: blue/green's group creation.
func TestProviderProbesPermissions(t *testing.T) {
	srv, _, key := newScene(t, 2, Proactive)
	t.Setenv(gce.EndpointEnv, srv.Endpoint)
	t.Setenv(gce.NoAuthEnv, "true")
	all, _ := rolePermissions(t)
	srv.Grant(slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == "compute.instanceGroupManagers.create" }))
	g, _ := srv.Group(key)
	var nodes []corev1.Node
	for _, in := range g.Instances {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.Name}, Spec: corev1.NodeSpec{ProviderID: ProviderID(in)}})
	}
	c, _ := cloud.Lookup(gce.Name)
	_, p, err := c.Open(context.Background(), fake.NewClientset(), nodes, plan.CloudTarget{Version: "tmpl-new"})
	if err != nil {
		t.Fatal(err)
	}
	perms, err := p.(cloud.PermissionProber).ProbePermissions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(perms.Missing) != 1 || perms.Missing[0].Permission != "compute.instanceGroupManagers.create" || perms.Missing[0].For != plan.CapNewGroups || perms.CannotAsk != "" {
		t.Errorf("missing %+v (cannot ask %q), want compute.instanceGroupManagers.create for blue/green", perms.Missing, perms.CannotAsk)
	}
	if got := perms.NeededBy(plan.CapRemoveNodes | plan.CapResize); len(got) != 0 {
		t.Errorf("a rolling run needs none of %+v", got)
	}
	svc, err := crm.NewService(context.Background(), option.WithEndpoint(srv.URL+"/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Projects.TestIamPermissions(srv.Project(), &crm.TestIamPermissionsRequest{Permissions: []string{"compute.*"}}).Do(); err == nil {
		t.Errorf("a wildcard was taken")
	}
}

// TestUngrantedCallsAreRefused: with Grant limiting the caller, a call
// whose documented permission is missing is refused 403 "forbidden"
// naming the permission, and changes nothing; granted calls are answered.
func TestUngrantedCallsAreRefused(t *testing.T) {
	srv, svc := startWith(t, Options{})
	srv.Grant([]string{"compute.instanceGroupManagers.get", "compute.instanceTemplates.get"})
	for _, tc := range []struct {
		name, refused string // refused: the permission named, "" if answered
		call          func() error
	}{
		{name: "get", call: func() error { _, err := svc.InstanceGroupManagers.Get(project, zones[0], "ng").Do(); return err }},
		{name: "listManagedInstances", call: func() error {
			_, err := svc.InstanceGroupManagers.ListManagedInstances(project, zones[0], "ng").Do()
			return err
		}},
		{name: "resize", refused: "compute.instanceGroupManagers.update", call: func() error {
			_, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 4).Do()
			return err
		}},
		{name: "delete", refused: "compute.instanceGroupManagers.delete", call: func() error {
			_, err := svc.InstanceGroupManagers.Delete(project, zones[0], "ng").Do()
			return err
		}},
		{name: "images.get", refused: "compute.images.get", call: func() error { _, err := svc.Images.Get(project, "img-old").Do(); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ge *googleapi.Error
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (!errors.As(err, &ge) || ge.Code != http.StatusForbidden || len(ge.Errors) != 1 || ge.Errors[0].Reason != "forbidden" || !strings.Contains(ge.Message, "'"+tc.refused+"'")):
				t.Errorf("answered %v, want 403 forbidden naming %s", err, tc.refused)
			}
		})
	}
	if g, ok := srv.Group(GroupKey(project, zones[0], "", "ng")); !ok || g.TargetSize != 2 {
		t.Errorf("the group after refused calls: %+v %v, want it at 2", g, ok)
	}
	srv.Grant(nil)
	if _, err := svc.InstanceGroupManagers.Resize(project, zones[0], "ng", 3).Do(); err != nil {
		t.Errorf("resize with every permission: %v", err)
	}
}
