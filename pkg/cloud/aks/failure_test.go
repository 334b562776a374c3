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
		{"another failure", `{"status":"Failed","error":{"code":"QuotaExceeded","message":"Operation could not be completed as it results in exceeding approved Total Regional Cores quota."}}`,
			cloud.UpdateError{Code: "QuotaExceeded", Message: "Operation could not be completed as it results in exceeding approved Total Regional Cores quota."}},
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
