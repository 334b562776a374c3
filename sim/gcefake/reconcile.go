package gcefake

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// loop converges every group on its target size, finishes the instances'
// actions when they are due, and runs the groups' own processes.
func (s *Server) loop() {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
		}
		s.mu.Lock()
		s.reconcileLocked(time.Now())
		s.mu.Unlock()
	}
}

func (s *Server) reconcileLocked(t time.Time) {
	for _, k := range slices.Sorted(maps.Keys(s.instances)) {
		in := s.instances[k]
		if !in.busy && in.Action != ActionNone && !in.due.After(t) {
			in.busy = true
			s.wg.Add(1)
			go s.finish(in)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.groups)) {
		s.convergeLocked(s.groups[k])
	}
}

// finish ends an instance's action: a created or recreated VM runs (after
// OnLaunch), a deleted one is gone (after OnDelete).
func (s *Server) finish(in *instance) {
	defer s.wg.Done()
	s.mu.Lock()
	action := in.Action
	if e := s.creationErrorLocked(in); e != nil && action != ActionDeleting {
		s.failCreationLocked(in, e)
		in.busy = false
		s.notifyLocked()
		s.mu.Unlock()
		return
	}
	if action == ActionRecreating {
		// The old VM is gone; the new one, of the same name, boots from
		// the template the group intends.
		in.ID, in.Template, in.launched = nextID(), in.Intended, false
		in.Image, in.Labels = s.templateFacts(in.Project, in.Template)
	}
	snap := in.Instance
	s.mu.Unlock()
	var err error
	switch {
	case action == ActionDeleting && in.launched && s.opts.OnDelete != nil:
		err = s.opts.OnDelete(s.ctx, snap)
	case action != ActionDeleting && s.opts.OnLaunch != nil:
		err = s.opts.OnLaunch(s.ctx, snap)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in.busy = false
	switch {
	case err != nil && s.ctx.Err() == nil:
		s.logf("gcefake: %s %s: %v; trying again", action, in.Name, err)
		in.due = time.Now().Add(max(s.opts.LaunchDelay, 0))
	case err != nil:
	case action == ActionDeleting:
		s.removeLocked(in)
	default:
		in.Action, in.Status, in.launched, in.lastErr = ActionNone, StatusRunning, true, nil
		s.logf("gcefake: %s runs %s in %s", in.Name, in.Template, in.Zone)
	}
	s.notifyLocked()
}

// templateFacts are the boot image and node labels of a template.
func (s *Server) templateFacts(project, name string) (string, map[string]string) {
	it := s.templates[project+"/"+name]
	if it == nil {
		return "", nil
	}
	return templateImage(it), kubeLabels(it)
}

func (s *Server) removeLocked(in *instance) {
	delete(s.instances, in.key)
	g := s.groups[in.Group]
	if g == nil {
		return
	}
	g.members = slices.DeleteFunc(g.members, func(k string) bool { return k == in.key })
	if g.deleting && len(g.members) == 0 {
		delete(s.groups, g.key)
	}
}

// deleteLocked starts deleting an instance.
func (s *Server) deleteLocked(in *instance) {
	if in.Action == ActionDeleting {
		return
	}
	in.Action, in.Status = ActionDeleting, StatusStopping
	in.due = time.Now().Add(max(s.opts.DeleteDelay, 0))
	s.logf("gcefake: deleting %s", in.Name)
}

// active are the group's members not being deleted.
func (s *Server) active(g *group) []*instance {
	var out []*instance
	for _, k := range g.members {
		if in := s.instances[k]; in.Action != ActionDeleting {
			out = append(out, in)
		}
	}
	return out
}

// convergeLocked creates or deletes instances until the group runs its
// target size (plus the one a redistribution adds), then lets its own
// processes act.
func (s *Server) convergeLocked(g *group) {
	if g.deleting {
		return
	}
	act := s.active(g)
	want := int(g.igm.TargetSize)
	if in := s.instances[g.redistributing]; in != nil && in.Action != ActionDeleting {
		want++
	}
	for i := len(act); i < want; i++ {
		s.createLocked(g, s.emptiestZone(g))
	}
	for i := want; i < len(act); i++ {
		s.deleteLocked(s.resizeVictim(g))
	}
	if len(act) != want || s.busyGroup(g) {
		return
	}
	if !s.proactiveUpdate(g) {
		s.redistribute(g)
	}
}

// busyGroup reports whether any member has an action under way.
func (s *Server) busyGroup(g *group) bool {
	return slices.ContainsFunc(g.members, func(k string) bool { return s.instances[k].Action != ActionNone })
}

// perZone counts the active members by zone.
func (s *Server) perZone(g *group) map[string][]*instance {
	out := map[string][]*instance{}
	for _, in := range s.active(g) {
		out[in.Zone] = append(out[in.Zone], in)
	}
	return out
}

// emptiestZone is where a regional group with the EVEN target shape, the
// default, creates an instance: the zone with the fewest, first in
// distributionPolicy.zones on a tie
// (https://cloud.google.com/compute/docs/reference/rest/v1/regionInstanceGroupManagers#DistributionPolicy).
func (s *Server) emptiestZone(g *group) string {
	count := s.perZone(g)
	best := g.zones[0]
	for _, z := range g.zones[1:] {
		if len(count[z]) < len(count[best]) {
			best = z
		}
	}
	return best
}

// resizeVictim is the instance a group deletes when its target size is
// lowered: one not yet running first, then the newest in the zone with
// the most instances, which keeps a regional group even
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers/resize).
func (s *Server) resizeVictim(g *group) *instance {
	act := s.active(g)
	for i := len(act) - 1; i >= 0; i-- {
		if act[i].Status != StatusRunning {
			return act[i]
		}
	}
	count := s.perZone(g)
	zone := ""
	for _, z := range g.zones {
		if zone == "" || len(count[z]) > len(count[zone]) {
			zone = z
		}
	}
	return count[zone][len(count[zone])-1]
}

// createLocked starts creating an instance in zone from the group's
// template, named after the group's baseInstanceName with a hyphen and
// four characters
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers#InstanceGroupManager.FIELDS.base_instance_name).
func (s *Server) createLocked(g *group, zone string) *instance {
	_, tmpl, _ := resourceName(g.igm.InstanceTemplate, "instanceTemplates")
	id := nextID()
	name := fmt.Sprintf("%s-%s", g.igm.BaseInstanceName, suffix(id))
	in := &instance{
		key: g.project + "/" + zone + "/" + name,
		Instance: Instance{
			Project: g.project, Zone: zone, Name: name, ID: id, Group: g.key,
			Template: tmpl, Intended: tmpl, Action: ActionCreating, Status: StatusProvisioning, Created: time.Now(),
		},
		due: time.Now().Add(max(s.opts.LaunchDelay, 0)),
	}
	in.Image, in.Labels = s.templateFacts(g.project, tmpl)
	s.instances[in.key] = in
	g.members = append(g.members, in.key)
	s.logf("gcefake: %s: creating %s in %s from %s", g.name, name, zone, tmpl)
	return in
}

// suffix is four lowercase letters and digits from n.
func suffix(n uint64) string {
	const digits = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 4)
	for i := range b {
		b[i] = digits[n%36]
		n /= 36
	}
	return string(b)
}

// proactiveUpdate replaces, with the update policy's type PROACTIVE, one
// instance whose template is not the group's: the group deletes it and
// creates its substitute (replacementMethod SUBSTITUTE, the default), one
// at a time here; nobody drains it
// (https://cloud.google.com/compute/docs/reference/rest/v1/instanceGroupManagers#InstanceGroupManagerUpdatePolicy).
func (s *Server) proactiveUpdate(g *group) bool {
	if g.igm.UpdatePolicy.Type != Proactive {
		return false
	}
	_, tmpl, _ := resourceName(g.igm.InstanceTemplate, "instanceTemplates")
	for _, in := range s.active(g) {
		if in.Template != tmpl {
			s.ownRemovalLocked(g, in, "proactive update to "+tmpl)
			return true
		}
	}
	return false
}

// redistribute evens out a regional group whose instanceRedistributionType
// is PROACTIVE, the default: where its zones differ by more than one
// instance, it creates one in the emptiest zone and, once that runs,
// deletes one in the fullest; nobody drains it
// (https://cloud.google.com/compute/docs/reference/rest/v1/regionInstanceGroupManagers#InstanceGroupManagerUpdatePolicy.FIELDS.instance_redistribution_type).
func (s *Server) redistribute(g *group) {
	if !g.regional || g.igm.UpdatePolicy.InstanceRedistributionType != Proactive {
		g.redistributing = ""
		return
	}
	count := s.perZone(g)
	if g.redistributing != "" {
		added := s.instances[g.redistributing]
		g.redistributing = ""
		if added == nil {
			return
		}
		fullest := ""
		for _, z := range g.zones {
			if z != added.Zone && (fullest == "" || len(count[z]) > len(count[fullest])) {
				fullest = z
			}
		}
		if len(count[fullest]) > 0 {
			s.ownRemovalLocked(g, count[fullest][0], "instance redistribution")
		}
		return
	}
	lo, hi := len(count[g.zones[0]]), len(count[g.zones[0]])
	for _, z := range g.zones {
		lo, hi = min(lo, len(count[z])), max(hi, len(count[z]))
	}
	if hi-lo > 1 {
		g.redistributing = s.createLocked(g, s.emptiestZone(g)).key
	}
}

func (s *Server) ownRemovalLocked(g *group, in *instance, why string) {
	s.removals = append(s.removals, Removal{Group: g.key, Instance: in.Name, Zone: in.Zone, Why: why, At: time.Now()})
	s.logf("gcefake: %s deletes %s of its own accord: %s", g.name, in.Name, why)
	s.deleteLocked(in)
}
