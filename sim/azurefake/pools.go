package azurefake

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// The provisioning states of a pool AKS creates or deletes (the model
// types provisioningState as a plain string; these are the values AKS
// reports, as "az aks nodepool show" shows them).
const (
	stateCreating = "Creating"
	stateDeleting = "Deleting"
)

// Agent pool names as AKS takes them
// (https://learn.microsoft.com/en-us/azure/aks/create-node-pools#limitations:
// "may only contain lowercase alphanumeric characters and must begin with
// a lowercase letter. For Linux node pools the length must be between 1
// and 12 characters, for Windows node pools the length must be between 1
// and 6 characters"; the SDK's model: ManagedClusterAgentPoolProfile.Name,
// "Windows agent pool names must be 6 characters or less").
var poolNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// writePool answers PUT agentPools/{p}: a change of an existing pool (see
// putPool), or the create of a new one.
func (s *Server) writePool(q *request) {
	s.mu.Lock()
	_, err := s.poolOfLocked(q)
	s.mu.Unlock()
	if err == nil {
		s.putPool(q)
		return
	}
	s.createPool(q)
}

// createPool creates an agent pool from the body, read with the SDK's
// model, checked as AKS checks it: the name, the count ("Allowed values
// must be in the range of 0 to 1000 (inclusive) for user pools and in the
// range of 1 to 1000 (inclusive) for system pools",
// ManagedClusterAgentPoolProfileProperties.Count), the Kubernetes version
// (at most the control plane's and offered; the control plane's when
// none is given). The pool's machines run the latest node image AKS
// offers the cluster's pools: a new pool is made with it
// (https://learn.microsoft.com/en-us/azure/aks/node-image-upgrade). 201
// and an operation that ends once every node joined. At PoolAPIVersion
// the body may carry the newer upgrade settings (splitExtra), checked and
// kept as a PUT of an existing pool keeps them.
func (s *Server) createPool(q *request) {
	body, extra, aerr := splitExtra(q.body, q.r.URL.Query().Get("api-version"))
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	var in armcs.AgentPool
	if err := decodeModel(body, &in); err != nil {
		writeError(q.w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.clusterOfLocked(q)
	if aerr != nil {
		writeError(q.w, aerr)
		return
	}
	name := q.raw[9]
	if aerr := checkNewPool(c, name, in.Properties); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	if aerr := checkExtra(extra, maxSurgeOf(in.Properties)); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	p := s.newPoolLocked(c, name, in.Properties)
	p.extra = extra
	o := s.startOpLocked(p, "create")
	var ms []*machine
	for range *p.model.Properties.Count {
		ms = append(ms, s.newMachineLocked(p, *p.model.Properties.CurrentOrchestratorVersion, p.latest, false))
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := parallel(ms, func(m *machine) error { return s.joinNode(s.ctx, p, m) })
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			p.model.Properties.ProvisioningState = ptr(stateFailed)
			s.endOpLocked(o, opFailed, errorf(http.StatusInternalServerError, "InternalOperationError", "%s", err.Error()))
			return
		}
		p.model.Properties.ProvisioningState = ptr(stateSucceeded)
		s.endOpLocked(o, opSucceeded, nil)
		s.logf("pool %s: created with %d nodes", name, len(ms))
	}()
	s.asyncHeaders(q.w, o)
	writeJSON(q.w, http.StatusCreated, s.poolView(p))
}

// checkNewPool refuses what AKS refuses of a new pool, before anything
// is made.
func checkNewPool(c *cluster, name string, in *armcs.ManagedClusterAgentPoolProfileProperties) *armError {
	limit := 12
	if in != nil && in.OSType != nil && *in.OSType == armcs.OSTypeWindows {
		limit = 6
	}
	if !poolNamePattern.MatchString(name) || len(name) > limit {
		return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.name is invalid: %q. Agent pool names must start with a lowercase letter, contain only lowercase letters and numbers, and be at most %d characters long.", name, limit)
	}
	if in == nil {
		return errorf(http.StatusBadRequest, "InvalidParameter", "The agent pool %q has no properties.", name)
	}
	system := in.Mode != nil && *in.Mode == armcs.AgentPoolModeSystem
	if n := deref(in.Count, 1); n < 0 || n > 1000 || (system && n < 1) {
		return errorf(http.StatusBadRequest, "InvalidParameter", "The value of parameter agentPoolProfile.count is invalid: %d.", n)
	}
	if v := in.OrchestratorVersion; v != nil {
		switch {
		case compareVersions(*v, c.version) > 0:
			return errorf(http.StatusBadRequest, "NodePoolMcVersionIncompatible", "Node pool version %s and control plane version %s are incompatible. Node pool version cannot be greater than control plane version.", *v, c.version)
		case !contains(c.versions, *v) && *v != c.version:
			return errorf(http.StatusBadRequest, "AgentPoolK8sVersionNotSupported", "Version %s is not supported in this region.", *v)
		}
	}
	return checkSurgeOf(in.UpgradeSettings)
}

// maxSurgeOf is the body's maxSurge, nil when it sets none.
func maxSurgeOf(in *armcs.ManagedClusterAgentPoolProfileProperties) *string {
	if in == nil || in.UpgradeSettings == nil {
		return nil
	}
	return in.UpgradeSettings.MaxSurge
}

func checkSurgeOf(u *armcs.AgentPoolUpgradeSettings) *armError {
	if u == nil {
		return nil
	}
	return checkSurge(u.MaxSurge)
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// newPoolLocked adds the pool the create makes: the body's settings, its
// read-only fields as AKS sets them (Creating, the version, the latest
// node image), Running.
func (s *Server) newPoolLocked(c *cluster, name string, in *armcs.ManagedClusterAgentPoolProfileProperties) *pool {
	p := &pool{c: c, scaleSet: fmt.Sprintf("aks-%s-%d-vmss", name, 10000000+s.poolSeqLocked()), latest: c.latestImage()}
	props := *in
	props.Count = ptr(deref(in.Count, 1))
	if props.OrchestratorVersion == nil {
		props.OrchestratorVersion = ptr(c.version)
	}
	props.CurrentOrchestratorVersion, props.NodeImageVersion = ptr(*props.OrchestratorVersion), ptr(p.latest)
	props.ProvisioningState, props.ETag = ptr(stateCreating), ptr(s.nextIDLocked("etag-"))
	props.PowerState = &armcs.PowerState{Code: to.Ptr(armcs.CodeRunning)}
	if props.OSType == nil {
		props.OSType = to.Ptr(armcs.OSTypeLinux)
	}
	if props.Mode == nil {
		props.Mode = to.Ptr(armcs.AgentPoolModeUser)
	}
	p.model = armcs.AgentPool{ID: to.Ptr(s.poolID(c, name)), Name: to.Ptr(name),
		Type: to.Ptr("Microsoft.ContainerService/managedClusters/agentPools"), Properties: &props}
	c.pools[strings.ToLower(name)] = p
	return p
}

// poolSeqLocked numbers scale sets so that no two of the server's share
// a name, also after a pool was deleted.
func (s *Server) poolSeqLocked() int {
	n := 0
	for _, c := range s.clusters {
		n += len(c.pools)
	}
	return n + len(s.deleted)
}

// latestImage is the newest of the latest node images the cluster's
// pools are offered: a new pool's.
func (c *cluster) latestImage() string {
	var imgs []string
	for _, p := range c.pools {
		imgs = append(imgs, p.latest)
	}
	sort.Strings(imgs)
	if len(imgs) == 0 {
		return ""
	}
	return imgs[len(imgs)-1]
}

// deletePool answers DELETE agentPools/{p}: 204 when there is no such
// pool (ARM's answer to a delete of what is not there), 409 while an
// operation runs on it, else 202 and an operation. AKS deletes the
// pool's machines without cordoning or draining them
// (https://learn.microsoft.com/en-us/azure/aks/delete-node-pool: "When
// you delete a node pool, AKS doesn't perform cordon and drain"): the pods
// still on them are recorded (DeleteForced) and go with their nodes.
func (s *Server) deletePool(q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, aerr := s.clusterOfLocked(q); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	p, aerr := s.poolOfLocked(q)
	if aerr != nil {
		q.w.WriteHeader(http.StatusNoContent)
		return
	}
	if aerr := busyLocked(p); aerr != nil {
		writeError(q.w, aerr)
		return
	}
	o := s.startDeleteLocked(p)
	s.asyncHeaders(q.w, o)
	q.w.WriteHeader(http.StatusAccepted)
}

// startDeleteLocked starts the delete of the pool.
func (s *Server) startDeleteLocked(p *pool) *operation {
	o := s.startOpLocked(p, "delete")
	p.model.Properties.ProvisioningState = ptr(stateDeleting)
	s.wg.Add(1)
	go s.removePool(p, o)
	return o
}

// DeletePool deletes a pool as its DELETE does (a test's stand-in for a
// delete a killed run sent), and returns at once; see WaitPoolGone.
func (s *Server) DeletePool(group, clusterName, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(group, clusterName, name)
	if p == nil {
		return fmt.Errorf("no agent pool %s/%s/%s", group, clusterName, name)
	}
	if err := busyLocked(p); err != nil {
		return err
	}
	s.startDeleteLocked(p)
	return nil
}

// WaitPoolGone waits until the pool is deleted.
func (s *Server) WaitPoolGone(ctx context.Context, group, clusterName, name string) error {
	for {
		if _, ok := s.Pool(group, clusterName, name); !ok {
			return nil
		}
		if err := sleep(ctx, s.opts.PollEvery); err != nil {
			return err
		}
	}
}

// removePool deletes the pool's nodes, recording the pods left on them,
// then the pool.
func (s *Server) removePool(p *pool, o *operation) {
	defer s.wg.Done()
	ctx := s.ctx
	s.mu.Lock()
	nodes := append([]*machine(nil), p.nodes...)
	name := *p.model.Name
	s.mu.Unlock()
	var forced []string
	for _, m := range nodes {
		pods, err := s.evictable(ctx, m.name)
		if err != nil {
			s.failDelete(p, o, err)
			return
		}
		for _, pod := range pods {
			forced = append(forced, pod.Namespace+"/"+pod.Name)
		}
	}
	err := parallel(nodes, func(m *machine) error { return s.leaveNode(ctx, m.name) })
	if err == nil {
		err = sleep(ctx, s.opts.MinuteIs)
	}
	if err != nil {
		s.failDelete(p, o, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.nodes = nil
	delete(p.c.pools, strings.ToLower(name))
	s.deleted = append(s.deleted, deletedPool{group: p.c.group, cluster: p.c.name, name: name, forced: forced})
	s.endOpLocked(o, opSucceeded, nil)
	s.logf("pool %s: deleted, %d pods left on its nodes", name, len(forced))
}

func (s *Server) failDelete(p *pool, o *operation, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.model.Properties.ProvisioningState = ptr(stateFailed)
	s.endOpLocked(o, opFailed, errorf(http.StatusInternalServerError, "InternalOperationError", "%s", err.Error()))
}

// deletedPool is a pool a DELETE removed, with the pods that were still
// on its nodes.
type deletedPool struct {
	group, cluster, name string
	forced               []string
}

// DeleteForced reports whether the pool was deleted, and the pods its
// delete took down with their nodes (none, when whoever deleted it had
// drained them first).
func (s *Server) DeleteForced(group, clusterName, name string) (forced []string, deleted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deleted {
		if strings.EqualFold(d.group, group) && strings.EqualFold(d.cluster, clusterName) && strings.EqualFold(d.name, name) {
			forced, deleted = append(forced, d.forced...), true
		}
	}
	return forced, deleted
}

// Pools lists the names of the cluster's agent pools, sorted.
func (s *Server) Pools(group, clusterName string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[key(group, clusterName)]
	if c == nil {
		return nil
	}
	var out []string
	for _, p := range c.pools {
		out = append(out, *p.model.Name)
	}
	sort.Strings(out)
	return out
}

// labelPtrs are labels as the model holds them; nil for none.
func labelPtrs(labels map[string]string) map[string]*string {
	if len(labels) == 0 {
		return nil
	}
	out := make(map[string]*string, len(labels))
	for k, v := range labels {
		out[k] = ptr(v)
	}
	return out
}
