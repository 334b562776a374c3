package gcpclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	iam "google.golang.org/api/iam/v1"
	"google.golang.org/api/option"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcperr"
)

// ActAs is the permission to run instances as a service account, which
// Google checks on the account: granted there (roles/iam.serviceAccountUser
// on the account) or on its project
// (https://cloud.google.com/compute/docs/access/iam#the_serviceaccountuser_role).
const ActAs = "iam.serviceAccounts.actAs"

// ServiceAccount is the node service account email as a Resource for
// Probe, asked through IAM's projects.serviceAccounts.testIamPermissions
// ("projects/-/serviceAccounts/EMAIL": "Using - as a wildcard for the
// PROJECT_ID will infer the project from the account"), at
// providerEndpoint's root when one is set, as Probe asks Resource
// Manager. Its project is the one a user-made account's email names
// (NAME@PROJECT.iam.gserviceaccount.com); "" for another (the default
// compute account names a project number), which is then always asked.
func ServiceAccount(ctx context.Context, providerEndpoint string, opts []option.ClientOption, email string) Resource {
	project := ""
	if _, domain, ok := strings.Cut(email, "@"); ok {
		project, _ = strings.CutSuffix(domain, ".iam.gserviceaccount.com")
		if project == domain {
			project = ""
		}
	}
	return Resource{
		What: fmt.Sprintf("service account %q", email), Project: project, Permissions: []string{ActAs},
		Test: func(ctx context.Context, permissions []string) ([]string, error) {
			if ep := probeEndpoint(providerEndpoint); ep != "" {
				opts = append(slices.Clip(opts), option.WithEndpoint(ep))
			}
			svc, err := iam.NewService(ctx, opts...)
			if err != nil {
				return nil, gcperr.Wrap(err, true, "make an IAM client")
			}
			resp, err := svc.Projects.ServiceAccounts.TestIamPermissions("projects/-/serviceAccounts/"+email, &iam.TestIamPermissionsRequest{Permissions: permissions}).Context(ctx).Do()
			if err != nil {
				return nil, err
			}
			return resp.Permissions, nil
		},
	}
}
