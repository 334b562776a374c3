// Package gcpclient is what the Google Cloud providers (gce, gke) share
// about their API clients: retries of what Google documents as transient
// (retry.go), and the permission probe through Resource Manager
// (probe.go).
package gcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcperr"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// ResourceManagerEnv points the permission probe at another Resource
// Manager endpoint. Unset while a provider's own endpoint is set (a local
// fake), the probe asks that endpoint's root, where the fakes of sim/
// answer projects.testIamPermissions.
const ResourceManagerEnv = "NODEUPGRADE_RESOURCEMANAGER_ENDPOINT"

// Call is an API method a provider calls and the IAM permission Google
// checks for it; For is the capability whose strategies make the call, 0
// when every run makes it (see plan.MissingPermission).
type Call struct {
	Method, Permission string
	For                plan.Capability
}

// probeEndpoint is where the probe asks: ResourceManagerEnv, else the root
// of the provider's endpoint when one is set, else "" (Google's).
func probeEndpoint(providerEndpoint string) string {
	if e := os.Getenv(ResourceManagerEnv); e != "" {
		return e
	}
	if providerEndpoint == "" {
		return ""
	}
	u, err := url.Parse(providerEndpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/"
}

// Resource is one the run uses whose own IAM policy can grant some of
// its permissions (a service account, a subnetwork, an instance
// template): its testIamPermissions answers what the caller holds on it,
// granted there or inherited from its project, folder or organisation
// ("Returns permissions that a caller has on the specified resource").
type Resource struct {
	// What names it in messages: service account "sa@p.iam.gserviceaccount.com".
	What string
	// Project is the project it lives in, "" when unknown: the run
	// project's grant reaches it only there (a Shared VPC host's subnet
	// is in another).
	Project string
	// Permissions are those of the calls Google checks on it.
	Permissions []string
	// Test is its testIamPermissions: which of permissions the caller
	// holds on it.
	Test func(ctx context.Context, permissions []string) ([]string, error)
}

// Probe asks Resource Manager which of the calls' permissions the caller
// has on the project (projects.testIamPermissions, v1: "There are no
// permissions required for making this API call",
// https://cloud.google.com/resource-manager/reference/rest/v1/projects/testIamPermissions),
// then each resource for its permissions the project's answer does not
// settle (see Resource). opts are the provider's client options
// (credentials); a refusal to answer (403: the API disabled, an
// organisation policy) is CannotAsk, a warning; another failure of the
// project's is an error. A resource that cannot be asked leaves its
// permissions untold, a warning in CannotAsk: only a denial blocks.
func Probe(ctx context.Context, project, providerEndpoint, policy string, opts []option.ClientOption, calls []Call, resources ...Resource) (*plan.Permissions, error) {
	if ep := probeEndpoint(providerEndpoint); ep != "" {
		opts = append(slices.Clip(opts), option.WithEndpoint(ep))
	}
	svc, err := crm.NewService(ctx, opts...)
	if err != nil {
		return nil, gcperr.Wrap(err, true, "make a Resource Manager client")
	}
	var asked []string
	for _, c := range calls {
		if !slices.Contains(asked, c.Permission) {
			asked = append(asked, c.Permission)
		}
	}
	slices.Sort(asked)
	resp, err := svc.Projects.TestIamPermissions(project, &crm.TestIamPermissionsRequest{Permissions: asked}).Context(ctx).Do()
	out := &plan.Permissions{Policy: policy}
	if code := apiCode(err); code == http.StatusForbidden || code == http.StatusNotFound {
		out.CannotAsk = gcperr.Wrap(err, false, "test the caller's permissions on project %q (projects.testIamPermissions)", project).Error()
		return out, nil
	}
	if err != nil {
		return nil, gcperr.Wrap(err, true, "test the caller's permissions on project %q", project)
	}
	denied := map[string]string{}
	for _, p := range asked {
		if !slices.Contains(resp.Permissions, p) {
			denied[p] = ""
		}
	}
	var untold []string
	for _, r := range resources {
		untold = append(untold, askResource(ctx, project, r, asked, resp.Permissions, denied)...)
	}
	out.Missing = missing(calls, denied)
	out.CannotAsk = strings.Join(untold, "; ")
	return out, nil
}

// askResource settles r's permissions among asked that the project's
// answer (granted) does not: one the project granted is r's too when r
// is in the project; the others r's testIamPermissions answers, denied
// (by the resource's description) or allowed. It returns why r could not
// be asked, if it could not: its permissions are then untold, not denied.
func askResource(ctx context.Context, project string, r Resource, asked, granted []string, denied map[string]string) []string {
	var need []string
	for _, p := range r.Permissions {
		if slices.Contains(asked, p) && !slices.Contains(need, p) && (r.Project != project || !slices.Contains(granted, p)) {
			need = append(need, p)
		}
	}
	if len(need) == 0 {
		return nil
	}
	slices.Sort(need)
	got, err := r.Test(ctx, need)
	for _, p := range need {
		switch {
		case err != nil || slices.Contains(got, p):
			if denied[p] == "" {
				delete(denied, p) // the project's denial does not settle it
			}
		case denied[p] == "":
			denied[p] = " on " + r.What
		default:
			denied[p] += ", " + r.What
		}
	}
	if err != nil {
		return []string{fmt.Sprintf("cannot tell whether the caller holds %s on %s: %s", strings.Join(need, ", "), r.What, gcperr.OneLine(err.Error()))}
	}
	return nil
}

// missing are the calls whose permission was denied, one entry per
// permission and capability, naming every call that needs it and where
// the permission was refused (denied: "" for the project, " on RESOURCE"
// for a resource's).
func missing(calls []Call, denied map[string]string) []plan.MissingPermission {
	var out []plan.MissingPermission
	for _, c := range calls {
		where, ok := denied[c.Permission]
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(m plan.MissingPermission) bool { return m.Permission == c.Permission && m.For == c.For })
		if i < 0 {
			out = append(out, plan.MissingPermission{Permission: c.Permission, Call: c.Method + where, For: c.For})
			continue
		}
		calls := strings.TrimSuffix(out[i].Call, where)
		if !strings.Contains(", "+calls+",", ", "+c.Method+",") {
			out[i].Call = calls + ", " + c.Method + where
		}
	}
	return out
}

// apiCode is the HTTP code of the API's answer, 0 for another error.
func apiCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}
