package state

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// TestHooksDone: a hook that succeeded for a node is recorded once, for
// that node only, so a re-run repeats only the others.
func TestHooksDone(t *testing.T) {
	type mark struct{ node, hook string }
	for _, tc := range []struct {
		name  string
		marks []mark
		want  map[string][]string
	}{
		{"no hook done yet", nil, nil},
		{"one hook for one node", []mark{{"n1", "pre-drain"}}, map[string][]string{"n1": {"pre-drain"}}},
		{"two hooks for one node, in order", []mark{{"n1", "pre-drain"}, {"n1", "post-drain"}},
			map[string][]string{"n1": {"pre-drain", "post-drain"}}},
		{"a hook marked again after a re-run", []mark{{"n1", "pre-drain"}, {"n2", "pre-drain"}, {"n1", "pre-drain"}},
			map[string][]string{"n1": {"pre-drain"}, "n2": {"pre-drain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Record
			for _, m := range tc.marks {
				r.MarkHookDone(m.node, m.hook)
				if !r.HookDone(m.node, m.hook) {
					t.Fatalf("%s not done for %s right after it was marked", m.hook, m.node)
				}
			}
			if !maps.EqualFunc(r.HooksDone, tc.want, slices.Equal) {
				t.Errorf("HooksDone %v, want %v", r.HooksDone, tc.want)
			}
			if r.HookDone("n3", "pre-drain") || r.HookDone("n1", "pre-remove") {
				t.Errorf("a hook never marked is done: %v", r.HooksDone)
			}
		})
	}
}

// TestScaledForOther: an interrupted run's scale-up serves a re-run of
// the same target and a rollback to the version before it; a re-run
// towards another target replaces the scale-up's nodes too.
func TestScaledForOther(t *testing.T) {
	sizes := &plan.Sizes{Min: 1, Desired: 3, Max: 5}
	for _, tc := range []struct {
		name   string
		rec    CloudRecord
		target string
		want   bool
	}{
		{"no scale-up recorded", CloudRecord{GroupRecord: GroupRecord{FromVersion: "1"}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}, "3", false},
		{"a re-run of the same target", CloudRecord{GroupRecord: GroupRecord{Original: sizes, FromVersion: "1"}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}, "2", false},
		{"a re-run towards another target", CloudRecord{GroupRecord: GroupRecord{Original: sizes, FromVersion: "1"}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}, "3", true},
		{"a rollback to the version before the run", CloudRecord{GroupRecord: GroupRecord{Original: sizes, FromVersion: "1"}, ScaleRecord: ScaleRecord{ScaledFor: "2"}}, "1", false},
		{"a record from before ScaledFor was kept", CloudRecord{GroupRecord: GroupRecord{Original: sizes, FromVersion: "1"}}, "3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.ScaledForOther(tc.target); got != tc.want {
				t.Errorf("ScaledForOther(%q) = %v, want %v", tc.target, got, tc.want)
			}
		})
	}
}

// TestKinds: a record names the group and template in its provider's
// words; a record older than those words meant an Auto Scaling group.
func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		rec                     CloudRecord
		wantGroup, wantTemplate string
	}{
		{"a record from before the kinds were kept", CloudRecord{GroupRecord: GroupRecord{Provider: "aws"}}, "Auto Scaling group", "launch template"},
		{"a provider's own words", CloudRecord{GroupRecord: GroupRecord{GroupKind: "managed instance group", TemplateKind: "instance template"}}, "managed instance group", "instance template"},
		{"a group kind alone", CloudRecord{GroupRecord: GroupRecord{GroupKind: "node pool"}}, "node pool", "launch template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group, template := tc.rec.Kinds()
			if group != tc.wantGroup || template != tc.wantTemplate {
				t.Errorf("Kinds() = %q, %q; want %q, %q", group, template, tc.wantGroup, tc.wantTemplate)
			}
		})
	}
}

// TestCloudRecordReadsAcrossVersions: the record's parts are typed by
// their writer but its JSON stays the flat object earlier versions wrote,
// so a run resumed across an upgrade or a downgrade of the plugin reads
// every field where it was.
func TestCloudRecordReadsAcrossVersions(t *testing.T) {
	// Every field, as the version before the split (7427aa9) wrote them.
	const written = `{"provider":"aws","group":"ng-asg","groupKind":"Auto Scaling group","templateKind":"launch template",` +
		`"targetVersion":"3","fromVersion":"2","original":{"min":1,"desired":3,"max":4},"scaleUp":2,` +
		`"scaleUpZones":["z1","z2"],"scaledFor":"3","lastDesired":5,"shrinking":"node-a","shrinkTo":4,` +
		`"green":"ng-asg-v3","greenCreated":true,"soakUntil":"2026-11-26T19:00:00Z","rebalanceHeld":true,` +
		`"rebalanceWasHeld":true,"defaultWas":"1","updatesWere":"Rolling"}`
	soak := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	want := CloudRecord{
		GroupRecord: GroupRecord{Provider: "aws", Group: "ng-asg", GroupKind: "Auto Scaling group", TemplateKind: "launch template",
			TargetVersion: "3", FromVersion: "2", Original: &plan.Sizes{Min: 1, Desired: 3, Max: 4}},
		Holds:       Holds{RebalanceHeld: true, RebalanceWasHeld: true, DefaultWas: "1", UpdatesWere: "Rolling"},
		ScaleRecord: ScaleRecord{ScaleUp: 2, ScaleUpZones: []string{"z1", "z2"}, ScaledFor: "3", LastDesired: 5, Shrinking: "node-a", ShrinkTo: 4},
		GreenRecord: GreenRecord{Green: "ng-asg-v3", GreenCreated: true, SoakUntil: &soak},
	}
	t.Run("an earlier version's record reads into the parts", func(t *testing.T) {
		var got CloudRecord
		if err := json.Unmarshal([]byte(written), &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read %+v\nwant %+v", got, want)
		}
	})
	t.Run("an earlier version reads this one's record", func(t *testing.T) {
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var now, before map[string]any
		if err := json.Unmarshal(b, &now); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(written), &before); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(now, before) {
			t.Errorf("wrote %s\nwant the fields of %s", b, written)
		}
	})
}
