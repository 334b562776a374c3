package gke

import (
	"cmp"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// The settings beyond maxSurge and maxUnavailable, by GKE's field names
// (API reference, UpgradeSettings, BlueGreenSettings,
// StandardRolloutPolicy, AutoscaledRolloutPolicy, NodeDrainConfig).
const (
	setBatchNodeCount  = "batchNodeCount"
	setBatchPercentage = "batchPercentage"
	setBatchSoak       = "batchSoakDuration"
	setPoolSoak        = "nodePoolSoakDuration"
	setWaitForDrain    = "waitForDrainDuration"
	setPDBTimeout      = "pdbTimeoutDuration"
	setGraceTerm       = "graceTerminationDuration"
	setRespectOnDelete = "respectPdbDuringNodePoolDeletion"
)

// drainKeys are the settings of the pool's nodeDrainConfig (API reference,
// NodeDrainConfig: pdbTimeoutDuration, graceTerminationDuration,
// respectPdbDuringNodePoolDeletion).
var drainKeys = []string{setPDBTimeout, setGraceTerm, setRespectOnDelete}

// GKE's defaults and limits
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies).
const (
	defaultPDBTimeout = time.Hour          // PDBs honoured for up to an hour
	defaultPoolSoak   = time.Hour          // NODE_POOL_SOAK_DURATION's default
	maxSoak           = 7 * 24 * time.Hour // soaks in total; the autoscaled wait
	// minAutoscaledMaster is the control plane an autoscaled blue/green
	// upgrade needs.
	minAutoscaledMaster = "1.34.0-gke.2201000"
)

// Runs implements cloud.ServicePlanner: GKE runs its four strategies
// itself; Plan refuses the one the pool does not take (poolTakes).
func (n *NodePool) Runs(strategy cloud.StrategyName) bool {
	switch strategy {
	case cloud.StrategySurge, cloud.StrategyBlueGreen, cloud.StrategyAutoscaledBlueGreen, cloud.StrategyShortLived:
		return true
	}
	return false
}

// OwnStrategy implements cloud.OwnStrategy: the strategy the pool's
// upgradeSettings set, with their settings, which GKE's own upgrade runs
// (a flex-start or queued-provisioning pool: short-lived, its only one);
// GKE's defaults where unset (maxSurge 1, maxUnavailable 0; a node per
// batch; an hour's pool soak).
func (n *NodePool) OwnStrategy() cloud.GroupStrategy {
	s := settingsOf(n.pool)
	own := cloud.GroupStrategy{Strategy: cloud.StrategySurge, MaxSurge: 1, MaxUnavailable: cmp.Or(s.MaxUnavailable, "0"), From: "the pool's own upgrade strategy"}
	if s.MaxSurge != nil {
		own.MaxSurge = *s.MaxSurge
	}
	bg, o := &own.BlueGreen, s.Other
	bg.BatchNodes, _ = strconv.Atoi(cmp.Or(o[setBatchNodeCount], "1"))
	if o[setBatchPercentage] != "" {
		bg.BatchNodes = -1
		bg.BatchPercent, _ = strconv.ParseFloat(o[setBatchPercentage], 64)
	}
	bg.BatchSoak, _ = time.ParseDuration(o[setBatchSoak])
	bg.NodePoolSoak, _ = time.ParseDuration(cmp.Or(o[setPoolSoak], seconds(defaultPoolSoak)))
	bg.WaitPeriod, _ = time.ParseDuration(o[setWaitForDrain])
	switch {
	case n.flexible():
		own.Strategy = cloud.StrategyShortLived
	case s.Strategy == "BLUE_GREEN" && o[setWaitForDrain] != "":
		own.Strategy = cloud.StrategyAutoscaledBlueGreen
	case s.Strategy == "BLUE_GREEN":
		own.Strategy = cloud.StrategyBlueGreen
	}
	return own
}

// poolTakes refuses a strategy GKE does not run on the pool: short-lived
// is how GKE upgrades a flex-start or queued-provisioning pool, and the
// only way it does
// (https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies#short-lived-upgrades).
func (n *NodePool) poolTakes(strategy cloud.StrategyName) error {
	switch flexible := n.flexible(); {
	case strategy == cloud.StrategyShortLived && !flexible:
		return inputErrorf("--strategy %s is GKE's upgrade of flex-start and queued-provisioning pools only; %s is neither: use --strategy %s, %s or %s", cloud.StrategyShortLived, n, cloud.StrategySurge, cloud.StrategyBlueGreen, cloud.StrategyAutoscaledBlueGreen)
	case strategy != cloud.StrategyShortLived && flexible:
		return inputErrorf("--strategy %s: %s is a flex-start or queued-provisioning pool, which GKE upgrades short-lived only: use --strategy %s", strategy, n, cloud.StrategyShortLived)
	}
	return nil
}

// settingsOf are the pool's upgradeSettings and nodeDrainConfig in the
// plan's terms.
func settingsOf(p *container.NodePool) plan.UpdateSettings {
	s := plan.UpdateSettings{Strategy: "SURGE", Other: map[string]string{}}
	if up := p.UpgradeSettings; up != nil {
		if up.Strategy != "" && up.Strategy != "NODE_POOL_UPDATE_STRATEGY_UNSPECIFIED" {
			s.Strategy = up.Strategy
		}
		ms := int(up.MaxSurge)
		s.MaxSurge, s.MaxUnavailable = &ms, strconv.Itoa(int(up.MaxUnavailable))
		if bg := up.BlueGreenSettings; bg != nil {
			put(s.Other, setPoolSoak, bg.NodePoolSoakDuration)
			if sp := bg.StandardRolloutPolicy; sp != nil {
				put(s.Other, setBatchNodeCount, strconv.Itoa(int(sp.BatchNodeCount)))
				if sp.BatchPercentage > 0 {
					put(s.Other, setBatchPercentage, strconv.FormatFloat(sp.BatchPercentage, 'g', -1, 64))
					delete(s.Other, setBatchNodeCount)
				}
				put(s.Other, setBatchSoak, sp.BatchSoakDuration)
			}
			if a := bg.AutoscaledRolloutPolicy; a != nil {
				s.Other[setWaitForDrain] = cmp.Or(a.WaitForDrainDuration, "259200s")
			}
		}
	}
	if dc := p.NodeDrainConfig; dc != nil {
		put(s.Other, setPDBTimeout, dc.PdbTimeoutDuration)
		put(s.Other, setGraceTerm, dc.GraceTerminationDuration)
		if dc.RespectPdbDuringNodePoolDeletion {
			s.Other[setRespectOnDelete] = "true"
		}
	}
	return s
}

// drainSettings are the nodeDrainConfig part of s.
func drainSettings(s plan.UpdateSettings) map[string]string {
	out := map[string]string{}
	for _, k := range drainKeys {
		put(out, k, s.Other[k])
	}
	return out
}

// upgradeSettingsOnly is s without its nodeDrainConfig part.
func upgradeSettingsOnly(s plan.UpdateSettings) plan.UpdateSettings {
	s.Other = maps.Clone(s.Other)
	for _, k := range drainKeys {
		delete(s.Other, k)
	}
	return s
}

// drainConfig is the whole nodeDrainConfig of s, every field sent: whether
// nodePools.update merges a partial nodeDrainConfig or replaces the pool's
// with it the reference does not say, so the run sends the pool's own
// values beside its change, and a field unset clears (JSON null).
func drainConfig(s plan.UpdateSettings) *container.NodeDrainConfig {
	o := s.Other
	dc := &container.NodeDrainConfig{PdbTimeoutDuration: o[setPDBTimeout], GraceTerminationDuration: o[setGraceTerm],
		RespectPdbDuringNodePoolDeletion: o[setRespectOnDelete] == "true", ForceSendFields: []string{"RespectPdbDuringNodePoolDeletion"}}
	if dc.PdbTimeoutDuration == "" {
		dc.NullFields = append(dc.NullFields, "PdbTimeoutDuration")
	}
	if dc.GraceTerminationDuration == "" {
		dc.NullFields = append(dc.NullFields, "GraceTerminationDuration")
	}
	return dc
}

func put(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// gkeSettings are the plan's settings as nodePools.update takes them.
func gkeSettings(s plan.UpdateSettings) (*container.UpgradeSettings, *container.NodeDrainConfig) {
	up := &container.UpgradeSettings{Strategy: s.Strategy, ForceSendFields: []string{"MaxSurge", "MaxUnavailable"}}
	if s.MaxSurge != nil {
		up.MaxSurge = int64(*s.MaxSurge)
	}
	mu, _ := strconv.Atoi(s.MaxUnavailable)
	up.MaxUnavailable = int64(mu)
	o := s.Other
	if o[setPoolSoak]+o[setBatchNodeCount]+o[setBatchPercentage]+o[setBatchSoak]+o[setWaitForDrain] != "" {
		bg := &container.BlueGreenSettings{NodePoolSoakDuration: o[setPoolSoak]}
		if o[setWaitForDrain] != "" {
			bg.AutoscaledRolloutPolicy = &container.AutoscaledRolloutPolicy{WaitForDrainDuration: o[setWaitForDrain]}
		} else if o[setBatchNodeCount]+o[setBatchPercentage]+o[setBatchSoak] != "" {
			sp := &container.StandardRolloutPolicy{BatchSoakDuration: o[setBatchSoak]}
			sp.BatchPercentage, _ = strconv.ParseFloat(o[setBatchPercentage], 64)
			count, _ := strconv.Atoi(o[setBatchNodeCount])
			sp.BatchNodeCount = int64(count)
			if o[setBatchPercentage] == "" {
				sp.ForceSendFields = []string{"BatchNodeCount"} // 0 skips the drain phase
			}
			bg.StandardRolloutPolicy = sp
		}
		up.BlueGreenSettings = bg
	}
	return up, drainConfig(s)
}

// seconds is a duration as google.protobuf.Duration's JSON has it.
func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// Plan implements cloud.ServicePlanner: the settings GKE takes for the
// strategy, refused where GKE would refuse them, and its phases.
func (n *NodePool) Plan(in plan.Input, nodes, zones int) (*plan.ManagedPlan, error) {
	if err := n.poolTakes(in.Strategy); err != nil {
		return nil, err
	}
	before := settingsOf(n.pool)
	during, err := n.during(in, before, nodes)
	if err != nil {
		return nil, err
	}
	limit := defaultPDBTimeout
	if d, err := time.ParseDuration(during.Other[setPDBTimeout]); err == nil && d > 0 {
		limit = d
	}
	mp := &plan.ManagedPlan{
		Service: "GKE node pool", Details: n.details(before), Before: before, During: during,
		Target:        fmt.Sprintf("GKE version %s, image type %s", n.target.Version, n.target.ImageType),
		Controls:      controls(in.Strategy),
		EvictionLimit: plan.Duration(limit), ForcesOut: in.Strategy != cloud.StrategyShortLived,
		Revision: n.etag,
	}
	switch in.Strategy {
	case cloud.StrategySurge:
		mp.ScaleUp = int32(min(*during.MaxSurge, (nodes+max(zones, 1)-1)/max(zones, 1)))
	case cloud.StrategyBlueGreen:
		mp.ScaleUp = int32(nodes)
	case cloud.StrategyAutoscaledBlueGreen:
		// Green starts empty and GKE's cluster autoscaler grows it for
		// the pods blue's drain evicts: at most blue's size.
		mp.ScaleUp = int32(nodes)
	}
	mp.Steps = n.steps(in, mp, nodes, zones)
	return mp, nil
}

// during are the settings for the run: the pool's, with the strategy's
// from the flags.
func (n *NodePool) during(in plan.Input, before plan.UpdateSettings, nodes int) (plan.UpdateSettings, error) {
	s := before
	s.Other = maps.Clone(before.Other)
	if n.pdbTimeout != "" {
		d, _ := time.ParseDuration(n.pdbTimeout)
		s.Other[setPDBTimeout] = seconds(d)
	}
	switch in.Strategy {
	case cloud.StrategySurge:
		mu, err := plan.ParseSurge(in.MaxSurge, in.MaxUnavailable)
		if err != nil {
			return s, err
		}
		ms := in.MaxSurge
		s.Strategy, s.MaxSurge, s.MaxUnavailable = "SURGE", &ms, strconv.Itoa(mu)
	case cloud.StrategyBlueGreen:
		return n.blueGreen(in.BlueGreen, s, nodes)
	case cloud.StrategyAutoscaledBlueGreen:
		return n.autoscaled(in.BlueGreen, s)
	}
	return s, nil
}

// blueGreen sets the standard rollout: the batch, its soak, the pool's
// soak; the soaks may add up to 7 days at most.
func (n *NodePool) blueGreen(bg plan.BlueGreenInput, s plan.UpdateSettings, nodes int) (plan.UpdateSettings, error) {
	s.Strategy = "BLUE_GREEN"
	for _, k := range []string{setBatchNodeCount, setBatchPercentage, setWaitForDrain} {
		delete(s.Other, k)
	}
	size := bg.BatchNodes
	if size < 0 {
		s.Other[setBatchPercentage] = strconv.FormatFloat(bg.BatchPercent, 'g', -1, 64)
		size = max(int(bg.BatchPercent*float64(nodes)), 1)
	} else {
		s.Other[setBatchNodeCount] = strconv.Itoa(size)
	}
	s.Other[setBatchSoak], s.Other[setPoolSoak] = seconds(bg.BatchSoak), seconds(bg.NodePoolSoak)
	batches := 0
	if size > 0 {
		batches = (nodes + size - 1) / size
	}
	if total := time.Duration(max(batches-1, 0))*bg.BatchSoak + bg.NodePoolSoak; total > maxSoak {
		return s, inputErrorf("the soaks add up to %s (--batch-soak between %d batches, then --node-pool-soak), above GKE's limit of 7 days; lower them", plan.FormatDuration(total), batches)
	}
	return s, nil
}

// autoscaled sets the autoscaled rollout's wait; GKE runs it only on a
// pool with autoscaling and a control plane of 1.34.0-gke.2201000 or
// later.
func (n *NodePool) autoscaled(bg plan.BlueGreenInput, s plan.UpdateSettings) (plan.UpdateSettings, error) {
	if a := n.pool.Autoscaling; a == nil || !a.Enabled {
		return s, inputErrorf("--strategy %s needs a node pool with autoscaling enabled; %s has none: enable it or use --strategy %s", cloud.StrategyAutoscaledBlueGreen, n, cloud.StrategyBlueGreen)
	}
	if compareVersions(n.masterVersion, minAutoscaledMaster) < 0 {
		return s, inputErrorf("--strategy %s needs a control plane of %s or later; cluster %q runs %s", cloud.StrategyAutoscaledBlueGreen, minAutoscaledMaster, n.cluster, n.masterVersion)
	}
	if bg.WaitPeriod < 0 || bg.WaitPeriod > maxSoak {
		return s, inputErrorf("invalid --wait-period %s: GKE takes 0 to 7 days", plan.FormatDuration(bg.WaitPeriod))
	}
	s.Strategy = "BLUE_GREEN"
	for _, k := range []string{setBatchNodeCount, setBatchPercentage, setBatchSoak} {
		delete(s.Other, k)
	}
	s.Other[setWaitForDrain] = seconds(bg.WaitPeriod)
	return s, nil
}

// controls are the commands GKE's upgrade with the strategy offers.
func controls(strategy cloud.StrategyName) []string {
	switch strategy {
	case cloud.StrategySurge:
		return []string{"cancel", "resume", "rollback"}
	case cloud.StrategyBlueGreen:
		return []string{"cancel", "resume", "rollback", "complete"}
	case cloud.StrategyAutoscaledBlueGreen:
		return []string{"cancel", "resume"}
	}
	return []string{}
}

// details are the pool as nodePools.get shows it.
func (n *NodePool) details(s plan.UpdateSettings) []plan.Detail {
	p := n.pool
	var groups []string
	for _, u := range p.InstanceGroupUrls {
		groups = append(groups, u[strings.LastIndex(u, "/")+1:])
	}
	scaling := "off"
	if a := p.Autoscaling; a != nil && a.Enabled {
		scaling = fmt.Sprintf("on, %d-%d per zone", a.MinNodeCount, a.MaxNodeCount)
		if a.TotalMaxNodeCount > 0 {
			scaling = fmt.Sprintf("on, %d-%d in total", a.TotalMinNodeCount, a.TotalMaxNodeCount)
		}
	}
	pdb := cmp.Or(s.Other[setPDBTimeout], "unset (GKE's 1h)")
	return []plan.Detail{
		{Name: "node pool", Value: fmt.Sprintf("%s (cluster %s in %s, control plane %s)", n.name, n.cluster, n.location, n.masterVersion)},
		{Name: "status", Value: p.Status},
		{Name: "version", Value: fmt.Sprintf("%s, image type %s", p.Version, n.imageType())},
		{Name: "instance groups", Value: fmt.Sprintf("%s in zones %s", strings.Join(groups, ", "), strings.Join(p.Locations, ", "))},
		{Name: "autoscaling", Value: scaling},
		{Name: "upgrade settings", Value: s.String()},
		{Name: "PDB timeout", Value: pdb},
		{Name: "etag", Value: p.Etag},
	}
}
