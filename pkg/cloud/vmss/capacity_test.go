package vmss

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// TestZoneRefusals: a zone of the scale set its VM size is restricted in
// for the subscription (ResourceSKURestrictions of type Zone naming it, or
// of type Location) is a limit with nothing free; another zone is none.
func TestZoneRefusals(t *testing.T) {
	zoneRestriction := func(zones ...string) *armcompute.ResourceSKURestrictions {
		return &armcompute.ResourceSKURestrictions{Type: to.Ptr(armcompute.ResourceSKURestrictionsTypeZone),
			ReasonCode:      to.Ptr(armcompute.ResourceSKURestrictionsReasonCodeNotAvailableForSubscription),
			RestrictionInfo: &armcompute.ResourceSKURestrictionInfo{Zones: to.SliceOfPtrs(zones...)}}
	}
	for _, tc := range []struct {
		name         string
		restrictions []*armcompute.ResourceSKURestrictions
		want         []string
	}{
		{"offered everywhere", nil, nil},
		{"restricted in zone 2", []*armcompute.ResourceSKURestrictions{zoneRestriction("2")},
			[]string{"Standard_D4s_v5 in zone 2 (NotAvailableForSubscription)"}},
		{"restricted in a zone the scale set is not in", []*armcompute.ResourceSKURestrictions{zoneRestriction("3")}, nil},
		{"restricted in the location", []*armcompute.ResourceSKURestrictions{{Type: to.Ptr(armcompute.ResourceSKURestrictionsTypeLocation)}},
			[]string{"Standard_D4s_v5 in zone 1 (restricted)", "Standard_D4s_v5 in zone 2 (restricted)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sku := &armcompute.ResourceSKU{Name: to.Ptr("Standard_D4s_v5"), Restrictions: tc.restrictions}
			got := zoneRefusals("sub", "westeurope", "Standard_D4s_v5", to.SliceOfPtrs("1", "2"), sku, 2)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %v", got, tc.want)
			}
			for i, q := range got {
				if q.Name != tc.want[i] || q.Fits() || q.Needed != 2 || q.Scope != "azure/sub/westeurope/Standard_D4s_v5/zone-"+q.Name[len("Standard_D4s_v5 in zone "):len("Standard_D4s_v5 in zone ")+1] {
					t.Errorf("quota %+v, want %q with none free", q, tc.want[i])
				}
			}
		})
	}
}
