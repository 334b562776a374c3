package azurefake

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestVNetUsagesAndSubnetRefusal: List Usage answers each subnet of the
// virtual network (a page each, nextLink to the next) with the pool's
// addresses by its network plugin (Azure CNI: 1 + maxPods a machine), and
// an upgrade whose surge machine does not fit the subnet fails
// InsufficientSubnetSize with no machine added.
func TestVNetUsagesAndSubnetRefusal(t *testing.T) {
	s := newScene(t, 0)
	small := s.srv.CreateSubnet(SubnetSpec{ResourceGroup: "net", VNet: "vnet", Name: "a-small", PrefixBits: 26, OtherUsed: 25})
	s.srv.CreateSubnet(SubnetSpec{ResourceGroup: "net", VNet: "vnet", Name: "b-big", PrefixBits: 24})
	if err := s.srv.SetPoolNetwork("rg", "c1", "pool", PoolNetwork{VNetSubnetID: small, MaxPods: 9, Plugin: "azure"}); err != nil {
		t.Fatal(err)
	}
	var got []vnetUsage
	next := s.srv.URL + "/subscriptions/" + s.srv.Subscription() + "/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/vnet/usages?api-version=" + NetworkAPIVersion
	for next != "" {
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var page vnetUsageList
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(page.Value) != 1 {
			t.Fatalf("a page of usages: %s %v %+v, want one subnet", resp.Status, err, page)
		}
		got, next = append(got, page.Value...), page.NextLink
	}
	// 25 others' and 3 machines × (1 + 9); a /26 less Azure's 5, a /24's.
	if len(got) != 2 || got[0].ID != small || got[0].CurrentValue != 55 || got[0].Limit != 59 || got[1].CurrentValue != 0 || got[1].Limit != 251 ||
		got[0].Name.Value != "SubnetSpace" || got[0].Unit != "Count" {
		t.Fatalf("usages %+v, want a-small 55 of 59 and b-big 0 of 251", got)
	}
	poller, err := s.pools.BeginUpgradeNodeImageVersion(context.Background(), "rg", "c1", "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := poller.PollUntilDone(ctx, nil); err == nil || !strings.Contains(err.Error(), "InsufficientSubnetSize") || !strings.Contains(err.Error(), "Pre-allocated IPs 40 exceeds IPs available 34") {
		t.Fatalf("an upgrade whose surge machine needs 10 of 4 free: %v, want InsufficientSubnetSize", err)
	}
	if p, _ := s.srv.Pool("rg", "c1", "pool"); *p.Properties.ProvisioningState != stateFailed || *p.Properties.NodeImageVersion != oldImage {
		t.Errorf("pool %s on %s, want Failed on the old image", *p.Properties.ProvisioningState, *p.Properties.NodeImageVersion)
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if n := len(s.srv.clusters[key("rg", "c1")].pools["pool"].nodes); n != 3 {
		t.Errorf("%d machines, want the 3 of before (no surge machine)", n)
	}
}
