package gke

import (
	"fmt"
	"testing"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestOwnStrategyIsThePools: a run without --strategy takes the pool's
// own upgradeSettings, as GKE's own upgrade does (API reference,
// UpgradeSettings: strategy SURGE or BLUE_GREEN, the blue-green settings'
// standard or autoscaled rollout policy), and planned with them it leaves
// the pool's settings as they are.
func TestOwnStrategyIsThePools(t *testing.T) {
	for _, tc := range []struct {
		name       string
		settings   *container.UpgradeSettings
		autoscaled bool
		want       string // strategy, max surge, max unavailable, blue-green input
	}{
		{"no settings: GKE's default surge", nil, false, "surge 1 0 {1 0 0s 1h0m0s   0s 0s false}"},
		{"surge 2, 1 unavailable", &container.UpgradeSettings{Strategy: "SURGE", MaxSurge: 2, MaxUnavailable: 1}, false, "surge 2 1 {1 0 0s 1h0m0s   0s 0s false}"},
		{"blue-green, 2 nodes a batch", &container.UpgradeSettings{Strategy: "BLUE_GREEN", BlueGreenSettings: &container.BlueGreenSettings{
			NodePoolSoakDuration: "600s", StandardRolloutPolicy: &container.StandardRolloutPolicy{BatchNodeCount: 2, BatchSoakDuration: "60s"}}}, false,
			"blue-green 0 0 {2 0 1m0s 10m0s   0s 0s false}"},
		{"blue-green, half a batch", &container.UpgradeSettings{Strategy: "BLUE_GREEN", BlueGreenSettings: &container.BlueGreenSettings{
			NodePoolSoakDuration: "3600s", StandardRolloutPolicy: &container.StandardRolloutPolicy{BatchPercentage: 0.5, BatchSoakDuration: "0s"}}}, false,
			"blue-green 0 0 {-1 0.5 0s 1h0m0s   0s 0s false}"},
		{"autoscaled blue-green", &container.UpgradeSettings{Strategy: "BLUE_GREEN", BlueGreenSettings: &container.BlueGreenSettings{
			NodePoolSoakDuration: "0s", AutoscaledRolloutPolicy: &container.AutoscaledRolloutPolicy{WaitForDrainDuration: "3600s"}}}, true,
			"autoscaled-blue-green 0 0 {1 0 0s 0s   1h0m0s 0s false}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeGKE(t)
			f.pool.UpgradeSettings = tc.settings
			if tc.autoscaled {
				f.master = minAutoscaledMaster
				f.pool.Autoscaling = &container.NodePoolAutoscaling{Enabled: true, MinNodeCount: 1, MaxNodeCount: 3}
			}
			np := openPool(t, nil)
			own := np.OwnStrategy()
			if got := fmt.Sprintf("%s %d %s %v", own.Strategy, own.MaxSurge, own.MaxUnavailable, own.BlueGreen); got != tc.want || own.From == "" {
				t.Fatalf("own strategy %q (from %q), want %q", got, own.From, tc.want)
			}
			in := plan.Input{Strategy: own.Strategy, MaxSurge: own.MaxSurge, MaxUnavailable: own.MaxUnavailable, BlueGreen: own.BlueGreen}
			mp, err := np.Plan(in, 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			if upgradeSettingsOnly(mp.During).String() != upgradeSettingsOnly(settingsOf(&f.pool)).String() && tc.settings != nil {
				t.Errorf("the run sets %s, the pool has %s", mp.During, settingsOf(&f.pool))
			}
		})
	}
}

// TestOwnStrategyOfAFlexStartPool: GKE upgrades a flex-start pool
// short-lived only, so that is its own strategy.
func TestOwnStrategyOfAFlexStartPool(t *testing.T) {
	f := newFakeGKE(t)
	f.pool.Config.FlexStart = true
	if own := openPool(t, nil).OwnStrategy(); own.Strategy != plan.StrategyShortLived {
		t.Errorf("own strategy %s, want %s", own.Strategy, plan.StrategyShortLived)
	}
}
