package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// deregisteringGroup is a fake group whose machines sit in load balancers:
// each Deregister checks, when it is called, that its nodes are drained,
// cordoned and past the post-drain wait, and is logged among the group's
// calls, so the tests see it come before the removal.
type deregisteringGroup struct {
	*fakeGroup
	out     *lockedBuffer
	fail    error
	timeout time.Duration
	wrong   []string // what was not so at a call
}

var _ cloud.Deregisterer = (*deregisteringGroup)(nil)

func (d *deregisteringGroup) Deregister(ctx context.Context, nodes []string, timeout time.Duration, waiting func(string)) error {
	pods, err := d.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, n := range nodes {
		node, err := d.client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !node.Spec.Unschedulable {
			d.wrong = append(d.wrong, fmt.Sprintf("%s not cordoned", n))
		}
		if slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Spec.NodeName == n }) {
			d.wrong = append(d.wrong, fmt.Sprintf("%s not drained", n))
		}
		if !slices.ContainsFunc(strings.Split(d.out.String(), "\n"), func(l string) bool {
			return strings.Contains(l, fmt.Sprintf("%q", n)) && strings.Contains(l, "waiting 1ms for load balancers to deregister")
		}) {
			d.wrong = append(d.wrong, fmt.Sprintf("%s before its post-drain wait", n))
		}
	}
	d.mu.Lock()
	d.calls = append(d.calls, "Deregister "+strings.Join(nodes, " "))
	d.timeout = timeout
	d.mu.Unlock()
	waiting("load balancer lb to deregister " + strings.Join(nodes, ", "))
	return d.fail
}

func TestDeregisterBeforeEveryRemoval(t *testing.T) {
	t.Parallel()
	errHeld := errors.New(`cannot terminate instance "i-1": target group "web" still holds it (draining) after 1ms; run again to keep waiting, or raise --deregistration-timeout`)
	for _, tc := range []struct {
		name string
		in   plan.Input
		fail error
	}{
		{name: "eks: each batch, then each scale-down step", in: plan.Input{Strategy: "eks", MaxUnavailable: "2"}},
		{name: "surge: each batch's removals", in: plan.Input{Strategy: "surge", MaxSurge: 1, MaxUnavailable: "0"}},
		{name: "timeout: the run stops, nothing removed", in: plan.Input{Strategy: "eks", MaxUnavailable: "1"}, fail: errHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := plan.Sizes{Min: 1, Desired: 3, Max: 4}
			client, fg := cloudCluster(before, threeOldNodes()...)
			out := &lockedBuffer{}
			group := &deregisteringGroup{fakeGroup: fg, out: out, fail: tc.fail}
			in := tc.in
			in.Cloud = fg.cloudGroup()
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, group)
			cfg.Drain, cfg.Out, cfg.PostDrainWait = drainOpts(), out, time.Millisecond
			got := runEngine(t, cfg, nil, fg)
			if tc.fail != nil {
				if !errors.Is(got.err, tc.fail) {
					t.Fatalf("run: %v, want the deregistration's error", got.err)
				}
				if removed := removals(fg.callsNow()); len(removed) > 0 {
					t.Errorf("removed %v after a failed deregistration", removed)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			if len(group.wrong) > 0 {
				t.Errorf("at Deregister: %s", strings.Join(group.wrong, "; "))
			}
			if group.timeout != plan.DefaultDeregistrationTimeout {
				t.Errorf("timeout %s, want the default %s", group.timeout, plan.DefaultDeregistrationTimeout)
			}
			calls := fg.callsNow()
			removed := removals(calls)
			if len(removed) < 3 {
				t.Fatalf("removed %v, want at least the three old nodes: %v", removed, calls)
			}
			for _, n := range removed {
				at := slices.IndexFunc(calls, func(c string) bool { return c == "Shrink "+n || c == "RemoveNode "+n })
				dereg := slices.IndexFunc(calls, func(c string) bool {
					return strings.HasPrefix(c, "Deregister ") && slices.Contains(strings.Fields(c)[1:], n)
				})
				if dereg < 0 || dereg > at {
					t.Errorf("node %s removed without a Deregister before: %v", n, calls)
				}
			}
			if !strings.Contains(got.out, "waiting for load balancer lb to deregister") {
				t.Errorf("the output does not say what it waits for:\n%s", got.out)
			}
		})
	}
}

// removals are the nodes Shrink or RemoveNode took out, in order.
func removals(calls []string) []string {
	var out []string
	for _, c := range calls {
		if n, ok := strings.CutPrefix(c, "Shrink "); ok {
			out = append(out, n)
		} else if n, ok := strings.CutPrefix(c, "RemoveNode "); ok {
			out = append(out, n)
		}
	}
	return out
}
