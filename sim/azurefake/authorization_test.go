package azurefake

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v7"
)

// getJSON GETs path?api-version=v from the fake into doc.
func getJSON(t *testing.T, s *scene, path, v string, doc any) {
	t.Helper()
	resp, err := http.Get(s.srv.URL + path + "?api-version=" + v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(doc); err != nil {
		t.Fatal(err)
	}
}

const clusterPath = "/subscriptions/00000000-0000-0000-0000-000000000054/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/c1"

func TestRolesAnswerAndRefuse(t *testing.T) {
	s := newScene(t, 0)
	var list permissionList
	getJSON(t, s, clusterPath+"/providers/Microsoft.Authorization/permissions", "2022-04-01", &list)
	if len(list.Value) != 1 || strings.Join(list.Value[0].Actions, ",") != "*" {
		t.Errorf("with no roles set: %+v, want one of *", list)
	}
	s.srv.SetRoles(Role{Actions: []string{"*/read"}}, AKSContributorRole)
	getJSON(t, s, clusterPath+"/providers/Microsoft.Authorization/permissions", "2022-04-01", &list)
	if len(list.Value) != 2 || list.Value[1].Actions[2] != "Microsoft.ContainerService/managedClusters/*" {
		t.Errorf("the roles set: %+v", list)
	}
	s.srv.SetRoles(Role{Actions: []string{"*/read"}})
	if _, err := s.pools.Get(context.Background(), "rg", "c1", "pool", nil); err != nil {
		t.Errorf("a reader reads the pool: %v", err)
	}
	_, err := s.pools.BeginUpgradeNodeImageVersion(context.Background(), "rg", "c1", "pool", nil)
	if c, status := armCode(err); status != http.StatusForbidden || c != "AuthorizationFailed" ||
		!strings.Contains(err.Error(), "'Microsoft.ContainerService/managedClusters/agentPools/upgradeNodeImageVersion/action'") {
		t.Errorf("a reader's upgrade: %v, want 403 AuthorizationFailed naming the action", err)
	}
	if st := *s.pool(t).ProvisioningState; st != stateSucceeded {
		t.Errorf("the refused upgrade changed the pool: %s", st)
	}
}

func TestUsagesCountTheMachines(t *testing.T) {
	s := newScene(t, 0)
	s.srv.SetQuota("cores", 20)
	var list armcompute.ListUsagesResult
	getJSON(t, s, "/subscriptions/00000000-0000-0000-0000-000000000054/providers/Microsoft.Compute/locations/westeurope/usages", "2025-04-01", &list)
	got := map[string][2]int64{}
	for _, u := range list.Value {
		got[*u.Name.Value] = [2]int64{int64(*u.CurrentValue), *u.Limit}
	}
	// Three Standard_D4s_v5 of 4 vCPUs each.
	if got["cores"] != [2]int64{12, 20} || got["standardDSv5Family"] != [2]int64{12, defaultLimit} || got["lowPriorityCores"] != [2]int64{0, defaultLimit} {
		t.Errorf("usages %v", got)
	}
	var skus armcompute.ResourceSKUsResult
	getJSON(t, s, "/subscriptions/00000000-0000-0000-0000-000000000054/providers/Microsoft.Compute/skus", "2021-07-01", &skus)
	if len(skus.Value) == 0 || *skus.Value[1].Name != "Standard_D4s_v5" || *skus.Value[1].Capabilities[0].Name != "vCPUs" || *skus.Value[1].Capabilities[0].Value != "4" {
		t.Errorf("skus %+v", skus)
	}
}

func TestAnotherPoolHoldsTheCluster(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	if err := s.srv.CreatePool(ctx, PoolSpec{ResourceGroup: "rg", Cluster: "c1", Name: "other", Count: 1, Version: "1.31.5", Image: oldImage, LatestImage: latestImage}); err != nil {
		t.Fatal(err)
	}
	s.srv.SetPoolState("rg", "c1", "other", "Scaling")
	_, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
	if c, status := armCode(err); status != http.StatusConflict || c != "OperationNotAllowed" || !strings.Contains(err.Error(), "Another agentpool operation (other - Scaling)") {
		t.Errorf("upgrade while another pool scales: %v, want AKS's 409 naming it", err)
	}
	// An abort is the pool's own: refused only for having nothing to abort.
	_, err = s.pools.BeginAbortLatestOperation(ctx, "rg", "c1", "pool", nil)
	if err == nil || strings.Contains(err.Error(), "Another agentpool") {
		t.Errorf("abort with nothing running: %v", err)
	}
	s.srv.SetPoolState("rg", "c1", "other", stateSucceeded)
	if _, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil); err != nil {
		t.Errorf("upgrade once the other pool settled: %v", err)
	}
}

// TestRolesHoldTheScaleSets: the permissions list answers at a scale
// set's and its resource group's scope, and a scale set request the
// roles do not allow is refused with 403 naming its Compute action,
// changing nothing; Virtual Machine Contributor allows it.
func TestRolesHoldTheScaleSets(t *testing.T) {
	sc := newVMSSScene(t)
	ctx := context.Background()
	group := "/subscriptions/" + sc.srv.Subscription() + "/resourceGroups/rg"
	s := &scene{srv: sc.srv}
	sc.srv.SetRoles(VMContributorRole)
	for _, scope := range []string{group, group + "/providers/Microsoft.Compute/virtualMachineScaleSets/ng"} {
		var list permissionList
		getJSON(t, s, scope+"/providers/Microsoft.Authorization/permissions", "2022-04-01", &list)
		if len(list.Value) != 1 || !list.Value[0].allows("Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action") {
			t.Errorf("permissions at %s: %+v, want Virtual Machine Contributor's", scope, list)
		}
	}
	ids := armcompute.VirtualMachineScaleSetVMInstanceRequiredIDs{InstanceIDs: []*string{to.Ptr("0")}}
	sc.srv.SetRoles(Role{Actions: []string{"*"}, NotActions: []string{"Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action"}})
	_, err := sc.sets.BeginUpdateInstances(ctx, "rg", "ng", ids, nil)
	if c, status := armCode(err); status != http.StatusForbidden || c != "AuthorizationFailed" ||
		!strings.Contains(err.Error(), "'Microsoft.Compute/virtualMachineScaleSets/manualUpgrade/action'") {
		t.Errorf("manualupgrade without its action: %v, want 403 AuthorizationFailed naming it", err)
	}
	if ch := sc.srv.ChangingCalls(); len(ch) != 1 {
		t.Errorf("changing calls %v, want the one refused", ch)
	}
	if _, err := sc.sets.Get(ctx, "rg", "ng", nil); err != nil {
		t.Errorf("a read the role allows: %v", err)
	}
	sc.srv.SetRoles(VMContributorRole)
	if _, err := sc.sets.BeginUpdateInstances(ctx, "rg", "ng", ids, nil); err != nil {
		t.Errorf("manualupgrade with Virtual Machine Contributor: %v", err)
	}
}

// TestRolesAreScoped: a role applies at its scope and below, never above
// (https://learn.microsoft.com/en-us/azure/role-based-access-control/scope-overview):
// on the scale set alone, the scale set's requests pass, its group's
// permissions list holds none, and the operation status under the
// subscription's location is refused ("you can start the operation but
// you can't track its status",
// https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/async-operations).
func TestRolesAreScoped(t *testing.T) {
	sc := newVMSSScene(t)
	ctx := context.Background()
	group := "/subscriptions/" + sc.srv.Subscription() + "/resourceGroups/rg"
	set := group + "/providers/Microsoft.Compute/virtualMachineScaleSets/ng"
	s := &scene{srv: sc.srv}
	sc.srv.SetRoles()
	sc.srv.AssignRole(strings.ToUpper(set), VMContributorRole) // ARM IDs are case-insensitive
	for scope, want := range map[string]int{set: 1, group: 0} {
		var list permissionList
		getJSON(t, s, scope+"/providers/Microsoft.Authorization/permissions", "2022-04-01", &list)
		if len(list.Value) != want {
			t.Errorf("permissions at %s: %+v, want %d role(s)", scope, list, want)
		}
	}
	if _, err := sc.sets.Get(ctx, "rg", "ng", nil); err != nil {
		t.Errorf("a read on the scale set its role allows: %v", err)
	}
	for name, path := range map[string]string{
		"another scale set of the group": group + "/providers/Microsoft.Compute/virtualMachineScaleSets/other?api-version=" + ComputeAPIVersion,
		"an operation status":            "/subscriptions/" + sc.srv.Subscription() + "/providers/Microsoft.Compute/locations/westeurope/operations/00000000-0000-0000-0000-000000000000?api-version=" + ComputeAPIVersion,
	} {
		resp, err := http.Get(sc.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s with a role on the scale set alone: %s, want 403", name, resp.Status)
		}
	}
	sc.srv.AssignRole("/subscriptions/"+sc.srv.Subscription(), Role{Actions: []string{"Microsoft.Compute/locations/operations/read"}})
	resp, err := http.Get(sc.srv.URL + "/subscriptions/" + sc.srv.Subscription() + "/providers/Microsoft.Compute/locations/westeurope/operations/00000000-0000-0000-0000-000000000000?api-version=" + ComputeAPIVersion)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown operation's status with the read on the subscription: %s, want 404", resp.Status)
	}
}
