package upgrade

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// holdingGroup is a fake group whose removed machines stay held by a
// hook for a number of looks (forever when negative) before they are
// gone.
type holdingGroup struct {
	*fakeGroup
	holdLooks int
	throttled int  // looks, first, that the cloud throttles
	refuse    bool // every look fails for good (access denied, say)

	hmu     sync.Mutex
	looks   map[string]int // looks at each machine
	calls   int            // Leaving calls
	removed map[string]bool
}

var _ cloud.Departures = (*holdingGroup)(nil)

var drainHook = plan.LeaveHook{Name: "drain-hook", Timeout: plan.Duration(300 * time.Second), DefaultResult: "CONTINUE"}

func (h *holdingGroup) MachineOf(_ context.Context, node string) (string, error) {
	return "i-" + node, nil
}

// Leaving answers for every machine at once; a throttled look answers for
// none.
func (h *holdingGroup) Leaving(_ context.Context, ids []string) (map[string]cloud.Departure, error) {
	h.hmu.Lock()
	defer h.hmu.Unlock()
	h.calls++
	if h.refuse {
		return nil, throttledErr{transient: false}
	}
	if h.throttled > 0 {
		h.throttled--
		return nil, throttledErr{transient: true}
	}
	out := map[string]cloud.Departure{}
	for _, id := range ids {
		h.looks[id]++
		if h.holdLooks >= 0 && h.looks[id] > h.holdLooks {
			h.removed[id] = true
			out[id] = cloud.Departure{Gone: true}
			continue
		}
		out[id] = cloud.Departure{Lifecycle: "Terminating:Wait", HeldBy: []plan.LeaveHook{drainHook}}
	}
	return out, nil
}

func TestRemovedMachinesAreAwaited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		strategy  plan.StrategyName
		in        plan.Input
		holdLooks int
		throttled int
		refuse    bool
		timeout   time.Duration
		// wantGone are the machines awaited until gone; wantErr the
		// run's error; wantRecordedDone the nodes the record counts done
		// when the run stops.
		wantGone         int
		wantCalls        int
		wantErr          string
		wantRecordedDone int
	}{
		// Three batches' removals and four scale-down removals.
		{name: "eks: every removal held, then gone", strategy: "eks", in: plan.Input{MaxUnavailable: "1"}, holdLooks: 2, wantGone: 7},
		{name: "surge: every removal held, then gone", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "0"}, holdLooks: 2, wantGone: 3},
		// The batch's three machines are looked at together: three looks
		// (two held, one gone) for the batch, then three for each of the
		// scale-down's four removals, one at a time.
		{name: "eks: a batch's machines looked at in one call", strategy: "eks", in: plan.Input{MaxUnavailable: "3"}, holdLooks: 2, wantGone: 7, wantCalls: 3 + 4*3},
		// Throttling outlasts the SDK's retries: the wait looks again.
		{name: "eks: the looks throttled, then gone", strategy: "eks", in: plan.Input{MaxUnavailable: "1"}, holdLooks: 1, throttled: 3, wantGone: 7},
		// The removed node is recorded done before the wait, so a re-run
		// after the timeout (or a kill in the wait) counts it.
		{name: "held past --terminate-timeout", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "0"}, holdLooks: -1, timeout: 300 * time.Millisecond, wantRecordedDone: 1,
			wantErr: `did not terminate within 300ms (--terminate-timeout): held by lifecycle hook "drain-hook" (Terminating:Wait, heartbeat 300 s), which belongs to another system and was not completed; complete the hook where it belongs or raise --terminate-timeout, then run again`},
		// The first of the batch's machines still there is named, the others counted.
		{name: "a batch held past --terminate-timeout", strategy: "eks", in: plan.Input{MaxUnavailable: "3"}, holdLooks: -1, timeout: 300 * time.Millisecond, wantRecordedDone: 3,
			wantErr: `instance i-old-a1 of node "old-a1" did not terminate within 300ms (--terminate-timeout) (and 2 more): held by lifecycle hook "drain-hook"`},
		// A look that fails for good ends the wait with its error, not the timeout's.
		{name: "the look refused", strategy: "surge", in: plan.Input{MaxSurge: 1, MaxUnavailable: "0"}, refuse: true, wantRecordedDone: 1,
			wantErr: `cannot describe the group: Throttling: Rate exceeded`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, fg := cloudCluster(plan.Sizes{Min: 1, Desired: 3, Max: 4}, threeOldNodes()...)
			group := &holdingGroup{fakeGroup: fg, holdLooks: tc.holdLooks, throttled: tc.throttled, refuse: tc.refuse, looks: map[string]int{}, removed: map[string]bool{}}
			in := tc.in
			in.Strategy, in.Cloud = tc.strategy, fg.cloudGroup()
			p := buildPlan(t, client, in)
			cfg := cloudRun(p, client, group)
			cfg.Drain, cfg.PollInterval, cfg.TerminateTimeout = drainOpts(), 10*time.Millisecond, tc.timeout
			got := runEngine(t, cfg, nil, fg)
			if tc.wantErr != "" {
				if got.err == nil || !strings.Contains(got.err.Error(), tc.wantErr) {
					t.Fatalf("run: %v, want %q\n%s", got.err, tc.wantErr, got.out)
				}
				if len(got.done) != tc.wantRecordedDone {
					t.Errorf("the record counts %v done, want %d nodes", got.done, tc.wantRecordedDone)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			group.hmu.Lock()
			defer group.hmu.Unlock()
			if len(group.removed) != tc.wantGone {
				t.Errorf("%d machines awaited until gone (%v), want %d", len(group.removed), group.removed, tc.wantGone)
			}
			if tc.wantCalls != 0 && group.calls != tc.wantCalls {
				t.Errorf("%d looks at the leaving machines, want %d (one per round, whatever their number)", group.calls, tc.wantCalls)
			}
			for id := range group.removed {
				if want := "waiting for " + id + ` to terminate: held by lifecycle hook "drain-hook" (Terminating:Wait, heartbeat 300 s)`; !strings.Contains(got.out, want) {
					t.Errorf("output does not say %q:\n%s", want, got.out)
				}
			}
		})
	}
}
