package awsfake

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Labels EKS puts on the nodes of a managed node group besides those in
// nodes.go (User Guide, managed-node-groups: capacity types).
const (
	CapacityTypeLabel = "eks.amazonaws.com/capacityType"
	// UnschedulableTaintValue is the value of the NodeGroupLabel taint an
	// update puts on the nodes it replaces (User Guide,
	// managed-node-update-behavior, Scale up phase step 3).
	UnschedulableTaintValue = "unschedulable"
)

// Defaults of CreateNodegroup (API Reference, CreateNodegroup: diskSize
// 20 GiB for Linux, instanceTypes t3.medium, capacityType ON_DEMAND;
// NodegroupUpdateConfig: maxUnavailable 1 by default, User Guide,
// managed-node-update-behavior, Setup phase step 3). The scaling default
// (1/2/2) and AMI type are the fake's: the reference does not state them.
const (
	defaultDiskSize     = 20
	defaultInstanceType = "t3.medium"
	defaultAMIType      = "AL2023_x86_64_STANDARD"
	amiTypeCustom       = "CUSTOM"
	onDemand            = "ON_DEMAND"
	strategyDefault     = "DEFAULT"
	strategyMinimal     = "MINIMAL"
)

// createRequest is CreateNodegroup's body.
type createRequest struct {
	Nodegroup
	ClientRequestToken string `json:"clientRequestToken"`
}

func (s *Server) createNodegroup(c *eksCluster, r *http.Request) (any, error) {
	var req createRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkCreateModel(req.Nodegroup); err != nil {
		return nil, err
	}
	// API Reference, CreateNodegroup: "You can only create a node group
	// for your cluster that is equal to the current Kubernetes version for
	// the cluster"; version: "this is the only accepted specified value".
	// (ManagedNodeGroup makes older groups, as made before the control
	// plane's upgrade.)
	if req.Version != "" && req.Version != c.version {
		return nil, invalidParam("Requested Nodegroup version %s is invalid: a node group is created at the cluster's version %s.", req.Version, c.version)
	}
	if res, ok := s.eks().tokens[req.ClientRequestToken]; ok && req.ClientRequestToken != "" {
		return res, nil
	}
	if err := checkTags(req.Tags); err != nil {
		return nil, err
	}
	ng, err := s.createNodegroupLocked(c, req.Nodegroup)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"nodegroup": s.describeNodegroupLocked(ng)}
	if req.ClientRequestToken != "" {
		if s.eks().tokens == nil {
			s.eks().tokens = map[string]any{}
		}
		s.eks().tokens[req.ClientRequestToken] = res
	}
	return res, nil
}

// checkTags holds a request's tags to EKS's rules: at most 50, keys of 1
// to 128 characters, values of at most 256 (API Reference,
// CreateNodegroup: tags; TagResource), none with the aws: prefix AWS
// reserves, in any case, in key or value (User Guide, eks-using-tags, Tag
// restrictions).
func checkTags(tags map[string]string) error {
	if len(tags) > 50 {
		return invalidParam("The number of tags %d exceeds the limit of 50.", len(tags))
	}
	for k, v := range tags {
		if len(k) < 1 || len(k) > 128 || len(v) > 256 {
			return invalidParam("Tag key %q or its value is outside the allowed length.", k)
		}
		if strings.HasPrefix(strings.ToLower(k), "aws:") || strings.HasPrefix(strings.ToLower(v), "aws:") {
			return invalidParam("Tag %q uses the aws: prefix, which is reserved for AWS use.", k)
		}
	}
	return nil
}

// createNodegroupLocked makes the node group, its launch template and
// Auto Scaling group; it turns ACTIVE once its nodes are Ready.
func (s *Server) createNodegroupLocked(c *eksCluster, req Nodegroup) (*nodegroup, error) {
	ng, err := s.newNodegroup(c, req)
	if err != nil {
		return nil, err
	}
	src := ng.sources[1]
	// EKS launches from a launch template of its own, a copy of the
	// user's if one was given (User Guide, launch-templates).
	ltID := s.createLaunchTemplateLocked(ng.asg, src.image, src.instanceType)
	ng.lt = ltID
	spec := GroupSpec{
		Name: ng.asg, Min: *ng.ScalingConfig.MinSize, Max: *ng.ScalingConfig.MaxSize, Desired: *ng.ScalingConfig.DesiredSize,
		Subnets: ng.Subnets, LaunchTemplateID: ltID, LaunchTemplateVersion: "1",
		// The tags EKS puts on a managed node group's Auto Scaling group
		// (User Guide, managed-node-groups; the cluster autoscaler's
		// auto-discovery tags).
		Tags: map[string]string{
			"eks:cluster-name":                    c.name,
			"eks:nodegroup-name":                  ng.NodegroupName,
			"k8s.io/cluster-autoscaler/enabled":   "true",
			"k8s.io/cluster-autoscaler/" + c.name: "owned",
			"kubernetes.io/cluster/" + c.name:     "owned",
		},
	}
	if err := s.createLocked(spec); err != nil {
		delete(s.templates, ltID)
		return nil, invalidParam("%s", err.Error())
	}
	c.nodegroups[ng.NodegroupName] = ng
	s.eks().byASG()[ng.asg] = ng
	s.wg.Add(1)
	go s.settleCreate(c.name, ng.NodegroupName)
	return ng, nil
}

// newNodegroup checks a CreateNodegroup request and fills in its
// defaults; nothing is stored yet.
func (s *Server) newNodegroup(c *eksCluster, req Nodegroup) (*nodegroup, error) {
	if c.nodegroups[req.NodegroupName] != nil {
		// API Reference, CreateNodegroup: ResourceInUseException.
		return nil, inUse("NodeGroup already exists with name %s and cluster name %s", req.NodegroupName, c.name)
	}
	if req.NodegroupName == "" || len(req.Subnets) == 0 || req.NodeRole == "" {
		return nil, invalidParam("nodegroupName, subnets and nodeRole are required")
	}
	for _, sn := range req.Subnets {
		if _, ok := subnetZone(sn); !ok {
			return nil, invalidParam("The subnet ID '%s' does not exist", sn)
		}
	}
	src, err := s.createSource(c, &req)
	if err != nil {
		return nil, err
	}
	if err := fillCreateDefaults(&req); err != nil {
		return nil, err
	}
	now := timeNow()
	s.seq++
	suffix := fmt.Sprintf("%08x", s.idBase()+uint64(s.seq))
	req.ClusterName, req.Status = c.name, NodegroupCreating
	req.NodegroupArn = fmt.Sprintf("arn:aws:eks:%s:123456789012:nodegroup/%s/%s/%s", s.opts.Region, c.name, req.NodegroupName, suffix)
	req.CreatedAt, req.ModifiedAt = epochOf(now), epochOf(now)
	// A custom AMI's group still runs the cluster's version (API
	// Reference, CreateNodegroup: version "By default, the Kubernetes
	// version of the cluster is used").
	req.Version, req.ReleaseVersion = cmp.Or(src.version, c.version), src.release
	return &nodegroup{Nodegroup: req, asg: "eks-" + req.NodegroupName + "-" + suffix, sources: map[int64]ltSource{1: src}}, nil
}

// fillCreateDefaults applies CreateNodegroup's defaults and checks the
// scaling and update configuration.
func fillCreateDefaults(req *Nodegroup) error {
	if req.CapacityType == "" {
		req.CapacityType = onDemand
	}
	if req.ScalingConfig == nil {
		req.ScalingConfig = &NodegroupScaling{}
	}
	sc := req.ScalingConfig
	sc.MinSize, sc.MaxSize, sc.DesiredSize = orInt(sc.MinSize, 1), orInt(sc.MaxSize, 2), orInt(sc.DesiredSize, max(2, deref(sc.MinSize)))
	if err := checkScaling(sc); err != nil {
		return err
	}
	if req.UpdateConfig == nil {
		req.UpdateConfig = &NodegroupUpdateConfig{MaxUnavailable: ptr(int32(1))}
	}
	if req.UpdateConfig.UpdateStrategy == "" {
		req.UpdateConfig.UpdateStrategy = strategyDefault
	}
	if err := checkUpdateConfig(req.UpdateConfig); err != nil {
		return err
	}
	if err := checkTaints(req.Taints); err != nil {
		return err
	}
	req.Labels, req.Tags = maps.Clone(req.Labels), maps.Clone(req.Tags)
	return nil
}

// createSource resolves what the first nodes launch: the given launch
// template's version, or the AMI of the release for the version (API
// Reference, CreateNodegroup: launchTemplate, version, releaseVersion,
// amiType, diskSize, instanceTypes).
func (s *Server) createSource(c *eksCluster, req *Nodegroup) (ltSource, error) {
	if req.LaunchTemplate == nil {
		if req.AmiType == "" {
			req.AmiType = defaultAMIType
		}
		if len(req.InstanceTypes) == 0 {
			req.InstanceTypes = []string{defaultInstanceType}
		}
		if req.DiskSize == nil {
			req.DiskSize = ptr(int32(defaultDiskSize))
		}
		src, err := s.releaseSource(c, req.Version, req.ReleaseVersion)
		src.instanceType = req.InstanceTypes[0]
		return src, err
	}
	if req.DiskSize != nil {
		return ltSource{}, invalidParam("Disk size must be specified within the launch template.")
	}
	lt, v, err := s.sourceTemplate(*req.LaunchTemplate)
	if err != nil {
		return ltSource{}, err
	}
	src, err := s.templateSource(c, req, lt, v)
	// Nodegroup: instanceTypes "If the node group was deployed with a
	// launch template, then this is null"; the nodes launch the
	// template's type unless the request named one.
	if len(req.InstanceTypes) > 0 {
		src.instanceType = req.InstanceTypes[0]
	}
	req.InstanceTypes = nil
	req.LaunchTemplate = &LaunchTemplateSpec{ID: lt.ID, Name: lt.Name, Version: strconv.FormatInt(v, 10)}
	return src, err
}

// templateSource is what a user's launch template version launches: its
// image, or with none the release's.
func (s *Server) templateSource(c *eksCluster, req *Nodegroup, lt *LaunchTemplate, v int64) (ltSource, error) {
	tv := lt.Versions[v-1]
	if tv.ImageID == "" {
		src, err := s.releaseSource(c, req.Version, req.ReleaseVersion)
		src.srcID, src.srcVersion, src.instanceType = lt.ID, strconv.FormatInt(v, 10), tv.InstanceType
		return src, err
	}
	// A custom AMI: EKS knows no release for it, and reports the AMI as
	// the release version (API Reference, Nodegroup: releaseVersion "If
	// the node group was deployed using a launch template with a custom
	// AMI, then this is the AMI ID that was specified in the launch
	// template").
	if req.Version != "" || req.ReleaseVersion != "" {
		return ltSource{}, invalidParam("You cannot specify the field kubernetes version or release version when using a custom AMI in the launch template.")
	}
	req.AmiType = amiTypeCustom
	return ltSource{image: tv.ImageID, release: tv.ImageID, instanceType: tv.InstanceType, srcID: lt.ID, srcVersion: strconv.FormatInt(v, 10)}, nil
}

// releaseSource is the AMI of a release: by default the cluster's
// version and the latest release for the version (API Reference,
// CreateNodegroup and UpdateNodegroupVersion: version, releaseVersion).
func (s *Server) releaseSource(c *eksCluster, version, release string) (ltSource, error) {
	if version == "" {
		version = c.version
	}
	if newerVersion(version, c.version) {
		return ltSource{}, invalidParam("Requested Nodegroup version %s is newer than the cluster version %s.", version, c.version)
	}
	rels := s.eks().releases[version]
	if len(rels) == 0 {
		return ltSource{}, invalidParam("No AMI release is available for Kubernetes version %s.", version)
	}
	r := rels[len(rels)-1]
	if release != "" {
		i := slices.IndexFunc(rels, func(r Release) bool { return r.ReleaseVersion == release })
		if i < 0 {
			return ltSource{}, invalidParam("Requested release version %s is not valid for kubernetes version %s.", release, version)
		}
		r = rels[i]
	}
	return ltSource{image: r.ImageID, release: r.ReleaseVersion, version: version}, nil
}

// newerVersion reports whether Kubernetes version a ("1.31") is above b.
func newerVersion(a, b string) bool {
	var amaj, amin, bmaj, bmin int
	_, errA := fmt.Sscanf(a, "%d.%d", &amaj, &amin)
	_, errB := fmt.Sscanf(b, "%d.%d", &bmaj, &bmin)
	if errA != nil || errB != nil {
		return a > b
	}
	return amaj > bmaj || (amaj == bmaj && amin > bmin)
}

// sourceTemplate finds a user's launch template by id or name (not both)
// and resolves its version; no version means its default (API
// Reference, LaunchTemplateSpecification).
func (s *Server) sourceTemplate(spec LaunchTemplateSpec) (*LaunchTemplate, int64, error) {
	if (spec.ID == "") == (spec.Name == "") {
		return nil, 0, invalidParam("Either launch template ID or launch template name must be specified, but not both.")
	}
	lt := s.templates[spec.ID]
	for _, t := range s.templates {
		if spec.ID == "" && t.Name == spec.Name {
			lt = t
		}
	}
	if lt == nil {
		return nil, 0, invalidParam("Launch template %s%s does not exist.", spec.ID, spec.Name)
	}
	v, ok := lt.resolve(spec.Version)
	if !ok {
		return nil, 0, invalidParam("Launch template %s has no version %s.", lt.ID, spec.Version)
	}
	return lt, v, nil
}

func checkScaling(sc *NodegroupScaling) error {
	lo, d, hi := deref(sc.MinSize), deref(sc.DesiredSize), deref(sc.MaxSize)
	// API Reference, NodegroupScalingConfig: maxSize at least 1; min and
	// desired at least 0; desired between min and max.
	switch {
	case hi < 1 || lo < 0 || d < 0:
		return invalidParam("maxSize must be at least 1, minSize and desiredSize at least 0")
	case lo > hi:
		return invalidParam("Minimum capacity %d can't be greater than maximum capacity %d", lo, hi)
	case d < lo || d > hi:
		return invalidParam("Desired capacity %d must be between minimum capacity %d and maximum capacity %d", d, lo, hi)
	}
	return nil
}

// checkUpdateConfig applies NodegroupUpdateConfig's rules: exactly one of
// maxUnavailable (1 to 100) and maxUnavailablePercentage (1 to 100), and
// a strategy of DEFAULT or MINIMAL.
func checkUpdateConfig(u *NodegroupUpdateConfig) error {
	if (u.MaxUnavailable == nil) == (u.MaxUnavailablePercentage == nil) {
		return invalidParam("Exactly one of maxUnavailable and maxUnavailablePercentage must be specified")
	}
	if n := u.MaxUnavailable; n != nil && (*n < 1 || *n > 100) {
		return invalidParam("maxUnavailable must be between 1 and 100")
	}
	if p := u.MaxUnavailablePercentage; p != nil && (*p < 1 || *p > 100) {
		return invalidParam("maxUnavailablePercentage must be between 1 and 100")
	}
	if u.UpdateStrategy != strategyDefault && u.UpdateStrategy != strategyMinimal {
		return invalidParam("updateStrategy must be DEFAULT or MINIMAL")
	}
	return nil
}

func checkTaints(ts []Taint) error {
	for _, t := range ts {
		if _, ok := taintEffects[t.Effect]; !ok || t.Key == "" {
			return invalidParam("Invalid taint %s=%s:%s", t.Key, t.Value, t.Effect)
		}
	}
	return nil
}

// taintEffects map EKS's taint effects to Kubernetes' (API Reference,
// Taint).
var taintEffects = map[string]corev1.TaintEffect{
	"NO_SCHEDULE":        corev1.TaintEffectNoSchedule,
	"NO_EXECUTE":         corev1.TaintEffectNoExecute,
	"PREFER_NO_SCHEDULE": corev1.TaintEffectPreferNoSchedule,
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func orInt(p *int32, def int32) *int32 {
	if p == nil {
		return &def
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// byASG maps Auto Scaling group names to the managed node groups they
// back.
func (st *eksState) byASG() map[string]*nodegroup {
	if st.asgs == nil {
		st.asgs = map[string]*nodegroup{}
	}
	return st.asgs
}

// describeNodegroupLocked is the node group as DescribeNodegroup returns
// it: its scaling is its Auto Scaling group's, as a cluster autoscaler
// may have changed it.
func (s *Server) describeNodegroupLocked(ng *nodegroup) Nodegroup {
	out := ng.Nodegroup
	if g := s.groups[ng.asg]; g != nil {
		out.ScalingConfig = &NodegroupScaling{MinSize: ptr(g.Min), MaxSize: ptr(g.Max), DesiredSize: ptr(g.Desired)}
	}
	uc := *ng.UpdateConfig
	out.UpdateConfig = &uc
	out.Resources = &NodegroupResources{AutoScalingGroups: []NamedResource{{Name: ng.asg}}}
	out.Labels, out.Tags = maps.Clone(ng.Labels), maps.Clone(ng.Tags)
	out.Taints = slices.Clone(ng.Taints)
	out.InstanceTypes, out.Subnets = slices.Clone(ng.InstanceTypes), slices.Clone(ng.Subnets)
	if ng.Health == nil {
		out.Health = &NodegroupHealth{Issues: []Issue{}}
	}
	if ng.LaunchTemplate != nil {
		lt := *ng.LaunchTemplate
		out.LaunchTemplate = &lt
	}
	return out
}

// eksInstanceLocked gives an instance of a managed node group's Auto
// Scaling group the labels and taints its node registers with: those
// EKS applies (User Guide, managed-node-update-behavior, Scale up phase
// step 2) and the node group's own (API Reference, Nodegroup: labels,
// taints).
func (s *Server) eksInstanceLocked(g *group, in *instance) {
	ng := s.eks().byASG()[g.Name]
	if ng == nil {
		return
	}
	v, _ := strconv.ParseInt(in.LaunchTemplateVersion, 10, 64)
	in.NodeLabels = ng.nodeLabels(ng.sources[v])
	in.KubeletVersion = ng.sources[v].kubeletVersion()
	for _, t := range ng.Taints {
		in.NodeTaints = append(in.NodeTaints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: taintEffects[t.Effect]})
	}
}

// kubeletVersion is the kubelet of src's EKS optimized AMI as its nodes
// report it: the release's Kubernetes patch version with EKS's suffix
// (v1.30.9-eks); "" for a custom AMI, whose kubelet EKS does not know.
func (src ltSource) kubeletVersion() string {
	if src.version == "" {
		return ""
	}
	patch, _, _ := strings.Cut(src.release, "-")
	if !strings.HasPrefix(patch, src.version+".") {
		patch = src.version + ".0"
	}
	return "v" + patch + "-eks"
}

// nodeLabels are the labels of a node launched from src; current ones
// are what the update checks new nodes for.
func (ng *nodegroup) nodeLabels(src ltSource) map[string]string {
	l := maps.Clone(ng.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[NodeGroupLabel] = ng.NodegroupName
	l[ImageLabel] = src.image
	l[CapacityTypeLabel] = ng.CapacityType
	if src.srcID != "" {
		l[SourceLTIDLabel] = src.srcID
		l[SourceLTVersionLbl] = src.srcVersion
	}
	return l
}

// settleCreate turns a CREATING node group ACTIVE once its instances are
// in service and their nodes Ready, or CREATE_FAILED with a
// NodeCreationFailure health issue after NodeReadyTimeout (API
// Reference, Nodegroup: status; Issue: NodeCreationFailure "Instances
// failed to join the kubernetes cluster").
func (s *Server) settleCreate(cluster, name string) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, s.eksOpts().NodeReadyTimeout)
	defer cancel()
	missing, err := s.waitNodes(ctx, cluster, name, func(Instance) bool { return true })
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, nerr := s.nodegroupArg(cluster, name)
	if nerr != nil || ng.Status != NodegroupCreating || s.ctx.Err() != nil {
		return
	}
	ng.Status, ng.ModifiedAt = NodegroupActive, epochOf(timeNow())
	if err != nil {
		ng.Status = NodegroupFailed
		ng.Health = &NodegroupHealth{Issues: []Issue{{Code: NodeCreationFailure,
			Message: "Instances failed to join the kubernetes cluster", ResourceIDs: missing}}}
	}
	s.notify()
}

func (s *Server) eksOpts() EKSOptions {
	o := s.opts.EKS
	o.defaults()
	return o
}

// configRequest is UpdateNodegroupConfig's body.
type configRequest struct {
	Labels *struct {
		AddOrUpdateLabels map[string]string `json:"addOrUpdateLabels"`
		RemoveLabels      []string          `json:"removeLabels"`
	} `json:"labels"`
	Taints *struct {
		AddOrUpdateTaints []Taint `json:"addOrUpdateTaints"`
		RemoveTaints      []Taint `json:"removeTaints"`
	} `json:"taints"`
	ScalingConfig *NodegroupScaling      `json:"scalingConfig"`
	UpdateConfig  *NodegroupUpdateConfig `json:"updateConfig"`
	Token         string                 `json:"clientRequestToken"`
}

// updateNodegroupConfig answers UpdateNodegroupConfig (API Reference):
// labels, taints, scaling and update configuration, one update at a time
// (ResourceInUseException otherwise).
func (s *Server) updateNodegroupConfig(c *eksCluster, ng *nodegroup, r *http.Request) (any, error) {
	var req configRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := checkConfigModel(req); err != nil {
		return nil, err
	}
	op := "UpdateNodegroupConfig/" + c.name + "/" + ng.NodegroupName
	if res, ok := s.remembered(op, req.Token); ok {
		return res, nil
	}
	if err := s.busy(ng); err != nil {
		return nil, err
	}
	next, params, err := s.nextConfig(ng, req)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return nil, invalidParam("No changes needed")
	}
	g := s.groups[ng.asg]
	g.Min, g.Max, g.Desired = *next.ScalingConfig.MinSize, *next.ScalingConfig.MaxSize, *next.ScalingConfig.DesiredSize
	ng.Labels, ng.Taints, ng.UpdateConfig = next.Labels, next.Taints, next.UpdateConfig
	u := s.startUpdateLocked(c, ng, "ConfigUpdate", params)
	s.wg.Add(1)
	var removeLabels []string
	var removeTaints []Taint
	if req.Labels != nil {
		removeLabels = req.Labels.RemoveLabels
	}
	if req.Taints != nil {
		removeTaints = req.Taints.RemoveTaints
	}
	go s.finishConfig(c.name, ng.NodegroupName, u.ID, removeLabels, removeTaints)
	s.notify()
	res := map[string]any{"update": cloneUpdate(u.Update)}
	s.remember(op, req.Token, res)
	return res, nil
}

// busy refuses a change while the node group is not ACTIVE or has an
// update in progress (API Reference, UpdateNodegroupConfig and
// UpdateNodegroupVersion: ResourceInUseException).
func (s *Server) busy(ng *nodegroup) error {
	if ng.running != nil {
		return inUse("Nodegroup %s is currently being updated by update %s", ng.NodegroupName, ng.running.ID)
	}
	if ng.Status != NodegroupActive {
		return inUse("Nodegroup %s is in status %s; it can be updated only when ACTIVE", ng.NodegroupName, ng.Status)
	}
	return nil
}

// nextConfig is the node group's configuration after req, checked, and
// the update's params.
func (s *Server) nextConfig(ng *nodegroup, req configRequest) (Nodegroup, []UpdateParam, error) {
	next := s.describeNodegroupLocked(ng)
	var params []UpdateParam
	add := func(typ string, v any) {
		b, _ := json.Marshal(v)
		params = append(params, UpdateParam{Type: typ, Value: string(b)})
	}
	if l := req.Labels; l != nil {
		next.Labels = applyLabels(next.Labels, l.AddOrUpdateLabels, l.RemoveLabels, add)
	}
	if t := req.Taints; t != nil {
		if err := checkTaints(t.AddOrUpdateTaints); err != nil {
			return next, nil, err
		}
		next.Taints = applyTaints(next.Taints, t.AddOrUpdateTaints, t.RemoveTaints, add)
	}
	if sc := req.ScalingConfig; sc != nil {
		if err := mergeScaling(next.ScalingConfig, sc, add); err != nil {
			return next, nil, err
		}
	}
	if uc := req.UpdateConfig; uc != nil {
		if err := mergeUpdateConfig(next.UpdateConfig, uc, add); err != nil {
			return next, nil, err
		}
	}
	return next, params, nil
}

func applyLabels(cur, add map[string]string, remove []string, param func(string, any)) map[string]string {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	if len(add) > 0 {
		maps.Copy(out, add)
		param("LabelsToAdd", add)
	}
	if len(remove) > 0 {
		for _, k := range remove {
			delete(out, k)
		}
		param("LabelsToRemove", remove)
	}
	return out
}

func applyTaints(cur, add, remove []Taint, param func(string, any)) []Taint {
	out := slices.Clone(cur)
	for _, t := range append(slices.Clone(add), remove...) {
		out = slices.DeleteFunc(out, func(o Taint) bool { return o.Key == t.Key && o.Effect == t.Effect })
	}
	out = append(out, add...)
	if len(add) > 0 {
		param("TaintsToAdd", add)
	}
	if len(remove) > 0 {
		param("TaintsToRemove", remove)
	}
	return out
}

func mergeScaling(cur, req *NodegroupScaling, param func(string, any)) error {
	for _, f := range []struct {
		typ      string
		cur, req **int32
	}{{"MinSize", &cur.MinSize, &req.MinSize}, {"MaxSize", &cur.MaxSize, &req.MaxSize}, {"DesiredSize", &cur.DesiredSize, &req.DesiredSize}} {
		if *f.req != nil {
			*f.cur = ptr(**f.req)
			param(f.typ, **f.req)
		}
	}
	return checkScaling(cur)
}

// mergeUpdateConfig sets what req gives: maxUnavailable and its
// percentage replace each other.
func mergeUpdateConfig(cur, req *NodegroupUpdateConfig, param func(string, any)) error {
	if req.MaxUnavailable != nil && req.MaxUnavailablePercentage != nil {
		return invalidParam("Only one of maxUnavailable and maxUnavailablePercentage can be specified")
	}
	if req.MaxUnavailable != nil {
		cur.MaxUnavailable, cur.MaxUnavailablePercentage = ptr(*req.MaxUnavailable), nil
		param("MaxUnavailable", *req.MaxUnavailable)
	}
	if req.MaxUnavailablePercentage != nil {
		cur.MaxUnavailable, cur.MaxUnavailablePercentage = nil, ptr(*req.MaxUnavailablePercentage)
		param("MaxUnavailablePercentage", *req.MaxUnavailablePercentage)
	}
	if req.UpdateStrategy != "" {
		cur.UpdateStrategy = req.UpdateStrategy
		param("UpdateStrategy", req.UpdateStrategy)
	}
	return checkUpdateConfig(cur)
}

// startUpdateLocked records a new InProgress update of the node group,
// which is UPDATING until it ends.
func (s *Server) startUpdateLocked(c *eksCluster, ng *nodegroup, typ string, params []UpdateParam) *eksUpdate {
	s.seq++
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", s.idBase()>>32, s.seq)
	u := &eksUpdate{nodegroup: ng.NodegroupName, Update: Update{
		ID: id, Status: UpdateInProgress, Type: typ, Params: params, CreatedAt: epochOf(timeNow()), Errors: []ErrorDetail{},
	}}
	c.updates[id] = u
	ng.updates = append(ng.updates, id)
	ng.running, ng.Status = u, NodegroupUpdating
	return u
}

// endUpdateLocked ends the running update with its errors, if any.
func (s *Server) endUpdateLocked(ng *nodegroup, errs []ErrorDetail) {
	u := ng.running
	if u == nil {
		return
	}
	u.Status, u.Errors = UpdateSuccessful, append([]ErrorDetail{}, errs...)
	if len(errs) > 0 {
		u.Status = UpdateFailed
	}
	ng.running = nil
	if ng.Status == NodegroupUpdating {
		ng.Status = NodegroupActive
	}
	ng.ModifiedAt = epochOf(timeNow())
	s.notify()
}

// finishConfig puts the node group's labels and taints on its nodes
// (API Reference, UpdateNodegroupConfig: "applied to the nodes in the
// node group") and ends the update after ConfigUpdateTime.
func (s *Server) finishConfig(cluster, name, id string, removeLabels []string, removeTaints []Taint) {
	defer s.wg.Done()
	err := s.relabelNodes(s.ctx, cluster, name, removeLabels, removeTaints)
	select {
	case <-s.ctx.Done():
		return
	case <-time.After(s.eksOpts().ConfigUpdateTime):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, nerr := s.nodegroupArg(cluster, name)
	if nerr != nil || ng.running == nil || ng.running.ID != id {
		return
	}
	var errs []ErrorDetail
	if err != nil {
		errs = []ErrorDetail{{ErrorCode: "Unknown", ErrorMessage: err.Error(), ResourceIDs: []string{}}}
	}
	s.endUpdateLocked(ng, errs)
}

func (s *Server) listUpdates(c *eksCluster, nodegroupName, maxResults, next string) (any, error) {
	var ids []string
	if nodegroupName != "" {
		ng := c.nodegroups[nodegroupName]
		if ng == nil {
			return nil, notFound("No node group found for name: %s.", nodegroupName)
		}
		ids = ng.updates
	}
	return listPage(ids, "updateIds", maxResults, next)
}

func (s *Server) describeUpdate(c *eksCluster, id, nodegroupName string) (any, error) {
	u := c.updates[id]
	if u == nil || (nodegroupName != "" && u.nodegroup != nodegroupName) {
		return nil, notFound("No update found for ID: %s", id)
	}
	return map[string]any{"update": cloneUpdate(u.Update)}, nil
}
