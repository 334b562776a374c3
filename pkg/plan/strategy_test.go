package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

func TestSurgeBatchesGoZoneByZone(t *testing.T) {
	nodes := []corev1.Node{
		node("a1", "ng", "a", "old"), node("a2", "ng", "a", "old"), node("a3", "ng", "a", "old"),
		node("b1", "ng", "b", "old"), node("b2", "ng", "b", "old"),
		node("c1", "ng", "c", "old"), node("c2", "ng", "c", "new"),
	}
	for _, tc := range []struct {
		name           string
		maxSurge       int
		maxUnavailable string
		wantBatches    []string // zone of each batch, with its size
		wantErr        string
	}{
		{name: "balanced 1/0", maxSurge: 1, maxUnavailable: "0", wantBatches: []string{"a1", "a1", "a1", "b1", "b1", "c1"}},
		{name: "fast without extra nodes 0/20", maxSurge: 0, maxUnavailable: "20", wantBatches: []string{"a3", "b2", "c1"}},
		{name: "2/1", maxSurge: 2, maxUnavailable: "1", wantBatches: []string{"a3", "b2", "c1"}},
		{name: "1/1", maxSurge: 1, maxUnavailable: "1", wantBatches: []string{"a2", "a1", "b2", "c1"}},
		{name: "both zero", maxSurge: 0, maxUnavailable: "0", wantErr: "both 0"},
		{name: "over 20 in flight", maxSurge: 15, maxUnavailable: "6", wantErr: "above the limit of 20"},
		{name: "percentage", maxSurge: 1, maxUnavailable: "10%", wantErr: `invalid --max-unavailable "10%"`},
		{name: "negative surge", maxSurge: -1, maxUnavailable: "1", wantErr: "invalid --max-surge -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.TargetLabels = map[string]string{imageKey: "new"}
			in.Strategy, in.MaxSurge, in.MaxUnavailable = "surge", tc.maxSurge, tc.maxUnavailable
			// Surge nodes need a group that launches them; every node is
			// one of its machines, on the target version.
			in.Cloud = &CloudGroup{GroupID: GroupID{
				Provider: "aws",
				Group:    "ng",
				Template: "lt",
			}, Can: CapRemoveNodes | CapResize, Launches: Launches{TargetVersion: "1"}, Nodes: map[string]Machine{}}
			for _, n := range nodes {
				in.Cloud.Nodes[n.Name] = Machine{ID: "i-" + n.Name, Zone: n.Labels[ZoneLabel], Template: "lt", Version: "1", State: MachineInService}
			}
			p, err := Build(snapshot.Cluster{Nodes: nodes}, in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range p.Batches {
				z := b.Nodes[0].Zone
				for _, n := range b.Nodes {
					if n.Zone != z {
						t.Errorf("batch %d mixes zones %q and %q", b.Number, z, n.Zone)
					}
				}
				got = append(got, z+string(rune('0'+len(b.Nodes))))
			}
			if strings.Join(got, ",") != strings.Join(tc.wantBatches, ",") {
				t.Errorf("batches %v, want %v", got, tc.wantBatches)
			}
			if p.Order != OrderByZone || p.Strategy != "surge" {
				t.Errorf("order %q strategy %q", p.Order, p.Strategy)
			}
			// Setup comes first with a cloud group; then a Surge step per zone.
			zoneSteps := slices.DeleteFunc(slices.Clone(p.Steps), func(s Step) bool { return s.Phase != "Surge" })
			if len(zoneSteps) != 3 || !strings.Contains(zoneSteps[0].Detail, "zone a:") {
				t.Errorf("steps %+v: want one per zone, zone a first", p.Steps)
			}
		})
	}
}

// TestEstimateStatesTheSoakApart: a blue/green plan's estimate is its
// work, with the node-pool soak (which "complete" ends early) beside it,
// not summed into one figure the run rarely takes.
func TestEstimateStatesTheSoakApart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []Step
		want  string
	}{
		{"no soak", []Step{{Phase: "Upgrade", Estimate: Duration(90 * time.Second)}}, "1m30s"},
		{"soak", []Step{{Phase: "CreateGreen", Estimate: Duration(20 * time.Second)}, {Phase: string(PhaseSoak), Estimate: Duration(time.Hour)}, {Phase: "DeleteBlue", Estimate: Duration(10 * time.Second)}},
			`30s plus the node-pool soak of 1h, which "complete" ends early`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Steps: tc.steps}
			if got := EstimateText(p.EstimatedDuration(), p.SoakEstimate()); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSettingsUpdateEstimateSaysWhereFrom: a service's plan with settings
// steps says how long it gives each, and from what, where it was
// measured; one without them says nothing of settings.
func TestSettingsUpdateEstimateSaysWhereFrom(t *testing.T) {
	configure := []Step{{Phase: "Configure"}, {Phase: "Upgrade"}, {Phase: "RestoreSettings"}}
	for _, tc := range []struct {
		name  string
		steps []Step
		pace  *Pace
		want  string
	}{
		{"default", configure, nil, ", a settings update in 15s"},
		{"measured", configure, &Pace{Settings: Duration(2 * time.Second), SettingsFrom: "the last run on this group"}, ", a settings update in 2s (from the last run on this group)"},
		{"no settings step", []Step{{Phase: "Upgrade"}}, &Pace{Settings: Duration(2 * time.Second)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Managed: &ManagedPlan{Steps: tc.steps}, Pace: tc.pace}
			got := p.EstimateAssumptions()
			if rest, ok := strings.CutPrefix(got, p.paceText()); !ok || rest != tc.want {
				t.Errorf("got %q, want the pace then %q", got, tc.want)
			}
			if in := (Input{Pace: tc.pace}); tc.pace != nil && in.SettingsTime() != time.Duration(tc.pace.Settings) {
				t.Errorf("the input's settings time %s, want the measured %s", in.SettingsTime(), time.Duration(tc.pace.Settings))
			}
		})
	}
}
