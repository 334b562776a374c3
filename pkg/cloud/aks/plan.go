package aks

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The pool's upgrade settings, by AKS's field names
// (AgentPoolUpgradeSettings: maxSurge, drainTimeoutInMinutes,
// nodeSoakDurationInMinutes in the SDK's model of API 2025-02-01;
// maxUnavailable and undrainableNodeBehavior of 2025-05-01, read and
// written through the pool's document, rawpool.go).
const (
	setMaxSurge       = "maxSurge"
	setDrain          = "drainTimeoutInMinutes"
	setSoak           = "nodeSoakDurationInMinutes"
	setMaxUnavailable = "maxUnavailable"
	setUndrainable    = "undrainableNodeBehavior"
)

// AKS's defaults (AgentPoolUpgradeSettings): maxSurge 10% ("fractional
// nodes are rounded up"), maxUnavailable 0, drainTimeoutInMinutes 30,
// nodeSoak 0, undrainable nodes Schedule (the upgrade fails on them).
const (
	defaultMaxSurge     = "10%"
	defaultDrainMinutes = 30
	undrainableCordon   = "Cordon"
	undrainableSchedule = "Schedule"
)

// settingsOf are the pool's upgrade settings in the plan's terms; unset
// fields are left out (AKS's defaults apply).
func settingsOf(p armcs.AgentPool, ex upgradeExtra) plan.UpdateSettings {
	s := plan.UpdateSettings{Other: map[string]string{}}
	if ex.MaxUnavailable != "" {
		s.Other[setMaxUnavailable] = ex.MaxUnavailable
	}
	if ex.UndrainableNodeBehavior != "" {
		s.Other[setUndrainable] = ex.UndrainableNodeBehavior
	}
	u := p.Properties.UpgradeSettings
	if u == nil {
		return s
	}
	if u.MaxSurge != nil && *u.MaxSurge != "" {
		s.Other[setMaxSurge] = *u.MaxSurge
	}
	if u.DrainTimeoutInMinutes != nil {
		s.Other[setDrain] = strconv.Itoa(int(*u.DrainTimeoutInMinutes))
	}
	if u.NodeSoakDurationInMinutes != nil {
		s.Other[setSoak] = strconv.Itoa(int(*u.NodeSoakDurationInMinutes))
	}
	return s
}

// upgradeSettings are s as the pool's document takes them: the numbers
// as numbers, the rest as strings.
func upgradeSettings(s plan.UpdateSettings) map[string]any {
	u := map[string]any{}
	for k, v := range s.Other {
		if n, err := strconv.Atoi(v); err == nil && (k == setDrain || k == setSoak) {
			u[k] = n
		} else if v != "" {
			u[k] = v
		}
	}
	return u
}

// nodesOf is the nodes setting v (a number, or a percentage of n rounded
// up) names of a pool of n nodes, at most n; def where v is unset.
func nodesOf(v, def string, n int) int {
	if v == "" {
		v = def
	}
	k, _ := strconv.Atoi(strings.TrimSuffix(v, "%"))
	if strings.HasSuffix(v, "%") {
		k = int(math.Ceil(float64(n) * float64(k) / 100))
	}
	return min(k, max(n, 1))
}

// surgeAndUnavailable are the nodes AKS adds (maxSurge) and takes down
// beside them (maxUnavailable) under settings s over a pool of n nodes:
// a maxSurge of 0 only with a maxUnavailable (AKS refuses both 0), else
// at least one surge node
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#customize-unavailable-nodes).
func surgeAndUnavailable(s plan.UpdateSettings, n int) (surge, unavailable int) {
	surge = nodesOf(s.Other[setMaxSurge], defaultMaxSurge, n)
	unavailable = nodesOf(s.Other[setMaxUnavailable], "0", n)
	if surge == 0 && unavailable == 0 {
		surge = 1
	}
	return surge, unavailable
}

// Runs implements cloud.ServicePlanner: AKS runs its surge upgrade;
// blue/green is the plugin's own (PoolBlueGreen), not the service's.
func (a *AgentPool) Runs(strategy plan.StrategyName) bool { return strategy == plan.StrategySurge }

// OwnStrategy implements cloud.OwnStrategy: AKS's surge upgrade with the
// pool's maxSurge, what "az aks nodepool upgrade" would run.
func (a *AgentPool) OwnStrategy() plan.GroupStrategy {
	if a.spot() {
		return plan.GroupStrategy{Strategy: plan.StrategySurge, MaxUnavailable: "0", From: "AKS's upgrade of a Spot pool, which adds no surge node"}
	}
	surge, unavailable := surgeAndUnavailable(a.settings(), int(a.count()))
	return plan.GroupStrategy{Strategy: plan.StrategySurge, MaxSurge: surge, MaxUnavailable: strconv.Itoa(unavailable),
		From: "the pool's own upgrade settings"}
}

// settings are the pool's upgrade settings as read.
func (a *AgentPool) settings() plan.UpdateSettings { return settingsOf(a.pool, a.raw.extra) }

// spot reports whether the pool is a Spot pool (scaleSetPriority Spot),
// which AKS upgrades with "a cordon and an eviction notice, but no drain"
// and no surge node, refusing a maxSurge
// (https://learn.microsoft.com/en-us/azure/aks/spot-node-pool#upgrade-a-spot-node-pool).
func (a *AgentPool) spot() bool {
	p := a.pool.Properties
	return p != nil && p.ScaleSetPriority != nil && *p.ScaleSetPriority == armcs.ScaleSetPrioritySpot
}

func (a *AgentPool) count() int32 {
	if c := a.pool.Properties.Count; c != nil {
		return *c
	}
	return 0
}

// Plan implements cloud.ServicePlanner: the settings for the run (a
// --max-surge other than the pool's becomes its maxSurge, --aks-drain-timeout
// its drainTimeoutInMinutes), what AKS adds, AKS's phases.
func (a *AgentPool) Plan(in plan.Input, nodes, zones int) (*plan.ManagedPlan, error) {
	before := a.settings()
	during, err := a.duringSettings(in, before)
	if err != nil {
		return nil, err
	}
	total := int(a.count())
	if a.drainTimes > 0 {
		during.Other[setDrain] = strconv.Itoa(int(a.drainTimes))
	}
	drain := defaultDrainMinutes
	if v, err := strconv.Atoi(during.Other[setDrain]); err == nil {
		drain = v
	}
	what := "upgradeNodeImageVersion"
	if !a.imageOnly {
		what = "PUT orchestratorVersion " + a.target.Version
	}
	mp := &plan.ManagedPlan{
		Service: "AKS agent pool", Details: a.details(before), Before: before, During: during,
		Target:   fmt.Sprintf("Kubernetes %s, node image %s (%s)", a.target.Version, a.target.Image, what),
		Controls: []string{"cancel", "resume"}, WriteFinishes: true, EvictionLimit: plan.Duration(time.Duration(drain) * time.Minute),
	}
	if !a.spot() {
		surge, _ := surgeAndUnavailable(during, total)
		mp.ScaleUp = int32(surge)
	}
	if err := a.busyPools(); err != nil {
		return nil, err
	}
	facts, err := a.factDetails(int(mp.ScaleUp))
	if err != nil {
		return nil, err
	}
	mp.Details = append(mp.Details, facts...)
	mp.Steps = a.steps(in, mp, nodes, drain)
	return mp, nil
}

// duringSettings are the pool's settings for the run: --max-surge and
// --max-unavailable other than the pool's become its maxSurge and
// maxUnavailable (a --max-surge of 0 only beside a --max-unavailable,
// as AKS refuses both 0; with neither the pool's own are kept).
func (a *AgentPool) duringSettings(in plan.Input, before plan.UpdateSettings) (plan.UpdateSettings, error) {
	during := plan.UpdateSettings{Other: maps.Clone(before.Other)}
	mu, err := strconv.Atoi(in.MaxUnavailable)
	if err != nil || mu < 0 {
		return during, inputErrorf("invalid --max-unavailable %q: AKS's maxUnavailable is a number of nodes of the pool, from 0", in.MaxUnavailable)
	}
	if a.spot() && (in.MaxSurge > 0 || mu > 0) {
		return during, inputErrorf("--max-surge %d --max-unavailable %d: AKS upgrades Spot pool %q without surge nodes or a drain and refuses a maxSurge on it; leave both out", in.MaxSurge, mu, a.name)
	}
	if in.MaxSurge == 0 && mu == 0 {
		return during, nil
	}
	surge, unavailable := surgeAndUnavailable(before, int(a.count()))
	if in.MaxSurge != surge {
		during.Other[setMaxSurge] = strconv.Itoa(in.MaxSurge)
	}
	if mu != unavailable {
		during.Other[setMaxUnavailable] = strconv.Itoa(mu)
	}
	return during, nil
}

// steps are AKS's phases
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#customize-node-surge-upgrade),
// with rough estimates from the group's pace (in.JoinTime, in.DrainTime:
// measured where the plan could): the surge nodes join once, then each
// round drains, soaks and reimages (a node joining again); at the end the
// surge nodes, which took pods, are drained and deleted, as the buffer
// nodes are at the end of AKS's upgrade (same page).
func (a *AgentPool) steps(in plan.Input, mp *plan.ManagedPlan, nodes, drain int) []plan.Step {
	var out []plan.Step
	add := func(phase, detail string, d time.Duration) {
		out = append(out, plan.Step{Phase: phase, Detail: detail, Estimate: plan.Duration(d)})
	}
	if !mp.Before.Equal(mp.During) {
		add("Configure", "PUT the agent pool's upgradeSettings: "+mp.During.String(), in.SettingsTime())
	}
	surge, unavailable := int(mp.ScaleUp), nodesOf(mp.During.Other[setMaxUnavailable], "0", nodes)
	rounds := (nodes + surge + unavailable - 1) / max(surge+unavailable, 1)
	if a.spot() {
		add("Upgrade", fmt.Sprintf("AKS upgrades Spot pool %q with no surge node and no drain: it cordons each node and sends its pods an eviction notice, PDBs not honoured, and reimages it; about %d rounds", a.name, nodes),
			time.Duration(nodes)*(soakOf(mp.During)+in.JoinTime()))
	} else {
		add("Upgrade", fmt.Sprintf("AKS adds %d surge node(s), then cordons and drains %d node(s) at a time honouring PDBs for up to %dm each (maxSurge %d + maxUnavailable %d; %s), and reimages them: about %d rounds; then it drains and deletes the surge node(s)",
			surge, surge+unavailable, drain, surge, unavailable, undrainableText(mp.During), rounds), in.JoinTime()+time.Duration(rounds)*(in.DrainTime()+soakOf(mp.During)+in.JoinTime())+in.DrainTime())
	}
	if !mp.Before.Equal(mp.During) {
		add("RestoreSettings", "PUT the agent pool's upgradeSettings: "+mp.Before.String(), in.SettingsTime())
	}
	return out
}

// undrainableText says what AKS does with a node whose drain a PDB holds
// past the timeout (undrainableNodeBehavior,
// https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#set-node-drain-behavior).
func undrainableText(s plan.UpdateSettings) string {
	if s.Other[setUndrainable] == undrainableCordon {
		return "undrainableNodeBehavior Cordon: past it AKS quarantines the node, cordoned and labelled " + QuarantineLabel + "=" + quarantineValue + ", goes on with the others and ends the upgrade Canceled"
	}
	return "past it the upgrade fails and the pool is left Failed"
}

// soakOf is the settings' nodeSoakDurationInMinutes, 0 unless set.
func soakOf(s plan.UpdateSettings) time.Duration {
	m, _ := strconv.Atoi(s.Other[setSoak])
	return time.Duration(m) * time.Minute
}

// details are the pool as agentPools.get shows it.
func (a *AgentPool) details(s plan.UpdateSettings) []plan.Detail {
	p := a.pool.Properties
	return []plan.Detail{
		{Name: "agent pool", Value: fmt.Sprintf("%s (cluster %s in %s, control plane %s)", a.name, a.id.name, a.location, a.control)},
		{Name: "provisioning state", Value: str(p.ProvisioningState)},
		{Name: "version", Value: fmt.Sprintf("Kubernetes %s, node image %s", str(p.CurrentOrchestratorVersion), str(p.NodeImageVersion))},
		{Name: "count", Value: strconv.Itoa(int(a.count()))},
		{Name: "upgrade settings", Value: settingsText(s)},
	}
}

// settingsText names AKS's defaults where the pool sets none.
func settingsText(s plan.UpdateSettings) string {
	if s.IsZero() {
		return "none set: AKS's defaults (maxSurge 10%, drainTimeoutInMinutes 30)"
	}
	return s.String()
}

// planFacts are what the plan reads beside the pool when it is opened:
// the cluster's other pools' states and the quota the surge draws on;
// why each could not be read, if it could not (the plan says so and goes
// on: these reads only inform it).
type planFacts struct {
	others    []poolState
	othersErr string
	quota     *quota
	quotaErr  string
}

// poolState is an agent pool's name and provisioning state.
type poolState struct{ name, state string }

// readPlanFacts reads the cluster's agent pools (agentPools list) and
// the quota of the pool's surge nodes.
func (a *AgentPool) readPlanFacts(ctx context.Context) {
	a.facts = planFacts{}
	pager := a.c.pools.NewListPager(a.id.group, a.id.name, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			a.facts.others, a.facts.othersErr = nil, wrap(err, "list the agent pools of AKS cluster %q", a.id.name).Error()
			break
		}
		for _, p := range page.Value {
			if p != nil && p.Name != nil && !strings.EqualFold(*p.Name, a.name) && p.Properties != nil {
				a.facts.others = append(a.facts.others, poolState{name: *p.Name, state: str(p.Properties.ProvisioningState)})
			}
		}
	}
	if q, err := a.readQuota(ctx); err != nil {
		a.facts.quotaErr = err.Error()
	} else {
		a.facts.quota = q
	}
}

// busyPools refuses the plan while another pool of the cluster has an
// operation running: AKS answers any change of the cluster's pools
// meanwhile with 409 OperationNotAllowed ("Another agentpool operation
// (nodepool1 - Creating) is in progress, please wait for it to finish
// before starting a new operation", https://aka.ms/aks-pending-operation).
// The pool's own operation is the run's to follow, not a refusal.
func (a *AgentPool) busyPools() error {
	var busy []string
	for _, p := range a.facts.others {
		if busyState(p.state) {
			busy = append(busy, fmt.Sprintf("%q %s", p.name, p.state))
		}
	}
	if len(busy) == 0 {
		return nil
	}
	return &Error{Msg: fmt.Sprintf("AKS cluster %q has an operation running on agent pool %s: AKS refuses a change of the cluster's pools until it ends (409 OperationNotAllowed); wait for it (\"az aks nodepool list --cluster-name %s --resource-group %s --query '[].provisioningState'\") and plan again",
		a.id.name, strings.Join(busy, ", "), a.id.name, a.id.group), IsInput: true}
}

// factDetails are the plan's lines on the other pools and the quota;
// an error when the surge does not fit the quota.
func (a *AgentPool) factDetails(surge int) ([]plan.Detail, error) {
	others := "none"
	if a.facts.othersErr != "" {
		others = "not read: " + a.facts.othersErr
	} else if len(a.facts.others) > 0 {
		var s []string
		for _, p := range a.facts.others {
			s = append(s, p.name+" "+p.state)
		}
		others = strings.Join(s, ", ") + " (no operation running)"
	}
	out := []plan.Detail{{Name: "other pools", Value: others}}
	quota := "not checked: " + a.facts.quotaErr
	switch q := a.facts.quota; {
	case a.spot():
		quota = "none needed: AKS adds no surge node to a Spot pool"
	case q != nil:
		// a surge past the quota is the capacity check's blocker
		// (ProveCapacity), not an error of the plan
		quota, _ = q.fit(surge, "surge node(s)")
	}
	out = append(out, plan.Detail{Name: "surge quota", Value: quota})
	return out, nil
}
