package aks

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// The tags that mark an agent pool as the green of a blue/green run: the
// name of the pool its greens are named after, and the role. Azure tag
// names take no "<>%&\?/" (https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/tag-resources#limitations).
const (
	TagBlue   = "nodeupgrade-blue"
	TagRole   = "nodeupgrade-role"
	RoleGreen = "green"
)

// Agent pool names as AKS takes them
// (https://learn.microsoft.com/en-us/azure/aks/create-node-pools#limitations:
// "The name of a node pool may only contain lowercase alphanumeric
// characters and must begin with a lowercase letter. For Linux node pools
// the length must be between 1 and 12 characters"; for Windows 6, as the
// SDK's model says too: ManagedClusterAgentPoolProfile.Name, "Windows agent
// pool names must be 6 characters or less").
const (
	maxLinuxPoolName   = 12
	maxWindowsPoolName = 6
	// greenKeyLen is the part of green's name that tells targets apart.
	greenKeyLen = 4
)

// statesDeleting is the provisioning state of a pool AKS deletes.
const stateDeleting = "Deleting"

// PoolBlueGreen is blue/green on an AKS agent pool, the product's way
// (AKS's own blue/green exists only in preview API versions): green is a
// second agent pool that a PUT creates from blue's settings with the
// target's Kubernetes version (AKS gives a new pool the latest node image),
// the run cordons and drains blue's nodes with its own PDB-honouring drain
// and soaks, and blue goes by a DELETE of its pool once it is empty, so
// that AKS's delete, which neither cordons nor drains, finds nothing to
// force out. Sizes are the pool's count, never its scale set's behind
// AKS's back.
type PoolBlueGreen struct {
	blue  *AgentPool
	green string // UseGreen
}

var _ cloud.BlueGreen = (*PoolBlueGreen)(nil)

var _ cloud.PermissionProber = (*PoolBlueGreen)(nil)

// ProbePermissions implements cloud.PermissionProber: blue's pool's, whose
// answer covers green's creation and blue's deletion (Calls' For).
func (b *PoolBlueGreen) ProbePermissions(ctx context.Context) (*plan.Permissions, error) {
	return b.blue.ProbePermissions(ctx)
}

// Name implements cloud.Provider.
func (b *PoolBlueGreen) Name() string { return Name }

// Describe implements cloud.Provider.
func (b *PoolBlueGreen) Describe() string {
	return fmt.Sprintf("AKS deletes agent pool %q once the run drained its nodes", b.blue.name)
}

// GroupName implements cloud.Pool.
func (b *PoolBlueGreen) GroupName() string { return b.blue.name }

// Sizes implements cloud.Pool.
func (b *PoolBlueGreen) Sizes(ctx context.Context) (plan.Sizes, error) {
	return b.GroupSizes(ctx, b.blue.name)
}

// get reads an agent pool of blue's cluster; nil when there is none.
func (b *PoolBlueGreen) get(ctx context.Context, name string) (*armcs.AgentPool, error) {
	a := b.blue
	r, err := a.c.pools.Get(ctx, a.id.group, a.id.name, name, nil)
	if _, status := code(err); status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "get agent pool %q of AKS cluster %q", name, a.id.name)
	}
	if r.Properties == nil {
		return nil, fmt.Errorf("cannot read agent pool %q of AKS cluster %q: it has no properties", name, a.id.name)
	}
	return &r.AgentPool, nil
}

// GroupSizes implements cloud.BlueGreen: the pool's count, and with the
// cluster autoscaler its minCount and maxCount.
func (b *PoolBlueGreen) GroupSizes(ctx context.Context, group string) (plan.Sizes, error) {
	p, err := b.get(ctx, group)
	if err != nil {
		return plan.Sizes{}, err
	}
	if p == nil {
		return plan.Sizes{}, &Error{Msg: fmt.Sprintf("agent pool %q of AKS cluster %q not found", group, b.blue.id.name), Err: cloud.ErrGroupNotFound, IsInput: true}
	}
	return poolSizes(p.Properties), nil
}

func poolSizes(p *armcs.ManagedClusterAgentPoolProfileProperties) plan.Sizes {
	n := int32(0)
	if p.Count != nil {
		n = *p.Count
	}
	s := plan.Sizes{Min: n, Desired: n, Max: n}
	if p.EnableAutoScaling != nil && *p.EnableAutoScaling && p.MinCount != nil && p.MaxCount != nil {
		s.Min, s.Max = *p.MinCount, *p.MaxCount
	}
	return s
}

// SetGroupSizes implements cloud.BlueGreen. A run only ever asks for the
// sizes a pool has (blue pinned at its count: Open refuses a pool the
// cluster autoscaler sizes) or for those it had before (rollback): a pool
// at them is left alone; any other change is refused rather than made
// behind the autoscaler's back.
func (b *PoolBlueGreen) SetGroupSizes(ctx context.Context, group string, s plan.Sizes) error {
	now, err := b.GroupSizes(ctx, group)
	if err != nil || now == s {
		return err
	}
	return fmt.Errorf("cannot resize agent pool %q from %s to %s: blue/green on AKS never scales a pool", group, sizesText(now), sizesText(s))
}

func sizesText(s plan.Sizes) string { return fmt.Sprintf("%d/%d/%d", s.Min, s.Desired, s.Max) }

// Machines implements cloud.Pool: the nodes of blue's pool, and of
// green's once UseGreen named it, as their scale sets' instances.
func (b *PoolBlueGreen) Machines(_ context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	byNode := map[string]plan.Machine{}
	for _, n := range nodes {
		pool := n.Labels[AgentPoolLabel]
		if pool != b.blue.name && (b.green == "" || pool != b.green) {
			continue
		}
		pid, _ := parseProviderID(n.Spec.ProviderID)
		byNode[n.Name] = plan.Machine{ID: pid.ScaleSet + "_" + pid.Instance, Zone: n.Labels[plan.ZoneLabel], Template: pool, Version: nodeConfig(n).String()}
	}
	return byNode, nil, nil
}

// Current implements cloud.Pool: the machine runs the target's
// Kubernetes version and node image.
func (b *PoolBlueGreen) Current(m plan.Machine, version string) bool { return m.Version == version }

// PrepareTarget implements cloud.BlueGreen: nothing to make; the target is
// "<Kubernetes version>/<node image>", green's pool created at that
// version with the latest node image.
func (b *PoolBlueGreen) PrepareTarget(context.Context) (string, error) {
	return b.blue.target.String(), nil
}

// CheckQuota implements cloud.BlueGreen: green's nodes, as many as
// blue's, must fit the vCPU quotas blue's VM size counts against
// (Microsoft.Compute usages, as for AKS's surge), or AKS would create
// green short of nodes. Quotas that cannot be read are left to the
// create's refusal, as the subnet's free addresses are.
func (b *PoolBlueGreen) CheckQuota(ctx context.Context) error {
	q, err := b.blue.readQuota(ctx)
	if err != nil {
		return nil
	}
	return b.checkGreenQuota(q)
}

// checkGreenQuota refuses a green that the quota q cannot hold.
func (b *PoolBlueGreen) checkGreenQuota(q *quota) error {
	n := int(deref(b.blue.pool.Properties.Count))
	line, fits := q.fit(n, "green node(s)")
	if fits >= int64(n) {
		return nil
	}
	return inputErrorf("the vCPU quota in %s cannot hold green: %s; free vCPUs or ask for more quota, or use --strategy %s, whose surge needs fewer", b.blue.location, line, plan.StrategySurge)
}

// GreenName implements cloud.BlueGreen: the base name shortened to leave
// room for a key of the target (four characters of its hash in base 36),
// within AKS's limit for the pool's OS (see maxLinuxPoolName).
func (b *PoolBlueGreen) GreenName(version string) string {
	limit := maxLinuxPoolName
	if os := b.blue.pool.Properties.OSType; os != nil && *os == armcs.OSTypeWindows {
		limit = maxWindowsPoolName
	}
	return greenName(b.base(), version, limit)
}

func greenName(base, version string, limit int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(version))
	key := strconv.FormatUint(uint64(h.Sum32()), 36)
	key = strings.Repeat("0", max(greenKeyLen-len(key), 0)) + key
	base = base[:min(len(base), limit-greenKeyLen)]
	return base + key[len(key)-greenKeyLen:]
}

// base is the name greens are named after: blue's own, or, where blue is
// the green of an earlier run, the base that run had, so that names keep
// the same start run after run.
func (b *PoolBlueGreen) base() string {
	if v := b.blue.pool.Properties.Tags[TagBlue]; v != nil && *v != "" {
		return *v
	}
	return b.blue.name
}

// marks are the tags that mark green as blue's.
func (b *PoolBlueGreen) marks() map[string]*string {
	base, role := b.base(), RoleGreen
	return map[string]*string{TagBlue: &base, TagRole: &role}
}

// ownGreen refuses a pool that is not a green of blue's, or that AKS
// deletes.
func (b *PoolBlueGreen) ownGreen(g *armcs.AgentPool) error {
	t := g.Properties.Tags
	if t[TagBlue] == nil || *t[TagBlue] != b.base() || t[TagRole] == nil || *t[TagRole] != RoleGreen {
		return inputErrorf("agent pool %q already exists and is not a green pool of %q; delete it, or run with another target", str(g.Name), b.blue.name)
	}
	if str(g.Properties.ProvisioningState) == stateDeleting {
		return inputErrorf("green agent pool %q is being deleted; run again once it is gone", str(g.Name))
	}
	return nil
}

// CreateGreen implements cloud.BlueGreen: a PUT of a new agent pool with
// blue's settings as they are now, the target's Kubernetes version, the
// given sizes and the marks; then the wait until AKS reports it
// Succeeded (its nodes joined). A green an interrupted run made is waited
// for, or, Failed, put again (AKS's reconcile); any other pool of that
// name is refused.
func (b *PoolBlueGreen) CreateGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	g, err := b.get(ctx, name)
	if err != nil {
		return err
	}
	if g != nil {
		if err := b.ownGreen(g); err != nil {
			return err
		}
	}
	if g == nil || str(g.Properties.ProvisioningState) == stateFailed {
		if err := b.putGreen(ctx, name, version, sizes); err != nil {
			return err
		}
	}
	return b.waitGreen(ctx, name)
}

const stateFailed = "Failed"

// putGreen sends green's PUT. It settles by reading: a call that failed
// with green there after all (an answer lost, and the SDK's retry of the
// PUT refused while the create runs) made it. Blue is read and green
// written as JSON documents at poolAPIVersion, not through the SDK's
// model, so that every field of blue is copied, those the model lacks
// (maxUnavailable, undrainableNodeBehavior, and any AKS adds) included.
func (b *PoolBlueGreen) putGreen(ctx context.Context, name, version string, sizes plan.Sizes) error {
	a := b.blue
	_, blue, err := a.doc().get(ctx)
	if _, status := code(err); status == http.StatusNotFound {
		return inputErrorf("%s not found", a)
	}
	if err != nil {
		return wrap(err, "get %s", a)
	}
	body, err := json.Marshal(greenPool(blue.doc, name, version, sizes, b.marks()))
	if err != nil {
		return err
	}
	green := poolDoc{c: a.c, id: a.id, name: name, what: fmt.Sprintf("agent pool %q", name)}
	_, callErr := green.send(ctx, http.MethodPut, body, "")
	if callErr == nil {
		return nil
	}
	if _, status := code(callErr); status == http.StatusBadRequest {
		return &Error{Msg: fmt.Sprintf("AKS refused to create agent pool %q: %s", name, refusal(callErr)), Err: callErr, IsInput: true}
	}
	if g, err := b.get(ctx, name); err == nil && g != nil {
		return b.ownGreen(g)
	}
	return wrap(callErr, "create agent pool %q", name)
}

// readOnlyPoolFields are the agent pool's fields AKS sets itself and a
// PUT must not carry: those the REST spec marks readOnly (the SDK's
// "READ-ONLY" markers of AgentPool and ManagedClusterAgentPoolProfileProperties:
// id, type, currentOrchestratorVersion, eTag, nodeImageVersion,
// provisioningState), and what a new pool must not take of blue's:
// powerState (a new pool runs) and creationData (the snapshot blue was
// made from: green takes the latest node image, the target).
var readOnlyPoolFields = []string{"currentOrchestratorVersion", "eTag", "nodeImageVersion", "provisioningState", "powerState", "creationData"}

// greenPool is blue's document as a new pool's: every field blue has, the
// read-only ones left out, the target's Kubernetes version, count and
// autoscaling from sizes, blue's tags with the marks. blue is left as it
// is.
func greenPool(blue map[string]any, name, version string, sizes plan.Sizes, marks map[string]*string) map[string]any {
	doc := cloneDoc(blue)
	delete(doc, "id")
	delete(doc, "type")
	doc["name"] = name
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	for _, k := range readOnlyPoolFields {
		delete(props, k)
	}
	k8s, _, _ := strings.Cut(version, "/")
	props["orchestratorVersion"], props["count"] = k8s, sizes.Desired
	delete(props, "enableAutoScaling")
	delete(props, "minCount")
	delete(props, "maxCount")
	if sizes.Min != sizes.Max {
		props["enableAutoScaling"], props["minCount"], props["maxCount"] = true, sizes.Min, sizes.Max
	}
	tags, _ := props["tags"].(map[string]any)
	if tags == nil {
		tags = map[string]any{}
	}
	for k, v := range marks {
		tags[k] = *v
	}
	props["tags"] = tags
	return doc
}

// waitGreen waits until green's create has ended: Succeeded, or an
// error naming AKS's state.
func (b *PoolBlueGreen) waitGreen(ctx context.Context, name string) error {
	for {
		g, err := b.get(ctx, name)
		if err != nil && !cloud.Transient(err) {
			return err
		}
		if g == nil && err == nil {
			return fmt.Errorf("agent pool %q is gone while it was being created; run again to create it", name)
		}
		if g != nil {
			switch st := str(g.Properties.ProvisioningState); {
			case st == stateSucceeded:
				return nil
			case !runningStates[st]:
				return fmt.Errorf("cannot create agent pool %q: AKS left it %s; run again to have AKS finish it (a PUT of the pool again), or roll back to delete it", name, st)
			}
		}
		if err := transport.Sleep(ctx, b.blue.c.pollEvery); err != nil {
			return err
		}
	}
}

const stateSucceeded = "Succeeded"

// UseGreen implements cloud.BlueGreen.
func (b *PoolBlueGreen) UseGreen(name string) { b.green = name }

// DeleteGroup implements cloud.BlueGreen: a DELETE of the agent pool,
// unless AKS deletes it already, and the wait until it is gone. AKS's
// delete neither cordons nor drains
// (https://learn.microsoft.com/en-us/azure/aks/delete-node-pool): the
// engine calls it once the pool's nodes are drained. A pool busy with
// another operation (409) is waited for.
func (b *PoolBlueGreen) DeleteGroup(ctx context.Context, group string) error {
	a := b.blue
	for {
		g, err := b.get(ctx, group)
		switch {
		case err != nil && !cloud.Transient(err):
			return err
		case err == nil && g == nil:
			return nil // gone
		case err == nil && !runningStates[str(g.Properties.ProvisioningState)] && str(g.Properties.ProvisioningState) != stateDeleting:
			if err := b.startDelete(ctx, group); err != nil {
				return err
			}
		}
		if err := transport.Sleep(ctx, a.c.pollEvery); err != nil {
			return err
		}
	}
}

// startDelete sends the DELETE; a refusal while the pool is busy (409),
// a pool gone first (404) and what passes with time are looked at again.
func (b *PoolBlueGreen) startDelete(ctx context.Context, group string) error {
	a := b.blue
	_, err := a.c.pools.BeginDelete(ctx, a.id.group, a.id.name, group, nil)
	if _, status := code(err); err == nil || busy(err) || status == http.StatusNotFound {
		return nil
	}
	if werr := wrap(err, "delete agent pool %q", group); !cloud.Transient(werr) {
		return werr
	}
	return nil
}

// openBlueGreen opens an agent pool for a blue/green run: AKS's own
// upgrade settings serve no green and are refused, as is a pool the
// cluster autoscaler sizes (the run would have to pin it behind the
// autoscaler); green's name is free or the green of an interrupted run.
func openBlueGreen(ctx context.Context, a *AgentPool, nodes []corev1.Node, t plan.CloudTarget) (*plan.CloudGroup, cloud.Provider, error) {
	if t.Options[optDrainTimeout] != "" {
		return nil, nil, inputErrorf("--%s sets how long AKS's own upgrade drains a node, which --strategy %s does not ask for (the run drains with its own, honouring PDBs); drop it", optDrainTimeout, t.Strategy)
	}
	if p := a.pool.Properties; p.EnableAutoScaling != nil && *p.EnableAutoScaling {
		return nil, nil, inputErrorf("%s has the cluster autoscaler on (minCount %d, maxCount %d): --strategy %s on AKS is not built for an autoscaled pool; turn it off for the run (az aks nodepool update --disable-cluster-autoscaler) or use --strategy %s",
			a, deref(p.MinCount), deref(p.MaxCount), t.Strategy, plan.StrategySurge)
	}
	if err := a.resolveTarget(ctx, t.Options); err != nil {
		return nil, nil, err
	}
	b := &PoolBlueGreen{blue: a}
	cg := a.cloudGroup(nodes)
	cg.Managed = nil
	cg.Green, cg.GreenLabel = b.GreenName(cg.TargetVersion), AgentPoolLabel
	g, err := b.get(ctx, cg.Green)
	if err != nil {
		return nil, nil, err
	}
	if g != nil {
		// Made by an interrupted run, which this one finishes; or not ours.
		if err := b.ownGreen(g); err != nil {
			return nil, nil, err
		}
	} else if err := b.CheckQuota(ctx); err != nil {
		// What the run would refuse before any change, the plan refuses.
		return nil, nil, err
	}
	return cg, b, nil
}

// deref is *p, 0 for nil.
var deref = azarm.Deref[int32]
