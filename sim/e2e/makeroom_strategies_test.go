package e2e

import (
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/scenario"
)

// TestMakeRoomOnEveryStrategy: on the aws demo, a one-replica Deployment
// pinned to the group behind a PDB that allows 0 disruptions (minAvailable
// 1) has room only on the nodes the run
// creates (the scale-up's, the surge's, green's). plan --make-room finds
// no blocker (--detailed-exitcode 0), run --make-room finishes without
// --ignore-check, a 200 ms sampler never sees it below its one Ready pod,
// and every Deployment and PDB is back byte for byte (issue 67, item 6).
func TestMakeRoomOnEveryStrategy(t *testing.T) {
	t.Parallel()
	solo := []scenario.App{{Name: "solo", Replicas: 1, MinAvailable: num(1)}}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"eks", nil},
		{"surge", []string{"--strategy", "surge"}},
		{"blue-green", []string{"--strategy", "blue-green", "--batch-node-count", "2", "--node-pool-soak", "0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "mr-" + tc.name
			g := setupAWSGroup(t, name, 2, solo...)
			before := workloadSpecs(t, name)
			args := append([]string{name, "--ami", "ami-new", "--post-drain-wait", "0s", "--make-room"}, tc.args...)
			if pl := g.run(t, append(append([]string{"plan"}, args...), "--detailed-exitcode")...); pl.code != nodeupgrade.ExitOK {
				t.Fatalf("plan --make-room: want exit %d, no blocker: %s", nodeupgrade.ExitOK, pl)
			}
			ctx := testContext(t, 4*time.Minute)
			sampler := sampleReady(ctx, name, solo)
			r := g.run(t, append(append([]string{"run"}, args...), "--yes")...)
			fewest := sampler.Stop()
			if r.code != nodeupgrade.ExitOK {
				t.Fatalf("run --make-room: %s", r)
			}
			if fewest["solo"] < 1 {
				t.Errorf("Deployment solo had %d Ready pods at the least, below its 1 before the run", fewest["solo"])
			}
			assertSpecsAsBefore(t, name, before)
		})
	}
}
