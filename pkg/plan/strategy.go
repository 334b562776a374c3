package plan

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// The strategies; eks is the default.
const (
	StrategyEKS       = "eks"
	StrategySurge     = "surge"
	StrategyBlueGreen = "blue-green"
	// StrategyAutoscaled is blue/green where the cluster autoscaler grows
	// green and shrinks blue.
	StrategyAutoscaled = "autoscaled-blue-green"
	// StrategyShortLived only points the group at the target: nothing is
	// drained, old nodes go away on their own.
	StrategyShortLived = "short-lived"
	// AutoscaledDrainBatch is how many blue nodes it drains at once after
	// the wait period.
	AutoscaledDrainBatch = 20
	OrderByZone          = "zone-by-zone"
	// MaxSoak caps the soak times of blue/green in total, as GKE does.
	MaxSoak = 7 * 24 * time.Hour
	// MaxInFlight caps maxSurge + maxUnavailable of the surge strategy, as
	// GKE does.
	MaxInFlight = 20
)

// Strategies lists what --strategy takes.
var Strategies = []string{StrategyEKS, StrategySurge, StrategyBlueGreen, StrategyAutoscaled, StrategyShortLived}

// IsBlueGreen reports whether a strategy builds a green group beside blue.
func IsBlueGreen(strategy string) bool {
	return strategy == StrategyBlueGreen || strategy == StrategyAutoscaled
}

// BlueGreenInput are the blue/green settings: the batch size as a count
// (BatchNodes >= 0) or a fraction of blue (BatchPercent in (0, 1], used when
// BatchNodes < 0), the soak after each batch and after the last one.
type BlueGreenInput struct {
	BatchNodes   int
	BatchPercent float64
	BatchSoak    time.Duration
	NodePoolSoak time.Duration
	// GreenASG names a green group someone else made, or GreenSelector
	// selects its nodes (not an Auto Scaling group: the run neither
	// scales nor deletes it); both empty means the run creates green.
	GreenASG      string
	GreenSelector string
	// WaitPeriod is autoscaled blue/green's time for the autoscaler to
	// remove under-used blue nodes before the rest is drained.
	WaitPeriod time.Duration
}

// BlueGreenPlan is the blue/green side of a plan.
type BlueGreenPlan struct {
	BatchSize    int      `json:"batchSize"`
	BatchSoak    Duration `json:"batchSoak"`
	NodePoolSoak Duration `json:"nodePoolSoak"`
	// Green is the green Auto Scaling group, or GreenSelector selects the
	// green nodes; Create says the run makes green.
	Green         string `json:"green,omitempty"`
	GreenSelector string `json:"greenSelector,omitempty"`
	Create        bool   `json:"create"`
}

// ValidateBlueGreen checks the blue/green settings.
func ValidateBlueGreen(in BlueGreenInput) error {
	switch {
	case in.BatchNodes < 0 && (in.BatchPercent <= 0 || in.BatchPercent > 1):
		return inputErrorf("invalid --batch-percent %g: must be above 0 and at most 1", in.BatchPercent)
	case in.GreenASG != "" && in.GreenSelector != "":
		return inputErrorf("--green-asg and --green-selector cannot be used together")
	case in.BatchSoak < 0:
		return inputErrorf("invalid --batch-soak %s: must not be negative", in.BatchSoak)
	case in.NodePoolSoak < 0:
		return inputErrorf("invalid --node-pool-soak %s: must not be negative", in.NodePoolSoak)
	case in.WaitPeriod < 0 || in.WaitPeriod > MaxSoak:
		return inputErrorf("invalid --wait-period %s: must be from 0 to 7 days", in.WaitPeriod)
	}
	return nil
}

// blueGreenBatchSize is BatchNodes, or BatchPercent of the blue nodes
// rounded down with a minimum of 1.
func blueGreenBatchSize(in BlueGreenInput, blue int) int {
	if in.BatchNodes >= 0 {
		return in.BatchNodes
	}
	return max(int(in.BatchPercent*float64(blue)), 1)
}

// ParseSurge checks the surge strategy's per-zone settings: whole numbers
// from 0, not both 0, and at most MaxInFlight nodes in flight.
func ParseSurge(maxSurge int, maxUnavailable string) (int, error) {
	mu, err := strconv.Atoi(maxUnavailable)
	if err != nil || mu < 0 {
		return 0, inputErrorf("invalid --max-unavailable %q: with --strategy surge it is a number of nodes per zone, from 0", maxUnavailable)
	}
	switch {
	case maxSurge < 0:
		return 0, inputErrorf("invalid --max-surge %d: must not be negative", maxSurge)
	case maxSurge == 0 && mu == 0:
		return 0, inputErrorf("--max-surge and --max-unavailable are both 0: nothing could be upgraded; raise one of them")
	case maxSurge+mu > MaxInFlight:
		return 0, inputErrorf("--max-surge %d plus --max-unavailable %d is %d nodes in flight, above the limit of %d; lower them", maxSurge, mu, maxSurge+mu, MaxInFlight)
	}
	return mu, nil
}

// surgeBatches upgrades one zone at a time: per zone, windows of
// maxSurge+maxUnavailable nodes, in a seeded random order within the zone.
func surgeBatches(outdated []PlannedNode, window int, seed int64) [][]PlannedNode {
	byZone := map[string][]PlannedNode{}
	var zones []string
	for _, n := range outdated {
		if _, ok := byZone[n.Zone]; !ok {
			zones = append(zones, n.Zone)
		}
		byZone[n.Zone] = append(byZone[n.Zone], n)
	}
	sort.Strings(zones)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x5bd1e995))
	var batches [][]PlannedNode
	for _, z := range zones {
		nodes := byZone[z]
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		for start := 0; start < len(nodes); start += window {
			batches = append(batches, nodes[start:min(start+window, len(nodes))])
		}
	}
	return batches
}

// Step is one phase of the plan as the reviewer reads it.
type Step struct {
	Phase  string `json:"phase"`
	Detail string `json:"detail"`
	// Estimate is a rough duration (see EstimateAssumptions).
	Estimate Duration `json:"estimate"`
}

// Duration marshals as a Go duration string ("1m30s").
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// What the estimates assume: a new cloud node is Ready in NodeLaunchEstimate,
// a batch drains in DrainEstimate, and load balancers take the default
// --post-drain-wait.
const (
	NodeLaunchEstimate  = 3 * time.Minute
	DrainEstimate       = time.Minute
	PostDrainEstimate   = time.Minute
	EstimateAssumptions = "a new node Ready in 3m, a drain in 1m, post-drain wait 1m"
)

// steps describes the phases of the plan in order, with rough durations.
func steps(p *Plan) []Step {
	perBatch := DrainEstimate + PostDrainEstimate
	var out []Step
	add := func(phase, detail string, d time.Duration) {
		out = append(out, Step{Phase: phase, Detail: detail, Estimate: Duration(d)})
	}
	cloudGroup := p.Cloud != nil
	if cloudGroup && IsBlueGreen(p.Strategy) && p.Cloud.TargetVersion == NewVersion {
		add("Setup", fmt.Sprintf("create a version of launch template %s with image %s; blue keeps its version", p.Cloud.LaunchTemplateID, p.Cloud.TargetImage), 0)
	} else if cloudGroup && !IsBlueGreen(p.Strategy) {
		target := "version " + p.Cloud.TargetVersion
		if p.Cloud.TargetVersion == NewVersion {
			target = "a new version with image " + p.Cloud.TargetImage
		}
		add("Setup", fmt.Sprintf("point Auto Scaling group %s at launch template %s %s", p.Cloud.AutoScalingGroup, p.Cloud.LaunchTemplateID, target), 0)
	}
	switch p.Strategy {
	case StrategyShortLived:
		add("Wait", fmt.Sprintf("nothing is drained: the %d outdated nodes run until they go away on their own; status shows how many are left", p.Nodes.Outdated), 0)
		return out
	case StrategyAutoscaled:
		bg := p.BlueGreen
		add("CreateGreen", fmt.Sprintf("a new Auto Scaling group %s at 0 nodes (max %d), grown by the cluster autoscaler; blue may shrink to 0", bg.Green, p.Cloud.Before.Max), 0)
		add("CordonBlue", fmt.Sprintf("cordon the %d blue nodes", p.Nodes.Outdated), 0)
		add("WaitPeriod", fmt.Sprintf("%s for the autoscaler to remove under-used blue nodes (not those running safe-to-evict=false pods)", time.Duration(bg.NodePoolSoak)), time.Duration(bg.NodePoolSoak))
		add("DrainBlue", fmt.Sprintf("the blue nodes left, %d at a time, PDBs honoured up to 1h, grace up to 24h", AutoscaledDrainBatch), time.Duration(len(p.Batches))*(DrainEstimate+NodeLaunchEstimate))
		add("DeleteBlue", "delete the blue Auto Scaling group", 0)
		return out
	case StrategyBlueGreen:
		bg := p.BlueGreen
		green := "a new Auto Scaling group " + bg.Green
		switch {
		case bg.GreenSelector != "":
			green = "the nodes selected by " + bg.GreenSelector + " (given)"
		case !bg.Create:
			green = "Auto Scaling group " + bg.Green + " (given)"
		}
		add("CreateGreen", fmt.Sprintf("%s with %d nodes of the target; blue is pinned at its size", green, p.Nodes.Outdated), NodeLaunchEstimate)
		add("CordonBlue", fmt.Sprintf("cordon the %d blue nodes", p.Nodes.Outdated), 0)
		if len(p.Batches) > 0 {
			soaks := time.Duration(len(p.Batches)-1) * time.Duration(bg.BatchSoak)
			add("DrainBlue", fmt.Sprintf("%d batches of up to %d nodes, %s soak between batches", len(p.Batches), bg.BatchSize, time.Duration(bg.BatchSoak)), time.Duration(len(p.Batches))*DrainEstimate+soaks)
		} else {
			add("DrainBlue", "batch size 0: nothing drained, straight to the soak", 0)
		}
		add("Soak", fmt.Sprintf("%s; \"complete\" ends it early", time.Duration(bg.NodePoolSoak)), time.Duration(bg.NodePoolSoak))
		add("DeleteBlue", "delete the pods left on blue (not evicted; grace at most 60m), then the blue Auto Scaling group", DrainEstimate)
		return out
	case StrategySurge:
		byZone := map[string][2]int{} // nodes, batches
		var zones []string
		for _, b := range p.Batches {
			z := b.Nodes[0].Zone
			if _, ok := byZone[z]; !ok {
				zones = append(zones, z)
			}
			v := byZone[z]
			byZone[z] = [2]int{v[0] + len(b.Nodes), v[1] + 1}
		}
		for _, z := range zones {
			v := byZone[z]
			d := time.Duration(v[1]) * perBatch
			if p.MaxSurge > 0 {
				d += time.Duration(v[1]) * NodeLaunchEstimate
			}
			add("Surge", fmt.Sprintf("zone %s: +%d node(s) at a time, %d nodes %d at a time (%d batches)", orNone(z), min(p.MaxSurge, v[0]), v[0], p.MaxSurge+p.MaxUnavailable, v[1]), d)
		}
	default:
		if cloudGroup && p.Cloud.ScaleUp > 0 {
			add("ScaleUp", fmt.Sprintf("+%d nodes: desired %d -> %d, max %d -> %d; wait for them Ready", p.Cloud.ScaleUp, p.Cloud.Before.Desired, p.Cloud.During.Desired, p.Cloud.Before.Max, p.Cloud.During.Max), NodeLaunchEstimate)
		}
		if len(p.Batches) > 0 {
			add("Taint", fmt.Sprintf("%d outdated nodes %s", p.Nodes.Outdated, p.Taint), 0)
			add("Upgrade", fmt.Sprintf("%d batches of up to %d nodes: drain, cordon, remove", len(p.Batches), p.MaxUnavailable), time.Duration(len(p.Batches))*perBatch)
		}
		if cloudGroup && (p.Cloud.ScaleUp > 0 || p.Cloud.Resumed) {
			n := p.Cloud.During.Desired - p.Cloud.Before.Desired
			add("ScaleDown", fmt.Sprintf("back to desired %d, max %d, one node at a time", p.Cloud.Before.Desired, p.Cloud.Before.Max), time.Duration(n)*perBatch)
		}
	}
	return out
}

// EstimatedDuration sums the steps' estimates.
func (p *Plan) EstimatedDuration() time.Duration {
	var d time.Duration
	for _, s := range p.Steps {
		d += time.Duration(s.Estimate)
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
