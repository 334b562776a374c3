package aks

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// TestFailureNamesTheDrainAKSGaveUpOn: AKS's drain failure is the
// provider-neutral pod eviction failure (the run exits as its own drain
// would), naming the node, AKS's code kept; other failures keep AKS's.
func TestFailureNamesTheDrainAKSGaveUpOn(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      cloud.UpdateError
	}{
		{"a PDB held the drain", `{"status":"Failed","error":{"code":"UpgradeFailed","message":"Drain node aks-pool-1-vmss000000 failed when evicting pod web-1 failed with Too Many Requests error."}}`,
			cloud.UpdateError{Code: cloud.CodePodEviction, Message: "UpgradeFailed: Drain node aks-pool-1-vmss000000 failed when evicting pod web-1 failed with Too Many Requests error.", Nodes: []string{"aks-pool-1-vmss000000"}}},
		{"the quota refused the new nodes", `{"status":"Failed","error":{"code":"QuotaExceeded","message":"Operation could not be completed as it results in exceeding approved Total Regional Cores quota."}}`,
			cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: "QuotaExceeded: Operation could not be completed as it results in exceeding approved Total Regional Cores quota.; AKS could not add the upgrade's new nodes"}},
		{"no size in the zone", `{"status":"Failed","error":{"code":"SkuNotAvailable","message":"The requested size for resource 'aks-pool-1-vmss' is currently not available in location 'westeurope' zones '1'."}}`,
			cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: "SkuNotAvailable: The requested size for resource 'aks-pool-1-vmss' is currently not available in location 'westeurope' zones '1'.; AKS could not add the upgrade's new nodes"}},
		{"no capacity", `{"status":"Failed","error":{"code":"AllocationFailed","message":"Allocation failed. We do not have sufficient capacity for the requested VM size in this region."}}`,
			cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: "AllocationFailed: Allocation failed. We do not have sufficient capacity for the requested VM size in this region.; AKS could not add the upgrade's new nodes"}},
		{"the subnet", `{"status":"Failed","error":{"code":"InsufficientSubnetSize","message":"Pre-allocated IPs 6 exceeds IPs available 5 in Subnet s1"}}`,
			cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: "InsufficientSubnetSize: Pre-allocated IPs 6 exceeds IPs available 5 in Subnet s1; AKS could not add the upgrade's new nodes"}},
		{"another failure", `{"status":"Failed","error":{"code":"InternalOperationError","message":"something"}}`,
			cloud.UpdateError{Code: "InternalOperationError", Message: "something"}},
		{"no error given", `{"status":"Failed"}`, cloud.UpdateError{Code: "UpgradeFailed", Message: "the pool's upgrade failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc opStatus
			if err := json.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			got := failure(doc)
			if got.Code != tc.want.Code || got.Message != tc.want.Message || !slices.Equal(got.Nodes, tc.want.Nodes) {
				t.Errorf("failure %+v, want %+v", got, tc.want)
			}
		})
	}
}
