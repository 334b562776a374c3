package azurefake

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// TestAgentPoolETags holds the fake to the SDK's eTag contract
// (armcontainerservice v6 ManagedClusterAgentPoolProfileProperties.ETag:
// "The eTag value will change when the resource is updated";
// AgentPoolsClientBeginCreateOrUpdateOptions.IfMatch): a PUT whose
// If-Match is a stale eTag is refused 412 PreconditionFailed, nothing
// changed; one with the pool's eTag (or "*") is taken and the eTag
// changes.
func TestAgentPoolETags(t *testing.T) {
	s := newScene(t, 0)
	ctx := context.Background()
	read := s.pool(t)
	first := *read.ETag
	put := func(ifMatch string) error {
		opts := &armcs.AgentPoolsClientBeginCreateOrUpdateOptions{}
		if ifMatch != "" {
			opts.IfMatch = to.Ptr(ifMatch)
		}
		body := armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{Count: read.Count, OrchestratorVersion: read.OrchestratorVersion,
			UpgradeSettings: &armcs.AgentPoolUpgradeSettings{MaxSurge: to.Ptr("2")}}}
		p, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "pool", body, opts)
		if err == nil {
			_, err = p.PollUntilDone(ctx, poll)
		}
		return err
	}
	if err := put(first); err != nil {
		t.Fatalf("PUT with the pool's eTag: %v", err)
	}
	second := *s.pool(t).ETag
	if second == first {
		t.Fatalf("eTag %q unchanged by a write", second)
	}
	if err := put(first); err == nil {
		t.Fatal("PUT with a stale eTag taken")
	} else if c, status := armCode(err); status != http.StatusPreconditionFailed || c != "PreconditionFailed" {
		t.Errorf("PUT with a stale eTag: %v, want 412 PreconditionFailed", err)
	}
	if got := *s.pool(t).ETag; got != second {
		t.Errorf("eTag %q after a refused PUT, want %q unchanged", got, second)
	}
	if err := put("*"); err != nil {
		t.Errorf("PUT with If-Match *: %v", err)
	}
}
