package aks

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/internal/azarm"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// AgentPool is an AKS agent pool, whose upgrades AKS runs.
type AgentPool struct {
	c    *clients
	kube kubernetes.Interface
	id   clusterID
	name string
	pool armcs.AgentPool
	// raw is the pool's document at poolAPIVersion, with what the model
	// lacks (rawpool.go).
	raw rawPool
	// control is the control plane's Kubernetes version, location the
	// cluster's region.
	control, location string
	// network is the cluster's network profile (its CNI), which decides
	// what the pool's nodes take of their subnets (subnet.go).
	network *armcs.NetworkProfile
	// target is what the upgrade moves the pool to; image says it is a
	// node image upgrade (upgradeNodeImageVersion), not a Kubernetes
	// version's (a PUT of orchestratorVersion).
	target     config
	imageOnly  bool
	drainTimes int32     // --aks-drain-timeout in minutes, 0 to keep the pool's
	facts      planFacts // what the plan reads beside the pool (plan.go)
}

// config is a Kubernetes version and a node image.
type config struct{ Version, Image string }

func (c config) String() string { return c.Version + "/" + c.Image }

var (
	_ cloud.ManagedUpdater  = (*AgentPool)(nil)
	_ cloud.ServicePlanner  = (*AgentPool)(nil)
	_ cloud.OwnStrategy     = (*AgentPool)(nil)
	_ cloud.UpdateCanceller = (*AgentPool)(nil)
	_ cloud.UpdateResumer   = (*AgentPool)(nil)
	_ cloud.UpdateFinder    = (*AgentPool)(nil)
	_ cloud.UpdateAborter   = (*AgentPool)(nil)
)

// Name implements cloud.Provider.
func (a *AgentPool) Name() string { return Name }

// Describe implements cloud.Provider.
func (a *AgentPool) Describe() string { return "AKS replaces the nodes of " + a.String() }

// GroupName implements cloud.ManagedUpdater.
func (a *AgentPool) GroupName() string { return a.name }

// String names the pool in messages.
func (a *AgentPool) String() string {
	return fmt.Sprintf("agent pool %q of AKS cluster %q (resource group %s)", a.name, a.id.name, a.id.group)
}

// read reads the cluster's control plane version and the pool.
func (a *AgentPool) read(ctx context.Context) error {
	mc, err := a.c.clusters.Get(ctx, a.id.group, a.id.name, nil)
	if _, status := code(err); status == http.StatusNotFound {
		return inputErrorf("AKS cluster %q not found in resource group %q of subscription %s; check --%s and --%s", a.id.name, a.id.group, a.id.subscription, optCluster, optResourceGroup)
	}
	if err != nil {
		return wrap(err, "get AKS cluster %q", a.id.name)
	}
	if mc.Properties == nil || mc.Properties.CurrentKubernetesVersion == nil || mc.Location == nil {
		return fmt.Errorf("cannot read AKS cluster %q: it reports no currentKubernetesVersion or location", a.id.name)
	}
	a.control, a.location, a.network = *mc.Properties.CurrentKubernetesVersion, *mc.Location, mc.Properties.NetworkProfile
	return a.refresh(ctx)
}

// refresh reads the pool again.
func (a *AgentPool) refresh(ctx context.Context) error {
	r, raw, err := a.doc().get(ctx)
	if _, status := code(err); status == http.StatusNotFound {
		return &Error{Msg: fmt.Sprintf("%s not found", a), Err: cloud.ErrGroupNotFound, IsInput: true}
	}
	if err != nil {
		return wrap(err, "get %s", a)
	}
	if r.Properties == nil {
		return fmt.Errorf("cannot read %s: it has no properties", a)
	}
	a.pool, a.raw = r, raw
	return nil
}

// str is *p, "" for nil.
var str = azarm.Deref[string]

// current is what the pool runs now.
func (a *AgentPool) current() config {
	p := a.pool.Properties
	return config{Version: str(p.CurrentOrchestratorVersion), Image: str(p.NodeImageVersion)}
}

// resolveTarget reads the target from the flags and the pool's upgrade
// profile, and refuses what AKS would: a version above the control
// plane's ("the node pool version must be ... less than or equal to the
// control plane version", https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster),
// below the pool's (AKS does not downgrade), or not offered.
func (a *AgentPool) resolveTarget(ctx context.Context, o map[string]string) error {
	if v := o[optDrainTimeout]; v != "" {
		m, err := drainMinutes(v)
		if err != nil {
			return err
		}
		a.drainTimes = m
	}
	prof, err := a.c.pools.GetUpgradeProfile(ctx, a.id.group, a.id.name, a.name, nil)
	if err != nil {
		return wrap(err, "get the upgrade profile of %s", a)
	}
	pp := prof.Properties
	if pp == nil || pp.LatestNodeImageVersion == nil {
		return fmt.Errorf("cannot read the upgrade profile of %s: it names no latest node image", a)
	}
	cur, latest := a.current(), *pp.LatestNodeImageVersion
	a.target = config{Version: cur.Version, Image: latest}
	v := o[optVersion]
	switch {
	case v == "":
		a.imageOnly = true
		if img := o[optImage]; img != "" && img != "latest" && img != latest {
			return inputErrorf("--%s %s: AKS upgrades a pool's node image to the latest only, %s for %s; use --%s latest", optImage, img, latest, a, optImage)
		}
		return nil
	case compareVersions(v, a.control) > 0:
		return inputErrorf("--%s %s is above the control plane's version %s of cluster %q: AKS refuses a node pool above it; upgrade the control plane first", optVersion, v, a.control, a.id.name)
	case below(v, cur.Version):
		return inputErrorf("--%s %s is below %s's version %s: AKS does not downgrade a pool", optVersion, v, a, cur.Version)
	}
	resolved, err := offered(v, cur.Version, pp.Upgrades)
	if err != nil {
		return err
	}
	a.target.Version = resolved
	return nil
}

// offered resolves v (1.X or 1.X.Y) among the upgrade profile's versions
// and the pool's own.
func offered(v, cur string, ups []*armcs.AgentPoolUpgradeProfilePropertiesUpgradesItem) (string, error) {
	best := ""
	var list []string
	for _, u := range append(ups, &armcs.AgentPoolUpgradeProfilePropertiesUpgradesItem{KubernetesVersion: &cur}) {
		k := str(u.KubernetesVersion)
		list = append(list, k)
		if (k == v || strings.HasPrefix(k, v+".")) && (best == "" || compareVersions(k, best) > 0) {
			best = k
		}
	}
	if best == "" {
		return "", inputErrorf("--%s %s is not offered for the pool; AKS offers %s", optVersion, v, strings.Join(list, ", "))
	}
	return best, nil
}

// below reports whether v (1.X or 1.X.Y) is below version cur (1.X.Y):
// 1.32 is not below 1.32.2, it names its minor.
func below(v, cur string) bool {
	return compareVersions(v, cur) < 0 && !strings.HasPrefix(cur, v+".")
}

// compareVersions compares Kubernetes versions 1.X[.Y].
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			_, _ = fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			_, _ = fmt.Sscan(pb[i], &y)
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

// nodeConfig is what a node runs: its kubelet's version and its node
// image label.
func nodeConfig(n *corev1.Node) config {
	return config{Version: strings.TrimPrefix(n.Status.NodeInfo.KubeletVersion, "v"), Image: n.Labels[NodeImageLabel]}
}

// cloudGroup is the plan's view of the pool: a node not on the target
// version and image is outdated.
func (a *AgentPool) cloudGroup(nodes []corev1.Node) *plan.CloudGroup {
	byNode := map[string]plan.Machine{}
	for i := range nodes {
		pid, _ := parseProviderID(nodes[i].Spec.ProviderID)
		byNode[nodes[i].Name] = plan.Machine{ID: pid.ScaleSet + "_" + pid.Instance, Zone: nodes[i].Labels[plan.ZoneLabel], Template: a.name, Version: nodeConfig(&nodes[i]).String()}
	}
	n := int32(len(nodes))
	return &plan.CloudGroup{
		GroupID: plan.GroupID{Provider: Name, Region: a.location, Group: a.name, GroupKind: "AKS agent pool",
			Template: a.name, TemplateKind: "agent pool", MachineKind: "instance"},
		Launches: plan.Launches{CurrentVersion: a.current().String(), TargetVersion: a.target.String(),
			LaunchesAfter: fmt.Sprintf("Kubernetes %s, node image %s", a.target.Version, a.target.Image)},
		Sizes: plan.Sizes{Min: n, Desired: n, Max: n}, Nodes: byNode, Managed: cloud.ServiceOf(a),
	}
}
