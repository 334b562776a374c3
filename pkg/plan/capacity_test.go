package plan

import (
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

func TestPeakAdded(t *testing.T) {
	cloud := func(before, during Sizes, scaleUp int32) *CloudPlan {
		return &CloudPlan{Before: before, During: during, ScaleUp: scaleUp}
	}
	three := []string{"a", "b", "c"}
	tests := []struct {
		name string
		p    Plan
		want int32
	}{
		{"no cloud", Plan{Strategy: string(StrategyEKS)}, 0},
		{"eks scale-up", Plan{Strategy: string(StrategyEKS), Zones: three,
			Cloud: cloud(Sizes{Desired: 6, Max: 6}, Sizes{Desired: 12, Max: 12}, 6)}, 6},
		{"eks scale-up with --max-surge's default", Plan{Strategy: string(StrategyEKS), Zones: three, MaxSurge: 1,
			Cloud: cloud(Sizes{Desired: 2, Max: 2}, Sizes{Desired: 6, Max: 6}, 4)}, 4},
		{"surge: maxSurge, one zone at a time", Plan{Strategy: string(StrategySurge), Zones: three, MaxSurge: 2,
			Cloud: cloud(Sizes{Desired: 6, Max: 6}, Sizes{Desired: 6, Max: 12}, 0)}, 2},
		{"blue/green: the whole group", Plan{Strategy: string(StrategyBlueGreen), Zones: three,
			BlueGreen: &BlueGreenPlan{Create: true}, Cloud: cloud(Sizes{Desired: 5, Max: 9}, Sizes{}, 0)}, 5},
		{"autoscaled blue/green: up to its max", Plan{Strategy: string(StrategyAutoscaledBlueGreen), Zones: three,
			BlueGreen: &BlueGreenPlan{Create: true}, Cloud: cloud(Sizes{Desired: 5, Max: 9}, Sizes{}, 0)}, 9},
		{"blue/green onto an existing green", Plan{Strategy: string(StrategyBlueGreen),
			BlueGreen: &BlueGreenPlan{}, Cloud: cloud(Sizes{Desired: 5, Max: 9}, Sizes{}, 0)}, 0},
		{"karpenter: the largest batch's replacements", Plan{Strategy: string(StrategyEKS),
			Batches: []Batch{{Nodes: make([]PlannedNode, 2)}, {Nodes: make([]PlannedNode, 3)}},
			Cloud:   &CloudPlan{Removal: Removal{AwaitsReplacement: true}, RemovesOnly: true}}, 3},
		{"removes only", Plan{Strategy: string(StrategyEKS), Cloud: &CloudPlan{RemovesOnly: true}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.PeakAdded(); got != tc.want {
				t.Errorf("PeakAdded() = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestFirstRaise: what --reserve-surge reserves before the first
// scale-up: eks's scale-up, the surge strategy's first batch's surge.
func TestFirstRaise(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Plan
		want int32
	}{
		{"eks", Plan{Strategy: string(StrategyEKS), MaxSurge: 1, Cloud: &CloudPlan{ScaleUp: 4}}, 4},
		{"surge: maxSurge", Plan{Strategy: string(StrategySurge), MaxSurge: 2, Cloud: &CloudPlan{},
			Batches: []Batch{{Nodes: make([]PlannedNode, 3)}}}, 2},
		{"surge: a batch smaller than maxSurge", Plan{Strategy: string(StrategySurge), MaxSurge: 2, Cloud: &CloudPlan{},
			Batches: []Batch{{Nodes: make([]PlannedNode, 1)}, {Nodes: make([]PlannedNode, 3)}}}, 1},
		{"no raise", Plan{Strategy: string(StrategySurge), Cloud: &CloudPlan{}, Batches: []Batch{{Nodes: make([]PlannedNode, 1)}}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FirstRaise(&tc.p); got != tc.want {
				t.Errorf("FirstRaise() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCapacityFindings(t *testing.T) {
	surge := &Plan{Strategy: string(StrategySurge), NodeGroup: "ng", Zones: []string{"a", "b", "c"}, MaxSurge: 3,
		Cloud: &CloudPlan{Before: Sizes{Desired: 6, Max: 6}}}
	eks := &Plan{Strategy: string(StrategyEKS), NodeGroup: "ng", Zones: []string{"a", "b"},
		Cloud: &CloudPlan{Before: Sizes{Desired: 6}, During: Sizes{Desired: 10}, ScaleUp: 4}}
	tests := []struct {
		name  string
		p     *Plan
		c     CapacityPlan
		check string
		sev   check.Severity
		want  []string // in the message and fix
	}{
		{name: "fits: nothing", p: surge,
			c: CapacityPlan{Quotas: []QuotaUse{{Name: "Standard", Unit: "vCPU", Needed: 12, Free: 12, Limit: 64, PerNode: 4}}}},
		{name: "vCPU quota short: the largest surge that fits", p: surge,
			c:     CapacityPlan{Quotas: []QuotaUse{{Name: "Running On-Demand Standard instances", Unit: "vCPU", Needed: 12, Free: 10, Limit: 64, PerNode: 4}}},
			check: check.CheckInsufficientQuota, sev: check.Blocker,
			want: []string{"the 3 nodes the run adds need 12 vCPUs of Running On-Demand Standard instances, which has 10 free of its 64", "--max-surge 2 fits"}},
		{name: "subnet short: eks takes --max-unavailable", p: eks,
			c:     CapacityPlan{Quotas: []QuotaUse{{Name: "subnet-1", Unit: "IP", Needed: 40, Free: 30, PerNode: 10}}},
			check: check.CheckInsufficientIPs, sev: check.Blocker,
			want: []string{"need 40 IPs of subnet-1, which has 30 free", "--strategy surge --max-surge 3 fits (one zone at a time)"}},
		{name: "no added node fits", p: surge,
			c:     CapacityPlan{Quotas: []QuotaUse{{Name: "Q", Unit: "vCPU", Needed: 12, Free: 3, PerNode: 4}}},
			check: check.CheckInsufficientQuota, sev: check.Blocker,
			want: []string{"no added node fits: use --strategy surge --max-surge 0"}},
		{name: "unprovable: a warning", p: surge,
			c:     CapacityPlan{Unprovable: []string{"instance family \"zz9\" has no known quota"}},
			check: check.CheckCapacityUnprovable, sev: check.Warning,
			want: []string{"instance family \"zz9\" has no known quota"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.c.Findings(tc.p)
			if tc.check == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v, want none", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Check != tc.check || fs[0].Severity != tc.sev {
				t.Fatalf("findings %+v, want one %s %s", fs, tc.sev, tc.check)
			}
			text := fs[0].Message + "; " + fs[0].Fix
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("finding %q lacks %q", text, w)
				}
			}
		})
	}
}

func TestCapacityLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *CapacityPlan
		want string
	}{
		{"none", nil, ""},
		{"a quota and what is not proven", &CapacityPlan{
			Quotas:     []QuotaUse{{Name: "Standard (L-1216C47A)", Unit: "vCPU", Needed: 4, Free: 2, Limit: 8}, {Name: "subnet-1", Unit: "IP", Needed: 2, Free: 200}},
			Unprovable: []string{"prefix delegation"}},
			"Standard (L-1216C47A): 4 vCPUs needed, 2 free of its 8; subnet-1: 2 IPs needed, 200 free; 1 not proven (capacity-unprovable)"},
		{"the reservations --reserve-surge makes", &CapacityPlan{
			Quotas:       []QuotaUse{{Name: "Standard (L-1216C47A)", Unit: "vCPU", Needed: 6, Free: 60, Limit: 64}},
			Reservations: []Reservation{{Zone: "us-east-1a", InstanceType: "m5.large", Count: 2}, {Zone: "us-east-1b", InstanceType: "m5.large", Count: 1}}},
			"Standard (L-1216C47A): 6 vCPUs needed, 60 free of its 64; --reserve-surge reserves 2 m5.large in zone us-east-1a, 1 m5.large in zone us-east-1b before each scale-up, released once its nodes are Ready"},
		{"existing reservations", &CapacityPlan{Added: 4, Reserved: []ReservedCapacity{
			{ID: "cr-1", Zone: "us-east-1a", InstanceType: "m5.large", Available: 1, Open: true},
			{ID: "cr-2", Zone: "us-east-1b", InstanceType: "m5.large", Available: 2, Open: true},
			{ID: "cr-3", Zone: "us-east-1b", InstanceType: "m5.large", Available: 5}}},
			"up to 3 of the 4 added nodes launch in open capacity reservations (cr-1: 1 m5.large in zone us-east-1a, cr-2: 2 m5.large in zone us-east-1b); targeted capacity reservations serve only launches that name them (cr-3: 5 m5.large in zone us-east-1b)"},
		{"open reservations beyond the added nodes", &CapacityPlan{Added: 2, Reserved: []ReservedCapacity{{ID: "cr-1", Zone: "z", InstanceType: "m5.large", Available: 9, Open: true}}},
			"up to 2 of the 2 added nodes launch in open capacity reservations (cr-1: 9 m5.large in zone z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Line(); got != tc.want {
				t.Errorf("Line() = %q, want %q", got, tc.want)
			}
		})
	}
}
