package gkefake

import (
	"context"
	"fmt"
	"slices"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// maxInFlight caps the nodes a surge upgrade has in flight
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge-settings:
// "The maximum number of nodes upgraded simultaneously is limited to 20").
const maxInFlight = 20

// surgeHow are a surge's settings and its drains'.
type surgeHow struct {
	maxSurge, maxUnavailable int64
	pdbTimeout               time.Duration
	force, noPDB             bool
}

func (h surgeHow) drain() drainHow {
	return drainHow{pdbTimeout: h.pdbTimeout, force: h.force, noPDB: h.noPDB}
}

// surge moves every node of the pool to template, one zone at a time
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge:
// "GKE upgrades multi-zonal node pools one zone at a time").
func (s *Server) surge(ctx context.Context, p *pool, o *operation, template string, how surgeHow) error {
	left := 0
	for i := range p.zones {
		left += len(s.outdatedIn(groupKey(p, p.groups, i), template))
	}
	s.mu.Lock()
	o.total = o.done + left
	s.mu.Unlock()
	for i := range p.zones {
		if err := s.surgeZone(ctx, p, o, i, template, how); err != nil {
			return err
		}
	}
	return nil
}

// outdatedIn are the group's instances not on template, by name.
func (s *Server) outdatedIn(key, template string) []gcefake.Instance {
	g, _ := s.Compute.Group(key)
	var out []gcefake.Instance
	for _, in := range g.Instances {
		if in.Template != template && in.Action != gcefake.ActionDeleting {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b gcefake.Instance) int { return cmpString(a.Name, b.Name) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// surgeZone replaces the zone's nodes a window at a time: maxSurge new
// nodes created first and Ready, then as many old ones cordoned, drained
// and deleted; maxUnavailable more cordoned, drained and recreated in
// place. The window is maxSurge + maxUnavailable, at most 20 and at most
// the zone's nodes; a cancel lets the window under way finish
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#surge,
// #cancel-surge: "the nodes that have started the upgrade complete it").
func (s *Server) surgeZone(ctx context.Context, p *pool, o *operation, i int, template string, how surgeHow) error {
	key, zone, group := groupKey(p, p.groups, i), p.zones[i], p.groups[i]
	if _, err := s.gce.InstanceGroupManagers.SetInstanceTemplate(p.c.project, zone, group, &compute.InstanceGroupManagersSetInstanceTemplateRequest{
		InstanceTemplate: "projects/" + p.c.project + "/global/instanceTemplates/" + template,
	}).Context(ctx).Do(); err != nil {
		return fmt.Errorf("set the template of %s: %w", group, err)
	}
	for {
		if s.stopping(o) {
			return errCancelled
		}
		old := s.outdatedIn(key, template)
		if len(old) == 0 {
			return nil
		}
		batch := old[:max(1, min(int(how.maxSurge+how.maxUnavailable), maxInFlight, len(old)))]
		surges := min(int(how.maxSurge), len(batch))
		if err := s.addSurgeNodes(ctx, p, i, template, surges, how); err != nil {
			return err
		}
		err := parallel(batch, func(j int, in gcefake.Instance) error {
			return s.replaceNode(ctx, p, i, in, j < surges, template, how)
		})
		if err != nil {
			return err
		}
		s.addDone(o, len(batch))
		s.logf("%s: zone %s: %d node(s) upgraded", p.name, zone, len(batch))
	}
}

// addSurgeNodes grows the zone's group by n and waits until n more of
// its instances run template (the surge nodes Ready).
func (s *Server) addSurgeNodes(ctx context.Context, p *pool, i int, template string, n int, how surgeHow) error {
	if n == 0 {
		return nil
	}
	key := groupKey(p, p.groups, i)
	g, _ := s.Compute.Group(key)
	want := running(g, template) + n
	if _, err := s.gce.InstanceGroupManagers.Resize(p.c.project, p.zones[i], p.groups[i], g.TargetSize+int64(n)).Context(ctx).Do(); err != nil {
		return fmt.Errorf("resize %s: %w", p.groups[i], err)
	}
	var refused *gcefake.Instance
	err := s.waitGroup(ctx, key, func(g gcefake.Group) bool {
		refused = refusedSurge(g, template, how)
		return running(g, template) >= want || refused != nil
	})
	if err != nil || refused == nil {
		return err
	}
	return s.giveSurgeBack(ctx, p, i, g.TargetSize, refused)
}

// refusedSurge is a surge node Compute cannot create for quota or
// capacity when the surge has no maxUnavailable to fall back on: "If
// there isn't enough quota to create a single node and maxUnavailable is
// 0, the upgrade fails"
// (https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota);
// nil otherwise. With maxUnavailable the fake waits for it, as GKE's
// fallback to recreating in place is not modelled.
func refusedSurge(g gcefake.Group, template string, how surgeHow) *gcefake.Instance {
	if how.maxUnavailable > 0 {
		return nil
	}
	for i, in := range g.Instances {
		if in.Template == template && in.Action == gcefake.ActionCreating && in.LastError != nil &&
			(in.LastError.Code == gcefake.QuotaExceeded || in.LastError.Code == gcefake.ZoneResourcePoolExhausted) {
			return &g.Instances[i]
		}
	}
	return nil
}

// errResourceExhausted fails an upgrade whose surge Compute cannot create:
// the operation ends with code RESOURCE_EXHAUSTED (container-api.json,
// Operation.error, a Status whose code is a google.rpc.Code) and the
// words the failed upgrade operation reports
// (https://cloud.google.com/kubernetes-engine/docs/how-to/node-upgrades-quota,
// "Insufficient quota to satisfy the request: waiting on IG: instance …
// is still CREATING. Last attempt error: …").
type errResourceExhausted struct{ msg string }

func (e errResourceExhausted) Error() string { return e.msg }

// giveSurgeBack resizes the zone's group back to size, which takes the
// instances not created before any other (Compute's resize), so the
// failed upgrade leaves the pool at its size, and fails the upgrade.
// GKE does not document what becomes of a surge VM it could not create;
// the fake strands none.
func (s *Server) giveSurgeBack(ctx context.Context, p *pool, i int, size int64, in *gcefake.Instance) error {
	if _, err := s.gce.InstanceGroupManagers.Resize(p.c.project, p.zones[i], p.groups[i], size).Context(ctx).Do(); err != nil {
		return fmt.Errorf("resize %s: %w", p.groups[i], err)
	}
	url := fmt.Sprintf("https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instances/%s", in.Project, in.Zone, in.Name)
	return errResourceExhausted{fmt.Sprintf("Insufficient quota to satisfy the request: waiting on IG: instance %s is still CREATING. Last attempt error: [%s] %s",
		url, in.LastError.Code, in.LastError.Message)}
}

// running counts the group's instances running template.
func running(g gcefake.Group, template string) int {
	n := 0
	for _, in := range g.Instances {
		if in.Template == template && in.Action == gcefake.ActionNone {
			n++
		}
	}
	return n
}

// waitGroup waits for cond, at most NodeReadyTimeout: new nodes that do
// not come fail the operation.
func (s *Server) waitGroup(ctx context.Context, key string, cond func(gcefake.Group) bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.NodeReadyTimeout)
	defer cancel()
	if err := s.Compute.WaitFor(ctx, key, cond); err != nil {
		return fmt.Errorf("nodes of instance group %s did not become ready within %s", key, s.opts.NodeReadyTimeout)
	}
	return nil
}

// replaceNode cordons and drains the instance's node, then deletes the
// instance (its surge node stands in for it) or recreates it in place and
// uncordons the new node (maxUnavailable's way).
func (s *Server) replaceNode(ctx context.Context, p *pool, i int, in gcefake.Instance, surged bool, template string, how surgeHow) error {
	if err := s.cordon(ctx, in.Name, true); err != nil {
		return err
	}
	if err := s.drainNode(ctx, in.Name, how.drain()); err != nil {
		return fmt.Errorf("drain node %s: %w", in.Name, err)
	}
	url := fmt.Sprintf("projects/%s/zones/%s/instances/%s", p.c.project, p.zones[i], in.Name)
	req := &compute.InstanceGroupManagersDeleteInstancesRequest{Instances: []string{url}}
	key := groupKey(p, p.groups, i)
	if surged {
		if _, err := s.gce.InstanceGroupManagers.DeleteInstances(p.c.project, p.zones[i], p.groups[i], req).Context(ctx).Do(); err != nil {
			return fmt.Errorf("delete instance %s: %w", in.Name, err)
		}
		return s.waitGroup(ctx, key, func(g gcefake.Group) bool { return member(g, in.Name) == nil })
	}
	if _, err := s.gce.InstanceGroupManagers.RecreateInstances(p.c.project, p.zones[i], p.groups[i],
		&compute.InstanceGroupManagersRecreateInstancesRequest{Instances: []string{url}}).Context(ctx).Do(); err != nil {
		return fmt.Errorf("recreate instance %s: %w", in.Name, err)
	}
	if err := s.waitGroup(ctx, key, func(g gcefake.Group) bool {
		m := member(g, in.Name)
		return m != nil && m.Template == template && m.Action == gcefake.ActionNone
	}); err != nil {
		return err
	}
	return s.cordon(ctx, in.Name, false)
}

// member is the group's instance of that name, nil if none.
func member(g gcefake.Group, name string) *gcefake.Instance {
	for i := range g.Instances {
		if g.Instances[i].Name == name {
			return &g.Instances[i]
		}
	}
	return nil
}

// shortLived points the pool's groups at the new template and ends: the
// nodes that run go on until they go away on their own, new ones run the
// new configuration
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#short-lived-upgrades).
func (s *Server) shortLived(ctx context.Context, p *pool, _ *operation) error {
	for i, group := range p.groups {
		if _, err := s.gce.InstanceGroupManagers.SetInstanceTemplate(p.c.project, p.zones[i], group, &compute.InstanceGroupManagersSetInstanceTemplateRequest{
			InstanceTemplate: "projects/" + p.c.project + "/global/instanceTemplates/" + p.up.toTemplate,
		}).Context(ctx).Do(); err != nil {
			return fmt.Errorf("set the template of %s: %w", group, err)
		}
	}
	return nil
}
