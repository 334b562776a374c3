package gce

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// MIG names a managed instance group: zonal (Zone set) or regional
// (Region set).
type MIG struct {
	Project, Zone, Region, Name string
}

// Regional reports whether the group spans a region's zones.
func (m MIG) Regional() bool { return m.Region != "" }

// scope is zones/ZONE or regions/REGION.
func (m MIG) scope() string {
	if m.Regional() {
		return "regions/" + m.Region
	}
	return "zones/" + m.Zone
}

// String is the group's partial URL, as created-by names it.
func (m MIG) String() string {
	return fmt.Sprintf("projects/%s/%s/instanceGroupManagers/%s", m.Project, m.scope(), m.Name)
}

// ParseMIG reads a group's URL, full or partial
// (projects/P/zones/Z/instanceGroupManagers/N, or regions/R): what the
// created-by metadata key of a managed instance holds. The project may be
// named by number there.
func ParseMIG(url string) (MIG, bool) {
	parts := strings.Split(url, "/")
	for i := 0; i+5 < len(parts); i++ {
		if parts[i] != "projects" || parts[i+4] != "instanceGroupManagers" {
			continue
		}
		m := MIG{Project: parts[i+1], Name: parts[i+5]}
		switch parts[i+2] {
		case "zones":
			m.Zone = parts[i+3]
		case "regions":
			m.Region = parts[i+3]
		default:
			return MIG{}, false
		}
		return m, m.Name != "" && i+6 == len(parts)
	}
	return MIG{}, false
}

// getMIG reads a group; nil when there is none.
func (p *Client) getMIG(ctx context.Context, m MIG) (*compute.InstanceGroupManager, error) {
	var igm *compute.InstanceGroupManager
	var err error
	if m.Regional() {
		igm, err = p.svc.RegionInstanceGroupManagers.Get(m.Project, m.Region, m.Name).Context(ctx).Do()
	} else {
		igm, err = p.svc.InstanceGroupManagers.Get(m.Project, m.Zone, m.Name).Context(ctx).Do()
	}
	if isCode(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "get managed instance group %q", m.String())
	}
	return igm, nil
}

// managedInstances lists a group's managed instances, every page.
func (p *Client) managedInstances(ctx context.Context, m MIG) ([]*compute.ManagedInstance, error) {
	var out []*compute.ManagedInstance
	var err error
	if m.Regional() {
		err = p.svc.RegionInstanceGroupManagers.ListManagedInstances(m.Project, m.Region, m.Name).Pages(ctx,
			func(r *compute.RegionInstanceGroupManagersListInstancesResponse) error {
				out = append(out, r.ManagedInstances...)
				return nil
			})
	} else {
		err = p.svc.InstanceGroupManagers.ListManagedInstances(m.Project, m.Zone, m.Name).Pages(ctx,
			func(r *compute.InstanceGroupManagersListManagedInstancesResponse) error {
				out = append(out, r.ManagedInstances...)
				return nil
			})
	}
	if err != nil {
		return nil, wrap(err, "list the managed instances of %q", m.String())
	}
	return out, nil
}

// resize sets a group's target size; the operation is not waited for.
func (p *Client) resize(ctx context.Context, m MIG, size int64) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.Resize(m.Project, m.Region, m.Name, size).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.Resize(m.Project, m.Zone, m.Name, size).Context(ctx).Do()
	}
	if err != nil {
		return wrap(err, "resize managed instance group %q to %d", m.String(), size)
	}
	return nil
}

// setTemplate points a group at a template for the instances it creates.
func (p *Client) setTemplate(ctx context.Context, m MIG, template string) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.SetInstanceTemplate(m.Project, m.Region, m.Name,
			&compute.RegionInstanceGroupManagersSetTemplateRequest{InstanceTemplate: template}).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.SetInstanceTemplate(m.Project, m.Zone, m.Name,
			&compute.InstanceGroupManagersSetInstanceTemplateRequest{InstanceTemplate: template}).Context(ctx).Do()
	}
	if err != nil {
		return wrap(err, "point managed instance group %q at instance template %q", m.String(), lastSegment(template))
	}
	return nil
}

// patchPolicy changes the fields of a group's update policy that up sets.
func (p *Client) patchPolicy(ctx context.Context, m MIG, up *compute.InstanceGroupManagerUpdatePolicy) error {
	body := &compute.InstanceGroupManager{UpdatePolicy: up}
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.Patch(m.Project, m.Region, m.Name, body).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.Patch(m.Project, m.Zone, m.Name, body).Context(ctx).Do()
	}
	if err != nil {
		return wrap(err, "set the update policy of managed instance group %q", m.String())
	}
	return nil
}

// deleteInstances deletes instances (URLs) of a group and lowers its
// target size by their number.
func (p *Client) deleteInstances(ctx context.Context, m MIG, urls []string) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.DeleteInstances(m.Project, m.Region, m.Name,
			&compute.RegionInstanceGroupManagersDeleteInstancesRequest{Instances: urls}).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.DeleteInstances(m.Project, m.Zone, m.Name,
			&compute.InstanceGroupManagersDeleteInstancesRequest{Instances: urls}).Context(ctx).Do()
	}
	if err != nil {
		return wrap(err, "delete instances %s of managed instance group %q", strings.Join(urls, ", "), m.String())
	}
	return nil
}

// recreateInstances recreates instances (URLs) of a group from its
// template, under their names, the target size unchanged.
func (p *Client) recreateInstances(ctx context.Context, m MIG, urls []string) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.RecreateInstances(m.Project, m.Region, m.Name,
			&compute.RegionInstanceGroupManagersRecreateRequest{Instances: urls}).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.RecreateInstances(m.Project, m.Zone, m.Name,
			&compute.InstanceGroupManagersRecreateInstancesRequest{Instances: urls}).Context(ctx).Do()
	}
	if err != nil {
		return wrap(err, "recreate instances %s of managed instance group %q", strings.Join(urls, ", "), m.String())
	}
	return nil
}

// insertMIG creates a group.
func (p *Client) insertMIG(ctx context.Context, m MIG, igm *compute.InstanceGroupManager) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.Insert(m.Project, m.Region, igm).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.Insert(m.Project, m.Zone, igm).Context(ctx).Do()
	}
	return err
}

// deleteMIG deletes a group and its instances; a missing one is deleted.
func (p *Client) deleteMIG(ctx context.Context, m MIG) error {
	var err error
	if m.Regional() {
		_, err = p.svc.RegionInstanceGroupManagers.Delete(m.Project, m.Region, m.Name).Context(ctx).Do()
	} else {
		_, err = p.svc.InstanceGroupManagers.Delete(m.Project, m.Zone, m.Name).Context(ctx).Do()
	}
	if err != nil && !isCode(err, http.StatusNotFound) {
		return wrap(err, "delete managed instance group %q", m.String())
	}
	return nil
}

// autoscalerOf finds the autoscaler whose target is the group; nil when
// none is.
func (p *Client) autoscalerOf(ctx context.Context, m MIG, selfLink string) (*compute.Autoscaler, error) {
	var found *compute.Autoscaler
	match := func(items []*compute.Autoscaler) {
		for _, a := range items {
			if a.Target == selfLink || strings.HasSuffix(a.Target, "/"+m.scope()+"/instanceGroupManagers/"+m.Name) {
				found = a
			}
		}
	}
	var err error
	if m.Regional() {
		err = p.svc.RegionAutoscalers.List(m.Project, m.Region).Pages(ctx, func(l *compute.RegionAutoscalerList) error { match(l.Items); return nil })
	} else {
		err = p.svc.Autoscalers.List(m.Project, m.Zone).Pages(ctx, func(l *compute.AutoscalerList) error { match(l.Items); return nil })
	}
	if err != nil {
		return nil, wrap(err, "list the autoscalers of %s", m.scope())
	}
	return found, nil
}

// instanceURL is the partial URL deleteInstances and recreateInstances
// take for an instance.
func instanceURL(project, zone, name string) string {
	return fmt.Sprintf("projects/%s/zones/%s/instances/%s", project, zone, name)
}

// missingMIG is the error for a group that is not there (deleted since it
// was found, or misnamed).
func missingMIG(m MIG) error {
	return groupNotFoundf("managed instance group %q not found; check %s", m.String(), flagGroup)
}
