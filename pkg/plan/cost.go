package plan

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// PriceFile is what --price-file holds (YAML or JSON): instance type →
// region → price per hour, and when the prices were read, so that a plan
// says how old its figures are.
type PriceFile struct {
	// ReadAt is the date the prices were read (2026-11-01 or RFC 3339).
	ReadAt string `json:"readAt"`
	// Currency names the prices' currency; USD where not given.
	Currency string `json:"currency,omitempty"`
	// Prices are per hour of one running instance.
	Prices map[string]map[string]float64 `json:"prices"`
}

// ReadPriceFile reads and checks a --price-file; the error is one line
// naming the flag, the file and the problem.
func ReadPriceFile(path string) (*PriceFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErrorf("invalid --price-file %q: %v", path, err)
	}
	var f PriceFile
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), &f); err != nil {
		return nil, inputErrorf("invalid --price-file %q: %s", path, bytes.ReplaceAll([]byte(err.Error()), []byte("\n"), []byte(" ")))
	}
	if err := f.check(); err != nil {
		return nil, inputErrorf("invalid --price-file %q: %v", path, err)
	}
	if f.Currency == "" {
		f.Currency = "USD"
	}
	return &f, nil
}

func (f *PriceFile) check() error {
	if _, err := time.Parse(time.DateOnly, f.ReadAt); err != nil {
		if _, err := time.Parse(time.RFC3339, f.ReadAt); err != nil {
			return fmt.Errorf("readAt %q is not a date such as 2026-11-01: say when the prices were read", f.ReadAt)
		}
	}
	if len(f.Prices) == 0 {
		return fmt.Errorf("no prices: want prices: {INSTANCE-TYPE: {REGION: PRICE-PER-HOUR}}")
	}
	for typ, regions := range f.Prices {
		for region, price := range regions {
			if price < 0 || math.IsNaN(price) || math.IsInf(price, 0) {
				return fmt.Errorf("price %v of %q in %q is not a price per hour", price, typ, region)
			}
		}
	}
	return nil
}

// price is the hourly price of typ in region; false where the file does
// not say (never a guess from another region or type).
func (f *PriceFile) price(typ, region string) (float64, bool) {
	if f == nil || typ == "" || region == "" {
		return 0, false
	}
	p, ok := f.Prices[typ][region]
	return p, ok
}

// CostPlan is what the nodes the run adds cost, for each strategy the
// group could be upgraded with, so that a reviewer can weigh them.
type CostPlan struct {
	InstanceType string `json:"instanceType,omitempty"`
	Region       string `json:"region,omitempty"`
	// PricesReadAt and Currency are the price file's; "" without one.
	PricesReadAt string `json:"pricesReadAt,omitempty"`
	Currency     string `json:"currency,omitempty"`
	// PerHour is the instance type's price in the region; nil: not priced.
	PerHour    *float64       `json:"perHour,omitempty"`
	Strategies []StrategyCost `json:"strategies"`
}

// StrategyCost is one strategy's added nodes: how many, how long they live
// (estimated as the plan's phases are), the instance-hours that makes, and
// their cost (nil: not priced).
type StrategyCost struct {
	Strategy      string   `json:"strategy"`
	AddedNodes    int      `json:"addedNodes"`
	Lives         Duration `json:"lives"`
	InstanceHours float64  `json:"instanceHours"`
	Cost          *float64 `json:"cost,omitempty"`
}

// CostInput is what the costs take beside the plan: the prices (nil: none
// given) and blue/green's soaks as the flags give them.
type CostInput struct {
	Prices                  *PriceFile
	BatchSoak, NodePoolSoak time.Duration
}

// Costs is the cost of the added nodes of eks, surge and blue/green for the
// plan's group; nil where the run has no cloud group or nothing to replace.
func Costs(p *Plan, in CostInput) *CostPlan {
	n := len(p.Outdated())
	if p.Cloud == nil || n == 0 {
		return nil
	}
	c := &CostPlan{Region: p.Cloud.Region}
	if p.Capacity != nil {
		c.InstanceType = p.Capacity.InstanceType
	}
	if in.Prices != nil {
		c.PricesReadAt, c.Currency = in.Prices.ReadAt, in.Prices.Currency
	}
	price, priced := in.Prices.price(c.InstanceType, c.Region)
	if priced {
		c.PerHour = &price
	}
	for _, s := range strategyPeaks(p, n, in) {
		s.InstanceHours = float64(s.AddedNodes) * time.Duration(s.Lives).Hours()
		if priced {
			cost := s.InstanceHours * price
			s.Cost = &cost
		}
		c.Strategies = append(c.Strategies, s)
	}
	return c
}

// strategyPeaks are the added nodes of eks, surge and blue/green and how
// long they live, with a batch taking a join, its drain rounds and the
// post-drain wait:
//   - eks: max(2×zones, maxUnavailable) nodes for the ceil(n/maxUnavailable)
//     batches;
//   - surge: maxSurge nodes (one zone at a time) for the sum over zones of
//     ceil(zone's nodes/maxSurge) batches;
//   - blue/green: the whole group, from its join through the drain of blue
//     in batches of maxUnavailable (blue/green's batch size where planned),
//     the soaks between them, and the node-pool soak.
func strategyPeaks(p *Plan, n int, in CostInput) []StrategyCost {
	unavailable := max(p.MaxUnavailable, 1)
	surge := max(p.MaxSurge, 1)
	drain := p.DrainTime()*time.Duration(max(p.DrainRounds, 1)) + time.Duration(p.PostDrainWait)
	batch := p.JoinTime() + drain
	perZone := map[string]int{}
	for _, o := range p.Outdated() {
		perZone[o.Zone]++
	}
	surgeBatches := 0
	for _, count := range perZone {
		surgeBatches += ceilDiv(count, surge)
	}
	zones := max(len(p.Zones), len(perZone), 1)
	bgSize, bgSoak, poolSoak := unavailable, in.BatchSoak, in.NodePoolSoak
	if bg := p.BlueGreen; bg != nil {
		bgSize, bgSoak, poolSoak = max(bg.BatchSize, 1), time.Duration(bg.BatchSoak), time.Duration(bg.NodePoolSoak)
	}
	bgBatches := ceilDiv(n, bgSize)
	green := max(int(p.Cloud.Before.Desired), n)
	return []StrategyCost{
		{Strategy: string(StrategyEKS), AddedNodes: max(2*zones, unavailable), Lives: Duration(time.Duration(ceilDiv(n, unavailable)) * batch)},
		{Strategy: string(StrategySurge), AddedNodes: surge, Lives: Duration(time.Duration(surgeBatches) * batch)},
		{Strategy: string(StrategyBlueGreen), AddedNodes: green,
			Lives: Duration(p.JoinTime() + time.Duration(bgBatches)*drain + time.Duration(max(bgBatches-1, 0))*bgSoak + poolSoak)},
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// writeCosts prints the costs, after the phases.
func writeCosts(w io.Writer, c *CostPlan) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nAdded nodes' cost (%s):\n", c.pricedText())
	for _, s := range c.Strategies {
		cost := "not priced"
		if s.Cost != nil {
			cost = fmt.Sprintf("%.2f %s", *s.Cost, c.Currency)
		}
		fmt.Fprintf(w, "  %-11s %d nodes for ~%s: %.1f instance-hours, %s\n", s.Strategy, s.AddedNodes, FormatDuration(time.Duration(s.Lives)), s.InstanceHours, cost)
	}
}

// pricedText says which price the costs take, or why none.
func (c *CostPlan) pricedText() string {
	switch {
	case c.PerHour != nil:
		return fmt.Sprintf("%s in %s at %v %s an hour, prices read %s", c.InstanceType, c.Region, *c.PerHour, c.Currency, c.PricesReadAt)
	case c.PricesReadAt == "":
		return "not priced: give --price-file"
	case c.InstanceType == "":
		return "not priced: the group's instance type is unknown"
	}
	return fmt.Sprintf("not priced: --price-file (read %s) has no price of %q in %q", c.PricesReadAt, c.InstanceType, c.Region)
}
