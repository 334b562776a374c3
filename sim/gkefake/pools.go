package gkefake

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	compute "google.golang.org/api/compute/v1"
	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/gcefake"
)

// cluster is a GKE cluster: only its control plane's version, the node
// versions it offers and its node pools.
type cluster struct {
	project, location, name string
	masterVersion           string
	validVersions           []string
	// channel is the release channel, "" for none; channelVersions its
	// valid versions, the only ones its pools take (see CreateCluster).
	channel         string
	channelVersions []string
	pools           map[string]*pool
	// podRange is the cluster's pod IPv4 range (see ClusterSpec.PodRange).
	podRange string
}

// nodeConfig is what a node runs: the pool's version and image type.
type nodeConfig struct{ Version, ImageType string }

// pool is a node pool: one managed instance group per zone.
type pool struct {
	c     *cluster
	name  string
	zones []string
	cfg   nodeConfig
	// template is the instance template the pool's groups launch; groups
	// are their names, zone by zone (blue during a blue/green upgrade).
	template string
	groups   []string
	// green are the green groups of a blue/green upgrade, by zone.
	green []string
	// settings are the pool's upgradeSettings and nodeDrainConfig.
	upgrade     container.UpgradeSettings
	drainConfig container.NodeDrainConfig
	autoscaling *container.NodePoolAutoscaling
	flexStart   bool
	queued      bool
	maxPods     int64
	status      string
	gen         int
	// up is the upgrade the pool is in, running or paused (cancelled),
	// nil when none is.
	up *upgrade
	// settingsOp is the running update of the pool's settings alone, nil
	// when none runs.
	settingsOp *operation
}

// etag is the pool's etag: it changes with every change of the pool
// (API reference, NodePool.etag: "computed by the server based on the
// value of node pool fields").
func (p *pool) etag() string { return fmt.Sprintf("%x", p.gen*2654435761+len(p.name)) }

// changedLocked marks a change of the pool.
func (s *Server) changedLocked(p *pool) {
	p.gen++
	s.notifyLocked()
}

// ClusterSpec describes a cluster to make.
type ClusterSpec struct {
	// Location is the cluster's region (a regional cluster) or zone.
	Name, Location, MasterVersion string
	// ValidNodeVersions are the versions getServerConfig offers; the
	// master's is added.
	ValidNodeVersions []string
	// Channel enrols the cluster in a release channel (REGULAR, ...)
	// whose valid versions, the master's added, are ChannelVersions:
	// getServerConfig lists them under channels, and the cluster's pools
	// take only those (the run's reading of release channels, see
	// pkg/cloud/gke's validVersions).
	Channel         string
	ChannelVersions []string
	// PodRange is the cluster's pod IPv4 range, which its pools' nodes
	// take their pod blocks of (see podrange.go); default 10.4.0.0/14.
	PodRange string
}

// CreateCluster makes a cluster.
func (s *Server) CreateCluster(spec ClusterSpec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	valid := append(slices.Clone(spec.ValidNodeVersions), spec.MasterVersion)
	slices.SortFunc(valid, compareVersions)
	c := &cluster{
		project: s.Project(), location: spec.Location, name: spec.Name, masterVersion: spec.MasterVersion,
		validVersions: slices.Compact(valid), pools: map[string]*pool{}, channel: spec.Channel,
		podRange: cmpOr(spec.PodRange, defaultPodRange),
	}
	if spec.Channel != "" {
		ch := append(slices.Clone(spec.ChannelVersions), spec.MasterVersion)
		slices.SortFunc(ch, compareVersions)
		c.channelVersions = slices.Compact(ch)
	}
	s.clusters[s.Project()+"/"+spec.Location+"/"+spec.Name] = c
}

// PoolSpec describes a node pool to make.
type PoolSpec struct {
	Cluster, Location, Name string
	Zones                   []string
	NodesPerZone            int64
	Version, ImageType      string
	// Upgrade and Drain are the pool's upgradeSettings and
	// nodeDrainConfig; nil for GKE's defaults.
	Upgrade     *container.UpgradeSettings
	Drain       *container.NodeDrainConfig
	Autoscaling *container.NodePoolAutoscaling
	// FlexStart and Queued make a flex-start or queued-provisioning pool.
	FlexStart, Queued bool
	// MaxPodsPerNode is the pool's maxPodsConstraint; default 110.
	MaxPodsPerNode int64
}

// CreatePool makes a node pool: an instance template of its version and
// image type, and a zonal managed instance group of NodesPerZone in each
// zone, whose update policy is OPPORTUNISTIC so that only the upgrade
// replaces instances.
func (s *Server) CreatePool(ctx context.Context, spec PoolSpec) error {
	s.mu.Lock()
	c := s.clusters[s.Project()+"/"+spec.Location+"/"+spec.Cluster]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no cluster %q in %q", spec.Cluster, spec.Location)
	}
	p := &pool{c: c, name: spec.Name, zones: slices.Clone(spec.Zones), status: "RUNNING",
		cfg:         nodeConfig{Version: spec.Version, ImageType: cmpOr(spec.ImageType, "COS_CONTAINERD")},
		autoscaling: spec.Autoscaling, flexStart: spec.FlexStart, queued: spec.Queued, maxPods: cmp.Or(spec.MaxPodsPerNode, defaultMaxPods)}
	if spec.Upgrade != nil {
		p.upgrade = *spec.Upgrade
	}
	if spec.Drain != nil {
		p.drainConfig = *spec.Drain
	}
	tmpl, err := s.nodeTemplate(ctx, p, p.cfg)
	if err != nil {
		return err
	}
	p.template = tmpl
	sizes := make([]int64, len(p.zones))
	for i := range sizes {
		sizes[i] = spec.NodesPerZone
	}
	if p.groups, err = s.createGroups(ctx, p, tmpl, sizes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.pools[p.name] = p
	s.changedLocked(p)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// osDistribution is the OS family a node image type runs
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-images).
func osDistribution(imageType string) string {
	switch {
	case strings.HasPrefix(imageType, "UBUNTU"):
		return "ubuntu"
	case strings.HasPrefix(imageType, "WINDOWS"):
		return "windows"
	}
	return "cos"
}

// nodeTemplate makes an instance template for the pool's nodes of cfg,
// with the metadata GKE gives its nodes' instances: cluster-name and
// cluster-location, and kube-labels with the node pool's label.
func (s *Server) nodeTemplate(ctx context.Context, p *pool, cfg nodeConfig) (string, error) {
	name := s.nextName(fmt.Sprintf("gke-%s-%s", p.c.name, p.name))
	image := "gke-" + strings.NewReplacer(".", "", "-", "").Replace(cfg.Version) + "-" + strings.ToLower(cfg.ImageType)
	s.Compute.RegisterImage("gke-node-images", image, "")
	labels := fmt.Sprintf("%s=%s,%s=%s", NodePoolLabel, p.name, OSDistributionLabel, osDistribution(cfg.ImageType))
	it := &compute.InstanceTemplate{Name: name, Properties: &compute.InstanceProperties{
		MachineType: "e2-standard-4",
		Disks: []*compute.AttachedDisk{{Boot: true, AutoDelete: true, Type: "PERSISTENT",
			InitializeParams: &compute.AttachedDiskInitializeParams{SourceImage: "projects/gke-node-images/global/images/" + image, DiskSizeGb: 100}}},
		Metadata: &compute.Metadata{Items: []*compute.MetadataItems{
			{Key: "cluster-name", Value: &p.c.name}, {Key: "cluster-location", Value: &p.c.location},
			{Key: gcefake.KubeLabelsKey, Value: &labels},
		}},
		NetworkInterfaces: []*compute.NetworkInterface{{Network: "global/networks/default"}},
	}}
	if _, err := s.gce.InstanceTemplates.Insert(p.c.project, it).Context(ctx).Do(); err != nil {
		return "", fmt.Errorf("insert instance template %s: %w", name, err)
	}
	s.mu.Lock()
	s.templates[name] = cfg
	s.mu.Unlock()
	return name, nil
}

// createGroups makes a zonal managed instance group of template in each
// of the pool's zones, of sizes[i] instances, named as GKE names them
// (gke-CLUSTER-POOL-HASH-grp).
func (s *Server) createGroups(ctx context.Context, p *pool, template string, sizes []int64) ([]string, error) {
	var names []string
	for i, z := range p.zones {
		size := sizes[i]
		name := s.nextName(fmt.Sprintf("gke-%s-%s", p.c.name, p.name)) + "-grp"
		igm := &compute.InstanceGroupManager{
			Name: name, BaseInstanceName: strings.TrimSuffix(name, "-grp"), TargetSize: size, ForceSendFields: []string{"TargetSize"},
			InstanceTemplate: "projects/" + p.c.project + "/global/instanceTemplates/" + template,
			UpdatePolicy:     &compute.InstanceGroupManagerUpdatePolicy{Type: gcefake.Opportunistic},
		}
		if _, err := s.gce.InstanceGroupManagers.Insert(p.c.project, z, igm).Context(ctx).Do(); err != nil {
			return nil, fmt.Errorf("insert instance group %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// groupKey is the gcefake key of the pool's group in zone i.
func groupKey(p *pool, groups []string, i int) string {
	return gcefake.GroupKey(p.c.project, p.zones[i], "", groups[i])
}

// groupURLs are the groups' resource URLs, as instanceGroupUrls lists
// them.
func (s *Server) groupURLs(p *pool, groups []string) []string {
	var out []string
	for i, g := range groups {
		out = append(out, fmt.Sprintf("%sprojects/%s/zones/%s/instanceGroupManagers/%s", s.Compute.Endpoint, p.c.project, p.zones[i], g))
	}
	return out
}

// view is the node pool as nodePools.get answers it
// (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools#NodePool).
func (s *Server) view(p *pool) *container.NodePool {
	up, dc := p.upgrade, p.drainConfig
	np := &container.NodePool{
		Name: p.name, Version: p.cfg.Version, Status: p.status, Etag: p.etag(), Locations: slices.Clone(p.zones),
		Config:          &container.NodeConfig{ImageType: p.cfg.ImageType, MachineType: "e2-standard-4", FlexStart: p.flexStart},
		UpgradeSettings: &up, NodeDrainConfig: &dc, Autoscaling: p.autoscaling,
		InstanceGroupUrls: append(s.groupURLs(p, p.groups), s.groupURLs(p, p.green)...),
		SelfLink:          fmt.Sprintf("%sv1/%s", s.Endpoint, poolName(p)),
	}
	s.podNetworkLocked(p, np)
	if p.queued {
		np.QueuedProvisioning = &container.QueuedProvisioning{Enabled: true}
	}
	if up := p.up; up != nil && up.bg != nil {
		bg := *up.bg
		np.UpdateInfo = &container.UpdateInfo{BlueGreenInfo: &bg}
	}
	return np
}

func poolName(p *pool) string {
	return fmt.Sprintf("projects/%s/locations/%s/clusters/%s/nodePools/%s", p.c.project, p.c.location, p.c.name, p.name)
}

// Pool returns the node pool as nodePools.get answers it.
func (s *Server) Pool(cluster, location, name string) (*container.NodePool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[s.Project()+"/"+location+"/"+cluster]
	if c == nil || c.pools[name] == nil {
		return nil, false
	}
	return s.view(c.pools[name]), true
}

// PoolGroups are the gcefake keys of the pool's instance groups, blue
// and green.
func (s *Server) PoolGroups(cluster, location, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[s.Project()+"/"+location+"/"+cluster]
	if c == nil || c.pools[name] == nil {
		return nil
	}
	p := c.pools[name]
	var out []string
	for i := range p.groups {
		out = append(out, groupKey(p, p.groups, i))
	}
	for i := range p.green {
		out = append(out, groupKey(p, p.green, i))
	}
	return out
}

// TouchPool changes the pool as another client would (a label update,
// say): its etag changes and nothing else.
func (s *Server) TouchPool(cluster, location, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clusters[s.Project()+"/"+location+"/"+cluster]; c != nil && c.pools[name] != nil {
		s.changedLocked(c.pools[name])
	}
}

// compareVersions orders GKE versions: 1.31.2-gke.1000 by major, minor,
// patch, then the gke.N suffix.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	return slices.Compare(pa, pb)
}

func versionParts(v string) []int {
	base, suffix, _ := strings.Cut(v, "-gke.")
	var out []int
	for f := range strings.SplitSeq(base, ".") {
		n := 0
		fmt.Sscanf(f, "%d", &n)
		out = append(out, n)
	}
	for len(out) < 3 {
		out = append(out, 0)
	}
	n := 0
	fmt.Sscanf(suffix, "%d", &n)
	return append(out, n)
}

// resolveVersion reads an update's nodeVersion as GKE does (API
// reference, UpdateNodePoolRequest.nodeVersion): "-" is the master's
// version, "latest" the highest valid one, "1.X" and "1.X.Y" the highest
// valid one they prefix, else the exact version, which must be valid;
// none may be above the master's
// (https://cloud.google.com/kubernetes-engine/versioning#version_skew).
func resolveVersion(c *cluster, v string) (string, error) {
	offered := c.validVersions
	if c.channel != "" {
		offered = c.channelVersions
	}
	valid := slices.DeleteFunc(slices.Clone(offered), func(x string) bool { return compareVersions(x, c.masterVersion) > 0 })
	switch {
	case v == "-":
		return c.masterVersion, nil
	case v == "latest":
		return valid[len(valid)-1], nil
	case slices.Contains(offered, v):
		if compareVersions(v, c.masterVersion) > 0 {
			return "", invalidArg("node version %q must not be greater than the cluster's master version %q", v, c.masterVersion)
		}
		return v, nil
	}
	for _, x := range slices.Backward(valid) {
		if strings.HasPrefix(x, v+".") || strings.HasPrefix(x, v+"-") {
			return x, nil
		}
	}
	return "", invalidArg("node version %q is not supported; valid versions: %s", v, strings.Join(offered, ", "))
}

// validImageTypes are the image types the fake knows
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-images#available_node_images).
var validImageTypes = []string{"COS_CONTAINERD", "UBUNTU_CONTAINERD", "WINDOWS_LTSC_CONTAINERD", "WINDOWS_SAC_CONTAINERD"}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
