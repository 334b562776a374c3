package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// refusingGroup is a fake group whose cloud refuses the launches in the
// zones without capacity, and says so (cloud.LaunchRefusals).
type refusingGroup struct {
	*fakeGroup
	refusal *plan.LaunchFailure
	err     error
	// unlaunchable makes Machines fail with NodeCreationFailure, as
	// GCE's does for a managed instance Compute cannot create.
	unlaunchable bool

	mu    sync.Mutex
	since []time.Time
}

var _ cloud.LaunchRefusals = (*refusingGroup)(nil)

func (g *refusingGroup) LaunchRefused(_ context.Context, since time.Time) (*plan.LaunchFailure, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.since = append(g.since, since)
	return g.refusal, g.err
}

func (g *refusingGroup) Machines(ctx context.Context, nodes []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	if g.unlaunchable {
		return nil, nil, cloud.UpdateError{Code: cloud.CodeNodeCreation, Message: "instance \"i-9\" cannot be created"}
	}
	return g.fakeGroup.Machines(ctx, nodes)
}

// TestRefusedLaunchStopsTheScaleUp: a launch the cloud refuses for want
// of capacity ends the wait for new nodes at once, before any node is
// tainted, naming the cause and the zones with capacity, recorded; a
// cloud that cannot say is waited for until --node-ready-timeout.
func TestRefusedLaunchStopsTheScaleUp(t *testing.T) {
	t.Parallel()
	refusal := &plan.LaunchFailure{Code: "InsufficientInstanceCapacity", Message: "We currently do not have sufficient m5.large capacity in the Availability Zone you requested (z2)",
		Zones: []string{"z2"}, Launched: []string{"z1"}, Fix: "wait for EC2's capacity"}
	for _, tc := range []struct {
		name         string
		refusal      *plan.LaunchFailure
		err          error
		timeout      time.Duration
		unlaunchable bool
		wantRefused  bool
	}{
		{name: "refused in a zone: stops at once", refusal: refusal, timeout: 20 * time.Second, wantRefused: true},
		{name: "a machine that cannot be created fails the look: the refusal is recorded", refusal: refusal, unlaunchable: true, timeout: 20 * time.Second, wantRefused: true},
		{name: "the refusals cannot be read: waits out the timeout", err: errors.New("cannot read the scaling activities: AccessDenied"), timeout: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, group := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			group.onlyZone = "z1"
			g := &refusingGroup{fakeGroup: group, refusal: tc.refusal, err: tc.err, unlaunchable: tc.unlaunchable}
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Cloud: group.cloudGroup()})
			cfg := cloudRun(p, client, g)
			cfg.Drain, cfg.NodeReadyTimeout = drainOpts(), tc.timeout
			start := time.Now()
			got := runEngine(t, cfg, nil, group)
			var f *NodeCreationFailure
			if !errors.As(got.err, &f) {
				t.Fatalf("error %v, want a NodeCreationFailure", got.err)
			}
			if last := got.phases[len(got.phases)-1]; last != "ScaleUp" {
				t.Errorf("stopped in %q, want ScaleUp", last)
			}
			if (f.Refused != nil) != tc.wantRefused || (cfg.Record.Cloud.LaunchFailure != nil) != tc.wantRefused {
				t.Errorf("refused %+v, recorded %+v, want refused %v", f.Refused, cfg.Record.Cloud.LaunchFailure, tc.wantRefused)
			}
			if tc.wantRefused {
				if took := time.Since(start); took > tc.timeout/2 {
					t.Errorf("the run took %s: the refusal did not end the wait", took)
				}
				for _, want := range []string{`Auto Scaling group "asg" cannot launch in zones "z2": InsufficientInstanceCapacity: We currently do not have sufficient`,
					`it launched in zones "z1" since the scale-up`, "nothing was drained", "wait for EC2's capacity and run again", "kubectl nodeupgrade abort"} {
					if !strings.Contains(got.err.Error(), want) {
						t.Errorf("error %q does not say %q", got.err, want)
					}
				}
				if g.since[0].Before(start) {
					t.Errorf("refusals read since %s, before the run began (%s)", g.since[0], start)
				}
			}
			for _, n := range client.nodes(t) {
				if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == testTaint.Key }) {
					t.Errorf("node %q tainted or cordoned", n.Name)
				}
			}
		})
	}
}
