package gce

import (
	"context"
	"fmt"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/gcpclient"
)

// granted is the permissions of a Compute testIamPermissions answer.
func granted(resp *compute.TestPermissionsResponse, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return resp.Permissions, nil
}

func request(permissions []string) *compute.TestPermissionsRequest {
	return &compute.TestPermissionsRequest{Permissions: permissions}
}

// instanceGroup is m's instance group, asked for the group's own
// permissions (instanceGroups.testIamPermissions, or the regional one).
func (n *NodeGroup) instanceGroup(m MIG) gcpclient.Resource {
	return gcpclient.Resource{
		What: fmt.Sprintf("managed instance group %q", m.String()), Project: m.Project,
		Permissions: []string{"compute.instanceGroupManagers.get", "compute.instanceGroupManagers.update", "compute.instanceGroupManagers.delete"},
		Test: func(ctx context.Context, permissions []string) ([]string, error) {
			if m.Regional() {
				return granted(n.API.svc.RegionInstanceGroups.TestIamPermissions(m.Project, m.Region, m.Name, request(permissions)).Context(ctx).Do())
			}
			return granted(n.API.svc.InstanceGroups.TestIamPermissions(m.Project, m.Zone, m.Name, request(permissions)).Context(ctx).Do())
		},
	}
}

// template is the instance template --instance-template names, in the
// run's project (instanceTemplates.testIamPermissions).
func (n *NodeGroup) template(name string) gcpclient.Resource {
	return gcpclient.Resource{
		What: fmt.Sprintf("instance template %q", name), Project: n.API.project,
		Permissions: []string{useTemplate, "compute.instanceTemplates.get"},
		Test: func(ctx context.Context, permissions []string) ([]string, error) {
			return granted(n.API.svc.InstanceTemplates.TestIamPermissions(n.API.project, name, request(permissions)).Context(ctx).Do())
		},
	}
}

// subnetwork is a template's subnetwork, a full or partial URL
// (projects/P/regions/R/subnetworks/S, or regions/R/subnetworks/S in the
// run's project), asked for subnetworks.use, and useExternalIp where the
// interface has an external address (subnetworks.testIamPermissions).
func (n *NodeGroup) subnetwork(url string, external bool) gcpclient.Resource {
	project, region, name := n.API.project, "", lastSegment(url)
	if p, ok := segmentAfter(url, "projects"); ok {
		project = p
	}
	region, _ = segmentAfter(url, "regions")
	perms := []string{"compute.subnetworks.use"}
	if external {
		perms = append(perms, "compute.subnetworks.useExternalIp")
	}
	return gcpclient.Resource{
		What: fmt.Sprintf("subnetwork %q", fmt.Sprintf("projects/%s/regions/%s/subnetworks/%s", project, region, name)), Project: project,
		Permissions: perms,
		Test: func(ctx context.Context, permissions []string) ([]string, error) {
			return granted(n.API.svc.Subnetworks.TestIamPermissions(project, region, name, request(permissions)).Context(ctx).Do())
		},
	}
}

// segmentAfter is the segment after the first segment key of a URL's
// path.
func segmentAfter(url, key string) (string, bool) {
	parts := strings.Split(url, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == key {
			return parts[i+1], true
		}
	}
	return "", false
}
