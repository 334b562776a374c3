package azurefake

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
)

// TestMinorVersionForms holds the fake to the SDK model's
// OrchestratorVersion comment: a <major.minor> is the latest supported
// patch of that minor; the pool's own minor triggers no upgrade; a
// minor with no offered patch is refused.
func TestMinorVersionForms(t *testing.T) {
	for _, tc := range []struct {
		version, want string
		refused       bool
	}{
		{"1.32", "1.32.2", false},
		{"1.31", "1.31.5", false},
		{"1.30", "", true},
		{"1.32.2", "1.32.2", false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			s := newScene(t, 0)
			ctx := context.Background()
			read := s.pool(t)
			body := armcs.AgentPool{Properties: &armcs.ManagedClusterAgentPoolProfileProperties{Count: read.Count, OrchestratorVersion: to.Ptr(tc.version)}}
			p, err := s.pools.BeginCreateOrUpdate(ctx, "rg", "c1", "pool", body, nil)
			if err == nil {
				_, err = p.PollUntilDone(ctx, poll)
			}
			if tc.refused {
				if c, _ := armCode(err); c != "AgentPoolK8sVersionNotSupported" {
					t.Errorf("PUT %s: %v, want refused", tc.version, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("PUT %s: %v", tc.version, err)
			}
			if got := *s.pool(t).CurrentOrchestratorVersion; got != tc.want {
				t.Errorf("PUT %s: the pool runs %s, want %s", tc.version, got, tc.want)
			}
		})
	}
}
