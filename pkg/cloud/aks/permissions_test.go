package aks

import (
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

func TestQuotaCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []Usage
		surge  int
		fix    string // "" when it fits
	}{
		{"fits both", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 12, 100)}, 3, ""},
		{"exactly fits", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 88, 100)}, 3, ""},
		{"the family is short", []Usage{usage("cores", 10, 100), usage("standardDSv5Family", 92, 100)}, 3, "--max-surge 2 or lower"},
		{"the region is short", []Usage{usage("cores", 96, 100), usage("standardDSv5Family", 0, 100)}, 3, "--max-surge 1 or lower"},
		{"nothing fits", []Usage{usage("cores", 100, 100), usage("standardDSv5Family", 0, 100)}, 1, "free vCPUs or ask for more quota"},
		{"over the limit already", []Usage{usage("cores", 120, 100)}, 1, "free vCPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &quota{size: "Standard_D4s_v5", vcpus: 4, counts: tc.counts}
			line, err := q.check(tc.surge, "westeurope")
			switch {
			case tc.fix == "" && (err != nil || !strings.Contains(line, "need 12 vCPUs")):
				t.Errorf("want it to fit with a line naming the 12 vCPUs: %q, %v", line, err)
			case tc.fix != "" && (err == nil || !strings.Contains(err.Error(), tc.fix) || !isInput(err)):
				t.Errorf("want an input error saying %q, got %v", tc.fix, err)
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
