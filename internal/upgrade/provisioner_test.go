package upgrade

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// launchingPool is a pool like Karpenter's NodePool: a Pool that is no
// Group, that replaces machines of its own accord (held off for the run)
// and launches for pending pods; removing a node deletes its Node.
type launchingPool struct {
	cloud.None
	mu    sync.Mutex
	calls []string
}

var (
	_ cloud.SelfUpdater = (*launchingPool)(nil)
	_ cloud.Provisioner = (*launchingPool)(nil)
)

func (l *launchingPool) call(c string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, c)
}

func (l *launchingPool) Name() string      { return "pool" }
func (l *launchingPool) GroupName() string { return "np" }
func (l *launchingPool) Provisions() string {
	return "the pool launches for the pods the drain evicts"
}

func (l *launchingPool) Sizes(context.Context) (plan.Sizes, error) { return plan.Sizes{}, nil }
func (l *launchingPool) Machines(context.Context, []*corev1.Node) (map[string]plan.Machine, []plan.Machine, error) {
	return map[string]plan.Machine{}, nil, nil
}
func (l *launchingPool) Current(plan.Machine, string) bool { return false }

func (l *launchingPool) RemoveNode(ctx context.Context, node string) error {
	l.call("RemoveNode " + node)
	return l.None.RemoveNode(ctx, node)
}

func (l *launchingPool) SelfUpdates(context.Context) (string, error) { return "budgets", nil }
func (l *launchingPool) HoldUpdates(context.Context) error {
	l.call("HoldUpdates")
	return nil
}
func (l *launchingPool) RestoreUpdates(_ context.Context, was string) (string, error) {
	l.call("RestoreUpdates " + was)
	return "", nil
}

// TestPoolThatLaunchesForPendingPods: a pool that is no Group is held off
// before the run's first phase, recorded first, and given back at its end;
// a batch whose pods fit nowhere is drained all the same, since the pool
// launches for them, where provider none would stop (TestWaitForRoom).
func TestPoolThatLaunchesForPendingPods(t *testing.T) {
	t.Parallel()
	client := newTestClient(imageNode("old", "z1", "old"), imageNode("full", "z1", "new"), appPod("big", "old", "3"), appPod("busy", "full", "2"))
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
	pool := &launchingPool{None: cloud.None{Client: client, DeleteNode: true}}
	rec := &state.Record{}
	var heldAtTaint bool
	got := runEngine(t, Config{Client: client, Plan: p, Provider: pool, Drain: drainOpts(), Record: rec}, func(s plan.State) {
		if s.Phase == plan.PhaseTaint {
			heldAtTaint = rec.Cloud != nil && rec.Cloud.UpdatesWere == "budgets" && slices.Equal(pool.calls, []string{"HoldUpdates"})
		}
	})
	if got.err != nil {
		t.Fatalf("run: %v\n%s", got.err, got.out)
	}
	if !heldAtTaint {
		t.Errorf("the pool was not held off, its way recorded, before the first phase: calls %v", pool.calls)
	}
	if want := []string{"HoldUpdates", "RemoveNode old", "RestoreUpdates budgets"}; !slices.Equal(pool.calls, want) {
		t.Errorf("calls %v, want %v", pool.calls, want)
	}
	if rec.Cloud == nil || rec.Cloud.UpdatesWere != "" {
		t.Errorf("the record still holds the pool's way: %+v", rec.Cloud)
	}
	if !slices.Equal(client.evictedPods(), []string{"big"}) || !strings.Contains(got.out, "the pool launches for the pods the drain evicts") {
		t.Errorf("evicted %v; out:\n%s", client.evictedPods(), got.out)
	}
}

// retargetingPool is a launchingPool the run points at its target itself
// (Karpenter's NodePool in a rollback); fail makes Retarget fail.
type retargetingPool struct {
	launchingPool
	fail error
}

func (r *retargetingPool) Retarget(context.Context) (string, error) {
	r.call("Retarget")
	if r.fail != nil {
		return "", r.fail
	}
	return `NodePool "np" pointed back at NodeClass g/K/old (was g/K/new)`, nil
}

// TestPoolPointedBackOnceHeld: a pool the run points at its target itself
// is pointed there after its own updates are held, before the first
// phase, and the run says so; a pool that cannot be pointed back is given
// back its own updates, nothing drained.
func TestPoolPointedBackOnceHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail error
		want []string
	}{
		{"pointed back", nil, []string{"HoldUpdates", "Retarget", "RemoveNode old", "RestoreUpdates budgets"}},
		{"refused", errors.New("cannot point back NodePool \"np\": conflict"), []string{"HoldUpdates", "Retarget", "RestoreUpdates budgets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := newTestClient(imageNode("old", "z1", "old"), imageNode("full", "z1", "new"), appPod("big", "old", "1"))
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			pool := &retargetingPool{launchingPool: launchingPool{None: cloud.None{Client: client, DeleteNode: true}}, fail: tc.fail}
			got := runEngine(t, Config{Client: client, Plan: p, Provider: pool, Drain: drainOpts(), Record: &state.Record{}}, nil)
			if (got.err != nil) != (tc.fail != nil) || !slices.Equal(pool.calls, tc.want) {
				t.Fatalf("run: %v, calls %v; want %v\n%s", got.err, pool.calls, tc.want, got.out)
			}
			if tc.fail == nil && !strings.Contains(got.out, "pointed back at NodeClass g/K/old") {
				t.Errorf("the run does not say the pool was pointed back:\n%s", got.out)
			}
		})
	}
}
