package gke

import (
	"strings"
	"testing"

	container "google.golang.org/api/container/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// TestAbortAdvice: what abort says GKE allows, by the upgrade's kind,
// state and blue/green phase; every refusal names what to run, and never
// a control GKE does not have there.
func TestAbortAdvice(t *testing.T) {
	running, cancelled := cloud.UpdateInProgress, cloud.UpdateCancelled
	for _, tc := range []struct {
		name, kind, phase string
		state             cloud.UpdateState
		want, not         []string
	}{
		{"surge running", kindSurge, "RUNNING", running, []string{"cancel demo", "rollback demo", "resume demo", "operations.cancel"}, []string{"complete"}},
		{"surge cancelled", kindSurge, "DONE", cancelled, []string{"paused", "rollback demo", "resume demo"}, []string{"cancel demo"}},
		{"surge failed", kindSurge, "DONE", cloud.UpdateFailed, []string{"rollback demo", "resume demo"}, nil},
		{"creating green", kindBlueGreen, "CREATING_GREEN_POOL", running, []string{"phase CREATING_GREEN_POOL", "cancel demo", "rollback demo"}, []string{"complete"}},
		{"cordoning blue", kindBlueGreen, "CORDONING_BLUE_POOL", running, []string{"cancel demo", "rollback demo"}, []string{"complete"}},
		{"draining blue", kindBlueGreen, "DRAINING_BLUE_POOL", running, []string{"cancel demo", "rollback demo", "resume demo"}, []string{"complete"}},
		{"soaking", kindBlueGreen, "NODE_POOL_SOAKING", running, []string{"complete demo", "completeUpgrade", "cancel demo", "rollback demo"}, nil},
		{"soaking, cancelled", kindBlueGreen, "NODE_POOL_SOAKING", cancelled, []string{"rollback demo", "resume demo"}, []string{"cancel demo", "complete"}},
		{"deleting blue", kindBlueGreen, "DELETING_BLUE_POOL", running, []string{"cannot be stopped or undone", "resume demo"}, []string{"cancel demo", "rollback demo", "complete"}},
		{"rolling back", kindBlueGreen, "ROLLBACK_STARTED", running, []string{"rolled back by GKE already", "status demo"}, []string{"cancel demo", "resume demo"}},
		{"autoscaled running", kindAutoscaled, "DRAINING_BLUE_POOL", running, []string{"cancel demo", "resume demo", "cannot roll it back"}, []string{"rollback demo"}},
		{"autoscaled cancelled", kindAutoscaled, "CORDONING_BLUE_POOL", cancelled, []string{"cannot roll an autoscaled", "resume demo"}, []string{"rollback demo", "cancel demo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := abortAdvice(tc.kind, cloud.UpdateProgress{ID: "op-1", State: tc.state, Phase: tc.phase}, "pool", "demo")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("advice must say %q: %s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("advice must not offer %q: %s", n, got)
				}
			}
			if strings.Contains(got, "\n") || strings.HasSuffix(got, ".") {
				t.Errorf("advice must be one line with no trailing period: %q", got)
			}
		})
	}
}

func TestUpgradeKind(t *testing.T) {
	bg := &container.UpdateInfo{BlueGreenInfo: &container.BlueGreenInfo{Phase: "DRAINING_BLUE_POOL"}}
	autoscaled := &container.UpgradeSettings{BlueGreenSettings: &container.BlueGreenSettings{AutoscaledRolloutPolicy: &container.AutoscaledRolloutPolicy{}}}
	for _, tc := range []struct {
		name string
		pool container.NodePool
		want string
	}{
		{"no blue/green phase", container.NodePool{}, kindSurge},
		{"blue/green", container.NodePool{UpdateInfo: bg}, kindBlueGreen},
		{"autoscaled", container.NodePool{UpdateInfo: bg, UpgradeSettings: autoscaled}, kindAutoscaled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := upgradeKindOf(&tc.pool); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
