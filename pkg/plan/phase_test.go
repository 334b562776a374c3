package plan

import (
	"fmt"
	"slices"
	"testing"
)

// TestPhaseSequences walks every strategy's transition table as the engine
// does, from its first phase (or a resumed one) to Done.
func TestPhaseSequences(t *testing.T) {
	batch := []Phase{PhaseRoom, PhaseDrain, PhaseCordon, PhaseRemove, PhaseRecover}
	twoBatches := slices.Concat(batch, batch)
	surgeBatch := slices.Concat([]Phase{PhaseSurge}, batch)
	blueBatch := []Phase{PhaseRoom, PhaseDrain, PhaseRecover}
	for _, tc := range []struct {
		name       string
		strategy   string
		start      Phase
		batches    int
		cloudGroup bool
		want       []Phase
	}{
		{name: "eks, none, two batches", batches: 2, want: slices.Concat([]Phase{PhaseTaint}, twoBatches, []Phase{PhaseDone})},
		{name: "eks, none, nothing to drain", want: []Phase{PhaseTaint, PhaseDone}},
		{name: "eks, cloud group, two batches", batches: 2, cloudGroup: true,
			want: slices.Concat([]Phase{PhaseSetup, PhaseScaleUp, PhaseTaint}, twoBatches, []Phase{PhaseScaleDown, PhaseDone})},
		{name: "eks, cloud group, nothing to drain", cloudGroup: true, want: []Phase{PhaseSetup, PhaseScaleUp, PhaseTaint, PhaseScaleDown, PhaseDone}},
		// A run interrupted in its scale-down goes on from there: the
		// batches are not repeated and the group is not scaled up again.
		{name: "eks, resumed scale-down", start: PhaseScaleDown, batches: 2, cloudGroup: true, want: []Phase{PhaseScaleDown, PhaseDone}},
		// Surge taints nothing and scales per batch; the final ScaleDown
		// only checks the recorded sizes are back.
		{name: "surge, cloud group", strategy: "surge", batches: 2, cloudGroup: true,
			want: slices.Concat([]Phase{PhaseSetup}, surgeBatch, surgeBatch, []Phase{PhaseScaleDown, PhaseDone})},
		{name: "surge, none", strategy: "surge", batches: 2, want: slices.Concat(twoBatches, []Phase{PhaseDone})},
		{name: "surge, nothing to drain", strategy: "surge", want: []Phase{PhaseDone}},
		{name: "surge, cloud group, nothing to drain", strategy: "surge", cloudGroup: true, want: []Phase{PhaseSetup, PhaseScaleDown, PhaseDone}},
		// Blue's nodes are drained, not removed: they go with blue.
		{name: "blue-green, two batches", strategy: "blue-green", batches: 2, cloudGroup: true,
			want: slices.Concat([]Phase{PhasePrepareTarget, PhaseCreateGreen, PhaseCordonBlue}, blueBatch, []Phase{PhaseBatchSoak}, blueBatch,
				[]Phase{PhaseSoak, PhaseDeleteBlue, PhaseDone})},
		{name: "blue-green, batch size 0", strategy: "blue-green", cloudGroup: true,
			want: []Phase{PhasePrepareTarget, PhaseCreateGreen, PhaseCordonBlue, PhaseSoak, PhaseDeleteBlue, PhaseDone}},
		{name: "blue-green, resumed at the soak", strategy: "blue-green", start: PhaseSoak, cloudGroup: true, want: []Phase{PhaseSoak, PhaseDeleteBlue, PhaseDone}},
		// The wait period comes first; then what the autoscaler left of
		// blue is drained without a room check.
		{name: "autoscaled-blue-green, two batches", strategy: "autoscaled-blue-green", batches: 2, cloudGroup: true,
			want: []Phase{PhasePrepareTarget, PhaseCreateGreen, PhaseCordonBlue, PhaseSoak, PhaseDrain, PhaseRecover, PhaseDrain, PhaseRecover, PhaseDeleteBlue, PhaseDone}},
		{name: "autoscaled-blue-green, blue all gone", strategy: "autoscaled-blue-green", cloudGroup: true,
			want: []Phase{PhasePrepareTarget, PhaseCreateGreen, PhaseCordonBlue, PhaseSoak, PhaseDeleteBlue, PhaseDone}},
		{name: "short-lived", strategy: "short-lived", cloudGroup: true, want: []Phase{PhaseSetup, PhaseDone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LookupStrategy(tc.strategy)
			if err != nil {
				t.Fatal(err)
			}
			f := Flow{Batches: tc.batches, CloudGroup: tc.cloudGroup}
			st := State{Phase: tc.start}
			if st.Phase == "" {
				st.Phase = s.First(f)
			}
			var got []Phase
			for range 100 {
				got = append(got, st.Phase)
				if st.Phase == PhaseDone {
					break
				}
				st = s.Next(st, f)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("phases %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResumeAt: a re-run starts where the last one stopped only where that
// phase is the strategy's own end game, or where blue/green's green is made
// and no blue node is left to drain (the autoscaler removed them).
func TestResumeAt(t *testing.T) {
	for _, tc := range []struct {
		strategy string
		recorded Phase
		cloud    bool
		batches  int
		want     Phase
	}{
		{"eks", PhaseScaleDown, true, 0, PhaseScaleDown},
		{"eks", PhaseScaleDown, false, 0, ""},
		{"eks", PhaseDrain, true, 0, ""},
		{"surge", PhaseScaleDown, true, 0, PhaseScaleDown},
		{"blue-green", PhaseSoak, true, 0, PhaseSoak},
		{"blue-green", PhaseDeleteBlue, true, 0, PhaseDeleteBlue},
		{"blue-green", PhaseDrain, true, 1, ""},
		{"blue-green", PhaseDrain, true, 0, PhaseSoak},
		{"blue-green", PhaseCordonBlue, true, 0, PhaseSoak},
		{"blue-green", PhaseCreateGreen, true, 0, ""},
		{"autoscaled-blue-green", PhaseSoak, true, 0, PhaseSoak},
		{"autoscaled-blue-green", PhaseDrain, true, 2, ""},
		{"autoscaled-blue-green", PhaseDrain, true, 0, PhaseDeleteBlue},
		{"autoscaled-blue-green", PhaseRecover, true, 0, PhaseDeleteBlue},
		{"short-lived", PhaseSetup, true, 0, ""},
	} {
		t.Run(fmt.Sprintf("%s %s %d batches", tc.strategy, tc.recorded, tc.batches), func(t *testing.T) {
			s, _ := LookupStrategy(tc.strategy)
			if got := s.ResumeAt(tc.recorded, Flow{CloudGroup: tc.cloud, Batches: tc.batches}); got != tc.want {
				t.Errorf("ResumeAt(%s) = %q, want %q", tc.recorded, got, tc.want)
			}
		})
	}
}

// TestRegistry: every strategy is registered under the name it answers to,
// the default first, and every flag that only some take is owned by one at
// least.
func TestRegistry(t *testing.T) {
	names := StrategyNames()
	if names[0] != string(DefaultStrategy) || len(names) != 5 {
		t.Fatalf("strategies %v", names)
	}
	for _, n := range names {
		s, err := LookupStrategy(n)
		if err != nil || string(s.Name()) != n {
			t.Errorf("LookupStrategy(%q) = %v, %v", n, s, err)
		}
	}
	if _, err := LookupStrategy("rolling"); err == nil {
		t.Error("an unknown strategy was accepted")
	}
	if got := StrategyFlags()["max-unavailable"]; !slices.Equal(got, []string{"eks", "surge"}) {
		t.Errorf("max-unavailable is taken by %v", got)
	}
	if got := RollbackStrategies(); !slices.Equal(got, []string{"blue-green", "eks", "surge"}) {
		t.Errorf("rollback supports %v", got)
	}
}
