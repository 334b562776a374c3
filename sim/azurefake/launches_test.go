package azurefake

import (
	"context"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRefusedLaunchFailsBeforeAnyDrain: new machines refused for capacity
// fail the pool's upgrade with Azure's code and words as it adds its
// surge, before any node is cordoned (the pool Failed, its nodes as they
// were); another pool's launches are not refused.
func TestRefusedLaunchFailsBeforeAnyDrain(t *testing.T) {
	for _, tc := range []struct{ code, says string }{
		{LaunchSkuNotAvailable, "is currently not available in location"},
		{LaunchAllocationFailed, "We do not have sufficient capacity for the requested VM size"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			s := newScene(t, 0)
			ctx := context.Background()
			s.srv.RefuseLaunches("other", tc.code)
			if err := s.srv.launchRefusalLocked("pool", "vmss", "Standard_D4s_v5", 1); err != nil {
				t.Fatalf("pool refused for another pool's setting: %v", err)
			}
			s.srv.RefuseLaunches("pool", tc.code)
			poller, err := s.pools.BeginUpgradeNodeImageVersion(ctx, "rg", "c1", "pool", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = poller.PollUntilDone(ctx, poll)
			if c, status := armCode(err); c != tc.code || status != http.StatusConflict && status != http.StatusOK || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("upgrade with launches refused: %v, want %s saying %q", err, tc.code, tc.says)
			}
			s.waitState(t, stateFailed)
			nodes, _ := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for _, n := range nodes.Items {
				if n.Spec.Unschedulable || n.Labels[NodeImageLabel] == latestImage {
					t.Errorf("node %s cordoned %v on %s: want it as it was", n.Name, n.Spec.Unschedulable, n.Labels[NodeImageLabel])
				}
			}
			if len(nodes.Items) != 3 {
				t.Errorf("%d nodes, want the pool's 3 (no surge node)", len(nodes.Items))
			}
		})
	}
}
