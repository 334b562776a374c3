package awsfake

// UpdateNodegroupVersion carried out as the User Guide's "Understand each
// phase of node updates" (managed-node-update-behavior) describes it:
// setup, scale up, upgrade, scale down; and DeleteNodegroup as
// "Delete a managed node group" (delete-managed-node-group) does.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// versionRequest is UpdateNodegroupVersion's body.
type versionRequest struct {
	Version        string              `json:"version"`
	ReleaseVersion string              `json:"releaseVersion"`
	LaunchTemplate *LaunchTemplateSpec `json:"launchTemplate"`
	Force          bool                `json:"force"`
	Token          string              `json:"clientRequestToken"`
}

func (s *Server) updateNodegroupVersion(c *eksCluster, ng *nodegroup, r *http.Request) (any, error) {
	var req versionRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	op := "UpdateNodegroupVersion/" + c.name + "/" + ng.NodegroupName
	if res, ok := s.remembered(op, req.Token); ok {
		return res, nil
	}
	if err := s.busy(ng); err != nil {
		return nil, err
	}
	src, params, err := s.versionTarget(c, ng, req)
	if err != nil {
		return nil, err
	}
	if err := s.refuseRollback(ng, src); err != nil {
		return nil, err
	}
	u := s.startUpdateLocked(c, ng, "VersionUpdate", params)
	// Setup phase steps 1 and 2: a new version of the group's launch
	// template, and the Auto Scaling group pointed at it.
	lt := s.templates[ng.lt]
	v := lt.Versions[len(lt.Versions)-1]
	v.Number, v.ImageID, v.Created = int64(len(lt.Versions)+1), src.image, time.Now().UTC()
	lt.Versions = append(lt.Versions, v)
	ng.sources[v.Number] = src
	s.groups[ng.asg].LaunchTemplateVersion = strconv.FormatInt(v.Number, 10)
	run := &versionRun{s: s, cluster: c.name, name: ng.NodegroupName, asg: ng.asg, id: u.ID, force: req.Force,
		target: ng.nodeLabels(src), strategy: ng.UpdateConfig.UpdateStrategy, maxUnavailable: s.maxUnavailableLocked(ng)}
	s.wg.Add(1)
	go run.run(src)
	s.notify()
	res := map[string]any{"update": cloneUpdate(u.Update)}
	s.remember(op, req.Token, res)
	return res, nil
}

// maxUnavailableLocked is the Setup phase's step 3: how many nodes are
// replaced at once, from updateConfig (a percentage of the group's
// desired size, at least one, at most 100).
func (s *Server) maxUnavailableLocked(ng *nodegroup) int {
	uc := ng.UpdateConfig
	if uc.MaxUnavailable != nil {
		return int(*uc.MaxUnavailable)
	}
	desired := int(s.groups[ng.asg].Desired)
	return min(100, max(1, desired*int(deref(uc.MaxUnavailablePercentage))/100))
}

// versionTarget is what the update launches, checked as the API Reference
// (UpdateNodegroupVersion) says: a launch template only for a group made
// with one, and the same one; no version or release version with a custom
// AMI; no version above the control plane's.
func (s *Server) versionTarget(c *eksCluster, ng *nodegroup, req versionRequest) (ltSource, []UpdateParam, error) {
	if ng.LaunchTemplate == nil {
		if req.LaunchTemplate != nil {
			return ltSource{}, nil, invalidParam("You cannot specify a launch template for node group %s: it was not created with one.", ng.NodegroupName)
		}
		src, err := s.releaseSource(c, req.Version, req.ReleaseVersion)
		return src, releaseParams(src), err
	}
	spec := LaunchTemplateSpec{ID: ng.LaunchTemplate.ID, Version: ng.LaunchTemplate.Version}
	if req.LaunchTemplate != nil {
		spec = *req.LaunchTemplate
	}
	lt, v, err := s.sourceTemplate(spec)
	if err != nil {
		return ltSource{}, nil, err
	}
	if lt.ID != ng.LaunchTemplate.ID {
		return ltSource{}, nil, invalidParam("Launch template %s is not the launch template %s of node group %s.", lt.ID, ng.LaunchTemplate.ID, ng.NodegroupName)
	}
	ver := strconv.FormatInt(v, 10)
	params := []UpdateParam{{Type: "LaunchTemplateName", Value: lt.Name}, {Type: "LaunchTemplateVersion", Value: ver}}
	if img := lt.Versions[v-1].ImageID; img != "" {
		if req.Version != "" || req.ReleaseVersion != "" {
			return ltSource{}, nil, invalidParam("You cannot specify the field kubernetes version or release version when using a custom AMI in the launch template.")
		}
		return ltSource{image: img, release: img, srcID: lt.ID, srcVersion: ver}, params, nil
	}
	src, err := s.releaseSource(c, req.Version, req.ReleaseVersion)
	src.srcID, src.srcVersion = lt.ID, ver
	return src, append(releaseParams(src), params...), err
}

// refuseRollback refuses an update to an earlier Kubernetes version or
// release than the group's (API Reference, UpdateNodegroupVersion: "You
// cannot roll back a node group to an earlier Kubernetes version or AMI
// version"). A custom AMI has no version to compare.
func (s *Server) refuseRollback(ng *nodegroup, src ltSource) error {
	if src.version == "" {
		return nil
	}
	if newerVersion(ng.Version, src.version) {
		return invalidParam("You cannot roll back node group %s from Kubernetes version %s to %s.", ng.NodegroupName, ng.Version, src.version)
	}
	rels := s.eks().releases[ng.Version]
	at := func(r string) int {
		return slices.IndexFunc(rels, func(x Release) bool { return x.ReleaseVersion == r })
	}
	if src.version == ng.Version && at(src.release) < at(ng.ReleaseVersion) {
		return invalidParam("You cannot roll back node group %s from AMI version %s to %s.", ng.NodegroupName, ng.ReleaseVersion, src.release)
	}
	return nil
}

func releaseParams(src ltSource) []UpdateParam {
	return []UpdateParam{{Type: "Version", Value: src.version}, {Type: "ReleaseVersion", Value: src.release}}
}

// versionRun is one UpdateNodegroupVersion being carried out.
type versionRun struct {
	s                      *Server
	cluster, name, asg, id string
	force                  bool
	target                 map[string]string // the labels of an updated node
	strategy               string
	maxUnavailable         int
	origDesired, origMax   int32
	expectDesired          int32 // the desired size the run last set
}

// failure is an update's error as DescribeUpdate reports it.
type failure struct{ detail ErrorDetail }

func (f *failure) Error() string { return f.detail.ErrorCode + ": " + f.detail.ErrorMessage }

func (r *versionRun) run(src ltSource) {
	defer r.s.wg.Done()
	err := r.phases(r.s.ctx)
	if r.s.ctx.Err() != nil {
		return // the Server is closing
	}
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	ng, nerr := r.s.nodegroupArg(r.cluster, r.name)
	if nerr != nil || ng.running == nil || ng.running.ID != r.id {
		return
	}
	var f *failure
	if errors.As(err, &f) {
		r.s.endUpdateLocked(ng, []ErrorDetail{f.detail})
		return
	}
	if err != nil {
		r.s.endUpdateLocked(ng, []ErrorDetail{{ErrorCode: "Unknown", ErrorMessage: err.Error(), ResourceIDs: []string{}}})
		return
	}
	if src.version != "" {
		ng.Version = src.version
	}
	ng.ReleaseVersion = src.release
	if ng.LaunchTemplate != nil {
		ng.LaunchTemplate.Version = src.srcVersion
	}
	r.s.endUpdateLocked(ng, nil)
}

// phases runs the update. With updateStrategy MINIMAL there is no scale
// up or down: old nodes go before new ones come (API Reference,
// NodegroupUpdateConfig: "The minimal strategy removes the guardrails and
// terminates the old instances before launching the new instances").
func (r *versionRun) phases(ctx context.Context) error {
	if r.strategy == strategyMinimal {
		if err := r.s.taintOld(ctx, r.asg, r.current); err != nil {
			return err
		}
		return r.upgrade(ctx)
	}
	if err := r.scaleUp(ctx); err != nil {
		return err
	}
	if err := r.upgrade(ctx); err != nil {
		return err
	}
	return r.scaleDown(ctx)
}

// current reports whether an instance's node carries the update's labels
// (User Guide, Scale up phase step 2: nodegroup-image, and the source
// launch template's id and version).
func (r *versionRun) current(in Instance) bool {
	for _, k := range []string{ImageLabel, SourceLTIDLabel, SourceLTVersionLbl} {
		if in.NodeLabels[k] != r.target[k] {
			return false
		}
	}
	return true
}

// scaleUp is the Scale up phase: max and desired size up by the larger
// of twice the zones and maxUnavailable; then new nodes Ready and
// labelled in every zone that has nodes (else NodeCreationFailure); then
// the old nodes tainted unschedulable.
func (r *versionRun) scaleUp(ctx context.Context) error {
	r.s.mu.Lock()
	g := r.s.groups[r.asg]
	surge := int32(max(2*len(g.Zones), r.maxUnavailable))
	r.origDesired, r.origMax = g.Desired, g.Max
	g.Desired += surge
	g.Max += surge
	r.expectDesired = g.Desired
	r.s.notify()
	r.s.mu.Unlock()
	if err := r.waitNew(ctx); err != nil {
		return err
	}
	return r.s.taintOld(ctx, r.asg, r.current)
}

// waitNew waits for the group's new nodes, or fails the update with
// NodeCreationFailure naming the instances whose nodes did not come.
func (r *versionRun) waitNew(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, r.s.eksOpts().NodeReadyTimeout)
	defer cancel()
	missing, err := r.s.waitNodes(wctx, r.cluster, r.name, r.current)
	if err == nil || ctx.Err() != nil {
		return err
	}
	return &failure{ErrorDetail{ErrorCode: NodeCreationFailure, ResourceIDs: missing,
		ErrorMessage: "Couldn't proceed with upgrade process as new nodes are not joining node group " + r.name}}
}

// upgrade is the Upgrade phase: up to maxUnavailable nodes lacking the
// labels, picked at random, drained, cordoned and terminated (the group
// replaces them from the new version), until none is left.
func (r *versionRun) upgrade(ctx context.Context) error {
	for {
		old := r.s.oldInstances(r.asg, r.current)
		if len(old) == 0 {
			return nil
		}
		rand.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
		if err := r.replaceAll(ctx, old[:min(len(old), r.maxUnavailable)]); err != nil {
			return err
		}
		if err := r.waitNew(ctx); err != nil {
			return err
		}
	}
}

// replaceAll replaces a batch of old instances at once; the nodes whose
// pods did not leave make one PodEvictionFailure.
func (r *versionRun) replaceAll(ctx context.Context, batch []Instance) error {
	var mu sync.Mutex
	var stuck []string
	var firstErr error
	var wg sync.WaitGroup
	for _, in := range batch {
		wg.Go(func() {
			node, err := r.s.retire(ctx, in, retirement{evictFor: r.s.eksOpts().EvictionTimeout, force: r.force, wait: true})
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, errEvictionTimeout) {
				stuck = append(stuck, node)
			} else if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	if len(stuck) > 0 {
		return r.evictionFailure(stuck, errEvictionTimeout)
	}
	return firstErr
}

// evictionFailure is PodEvictionFailure naming the nodes whose pods did
// not leave, and nothing else, as EKS's says (User Guide,
// managed-node-update-behavior, Upgrade phase; API Reference,
// ErrorDetail); other errors pass.
func (r *versionRun) evictionFailure(nodes []string, err error) error {
	if !errors.Is(err, errEvictionTimeout) {
		return err
	}
	slices.Sort(nodes)
	return &failure{ErrorDetail{ErrorCode: PodEvictionFailure, ResourceIDs: nodes,
		ErrorMessage: "Reached max retries while trying to evict pods from nodes in node group " + r.name}}
}

// scaleDown is the Scale down phase: max and desired size down by one at
// a time to what they were; if the desired size is not what the update
// last set (a cluster autoscaler scaled the group up), it stops at once.
func (r *versionRun) scaleDown(ctx context.Context) error {
	for {
		g, ok := r.s.Group(r.asg)
		if !ok || g.Desired != r.expectDesired {
			return nil
		}
		if g.Desired <= r.origDesired {
			return r.s.lowerMax(r.asg, r.origMax)
		}
		victim, ok := scaleInVictim(g)
		if !ok {
			return nil
		}
		how := retirement{evictFor: r.s.eksOpts().EvictionTimeout, force: r.force, decrement: true}
		if node, err := r.s.retire(ctx, victim, how); err != nil {
			return r.evictionFailure([]string{node}, err)
		}
		r.expectDesired--
		if err := r.s.lowerMax(r.asg, max(g.Max-1, r.origMax)); err != nil {
			return err
		}
	}
}

// scaleInVictim is the instance Auto Scaling's default termination policy
// takes: from the zone with the most instances, the oldest (Auto Scaling
// User Guide, ec2-auto-scaling-termination-policies).
func scaleInVictim(g Group) (Instance, bool) {
	perZone := map[string]int{}
	for _, in := range g.Instances {
		if in.Lifecycle == LifecycleInService {
			perZone[in.Zone]++
		}
	}
	var best Instance
	found := false
	for _, in := range g.Instances {
		if in.Lifecycle != LifecycleInService {
			continue
		}
		if !found || perZone[in.Zone] > perZone[best.Zone] ||
			(perZone[in.Zone] == perZone[best.Zone] && in.LaunchTime.Before(best.LaunchTime)) {
			best, found = in, true
		}
	}
	return best, found
}

// lowerMax sets a group's max size, unless it is below already.
func (s *Server) lowerMax(asg string, to int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[asg]
	if g == nil {
		return fmt.Errorf("auto scaling group %q is gone", asg)
	}
	if g.Max > to && to >= g.Desired {
		g.Max = to
		s.notify()
	}
	return nil
}

// oldInstances are the group's instances in service whose nodes lack the
// update's labels.
func (s *Server) oldInstances(asg string, current func(Instance) bool) []Instance {
	g, _ := s.Group(asg)
	var out []Instance
	for _, in := range g.Instances {
		if in.Lifecycle == LifecycleInService && !current(in) {
			out = append(out, in)
		}
	}
	return out
}

// deleteNodegroup answers DeleteNodegroup (API Reference): the group is
// DELETING and goes once its instances have (User Guide,
// delete-managed-node-group: each node is drained for a few minutes, then
// terminated whether its pods left or not). A second call while it is
// DELETING describes it again.
func (s *Server) deleteNodegroup(c *eksCluster, ng *nodegroup) (any, error) {
	if ng.Status != NodegroupDeleting {
		if ng.running != nil {
			return nil, inUse("Nodegroup %s is currently being updated by update %s", ng.NodegroupName, ng.running.ID)
		}
		ng.Status, ng.ModifiedAt = NodegroupDeleting, epochOf(timeNow())
		s.wg.Add(1)
		go s.runDelete(c.name, ng)
		s.notify()
	}
	return map[string]any{"nodegroup": s.describeNodegroupLocked(ng)}, nil
}

func (s *Server) runDelete(cluster string, ng *nodegroup) {
	defer s.wg.Done()
	s.mu.Lock()
	if g := s.groups[ng.asg]; g != nil {
		g.Min = 0 // sizes go to zero as the nodes do
	}
	s.mu.Unlock()
	g, _ := s.Group(ng.asg)
	s.recordForced(cluster, ng.NodegroupName, g)
	var wg sync.WaitGroup
	for _, in := range g.Instances {
		if in.Lifecycle == LifecycleInService || in.Lifecycle == LifecyclePending {
			wg.Go(func() {
				_, _ = s.retire(s.ctx, in, retirement{evictFor: s.eksOpts().DeleteDrainTimeout, force: true, decrement: true})
			})
		}
	}
	wg.Wait()
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	_ = s.deleteLocked(ng.asg, true)
	s.mu.Unlock()
	_ = s.WaitDeleted(s.ctx, ng.asg)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.templates, ng.lt)
	delete(s.eks().byASG(), ng.asg)
	if c := s.eks().clusters[cluster]; c != nil && c.nodegroups[ng.NodegroupName] == ng {
		delete(c.nodegroups, ng.NodegroupName)
	}
	s.notify()
}
