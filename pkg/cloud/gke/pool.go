package gke

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// NodePool is a GKE node pool, whose upgrades GKE runs.
type NodePool struct {
	c                                *clients
	project, location, cluster, name string
	pool                             *container.NodePool
	masterVersion                    string
	// channel is the cluster's release channel (REGULAR, ...), "" for none.
	channel string
	// target is the node version and image type the update moves to.
	target nodeConfig
	// pdbTimeout is --pdb-timeout, "" to keep the pool's.
	pdbTimeout string
	// etag is the pool's etag when planned: the update carries it, so a
	// pool changed since is refused. A Configure of the run's own
	// settings moves it on; the update uses it up.
	etag string
	// fromMetadata says the cluster was read from an instance's metadata
	// (compute.instances.get), not given by the flags.
	fromMetadata bool
}

// nodeConfig is a node version and an image type.
type nodeConfig struct{ Version, ImageType string }

func (c nodeConfig) String() string { return c.Version + "/" + c.ImageType }

var (
	_ cloud.ManagedUpdater   = (*NodePool)(nil)
	_ cloud.ServicePlanner   = (*NodePool)(nil)
	_ cloud.UpdateCanceller  = (*NodePool)(nil)
	_ cloud.UpdateResumer    = (*NodePool)(nil)
	_ cloud.UpdateRollbacker = (*NodePool)(nil)
	_ cloud.UpdateCompleter  = (*NodePool)(nil)
	_ cloud.Claimer          = gkeCloud{}
	_ cloud.FlagBinder       = gkeCloud{}
	_ cloud.Helper           = gkeCloud{}
	_ cloud.FlagValues       = gkeCloud{}
)

// Name implements cloud.Provider.
func (n *NodePool) Name() string { return Name }

// Describe implements cloud.Provider.
func (n *NodePool) Describe() string { return "GKE replaces the nodes of " + n.String() }

// GroupName implements cloud.ManagedUpdater.
func (n *NodePool) GroupName() string { return n.name }

func (n *NodePool) clusterPath() string {
	return fmt.Sprintf("projects/%s/locations/%s/clusters/%s", n.project, n.location, n.cluster)
}

func (n *NodePool) poolPath() string { return n.clusterPath() + "/nodePools/" + n.name }

func (n *NodePool) opPath(id string) string {
	return fmt.Sprintf("projects/%s/locations/%s/operations/%s", n.project, n.location, id)
}

// read reads the cluster's control plane version and the pool.
func (n *NodePool) read(ctx context.Context) error {
	cl, err := n.c.gke.Projects.Locations.Clusters.Get(n.clusterPath()).Context(ctx).Do()
	if apiCode(err) == http.StatusNotFound {
		return inputErrorf("GKE cluster %q not found in location %q of project %q; check --%s and --%s", n.cluster, n.location, n.project, optCluster, optLocation)
	}
	if err != nil {
		return wrap(err, "get GKE cluster %q", n.cluster)
	}
	n.masterVersion = cl.CurrentMasterVersion
	if cl.ReleaseChannel != nil && cl.ReleaseChannel.Channel != "UNSPECIFIED" {
		n.channel = cl.ReleaseChannel.Channel
	}
	if err := n.refresh(ctx); err != nil {
		return err
	}
	n.etag = n.pool.Etag
	return nil
}

// refresh reads the pool again.
func (n *NodePool) refresh(ctx context.Context) error {
	p, err := n.c.gke.Projects.Locations.Clusters.NodePools.Get(n.poolPath()).Context(ctx).Do()
	if apiCode(err) == http.StatusNotFound {
		return inputErrorf("%s not found", n)
	}
	if err != nil {
		return wrap(err, "get %s", n)
	}
	n.pool = p
	return nil
}

func (n *NodePool) imageType() string {
	if n.pool.Config == nil {
		return ""
	}
	return n.pool.Config.ImageType
}

// flexible reports whether GKE upgrades the pool short-lived: a
// flex-start or queued-provisioning pool
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#short-lived-upgrades).
func (n *NodePool) flexible() bool {
	return n.pool.Config != nil && n.pool.Config.FlexStart || n.pool.QueuedProvisioning != nil && n.pool.QueuedProvisioning.Enabled
}

// resolveTarget reads --node-version and --image-type as
// nodePools.update takes them (API reference,
// UpdateNodePoolRequest.nodeVersion: "-" the master's version, "latest"
// the highest valid one, "1.X" and "1.X.Y" the highest valid one of
// theirs), refusing what GKE would refuse: a version it does not offer or
// above the control plane's
// (https://cloud.google.com/kubernetes-engine/versioning#version_skew), an
// image type it does not offer.
func (n *NodePool) resolveTarget(ctx context.Context, o map[string]string) error {
	n.target = nodeConfig{Version: n.pool.Version, ImageType: n.imageType()}
	n.pdbTimeout = o[optPDBTimeout]
	v, image := o[optNodeVersion], o[optImageType]
	if v == "" && image == "" {
		return nil
	}
	sc, err := n.c.gke.Projects.Locations.GetServerConfig(fmt.Sprintf("projects/%s/locations/%s", n.project, n.location)).Context(ctx).Do()
	if err != nil {
		return wrap(err, "get the server config of location %q", n.location)
	}
	if image != "" {
		if !slices.Contains(sc.ValidImageTypes, image) {
			return inputErrorf("invalid --%s %q: GKE offers %s in %s", optImageType, image, strings.Join(sc.ValidImageTypes, ", "), n.location)
		}
		n.target.ImageType = image
	}
	if v != "" {
		if n.target.Version, err = n.resolveVersion(v, n.validVersions(sc)); err != nil {
			return err
		}
	}
	return nil
}

// validVersions are the node versions the pool may move to: a cluster
// on a release channel takes its channel's (container-api.json,
// ReleaseChannelConfig.validVersions: "List of valid versions for the
// channel"), another the location's validNodeVersions ("List of valid
// node upgrade target versions"). The documents do not say whether GKE
// also takes, for a channel's cluster, a version of the location's list
// that its channel does not offer; the run offers only the channel's,
// which GKE does take. A channel the answer does not list falls back to
// the location's list.
func (n *NodePool) validVersions(sc *container.ServerConfig) []string {
	for _, c := range sc.Channels {
		if n.channel != "" && c.Channel == n.channel {
			return c.ValidVersions
		}
	}
	return sc.ValidNodeVersions
}

func (n *NodePool) resolveVersion(v string, valid []string) (string, error) {
	below := slices.DeleteFunc(slices.Clone(valid), func(x string) bool { return compareVersions(x, n.masterVersion) > 0 })
	slices.SortFunc(below, compareVersions)
	switch {
	case v == "-":
		return n.masterVersion, nil
	case v == "latest" && len(below) > 0:
		return below[len(below)-1], nil
	case compareVersions(v, n.masterVersion) > 0 && !strings.HasPrefix(n.masterVersion, v+"."):
		return "", inputErrorf("node version %q is above the control plane's %q of cluster %q; upgrade the control plane first or change --%s", v, n.masterVersion, n.cluster, optNodeVersion)
	}
	for _, x := range slices.Backward(below) {
		if x == v || strings.HasPrefix(x, v+".") || strings.HasPrefix(x, v+"-") {
			return x, nil
		}
	}
	where := n.location
	if n.channel != "" {
		where = fmt.Sprintf("release channel %s of %s", n.channel, n.location)
	}
	return "", inputErrorf("node version %q is not offered in %s at or below the control plane's %q (offered: %s); change --%s", v, where, n.masterVersion, strings.Join(below, ", "), optNodeVersion)
}

// compareVersions orders GKE versions (1.31.2-gke.1000) by major, minor,
// patch and the gke.N suffix; missing parts count as 0.
func compareVersions(a, b string) int {
	return slices.Compare(versionParts(a), versionParts(b))
}

func versionParts(v string) []int {
	base, suffix, _ := strings.Cut(v, "-gke.")
	out := make([]int, 0, 4)
	for f := range strings.SplitSeq(base, ".") {
		var x int
		_, _ = fmt.Sscanf(f, "%d", &x)
		out = append(out, x)
	}
	for len(out) < 3 {
		out = append(out, 0)
	}
	var g int
	_, _ = fmt.Sscanf(suffix, "%d", &g)
	return append(out, g)
}

// OSDistributionLabel names a GKE node's image family (cos, ubuntu).
const OSDistributionLabel = "cloud.google.com/gke-os-distribution"

// osDistribution is the family of an image type.
func osDistribution(imageType string) string {
	switch {
	case strings.HasPrefix(imageType, "UBUNTU"):
		return "ubuntu"
	case strings.HasPrefix(imageType, "WINDOWS"):
		return "windows"
	}
	return "cos"
}

// nodeConfigOf is what a node runs: its kubelet's version (a GKE node's
// kubelet reports the pool version, v1.31.2-gke.1000), and the image type
// of its OS family, the target's or the pool's where they share it.
func (n *NodePool) nodeConfigOf(node *corev1.Node) nodeConfig {
	c := nodeConfig{Version: strings.TrimPrefix(node.Status.NodeInfo.KubeletVersion, "v"), ImageType: n.imageType()}
	if dist := node.Labels[OSDistributionLabel]; dist != "" && dist != osDistribution(c.ImageType) {
		c.ImageType = strings.ToUpper(dist)
		if dist == osDistribution(n.target.ImageType) {
			c.ImageType = n.target.ImageType
		}
	}
	return c
}

// cloudGroup is the plan's view of the pool: every node not on the
// target version and image type is outdated.
func (n *NodePool) cloudGroup(nodes []corev1.Node) *plan.CloudGroup {
	byNode := map[string]plan.Machine{}
	for i := range nodes {
		_, zone, name, _ := gce.InstanceFromProviderID(nodes[i].Spec.ProviderID)
		byNode[nodes[i].Name] = plan.Machine{ID: name, Zone: zone, Template: n.name, Version: n.nodeConfigOf(&nodes[i]).String()}
	}
	sizes := plan.Sizes{Min: int32(len(nodes)), Desired: int32(len(nodes)), Max: int32(len(nodes))}
	if a := n.pool.Autoscaling; a != nil && a.Enabled {
		sizes.Min = int32(max(a.TotalMinNodeCount, a.MinNodeCount*int64(len(n.pool.Locations))))
		sizes.Max = int32(max(a.TotalMaxNodeCount, a.MaxNodeCount*int64(len(n.pool.Locations))))
	}
	current := nodeConfig{Version: n.pool.Version, ImageType: n.imageType()}
	return &plan.CloudGroup{
		GroupID: plan.GroupID{
			Provider:     Name,
			Region:       n.location,
			Group:        n.name,
			GroupKind:    "GKE node pool",
			Template:     n.name,
			TemplateKind: "node pool",
			MachineKind:  "instance",
		},
		Launches: plan.Launches{
			CurrentVersion: current.String(),
			TargetVersion:  n.target.String(),
			LaunchesAfter:  fmt.Sprintf("GKE version %s, image type %s", n.target.Version, n.target.ImageType),
		},
		Sizes: sizes, Nodes: byNode, Managed: cloud.ServiceOf(n),
	}
}

// Settings implements cloud.ManagedUpdater.
func (n *NodePool) Settings(ctx context.Context) (plan.UpdateSettings, error) {
	if err := n.refresh(ctx); err != nil {
		return plan.UpdateSettings{}, err
	}
	return settingsOf(n.pool), nil
}

// Configure implements cloud.ManagedUpdater: nodePools.update with the
// upgradeSettings and nodeDrainConfig alone, carrying the plan's etag
// while the run's upgrade has not started, then the wait for its
// operation. Each attempt first waits out the operation running on the
// pool or its cluster (a stopped run's settings, the change a lost answer
// started, GKE's own): GKE refuses a change while one runs and what it
// changes may show only at its end. It then reads the pool and sends the
// change only if the pool does not have the settings yet; a refusal for
// an operation started since is waited out the same way.
func (n *NodePool) Configure(ctx context.Context, s plan.UpdateSettings) error {
	return n.settle(ctx, func() error {
		if err := n.awaitOperations(ctx); err != nil {
			return err
		}
		return n.configureOnce(ctx, s)
	})
}

// changeAttempts is how often settle makes a change at most.
const changeAttempts = 5

// settle makes a change again after a transient answer, at most
// changeAttempts times, with backoff: GKE's changes carry no request ID,
// so the client's retries do not repeat them (gcpclient.Container), and
// each attempt reads first whether the change was done.
func (n *NodePool) settle(ctx context.Context, attempt func() error) error {
	for i := 1; ; i++ {
		err := attempt()
		if err == nil || !cloud.Transient(err) && !busy(err) || i == changeAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cloud.Backoff(n.c.pollEvery, i)):
		}
	}
}

// configureOnce is one attempt of Configure: nothing if the pool has s.
func (n *NodePool) configureOnce(ctx context.Context, s plan.UpdateSettings) error {
	if err := n.refresh(ctx); err != nil {
		return err
	}
	if settingsOf(n.pool).Equal(s) {
		return nil
	}
	// The plan's etag guards the run's first change only: once the pool
	// runs the target (the settings put back), the upgrade moved it on.
	if (nodeConfig{Version: n.pool.Version, ImageType: n.imageType()}) == n.target {
		n.etag = ""
	}
	op, err := n.c.gke.Projects.Locations.Clusters.NodePools.Update(n.poolPath(), settingsRequest(settingsOf(n.pool), s, n.etag)).Context(ctx).Do()
	if busy(err) {
		return wrap(err, "set the upgrade settings of %s", n)
	}
	if err != nil {
		return n.refused(err, "set the upgrade settings of")
	}
	if err := n.waitDone(ctx, op.Name); err != nil {
		return err
	}
	if n.etag == "" {
		return nil
	}
	// The run's own change: the update goes on from the pool as it set it.
	if err := n.refresh(ctx); err != nil {
		return err
	}
	n.etag = n.pool.Etag
	return nil
}

// settingsRequest changes the pool's settings from was to s: the
// upgradeSettings only if they change, the nodeDrainConfig only if it
// does.
func settingsRequest(was, s plan.UpdateSettings, etag string) *container.UpdateNodePoolRequest {
	up, dc := gkeSettings(s)
	req := &container.UpdateNodePoolRequest{Etag: etag}
	if !upgradeSettingsOnly(was).Equal(upgradeSettingsOnly(s)) {
		req.UpgradeSettings = up
	}
	if !maps.Equal(drainSettings(was), drainSettings(s)) {
		req.NodeDrainConfig = dc
	}
	return req
}

// refused turns GKE's refusal of an update into the user's error: a
// stale etag (ABORTED, 409), a refused argument (400).
func (n *NodePool) refused(err error, what string) error {
	switch apiCode(err) {
	case http.StatusConflict:
		return &Error{Msg: fmt.Sprintf("%s changed since the plan (etag %q): GKE refused the update; run plan again", n, n.etag), Err: err, IsInput: true}
	case http.StatusBadRequest:
		return &Error{Msg: fmt.Sprintf("GKE refused the update of %s: %s", n, apiMessage(err)), Err: err, IsInput: true}
	}
	return wrap(err, "%s %s", what, n)
}

// waitDone waits until the operation is DONE and returns its error.
func (n *NodePool) waitDone(ctx context.Context, id string) error {
	op, err := n.waitOp(ctx, id)
	if err != nil {
		return err
	}
	if op.Error != nil && op.Error.Code != 0 {
		return &Error{Msg: fmt.Sprintf("GKE operation %s on %s failed: %s: %s", id, n, rpcCode(op.Error.Code), oneLine(cmp.Or(op.Error.Message, op.StatusMessage)))}
	}
	return nil
}

// waitOp waits until the operation is DONE and returns it.
func (n *NodePool) waitOp(ctx context.Context, id string) (*container.Operation, error) {
	for failures := 0; ; {
		op, err := n.c.gke.Projects.Locations.Operations.Get(n.opPath(id)).Context(ctx).Do()
		pause := n.c.pollEvery
		if err != nil {
			err = wrap(err, "get operation %q", id)
		}
		switch {
		case err != nil && !cloud.Transient(err):
			return nil, err
		case err != nil:
			// Throttled or briefly unavailable past the client's retries:
			// the operation goes on, so the wait does too.
			failures++
			pause = cloud.Backoff(n.c.pollEvery, failures)
		case op.Status == "DONE":
			return op, nil
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// busy reports GKE's refusal of a change while another operation runs on
// the cluster or the pool: 400 FAILED_PRECONDITION "Cluster is running
// incompatible operation OPERATION_NAME", or the other messages of the
// same page; it "generally allows only one cluster-level operation or one
// operation per node pool at a time"
// (https://cloud.google.com/kubernetes-engine/docs/troubleshooting/concurrent-operations).
func busy(err error) bool {
	if apiCode(err) != http.StatusBadRequest {
		return false
	}
	msg := apiMessage(err)
	return strings.Contains(msg, "incompatible operation") || strings.Contains(msg, "try again once it is done") ||
		strings.Contains(msg, "cannot be updated")
}

// awaitOperations waits until no operation runs on the pool or its
// cluster (operations.list); how they end is theirs, not the caller's.
func (n *NodePool) awaitOperations(ctx context.Context) error {
	ops, err := n.c.gke.Projects.Locations.Operations.List(fmt.Sprintf("projects/%s/locations/%s", n.project, n.location)).Context(ctx).Do()
	if err != nil {
		return wrap(err, "list the operations of %s", n)
	}
	for _, op := range ops.Operations {
		if op.Status == "DONE" || !n.blockedBy(op.TargetLink) {
			continue
		}
		if _, err := n.waitOp(ctx, op.Name); err != nil {
			return err
		}
	}
	return nil
}

// blockedBy reports whether an operation on target (Operation.targetLink:
// a cluster, a node pool or a node) keeps the pool from changing: one on
// the cluster, the pool or its nodes.
func (n *NodePool) blockedBy(target string) bool {
	cl := "/clusters/" + n.cluster
	pool := cl + "/nodePools/" + n.name
	return strings.HasSuffix(target, cl) || strings.HasSuffix(target, pool) || strings.Contains(target, pool+"/")
}

// StartUpdate implements cloud.ManagedUpdater: nodePools.update to the
// target with the plan's etag, unless an upgrade of the pool runs
// already: then that one, so a second run follows the first.
func (n *NodePool) StartUpdate(ctx context.Context, _ bool) (string, error) {
	var id string
	err := n.settle(ctx, func() (err error) {
		id, err = n.startOnce(ctx)
		return err
	})
	return id, err
}

// startOnce is one attempt of StartUpdate: it reads first whether an
// upgrade runs, so a lost answer is found again.
func (n *NodePool) startOnce(ctx context.Context) (string, error) {
	if id, err := n.runningUpgrade(ctx); err != nil || id != "" {
		n.etag = "" // the upgrade moves the pool on: later changes are the run's
		return id, err
	}
	op, err := n.c.gke.Projects.Locations.Clusters.NodePools.Update(n.poolPath(), &container.UpdateNodePoolRequest{
		NodeVersion: n.target.Version, ImageType: n.target.ImageType, Etag: n.etag,
	}).Context(ctx).Do()
	if err != nil {
		// A lost answer: the upgrade it started is found again.
		if id, ierr := n.runningUpgrade(ctx); ierr == nil && id != "" && apiCode(err) != http.StatusConflict {
			return id, nil
		}
		return "", n.refused(err, "start the upgrade of")
	}
	n.etag = ""
	return op.Name, nil
}

var _ cloud.UpdateFinder = (*NodePool)(nil)

// RunningUpdate implements cloud.UpdateFinder: the pool's upgrade under
// way, as StartUpdate finds it.
func (n *NodePool) RunningUpdate(ctx context.Context) (string, error) {
	return n.runningUpgrade(ctx)
}

// runningUpgrade is the pool's UPGRADE_NODES operation under way, "" if
// none (operations.list).
func (n *NodePool) runningUpgrade(ctx context.Context) (string, error) {
	ops, err := n.c.gke.Projects.Locations.Operations.List(fmt.Sprintf("projects/%s/locations/%s", n.project, n.location)).Context(ctx).Do()
	if err != nil {
		return "", wrap(err, "list the operations of %s", n)
	}
	for _, op := range slices.Backward(ops.Operations) {
		if op.OperationType == "UPGRADE_NODES" && op.Status != "DONE" && strings.HasSuffix(op.TargetLink, "/nodePools/"+n.name) &&
			strings.Contains(op.TargetLink, "/clusters/"+n.cluster+"/") {
			return op.Name, nil
		}
	}
	return "", nil
}

// Progress implements cloud.ManagedUpdater: operations.get, and the
// blue/green phase from the pool's updateInfo.
func (n *NodePool) Progress(ctx context.Context, id string) (cloud.UpdateProgress, error) {
	op, err := n.c.gke.Projects.Locations.Operations.Get(n.opPath(id)).Context(ctx).Do()
	if err != nil {
		return cloud.UpdateProgress{}, wrap(err, "get operation %q", id)
	}
	p := cloud.UpdateProgress{ID: id, State: opState(op), Phase: op.Status}
	p.Done, p.Total = progressOf(op)
	if err := n.refresh(ctx); err == nil && n.pool.UpdateInfo != nil && n.pool.UpdateInfo.BlueGreenInfo != nil {
		bg := n.pool.UpdateInfo.BlueGreenInfo
		p.Phase = bg.Phase
		// BlueGreenInfo.bluePoolDeletionStartTime: "Time to start deleting
		// blue pool to complete blue-green upgrade, in RFC3339 text format"
		// (container-api.json).
		p.BlueDeletion, _ = time.Parse(time.RFC3339, bg.BluePoolDeletionStartTime)
	}
	if p.State == cloud.UpdateFailed {
		p.Errors = []cloud.UpdateError{opError(op)}
	}
	return p, nil
}

// opState maps an operation's status and error (API reference,
// Operation.status: DONE "either cancelled or completed"; a cancel ends
// it with code CANCELLED, 1).
func opState(op *container.Operation) cloud.UpdateState {
	switch {
	case op.Status != "DONE":
		return cloud.UpdateInProgress
	case op.Error == nil || op.Error.Code == 0:
		return cloud.UpdateSucceeded
	case op.Error.Code == 1:
		return cloud.UpdateCancelled
	}
	return cloud.UpdateFailed
}

// rpcCodes are google.rpc.Code's names, which an operation's error code
// "should be an enum value of" (container-api.json, Status.code;
// https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto).
var rpcCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
	"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// rpcCode names an operation's error code: "GKE error 7 (PERMISSION_DENIED)",
// the number alone for one google.rpc.Code does not list.
func rpcCode(c int64) string {
	if c > 0 && c < int64(len(rpcCodes)) {
		return fmt.Sprintf("GKE error %d (%s)", c, rpcCodes[c])
	}
	return fmt.Sprintf("GKE error %d", c)
}

// opError is a failed operation's error, its code named; new nodes that
// never became ready, or capacity GKE could not get (RESOURCE_EXHAUSTED),
// are NodeCreationFailure.
func opError(op *container.Operation) cloud.UpdateError {
	msg := cmp.Or(op.Error.Message, op.StatusMessage)
	code := rpcCode(op.Error.Code)
	if op.Error.Code == 8 || strings.Contains(msg, "did not become ready") {
		code = cloud.CodeNodeCreation
	}
	return cloud.UpdateError{Code: code, Message: oneLine(msg)}
}

// progressOf reads the metrics "nodes done" and "nodes total" (API
// reference, OperationProgress.metrics; NODES_DONE and NODES_TOTAL are
// taken too).
func progressOf(op *container.Operation) (done, total int) {
	if op.Progress == nil {
		return 0, 0
	}
	for _, m := range op.Progress.Metrics {
		switch strings.ToLower(strings.ReplaceAll(m.Name, "_", " ")) {
		case "nodes done":
			done = int(m.IntValue)
		case "nodes total":
			total = int(m.IntValue)
		}
	}
	return done, total
}

// CancelUpdate implements cloud.UpdateCanceller: operations.cancel. The
// nodes under way finish; a blue/green upgrade pauses in its phase, but
// not while blue is deleted.
func (n *NodePool) CancelUpdate(ctx context.Context, id string) error {
	_, err := n.c.gke.Projects.Locations.Operations.Cancel(n.opPath(id), &container.CancelOperationRequest{}).Context(ctx).Do()
	if apiCode(err) == http.StatusBadRequest {
		return &Error{Msg: fmt.Sprintf("GKE refused to cancel operation %s: %s", id, apiMessage(err)), Err: err, IsInput: true}
	}
	if err != nil {
		return wrap(err, "cancel operation %s", id)
	}
	return nil
}

// ResumeUpdate implements cloud.UpdateResumer: the update again, to the
// same target, which GKE takes as the resumption of the cancelled one
// (https://cloud.google.com/kubernetes-engine/docs/how-to/upgrading-a-cluster#resume-upgrade).
func (n *NodePool) ResumeUpdate(ctx context.Context, _ string) (string, error) {
	n.etag = ""
	op, err := n.c.gke.Projects.Locations.Clusters.NodePools.Update(n.poolPath(), &container.UpdateNodePoolRequest{
		NodeVersion: n.target.Version, ImageType: n.target.ImageType,
	}).Context(ctx).Do()
	if err != nil {
		return "", n.refused(err, "resume the upgrade of")
	}
	return op.Name, nil
}

// RollbackUpdate implements cloud.UpdateRollbacker: nodePools.rollback
// with respectPdb, so the drains of the rollback honour
// PodDisruptionBudgets too.
func (n *NodePool) RollbackUpdate(ctx context.Context, _ string) (string, error) {
	n.etag = ""
	op, err := n.c.gke.Projects.Locations.Clusters.NodePools.Rollback(n.poolPath(), &container.RollbackNodePoolUpgradeRequest{RespectPdb: true}).Context(ctx).Do()
	if apiCode(err) == http.StatusBadRequest {
		return "", &Error{Msg: fmt.Sprintf("GKE refused to roll back %s: %s", n, apiMessage(err)), Err: err, IsInput: true}
	}
	if err != nil {
		return "", wrap(err, "roll back %s", n)
	}
	return op.Name, nil
}

// CompleteUpdate implements cloud.UpdateCompleter: completeUpgrade, which
// ends a blue/green soak and deletes blue.
func (n *NodePool) CompleteUpdate(ctx context.Context, _ string) error {
	_, err := n.c.gke.Projects.Locations.Clusters.NodePools.CompleteUpgrade(n.poolPath(), &container.CompleteNodePoolUpgradeRequest{}).Context(ctx).Do()
	if apiCode(err) == http.StatusBadRequest {
		return &Error{Msg: fmt.Sprintf("GKE refused to complete the upgrade of %s: %s", n, apiMessage(err)), Err: err, IsInput: true}
	}
	if err != nil {
		return wrap(err, "complete the upgrade of %s", n)
	}
	return nil
}
