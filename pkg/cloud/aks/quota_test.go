package aks

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// computeServer answers resource SKUs and usages (the usages in two
// pages) for westeurope.
func computeServer(t *testing.T, usages ...[]Usage) *AgentPool {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case strings.HasSuffix(r.URL.Path, "/providers/Microsoft.Compute/skus") && q.Get("api-version") == skusAPIVersion && q.Get("$filter") == "location eq 'westeurope'":
			_ = json.NewEncoder(w).Encode(SKUList{Value: []SKU{
				{ResourceType: "disks", Name: "Standard_D4s_v5"},
				{ResourceType: "virtualMachines", Name: "Standard_D4s_v5", Family: "standardDSv5Family", Capabilities: []Capability{{"MemoryGB", "16"}, {"vCPUs", "4"}}},
			}})
		case strings.HasSuffix(r.URL.Path, "/providers/Microsoft.Compute/locations/westeurope/usages") && q.Get("api-version") == usagesAPIVersion:
			page := 0
			if q.Get("page") == "2" {
				page = 1
			}
			out := UsageList{Value: usages[page]}
			if page == 0 && len(usages) > 1 {
				out.NextLink = srv.URL + r.URL.Path + "?api-version=" + usagesAPIVersion + "&page=2"
			}
			_ = json.NewEncoder(w).Encode(out)
		default:
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv(EndpointEnv, srv.URL)
	t.Setenv(NoAuthEnv, "true")
	c, err := newClients("sub")
	if err != nil {
		t.Fatal(err)
	}
	return &AgentPool{c: c, id: clusterID{subscription: "sub", group: "rg", name: "c1"}, name: "pool", location: "westeurope",
		pool: armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{VMSize: ptrTo("Standard_D4s_v5")}}}
}

func TestReadQuota(t *testing.T) {
	use := func(name string, used, limit int64) Usage {
		u := Usage{CurrentValue: used, Limit: limit}
		u.Name.Value = name
		return u
	}
	for _, tc := range []struct {
		name   string
		spot   bool
		usages [][]Usage
		want   []string // the usages counted
		err    string
	}{
		{name: "regular: the region and the family, across pages", usages: [][]Usage{{use("cores", 1, 10), use("standardDSv3Family", 0, 10)}, {use("standardDSv5Family", 2, 10)}},
			want: []string{"cores", "standardDSv5Family"}},
		{name: "spot: the region's spot vCPUs", spot: true, usages: [][]Usage{{use("cores", 1, 10), use("lowPriorityCores", 0, 10), use("standardDSv5Family", 2, 10)}},
			want: []string{"lowPriorityCores"}},
		{name: "no family quota named", usages: [][]Usage{{use("cores", 1, 10)}}, err: "name no quota cores or standardDSv5Family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := computeServer(t, tc.usages...)
			if tc.spot {
				a.pool.Properties.ScaleSetPriority = ptrTo(armcs.ScaleSetPrioritySpot)
			}
			q, err := a.readQuota(context.Background())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readQuota: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range q.counts {
				got = append(got, u.Name.Value)
			}
			if q.vcpus != 4 || q.size != "Standard_D4s_v5" || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("quota %s of %d vCPUs counting %v; want Standard_D4s_v5 of 4 counting %v", q.size, q.vcpus, got, tc.want)
			}
		})
	}
}
