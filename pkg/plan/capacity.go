package plan

import (
	"fmt"
	"strings"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// CapacityPlan is what the run needs of the cloud's shared limits (quotas,
// subnet and pod IP ranges, zonal offerings) for the nodes it adds, and what
// the cloud said was free when the plan was made. A fleet plan adds up the
// Quotas of the targets a stage runs at once by Scope: the limits are per
// account, project or subscription and region, not per cluster.
type CapacityPlan struct {
	// Quotas are the limits the surge counts against, one per quota the
	// provider could read.
	Quotas []QuotaUse `json:"quotas,omitempty"`
	// Unprovable says what the provider could not prove, and why (a
	// quota it may not read, prefix delegation, an unknown instance
	// family); each is also a capacity-unprovable warning.
	Unprovable []string `json:"unprovable,omitempty"`
	// InstanceType is the group's machines' type where the provider read
	// it, by which Plan.Cost prices the added nodes.
	InstanceType string `json:"instanceType,omitempty"`
	// Reservations are those --reserve-surge makes before the first
	// scale-up (the surge strategy: before each batch's), per zone and
	// instance type; the plan makes none.
	Reservations []Reservation `json:"reservations,omitempty"`
	// Added is how many nodes the run adds at its peak, for which the
	// limits are proven.
	Added int32 `json:"added,omitempty"`
	// Reserved are the capacity reservations that exist in the group's
	// zones for its instance type with places free (aws: On-Demand
	// Capacity Reservations); the added nodes launch in the open ones.
	Reserved []ReservedCapacity `json:"reserved,omitempty"`
}

// ReservedCapacity is an existing reservation's free places.
type ReservedCapacity struct {
	ID           string `json:"id"`
	Zone         string `json:"zone"`
	InstanceType string `json:"instanceType"`
	Available    int32  `json:"available"`
	// Open says any matching launch uses it; a targeted one serves only
	// launches that name it.
	Open bool `json:"open"`
}

// reservedText says how many of the added nodes launch in the open
// reservations' free places at most, and names the targeted ones, which
// only launches that name them use; "" with none.
func (c *CapacityPlan) reservedText() string {
	var free int32
	var open, targeted []string
	for _, r := range c.Reserved {
		s := fmt.Sprintf("%s: %d %s in zone %s", r.ID, r.Available, r.InstanceType, r.Zone)
		if r.Open {
			free += r.Available
			open = append(open, s)
		} else {
			targeted = append(targeted, s)
		}
	}
	var parts []string
	if len(open) > 0 {
		parts = append(parts, fmt.Sprintf("up to %d of the %d added nodes launch in open capacity reservations (%s)", min(free, c.Added), c.Added, strings.Join(open, ", ")))
	}
	if len(targeted) > 0 {
		parts = append(parts, fmt.Sprintf("targeted capacity reservations serve only launches that name them (%s)", strings.Join(targeted, ", ")))
	}
	return strings.Join(parts, "; ")
}

// FirstRaise is by how many machines the run's first scale-up raises the
// group: the eks strategy's scale-up, or the surge strategy's first
// batch; 0 where the run raises it by none. What --reserve-surge reserves
// before it; a function, as Plan has methods enough.
func FirstRaise(p *Plan) int32 {
	if p.Cloud != nil && p.Cloud.ScaleUp > 0 {
		return p.Cloud.ScaleUp
	}
	if p.MaxSurge > 0 && len(p.Batches) > 0 {
		return int32(min(p.MaxSurge, len(p.Batches[0].Nodes)))
	}
	return 0
}

// QuotaUse is one shared limit: how much of it the run needs on top of what
// is in use, and how much was free.
type QuotaUse struct {
	// Scope identifies the limit across clusters and runs, so that two
	// targets on the same account and region add up: the cloud, the
	// account, project or subscription, the region or subnet, and the
	// quota's code, joined with "/" (e.g.
	// "aws/123456789012/us-east-1/L-1216C47A",
	// "gcp/my-project/europe-west1/CPUS",
	// "aws/123456789012/subnet-0abc/ips").
	Scope string `json:"scope"`
	// Name is the limit as the cloud's console names it.
	Name string `json:"name"`
	// Unit is what Needed, Free and Limit count: "vCPU", "IP",
	// "instance", "GB".
	Unit string `json:"unit"`
	// Needed is what the run adds at its peak.
	Needed int64 `json:"needed"`
	// Free is Limit less what was in use when the plan was made.
	Free int64 `json:"free"`
	// Limit is the quota's value; 0 where only what is free is known
	// (a subnet's available addresses).
	Limit int64 `json:"limit,omitempty"`
	// PerNode is what each added node takes of the limit (the instance
	// type's vCPUs, a node's IPs), from which the largest surge that fits
	// follows; 0 where unknown.
	PerNode int64 `json:"perNode,omitempty"`
}

// Fits reports whether the run's need fits what is free.
func (q QuotaUse) Fits() bool { return q.Needed <= q.Free }

// Largest is how many added nodes fit what is free; -1 where PerNode is
// unknown.
func (q QuotaUse) Largest() int64 {
	if q.PerNode <= 0 {
		return -1
	}
	return max(q.Free, 0) / q.PerNode
}

// PeakAdded is how many nodes the run adds at its peak beside the group's
// own: the scale-up (eks: max(2×zones, maxUnavailable); a cloud service's
// surge), the surge strategy's maxSurge (it surges one zone at a time),
// blue/green's whole
// green group (autoscaled: up to its maximum), Karpenter's replacements of
// its largest batch. 0 where the run adds none or there is no cloud.
func (p *Plan) PeakAdded() int32 {
	c := p.Cloud
	switch {
	case c == nil || c.RemovesOnly && !c.AwaitsReplacement:
		return 0
	case p.BlueGreen != nil:
		if !p.BlueGreen.Create && !p.BlueGreen.Kept {
			return 0 // green exists: its nodes count already
		}
		if p.Strategy == string(StrategyAutoscaledBlueGreen) {
			return max(c.Before.Max, c.Before.Desired)
		}
		return c.Before.Desired
	case p.MaxSurge > 0 && c.ScaleUp == 0: // --max-surge defaults to 1 on every strategy: a scale-up is eks's peak
		return int32(p.MaxSurge)
	case c.AwaitsReplacement:
		largest := 0
		for _, b := range p.Batches {
			largest = max(largest, len(b.Nodes))
		}
		return int32(largest)
	}
	return max(c.ScaleUp, c.During.Desired-c.Before.Desired)
}

// Findings are the blockers of the limits the run's added nodes do not fit
// (insufficient-quota, insufficient-ips), each with the largest surge that
// fits, and a capacity-unprovable warning for each thing not proven.
func (c *CapacityPlan) Findings(p *Plan) []check.Finding {
	var out []check.Finding
	for _, q := range c.Quotas {
		if q.Fits() {
			continue
		}
		name := check.CheckInsufficientQuota
		if q.Unit == "IP" {
			name = check.CheckInsufficientIPs
		}
		out = append(out, check.Finding{
			Check: name, Severity: check.Blocker, Kind: "Quota", Name: q.Name,
			Message: fmt.Sprintf("the %d nodes the run adds need %d %ss of %s, which has %d free%s",
				p.PeakAdded(), q.Needed, q.Unit, q.Name, q.Free, limitText(q.Limit)),
			Fix: fitText(p, q.Largest()) + "; or free " + q.Unit + "s, or have the limit raised, and plan again",
		})
	}
	for _, u := range c.Unprovable {
		out = append(out, check.Finding{
			Check: check.CheckCapacityUnprovable, Severity: check.Warning, Kind: "NodeGroup", Name: p.NodeGroup,
			Message: "cannot prove the added nodes fit the cloud's limits: " + u,
			Fix:     "make sure the limits hold the run's added nodes before it starts",
		})
	}
	return out
}

// Line says, for the plan's header, what the added nodes need of each
// limit and what is free; "" with none.
func (c *CapacityPlan) Line() string {
	if c == nil {
		return ""
	}
	parts := make([]string, 0, len(c.Quotas))
	for _, q := range c.Quotas {
		parts = append(parts, fmt.Sprintf("%s: %d %ss needed, %d free%s", q.Name, q.Needed, q.Unit, q.Free, limitText(q.Limit)))
	}
	if len(c.Unprovable) > 0 {
		parts = append(parts, fmt.Sprintf("%d not proven (capacity-unprovable)", len(c.Unprovable)))
	}
	if rs := c.reservedText(); rs != "" {
		parts = append(parts, rs)
	}
	if rs := reservationsText(c.Reservations); rs != "" {
		parts = append(parts, "--reserve-surge reserves "+rs+" before each scale-up, released once its nodes are Ready")
	}
	return strings.Join(parts, "; ")
}

// reservationsText lists reservations: "1 m5.large in zone us-east-1a".
func reservationsText(rs []Reservation) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d %s in zone %s", r.Count, r.InstanceType, r.Zone)
	}
	return strings.Join(parts, ", ")
}

func limitText(limit int64) string {
	if limit == 0 {
		return ""
	}
	return fmt.Sprintf(" of its %d", limit)
}

// fitText says what to run instead: the largest surge, or batch, that fits
// n added nodes, in the flag of the plan's strategy.
func fitText(p *Plan, n int64) string {
	zones := int64(max(len(p.Zones), 1))
	switch {
	case n < 0:
		return "use a strategy that adds fewer nodes"
	case n == 0:
		return "no added node fits: use --strategy surge --max-surge 0 with --max-unavailable, which adds none"
	case p.Strategy == string(StrategySurge):
		return fmt.Sprintf("--max-surge %d fits", n)
	case p.Strategy == string(StrategyEKS) && n >= 2*zones:
		return fmt.Sprintf("--max-unavailable %d fits", n)
	}
	return fmt.Sprintf("--strategy surge --max-surge %d fits (one zone at a time)", n)
}
