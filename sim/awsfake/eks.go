package awsfake

// The EKS side of the fake: clusters, managed node groups and their
// updates, answered in the REST-JSON protocol aws-sdk-go-v2's service/eks
// speaks (paths under /clusters). A managed node group is an Auto Scaling
// group of this Server, tagged and launched as EKS does; its updates are
// carried out by eks_update.go. Every behaviour cites the page of the
// Amazon EKS API Reference (https://docs.aws.amazon.com/eks/latest/APIReference/)
// or User Guide (https://docs.aws.amazon.com/eks/latest/userguide/) it
// follows; what is not modelled is listed in README.md.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Nodegroup is a managed node group as DescribeNodegroup returns it (API
// Reference, Nodegroup); the JSON names are the wire's.
type Nodegroup struct {
	NodegroupName  string                 `json:"nodegroupName"`
	NodegroupArn   string                 `json:"nodegroupArn,omitempty"`
	ClusterName    string                 `json:"clusterName"`
	Version        string                 `json:"version,omitempty"`
	ReleaseVersion string                 `json:"releaseVersion,omitempty"`
	CreatedAt      epoch                  `json:"createdAt,omitempty"`
	ModifiedAt     epoch                  `json:"modifiedAt,omitempty"`
	Status         string                 `json:"status,omitempty"`
	CapacityType   string                 `json:"capacityType,omitempty"`
	ScalingConfig  *NodegroupScaling      `json:"scalingConfig,omitempty"`
	InstanceTypes  []string               `json:"instanceTypes,omitempty"`
	Subnets        []string               `json:"subnets,omitempty"`
	AmiType        string                 `json:"amiType,omitempty"`
	NodeRole       string                 `json:"nodeRole,omitempty"`
	Labels         map[string]string      `json:"labels,omitempty"`
	Taints         []Taint                `json:"taints,omitempty"`
	Resources      *NodegroupResources    `json:"resources,omitempty"`
	DiskSize       *int32                 `json:"diskSize,omitempty"`
	Health         *NodegroupHealth       `json:"health,omitempty"`
	UpdateConfig   *NodegroupUpdateConfig `json:"updateConfig,omitempty"`
	LaunchTemplate *LaunchTemplateSpec    `json:"launchTemplate,omitempty"`
	Tags           map[string]string      `json:"tags,omitempty"`
	// RemoteAccess, NodeRepairConfig and WarmPoolConfig are kept as
	// CreateNodegroup gave them and described as they are (API Reference,
	// Nodegroup); the fake models no SSH, repair or warm pool behind them.
	RemoteAccess     *RemoteAccessConfig `json:"remoteAccess,omitempty"`
	NodeRepairConfig *NodeRepairConfig   `json:"nodeRepairConfig,omitempty"`
	WarmPoolConfig   *WarmPoolConfig     `json:"warmPoolConfig,omitempty"`
}

// RemoteAccessConfig is a node group's remoteAccess (API Reference,
// RemoteAccessConfig).
type RemoteAccessConfig struct {
	Ec2SshKey            string   `json:"ec2SshKey,omitempty"`
	SourceSecurityGroups []string `json:"sourceSecurityGroups,omitempty"`
}

// NodeRepairConfig is a node group's nodeRepairConfig (API Reference,
// NodeRepairConfig); its overrides are kept as given.
type NodeRepairConfig struct {
	Enabled                             *bool            `json:"enabled,omitempty"`
	MaxParallelNodesRepairedCount       *int32           `json:"maxParallelNodesRepairedCount,omitempty"`
	MaxParallelNodesRepairedPercentage  *int32           `json:"maxParallelNodesRepairedPercentage,omitempty"`
	MaxUnhealthyNodeThresholdCount      *int32           `json:"maxUnhealthyNodeThresholdCount,omitempty"`
	MaxUnhealthyNodeThresholdPercentage *int32           `json:"maxUnhealthyNodeThresholdPercentage,omitempty"`
	NodeRepairConfigOverrides           []map[string]any `json:"nodeRepairConfigOverrides,omitempty"`
}

// WarmPoolConfig is a node group's warmPoolConfig (API Reference,
// WarmPoolConfig).
type WarmPoolConfig struct {
	Enabled                  *bool  `json:"enabled,omitempty"`
	MaxGroupPreparedCapacity *int32 `json:"maxGroupPreparedCapacity,omitempty"`
	MinSize                  *int32 `json:"minSize,omitempty"`
	PoolState                string `json:"poolState,omitempty"`
	ReuseOnScaleIn           *bool  `json:"reuseOnScaleIn,omitempty"`
}

// NodegroupResources names the Auto Scaling group behind a node group.
type NodegroupResources struct {
	AutoScalingGroups []NamedResource `json:"autoScalingGroups"`
}

// NamedResource is a resource named by its name.
type NamedResource struct {
	Name string `json:"name"`
}

// NodegroupScaling is a node group's scalingConfig.
type NodegroupScaling struct {
	MinSize     *int32 `json:"minSize,omitempty"`
	MaxSize     *int32 `json:"maxSize,omitempty"`
	DesiredSize *int32 `json:"desiredSize,omitempty"`
}

// NodegroupUpdateConfig is a node group's updateConfig.
type NodegroupUpdateConfig struct {
	MaxUnavailable           *int32 `json:"maxUnavailable,omitempty"`
	MaxUnavailablePercentage *int32 `json:"maxUnavailablePercentage,omitempty"`
	UpdateStrategy           string `json:"updateStrategy,omitempty"`
}

// Taint is a node group's Kubernetes taint; Effect is NO_SCHEDULE,
// NO_EXECUTE or PREFER_NO_SCHEDULE.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// LaunchTemplateSpec names a launch template by id or name, and a version.
type LaunchTemplateSpec struct {
	ID      string `json:"id,omitempty"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// NodegroupHealth lists a node group's health issues.
type NodegroupHealth struct {
	Issues []Issue `json:"issues"`
}

// Issue is one health issue.
type Issue struct {
	Code        string   `json:"code"`
	Message     string   `json:"message"`
	ResourceIDs []string `json:"resourceIds,omitempty"`
}

// Update is an EKS update as DescribeUpdate returns it (API Reference,
// Update).
type Update struct {
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	Type      string        `json:"type"`
	Params    []UpdateParam `json:"params"`
	CreatedAt epoch         `json:"createdAt"`
	Errors    []ErrorDetail `json:"errors"`
}

// UpdateParam is one parameter of an update.
type UpdateParam struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// ErrorDetail is one error of a failed update: EKS names the resources
// (for PodEvictionFailure, the nodes) and nothing else.
type ErrorDetail struct {
	ErrorCode    string   `json:"errorCode"`
	ErrorMessage string   `json:"errorMessage"`
	ResourceIDs  []string `json:"resourceIds"`
}

// Update statuses, node group statuses and update error codes (API
// Reference, Update, Nodegroup and ErrorDetail).
const (
	UpdateInProgress = "InProgress"
	UpdateSuccessful = "Successful"
	UpdateFailed     = "Failed"

	NodegroupCreating = "CREATING"
	NodegroupActive   = "ACTIVE"
	NodegroupUpdating = "UPDATING"
	NodegroupDeleting = "DELETING"
	NodegroupFailed   = "CREATE_FAILED"

	PodEvictionFailure  = "PodEvictionFailure"
	NodeCreationFailure = "NodeCreationFailure"
)

// epoch is a timestamp as restJson1 sends it: seconds since the epoch.
type epoch float64

func epochOf(t time.Time) epoch { return epoch(float64(t.UnixMilli()) / 1000) }

// Time is the timestamp as a time.Time.
func (e epoch) Time() time.Time { return time.UnixMilli(int64(float64(e) * 1000)).UTC() }

// EKSOptions time what the fake's EKS carries out; zero values take the
// documented figures.
type EKSOptions struct {
	// EvictionTimeout is how long a node's pods may take to leave before
	// the update fails with PodEvictionFailure: 15 minutes (User Guide,
	// managed-node-update-behavior, Upgrade phase step 2).
	EvictionTimeout time.Duration
	// CordonWait is the wait between cordoning a drained node and
	// terminating it: 60 seconds (same page, Upgrade phase step 3).
	CordonWait time.Duration
	// DeleteDrainTimeout is how long DeleteNodegroup lets a node drain
	// before it is terminated regardless: "a few minutes" (User Guide,
	// delete-managed-node-group); 5 minutes here.
	DeleteDrainTimeout time.Duration
	// NodeReadyTimeout bounds the wait for new nodes to be Ready with
	// their labels before NodeCreationFailure (Scale up phase step 2);
	// EKS does not document it: 15 minutes here.
	NodeReadyTimeout time.Duration
	// EvictRetry is the pause between refused evictions of a pod; 5s.
	EvictRetry time.Duration
	// ConfigUpdateTime is how long an UpdateNodegroupConfig stays
	// InProgress; 0 ends it at once (its answer still says InProgress, as
	// AWS's does).
	ConfigUpdateTime time.Duration
}

func (o *EKSOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.EvictionTimeout, 15*time.Minute)
	def(&o.CordonWait, 60*time.Second)
	def(&o.DeleteDrainTimeout, 5*time.Minute)
	def(&o.NodeReadyTimeout, 15*time.Minute)
	def(&o.EvictRetry, 5*time.Second)
}

// eksState is the Server's EKS: clusters, their node groups and updates,
// and the AMI releases SSM publishes.
type eksState struct {
	clusters map[string]*eksCluster
	releases map[string][]Release  // by Kubernetes version, oldest first
	calls    []string              // "METHOD path" of every EKS request
	asgs     map[string]*nodegroup // by Auto Scaling group name, see byASG
	// forced are the pods DeleteNodegroup found on a group's nodes when
	// its drain began, by "cluster/name": what it had to move itself.
	forced map[string][]string
	// tokens are CreateNodegroup's answers by clientRequestToken: a
	// request repeating a token gets the first answer again and changes
	// nothing (API Reference, CreateNodegroup: clientRequestToken "to
	// ensure the idempotency of the request"), whether or not that group
	// still exists.
	tokens map[string]any
}

type eksCluster struct {
	name, version string
	created       time.Time
	nodegroups    map[string]*nodegroup
	updates       map[string]*eksUpdate
}

// nodegroup is a managed node group: its description, the Auto Scaling
// group and EKS-owned launch template behind it, and what each version of
// that template was made from (for the labels of the nodes it launches).
type nodegroup struct {
	Nodegroup
	asg, lt string
	sources map[int64]ltSource
	updates []string // update ids, oldest first
	running *eksUpdate
}

// ltSource is what a version of the EKS-owned launch template stands for:
// release is the AMI's ID for a custom AMI, and version empty.
type ltSource struct {
	image, release, version string
	srcID, srcVersion       string // the user's launch template, if any
	instanceType            string // what the first nodes launch as
}

type eksUpdate struct {
	Update
	nodegroup string
}

// Release is an EKS optimized AMI release: what CreateNodegroup and
// UpdateNodegroupVersion launch for a release version, and what SSM
// publishes as recommended.
type Release struct {
	KubernetesVersion, ReleaseVersion, ImageID string
}

func (s *Server) eks() *eksState {
	if s.eksData.clusters == nil {
		s.eksData.clusters = map[string]*eksCluster{}
		s.eksData.releases = map[string][]Release{}
	}
	return &s.eksData
}

// CreateEKSCluster adds an ACTIVE cluster whose control plane runs
// Kubernetes version (e.g. "1.31").
func (s *Server) CreateEKSCluster(name, version string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eks().clusters[name] = &eksCluster{name: name, version: version, created: timeNow(),
		nodegroups: map[string]*nodegroup{}, updates: map[string]*eksUpdate{}}
	s.notify()
}

// SetEKSClusterVersion changes a cluster's control plane version, as a
// finished UpdateClusterVersion would.
func (s *Server) SetEKSClusterVersion(name, version string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.eks().clusters[name]
	if c == nil {
		return fmt.Errorf("no cluster %q", name)
	}
	c.version = version
	s.notify()
	return nil
}

// AddRelease publishes an AMI release (registering its image); the last
// added for a Kubernetes version is the recommended one.
func (s *Server) AddRelease(r Release) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureImageLocked(r.ImageID)
	st := s.eks()
	st.releases[r.KubernetesVersion] = append(st.releases[r.KubernetesVersion], r)
}

// Nodegroup returns a snapshot of a managed node group as
// DescribeNodegroup describes it.
func (s *Server) Nodegroup(cluster, name string) (Nodegroup, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, err := s.nodegroupArg(cluster, name)
	if err != nil {
		return Nodegroup{}, false
	}
	return s.describeNodegroupLocked(ng), true
}

// NodegroupASG is the name of the Auto Scaling group behind a managed
// node group.
func (s *Server) NodegroupASG(cluster, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, err := s.nodegroupArg(cluster, name)
	if err != nil {
		return "", false
	}
	return ng.asg, true
}

// EKSUpdates returns a node group's updates, oldest first.
func (s *Server) EKSUpdates(cluster, name string) []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	ng, err := s.nodegroupArg(cluster, name)
	if err != nil {
		return nil
	}
	c := s.eks().clusters[cluster]
	var out []Update
	for _, id := range ng.updates {
		out = append(out, cloneUpdate(c.updates[id].Update))
	}
	return out
}

// Nodegroups names a cluster's managed node groups, sorted.
func (s *Server) Nodegroups(cluster string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.eks().clusters[cluster]
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.nodegroups))
}

// DeleteForced returns the pods ("namespace/name") DeleteNodegroup found
// on the node group's nodes when it began to drain them, and whether the
// group was deleted at all: a group whose nodes were drained before its
// delete leaves EKS nothing to force out.
func (s *Server) DeleteForced(cluster, name string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods, ok := s.eks().forced[cluster+"/"+name]
	return slices.Clone(pods), ok
}

// EKSCalls returns "METHOD path" for every EKS request the Server has
// answered, in order.
func (s *Server) EKSCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.eks().calls)
}

func cloneUpdate(u Update) Update {
	u.Params = slices.Clone(u.Params)
	u.Errors = slices.Clone(u.Errors)
	return u
}

// eksError is an error in the restJson1 shape: the code in
// X-Amzn-ErrorType, the message in the body (API Reference, Common
// Errors and each action's Errors).
func eksError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func invalidParam(format string, args ...any) *apiError {
	return eksError(http.StatusBadRequest, "InvalidParameterException", format, args...)
}

func notFound(format string, args ...any) *apiError {
	return eksError(http.StatusNotFound, "ResourceNotFoundException", format, args...)
}

func inUse(format string, args ...any) *apiError {
	return eksError(http.StatusConflict, "ResourceInUseException", format, args...)
}

// serveEKS answers the EKS paths; it reports false for other requests.
func (s *Server) serveEKS(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if parts[0] != "clusters" {
		return false
	}
	s.mu.Lock()
	s.eks().calls = append(s.eks().calls, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	if err := checkJSON("eks", "", r); err != nil {
		writeJSON(w, nil, err)
		return true
	}
	s.mu.Lock()
	res, err := s.eksRoute(r, parts[1:])
	s.mu.Unlock()
	writeJSON(w, res, err)
	return true
}

func writeJSON(w http.ResponseWriter, res any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", requestID())
	if err != nil {
		ae, ok := err.(*apiError)
		if !ok {
			ae = eksError(http.StatusInternalServerError, "ServerException", "%s", err.Error())
		}
		w.Header().Set("X-Amzn-ErrorType", ae.code)
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": ae.message})
		return
	}
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(res)
}

// eksRoute dispatches on method and path, with mu held; parts follow
// "clusters".
func (s *Server) eksRoute(r *http.Request, parts []string) (any, error) {
	if len(parts) == 0 || parts[0] == "" {
		return nil, eksError(http.StatusNotFound, "NotFoundException", "unsupported path %s", r.URL.Path)
	}
	c := s.eks().clusters[parts[0]]
	if c == nil {
		return nil, notFound("No cluster found for name: %s.", parts[0])
	}
	route := r.Method + " " + strings.Join(append([]string{"*"}, parts[1:]...), "/")
	if len(parts) >= 3 {
		route = r.Method + " " + strings.Join(append([]string{"*", parts[1], "*"}, parts[3:]...), "/")
	}
	q := r.URL.Query()
	switch route {
	case "GET *":
		return map[string]any{"cluster": s.describeCluster(c)}, nil
	case "GET */node-groups":
		return listPage(slices.Sorted(maps.Keys(c.nodegroups)), "nodegroups", q.Get("maxResults"), q.Get("nextToken"))
	case "POST */node-groups":
		return s.createNodegroup(c, r)
	case "GET */node-groups/*", "DELETE */node-groups/*", "POST */node-groups/*/update-config", "POST */node-groups/*/update-version":
		return s.nodegroupRoute(r, c, parts[2], route)
	case "GET */updates":
		return s.listUpdates(c, q.Get("nodegroupName"), q.Get("maxResults"), q.Get("nextToken"))
	case "GET */updates/*":
		return s.describeUpdate(c, parts[2], q.Get("nodegroupName"))
	}
	return nil, eksError(http.StatusNotFound, "NotFoundException", "unsupported: %s %s", r.Method, r.URL.Path)
}

func (s *Server) nodegroupRoute(r *http.Request, c *eksCluster, name, route string) (any, error) {
	ng, err := s.nodegroupArg(c.name, name)
	if err != nil {
		return nil, err
	}
	switch route {
	case "GET */node-groups/*":
		return map[string]any{"nodegroup": s.describeNodegroupLocked(ng)}, nil
	case "DELETE */node-groups/*":
		return s.deleteNodegroup(c, ng)
	case "POST */node-groups/*/update-config":
		return s.updateNodegroupConfig(c, ng, r)
	}
	return s.updateNodegroupVersion(c, ng, r)
}

// nodegroupArg finds a node group; the message is DescribeNodegroup's.
func (s *Server) nodegroupArg(cluster, name string) (*nodegroup, error) {
	c := s.eks().clusters[cluster]
	if c == nil {
		return nil, notFound("No cluster found for name: %s.", cluster)
	}
	ng := c.nodegroups[name]
	if ng == nil {
		return nil, notFound("No node group found for name: %s.", name)
	}
	return ng, nil
}

func (s *Server) describeCluster(c *eksCluster) map[string]any {
	return map[string]any{
		"name":            c.name,
		"arn":             fmt.Sprintf("arn:aws:eks:%s:123456789012:cluster/%s", s.opts.Region, c.name),
		"version":         c.version,
		"status":          "ACTIVE",
		"createdAt":       epochOf(c.created),
		"platformVersion": "eks.1",
		"endpoint":        "https://" + c.name + ".eks.amazonaws.com",
	}
}

// listPage answers a List call with the page that nextToken (an index)
// starts; maxResults defaults to 100 (API Reference, ListNodegroups and
// ListUpdates).
func listPage(all []string, key, maxResults, next string) (any, error) {
	size, start := 100, 0
	if maxResults != "" {
		if _, err := fmt.Sscan(maxResults, &size); err != nil || size < 1 || size > 100 {
			return nil, invalidParam("maxResults must be between 1 and 100")
		}
	}
	if next != "" {
		if _, err := fmt.Sscan(next, &start); err != nil || start < 0 || start > len(all) {
			return nil, invalidParam("The nextToken provided is invalid.")
		}
	}
	end := min(start+size, len(all))
	out := map[string]any{key: append([]string{}, all[start:end]...)}
	if end < len(all) {
		out["nextToken"] = fmt.Sprint(end)
	}
	return out, nil
}

// decode reads a JSON body into v; a malformed one is the caller's error.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return eksError(http.StatusBadRequest, "InvalidRequestException", "cannot read the request body: %v", err)
	}
	return nil
}
