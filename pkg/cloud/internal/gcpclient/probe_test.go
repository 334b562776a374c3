package gcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestProbeEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, env, provider, want string
	}{
		{name: "Google's", want: ""},
		{name: "a local endpoint's root", provider: "http://127.0.0.1:8085/compute/v1/", want: "http://127.0.0.1:8085/"},
		{name: "the environment first", env: "http://rm.test/", provider: "http://127.0.0.1:8085/", want: "http://rm.test/"},
		{name: "no host", provider: "compute/v1", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ResourceManagerEnv, tc.env)
			if got := probeEndpoint(tc.provider); got != tc.want {
				t.Errorf("probeEndpoint(%q) = %q, want %q", tc.provider, got, tc.want)
			}
		})
	}
}

// TestProbe: the caller's permissions are asked of Resource Manager once
// each, sorted; a missing one is named with every call that needs it, per
// capability; a refusal to answer (403, 404) is a warning; another failure
// an error.
func TestProbe(t *testing.T) {
	calls := []Call{
		{Method: "instanceGroupManagers.get", Permission: "compute.instanceGroupManagers.get"},
		{Method: "instanceGroupManagers.resize", Permission: "compute.instanceGroupManagers.update"},
		{Method: "instanceGroupManagers.patch", Permission: "compute.instanceGroupManagers.update"},
		{Method: "instanceGroupManagers.patch", Permission: "compute.instanceGroupManagers.update"},
		{Method: "instanceGroupManagers.insert", Permission: "compute.instanceGroupManagers.update", For: plan.CapNewGroups},
		{Method: "instances.get", Permission: "compute.instances.get"},
	}
	asked := []string{"compute.instanceGroupManagers.get", "compute.instanceGroupManagers.update", "compute.instances.get"}
	for _, tc := range []struct {
		name      string
		code      int
		granted   []string
		missing   []plan.MissingPermission
		cannotAsk string
		wantErr   string
	}{
		{name: "all granted", code: 200, granted: asked},
		{name: "one missing, for two capabilities", code: 200, granted: []string{"compute.instances.get", "compute.instanceGroupManagers.get"}, missing: []plan.MissingPermission{
			{Permission: "compute.instanceGroupManagers.update", Call: "instanceGroupManagers.resize, instanceGroupManagers.patch"},
			{Permission: "compute.instanceGroupManagers.update", Call: "instanceGroupManagers.insert", For: plan.CapNewGroups},
		}},
		{name: "the API refuses to answer", code: 403, cannotAsk: `cannot test the caller's permissions on project "p" (projects.testIamPermissions): 403 m`},
		{name: "no such project to ask about", code: 404, cannotAsk: `cannot test the caller's permissions on project "p" (projects.testIamPermissions): 404 m`},
		{name: "a failure", code: 400, wantErr: `cannot test the caller's permissions on project "p": 400 m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			url := resourceManager(t, tc.code, tc.granted, &got)
			t.Setenv(ResourceManagerEnv, "")
			perms, err := Probe(context.Background(), "p", url+"/compute/v1/", "docs/providers/gce.md#permissions", []option.ClientOption{option.WithoutAuthentication()}, calls)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Probe: %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, asked) {
				t.Errorf("asked %q, want %q", got, asked)
			}
			if !reflect.DeepEqual(perms.Missing, tc.missing) || perms.CannotAsk != tc.cannotAsk || perms.Policy != "docs/providers/gce.md#permissions" {
				t.Errorf("Probe = %+v, want missing %+v, cannot ask %q", perms, tc.missing, tc.cannotAsk)
			}
		})
	}
}

// resourceManager answers projects.testIamPermissions of project p with
// code, granting granted; asked gets the permissions asked.
func resourceManager(t *testing.T, code int, granted []string, asked *[]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Permissions []string }
		if r.Method != "POST" || r.URL.Path != "/v1/projects/p:testIamPermissions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		*asked = req.Permissions
		if code != 200 {
			w.WriteHeader(code)
			fmt.Fprint(w, googleError(code, "forbidden"))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"permissions": granted})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestProbeResources: a permission the project does not grant is asked
// of the resources that can grant it (granted there, it is allowed;
// denied, it is missing, named with the resource; not answered, untold: a
// warning, never a blocker); one the project grants is asked only of a
// resource in another project (a Shared VPC host's subnet).
func TestProbeResources(t *testing.T) {
	calls := []Call{
		{Method: "instanceGroupManagers.get", Permission: "compute.instanceGroupManagers.get"},
		{Method: "new instances' service account", Permission: "iam.serviceAccounts.actAs"},
		{Method: "new instances' subnetwork", Permission: "compute.subnetworks.use"},
	}
	refused := &googleapi.Error{Code: 403, Message: "m"}
	for _, tc := range []struct {
		name          string
		project       []string // granted on the project
		sa, subnet    []string // granted on the resource; nil: refuses to answer
		subnetProject string
		wantAsked     []string // resources asked
		missing       []plan.MissingPermission
		cannotAsk     string
	}{
		{name: "actAs on the service account only", project: []string{"compute.instanceGroupManagers.get", "compute.subnetworks.use"},
			sa: []string{"iam.serviceAccounts.actAs"}, subnet: []string{}, subnetProject: "p", wantAsked: []string{"sa"}},
		{name: "actAs nowhere", project: []string{"compute.instanceGroupManagers.get", "compute.subnetworks.use"},
			sa: []string{}, subnet: []string{}, subnetProject: "p", wantAsked: []string{"sa"},
			missing: []plan.MissingPermission{{Permission: "iam.serviceAccounts.actAs", Call: `new instances' service account on service account "sa@p"`}}},
		{name: "a host project's subnet is asked though the project grants", project: []string{"compute.instanceGroupManagers.get", "compute.subnetworks.use", "iam.serviceAccounts.actAs"},
			sa: []string{}, subnet: []string{}, subnetProject: "host", wantAsked: []string{"subnet"},
			missing: []plan.MissingPermission{{Permission: "compute.subnetworks.use", Call: `new instances' subnetwork on subnetwork "s"`}}},
		{name: "a host project's subnet that grants", project: []string{"compute.instanceGroupManagers.get", "iam.serviceAccounts.actAs"},
			sa: []string{}, subnet: []string{"compute.subnetworks.use"}, subnetProject: "host", wantAsked: []string{"subnet"}},
		{name: "a resource that does not answer: untold, the rest still blocks", project: []string{},
			sa: nil, subnet: []string{}, subnetProject: "p", wantAsked: []string{"sa", "subnet"},
			missing: []plan.MissingPermission{
				{Permission: "compute.instanceGroupManagers.get", Call: "instanceGroupManagers.get"},
				{Permission: "compute.subnetworks.use", Call: `new instances' subnetwork on subnetwork "s"`},
			},
			cannotAsk: `cannot tell whether the caller holds iam.serviceAccounts.actAs on service account "sa@p": googleapi: Error 403: m`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			url := resourceManager(t, 200, tc.project, &got)
			t.Setenv(ResourceManagerEnv, "")
			var asked []string
			res := func(name, what, project, permission string, granted []string) Resource {
				return Resource{What: what, Project: project, Permissions: []string{permission}, Test: func(_ context.Context, perms []string) ([]string, error) {
					asked = append(asked, name)
					if !reflect.DeepEqual(perms, []string{permission}) {
						t.Errorf("%s asked %q", name, perms)
					}
					if granted == nil {
						return nil, refused
					}
					return granted, nil
				}}
			}
			perms, err := Probe(context.Background(), "p", url+"/compute/v1/", "policy", []option.ClientOption{option.WithoutAuthentication()}, calls,
				res("sa", `service account "sa@p"`, "p", "iam.serviceAccounts.actAs", tc.sa),
				res("subnet", `subnetwork "s"`, tc.subnetProject, "compute.subnetworks.use", tc.subnet))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(asked, tc.wantAsked) {
				t.Errorf("asked %q, want %q", asked, tc.wantAsked)
			}
			if !reflect.DeepEqual(perms.Missing, tc.missing) || perms.CannotAsk != tc.cannotAsk {
				t.Errorf("Probe = %+v\nwant missing %+v, cannot ask %q", perms, tc.missing, tc.cannotAsk)
			}
		})
	}
}
