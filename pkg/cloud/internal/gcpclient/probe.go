// Package gcpclient is what the Google Cloud providers (gce, gke) share
// about their API clients: retries of what Google documents as transient
// (retry.go), and the permission probe through Resource Manager
// (probe.go).
package gcpclient

import (
	"context"
	"errors"
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

// Probe asks Resource Manager which of the calls' permissions the caller
// has on the project (projects.testIamPermissions, v1: "There are no
// permissions required for making this API call",
// https://cloud.google.com/resource-manager/reference/rest/v1/projects/testIamPermissions).
// opts are the provider's client options (credentials); a refusal to
// answer (403: the API disabled, an organisation policy) is CannotAsk, a
// warning; another failure is an error.
func Probe(ctx context.Context, project, providerEndpoint, policy string, opts []option.ClientOption, calls []Call) (*plan.Permissions, error) {
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
	out.Missing = missing(calls, resp.Permissions)
	return out, nil
}

// missing are the calls whose permission was not granted, one entry per
// permission and capability, naming every call that needs it.
func missing(calls []Call, granted []string) []plan.MissingPermission {
	var out []plan.MissingPermission
	for _, c := range calls {
		if slices.Contains(granted, c.Permission) {
			continue
		}
		i := slices.IndexFunc(out, func(m plan.MissingPermission) bool { return m.Permission == c.Permission && m.For == c.For })
		if i < 0 {
			out = append(out, plan.MissingPermission{Permission: c.Permission, Call: c.Method, For: c.For})
			continue
		}
		if !strings.Contains(", "+out[i].Call+",", ", "+c.Method+",") {
			out[i].Call += ", " + c.Method
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
