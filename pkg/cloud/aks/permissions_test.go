package aks

import (
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// TestQuotaUses: what the surge takes of each vCPU quota the pool's VM
// size counts against, from which the plan's capacity check finds the
// largest --max-surge that fits.
func TestQuotaUses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		counts  []Usage
		surge   int32
		largest int64 // the surge every quota holds
	}{
		{"fits both", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 12, 100)}, 3, 22},
		{"exactly fits", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 88, 100)}, 3, 3},
		{"the family is short", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 92, 100)}, 3, 2},
		{"the region is short", []Usage{usage("cores", 96, 100), usage("standardDSv5Family", 0, 100)}, 3, 1},
		{"nothing fits", []Usage{usage("cores", 100, 100), usage("standardDSv5Family", 0, 100)}, 1, 0},
		{"over the limit already", []Usage{usage("cores", 120, 100)}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &quota{size: "Standard_D4s_v5", vcpus: 4, counts: tc.counts}
			uses := q.uses("sub", "westeurope", tc.surge)
			if len(uses) != len(tc.counts) {
				t.Fatalf("%d uses of %d quotas", len(uses), len(tc.counts))
			}
			largest, fits := int64(-1), true
			for i, u := range uses {
				if u.Needed != int64(tc.surge)*4 || u.PerNode != 4 || u.Unit != "vCPU" || u.Scope != "azure/sub/westeurope/"+tc.counts[i].Name.Value {
					t.Errorf("use %+v, want %d vCPUs, 4 a node, scoped to the subscription and location", u, tc.surge*4)
				}
				if largest < 0 || u.Largest() < largest {
					largest = u.Largest()
				}
				fits = fits && u.Fits()
			}
			if largest != tc.largest || fits != (largest >= int64(tc.surge)) {
				t.Errorf("largest surge %d (fits %v), want %d", largest, fits, tc.largest)
			}
		})
	}
}

// TestGreenQuotaCheck: green's nodes, as many as blue's, must fit every
// quota blue's VM size counts against, or the plan refuses with an input
// error naming what they need and the surge strategy.
func TestGreenQuotaCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []Usage
		want   string // "" when it fits
	}{
		{"fits", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 12, 100)}, ""},
		{"exactly fits", []Usage{usage("cores", 88, 100), usage("standardDSv5Family", 0, 100)}, ""},
		{"the family is short", []Usage{usage("cores", 0, 100), usage("standardDSv5Family", 90, 100)},
			`the vCPU quota in westeurope cannot hold green: 3 green node(s) of Standard_D4s_v5 need 12 vCPUs; cores 100 of 100 free, standardDSv5Family 10 of 100 free; free vCPUs or ask for more quota, or use --strategy surge, whose surge needs fewer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &PoolBlueGreen{blue: &AgentPool{location: "westeurope", pool: armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{Count: new(int32(3))}}}}
			err := b.checkGreenQuota(&quota{size: "Standard_D4s_v5", vcpus: 4, counts: tc.counts})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want green to fit, got %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want || !isInput(err)):
				t.Errorf("got %v, want the input error %q", err, tc.want)
			}
		})
	}
}

func TestBusyPools(t *testing.T) {
	for _, tc := range []struct {
		name   string
		others []poolState
		busy   string
	}{
		{"none", nil, ""},
		{"settled", []poolState{{"sys", "Succeeded"}, {"old", "Failed"}, {"c", "Canceled"}}, ""},
		{"another upgrading", []poolState{{"sys", "Succeeded"}, {"pool2", "Upgrading"}}, `"pool2" Upgrading`},
		{"another being created", []poolState{{"green", "Creating"}}, `"green" Creating`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &AgentPool{id: clusterID{subscription: "s", group: "rg", name: "c1"}, name: "pool", facts: planFacts{others: tc.others}}
			err := a.busyPools()
			if (err != nil) != (tc.busy != "") || (err != nil && (!strings.Contains(err.Error(), tc.busy) || !isInput(err))) {
				t.Errorf("busyPools() = %v, want an input error naming %q", err, tc.busy)
			}
		})
	}
}

// usage is the quota name with used of limit vCPUs.
func usage(name string, used, limit int64) Usage {
	u := Usage{CurrentValue: used, Limit: limit}
	u.Name.Value = name
	return u
}
