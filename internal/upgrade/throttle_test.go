package upgrade

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// throttledErr is a cloud error that passes with time (cloud.Transient).
type throttledErr struct{ transient bool }

func (e throttledErr) Error() string   { return "cannot describe the group: Throttling: Rate exceeded" }
func (e throttledErr) Transient() bool { return e.transient }

// throttledGroup is a fake group whose Machines fails its first fails
// calls made while new nodes are awaited, or every one (fails < 0).
type throttledGroup struct {
	*fakeGroup
	err   throttledErr
	fails int
	mu    sync.Mutex
	seen  int
}

func (g *throttledGroup) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	g.mu.Lock()
	g.seen++
	fail := g.fails < 0 || g.seen <= g.fails
	g.mu.Unlock()
	if fail {
		return nil, nil, g.err
	}
	return g.fakeGroup.Machines(ctx, nodes)
}

// A wait for new nodes outlasts throttling: it backs off and looks again,
// and only its timeout ends it; any other error ends it at once.
func TestWaitOutlastsThrottling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		err       throttledErr
		fails     int
		wantErr   string // "" for success
		wantFails bool   // a NodeCreationFailure
	}{
		{name: "throttled three times, then the nodes are there", err: throttledErr{true}, fails: 3},
		{name: "throttled until the timeout: NodeCreationFailure, not the throttling", err: throttledErr{true}, fails: -1, wantFails: true},
		{name: "another error ends the wait", err: throttledErr{false}, fails: 1, wantErr: "Throttling: Rate exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, fg := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: fg.cloudGroup()})
			group := &throttledGroup{fakeGroup: fg, err: tc.err, fails: tc.fails}
			cfg := cloudRun(p, client, group)
			cfg.Drain = drainOpts()
			if tc.fails < 0 {
				cfg.NodeReadyTimeout = 2 * time.Second
			}
			got := runEngine(t, cfg, nil, fg)
			var creation *NodeCreationFailure
			switch {
			case tc.wantFails:
				if !errors.As(got.err, &creation) {
					t.Fatalf("run: %v, want a NodeCreationFailure\n%s", got.err, got.out)
				}
			case tc.wantErr != "":
				if got.err == nil || !strings.Contains(got.err.Error(), tc.wantErr) || errors.As(got.err, &creation) {
					t.Fatalf("run: %v, want %q\n%s", got.err, tc.wantErr, got.out)
				}
			default:
				if got.err != nil {
					t.Fatalf("run: %v\n%s", got.err, got.out)
				}
				if n := strings.Count(got.out, "looking again in"); n != tc.fails {
					t.Errorf("%d back-offs logged, want %d:\n%s", n, tc.fails, got.out)
				}
			}
		})
	}
}
