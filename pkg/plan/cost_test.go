package plan

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// costPlan is a group of 5 outdated nodes, 3 in zone a and 2 in b, with the
// default join (3m) and drain (1m) estimates and a 1m post-drain wait: a
// batch takes 5m, a drain with its wait 2m.
func costPlan(unavailable, surge int, desired int32) *Plan {
	node := func(zone string) PlannedNode { return PlannedNode{Name: "n-" + zone, Zone: zone} }
	return &Plan{
		Cloud:          &CloudPlan{GroupID: GroupID{Region: "us-east-1"}, Before: Sizes{Desired: desired}},
		MaxUnavailable: unavailable, MaxSurge: surge, PostDrainWait: Duration(time.Minute), Zones: []string{"a", "b"},
		Batches:  []Batch{{Nodes: []PlannedNode{node("a"), node("a"), node("a"), node("b"), node("b")}}},
		Capacity: &CapacityPlan{InstanceType: "m5.xlarge"},
	}
}

func TestCosts(t *testing.T) {
	prices := &PriceFile{ReadAt: "2026-11-01", Currency: "USD", Prices: map[string]map[string]float64{"m5.xlarge": {"us-east-1": 0.2, "eu-west-1": 0.3}}}
	elsewhere := &PriceFile{ReadAt: "2026-11-01", Currency: "USD", Prices: map[string]map[string]float64{"m5.xlarge": {"eu-west-1": 0.3}}}
	type fig struct {
		added int
		lives time.Duration
		hours float64
		cost  float64 // -1: not priced
	}
	tests := []struct {
		name string
		plan *Plan
		in   CostInput
		want []fig // eks, surge, blue-green
	}{
		{name: "one at a time, priced", plan: costPlan(1, 0, 5),
			in: CostInput{Prices: prices, BatchSoak: 10 * time.Minute, NodePoolSoak: time.Hour},
			want: []fig{
				// eks: max(2×2 zones, 1) = 4 nodes for 5 batches × 5m = 25m: 4×25/60 h at 0.2.
				{4, 25 * time.Minute, 4 * 25.0 / 60, 4 * 25.0 / 60 * 0.2},
				// surge: 1 node (one zone at a time) for 3+2 batches × 5m.
				{1, 25 * time.Minute, 25.0 / 60, 25.0 / 60 * 0.2},
				// blue/green: 5 nodes for a join 3m, 5 drains × 2m, 4 soaks × 10m, the pool soak 60m = 113m.
				{5, 113 * time.Minute, 5 * 113.0 / 60, 5 * 113.0 / 60 * 0.2},
			}},
		{name: "two at a time, no price file", plan: costPlan(2, 2, 6),
			want: []fig{
				// eks: max(4, 2) = 4 nodes for ceil(5/2) = 3 batches × 5m.
				{4, 15 * time.Minute, 1, -1},
				// surge: 2 nodes for ceil(3/2)+ceil(2/2) = 3 batches × 5m.
				{2, 15 * time.Minute, 0.5, -1},
				// blue/green: the group's 6 nodes for 3m + 3 drains × 2m, no soaks.
				{6, 9 * time.Minute, 0.9, -1},
			}},
		{name: "a price of another region is no price", plan: costPlan(1, 1, 5), in: CostInput{Prices: elsewhere},
			want: []fig{{4, 25 * time.Minute, 4 * 25.0 / 60, -1}, {1, 25 * time.Minute, 25.0 / 60, -1}, {5, 13 * time.Minute, 5 * 13.0 / 60, -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Costs(tc.plan, tc.in)
			if got == nil || len(got.Strategies) != len(tc.want) {
				t.Fatalf("Costs() = %+v, want %d strategies", got, len(tc.want))
			}
			for i, w := range tc.want {
				s := got.Strategies[i]
				priced := s.Cost != nil
				if s.AddedNodes != w.added || time.Duration(s.Lives) != w.lives || math.Abs(s.InstanceHours-w.hours) > 1e-9 ||
					priced != (w.cost >= 0) || priced && math.Abs(*s.Cost-w.cost) > 1e-9 {
					t.Errorf("%s: %d nodes for %s, %v instance-hours, cost %v; want %+v", s.Strategy, s.AddedNodes, time.Duration(s.Lives), s.InstanceHours, s.Cost, w)
				}
			}
		})
	}
}

func TestCostsTable(t *testing.T) {
	prices := &PriceFile{ReadAt: "2026-11-01", Currency: "USD", Prices: map[string]map[string]float64{"m5.xlarge": {"us-east-1": 0.2}}}
	for _, tc := range []struct {
		name string
		in   CostInput
		want []string
	}{
		{"priced", CostInput{Prices: prices}, []string{"m5.xlarge in us-east-1 at 0.2 USD an hour, prices read 2026-11-01", "eks         4 nodes for ~25m: 1.7 instance-hours, 0.33 USD"}},
		{"no price file", CostInput{}, []string{"not priced: give --price-file", "eks         4 nodes for ~25m: 1.7 instance-hours, not priced"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeCosts(&b, Costs(costPlan(1, 1, 5), tc.in))
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("writeCosts() =\n%s\nwant %q in it", b.String(), w)
				}
			}
		})
	}
}

func TestCostsNoCloud(t *testing.T) {
	p := costPlan(1, 1, 5)
	p.Cloud = nil
	if c := Costs(p, CostInput{}); c != nil {
		t.Errorf("Costs() without a cloud group = %+v, want nil", c)
	}
}

func TestReadPriceFile(t *testing.T) {
	tests := []struct {
		name, body, wantErr string
	}{
		{name: "yaml", body: "readAt: 2026-11-01\nprices:\n  m5.xlarge:\n    us-east-1: 0.192\n"},
		{name: "json", body: `{"readAt": "2026-11-01T10:00:00Z", "currency": "EUR", "prices": {"m5.xlarge": {"us-east-1": 0.18}}}`},
		{name: "no date", body: "prices:\n  m5.xlarge:\n    us-east-1: 0.192\n", wantErr: `readAt "" is not a date`},
		{name: "no prices", body: "readAt: 2026-11-01\n", wantErr: "no prices"},
		{name: "negative price", body: "readAt: 2026-11-01\nprices:\n  m5.xlarge:\n    us-east-1: -1\n", wantErr: `price -1 of "m5.xlarge" in "us-east-1"`},
		{name: "unknown field", body: "readAt: 2026-11-01\nprice:\n  m5.xlarge: 1\n", wantErr: `unknown field "price"`},
		{name: "not a price", body: "readAt: 2026-11-01\nprices:\n  m5.xlarge:\n    us-east-1: cheap\n", wantErr: "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "prices")
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := ReadPriceFile(path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("ReadPriceFile() = %v", err)
			case tc.wantErr == "":
				if _, ok := f.price("m5.xlarge", "us-east-1"); !ok || f.Currency == "" {
					t.Errorf("ReadPriceFile() = %+v, want the price of m5.xlarge in us-east-1 and a currency", f)
				}
			case err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "invalid --price-file ") || strings.Contains(err.Error(), "\n"):
				t.Errorf("ReadPriceFile() = %v, want one line naming --price-file and %q", err, tc.wantErr)
			}
		})
	}
	if _, err := ReadPriceFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.HasPrefix(err.Error(), "invalid --price-file ") {
		t.Errorf("ReadPriceFile(missing) = %v, want invalid --price-file", err)
	}
}
