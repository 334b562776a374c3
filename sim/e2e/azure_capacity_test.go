package e2e

import (
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/azurefake"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestAzureLaunchRefusedStopsBeforeAnyDrain: Azure refusing the run's new
// machines for capacity (SkuNotAvailable, AllocationFailed: Learn's error
// pages) ends the run with exit 7 (NodeCreationFailure) naming Azure's
// code and words, before any node is cordoned or drained: where AKS adds
// its surge nodes (the upgrade fails before a drain), and where the run
// raises the scale set itself (the scale-up refused, the model put back
// at its image).
func TestAzureLaunchRefusedStopsBeforeAnyDrain(t *testing.T) {
	t.Parallel()
	t.Run("aks", func(t *testing.T) {
		t.Parallel()
		const name = "akscap"
		a := setupAKSPool(t, name, aksPoolSpec{count: 2}, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
		a.srv.RefuseLaunches(name, azurefake.LaunchSkuNotAvailable)
		r := a.run(t, "run", name, "--yes", "--node-image", "latest")
		assertNodeCreationFailure(t, r, "SkuNotAvailable", "is currently not available in location", "before it drained any node")
		ctx := testContext(t, time.Minute)
		assertUntouched(t, ctx, azurefake.AgentPoolLabel, name)
		if on, all := a.nodesOn(t, aksOld, aksOldImage); on != 2 || all != 2 {
			t.Errorf("%d of %d nodes on the old version and image, want 2 of 2", on, all)
		}
	})
	t.Run("vmss", func(t *testing.T) {
		t.Parallel()
		const name = "vmss-cap"
		s := setupVMSS(t, name, "vmssc", 2, scenario.App{Name: "web", Replicas: 2, MaxUnavailable: num(1)})
		s.srv.RefuseLaunches(name, azurefake.LaunchAllocationFailed)
		r := s.run(t, "run", name, "--strategy", "surge", "--image", vmssNew, "--max-surge", "1", "--max-unavailable", "0", "--yes")
		assertNodeCreationFailure(t, r, "AllocationFailed", "We do not have sufficient capacity", "no node drained")
		ctx := testContext(t, time.Minute)
		assertUntouched(t, ctx, kopsKey, name)
		if m := s.srv.ScaleSetModel(vmssGroup, name); strings.Contains(m, vmssNew) || len(s.instances()) != 2 {
			t.Errorf("scale set %s with %d instances: want its old image and 2 instances", m, len(s.instances()))
		}
	})
}

// assertNodeCreationFailure checks a run ended with exit 7
// (NodeCreationFailure) saying each of says.
func assertNodeCreationFailure(t *testing.T, r result, says ...string) {
	t.Helper()
	if r.code != nodeupgrade.ExitNodeCreation {
		t.Fatalf("want exit %d (NodeCreationFailure): %s", nodeupgrade.ExitNodeCreation, r)
	}
	for _, want := range says {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("the run must say %q: %s", want, r)
		}
	}
}
