package state

import (
	"maps"
	"slices"
	"testing"

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
		{"no scale-up recorded", CloudRecord{FromVersion: "1", ScaledFor: "2"}, "3", false},
		{"a re-run of the same target", CloudRecord{Original: sizes, FromVersion: "1", ScaledFor: "2"}, "2", false},
		{"a re-run towards another target", CloudRecord{Original: sizes, FromVersion: "1", ScaledFor: "2"}, "3", true},
		{"a rollback to the version before the run", CloudRecord{Original: sizes, FromVersion: "1", ScaledFor: "2"}, "1", false},
		{"a record from before ScaledFor was kept", CloudRecord{Original: sizes, FromVersion: "1"}, "3", false},
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
		{"a record from before the kinds were kept", CloudRecord{Provider: "aws"}, "Auto Scaling group", "launch template"},
		{"a provider's own words", CloudRecord{GroupKind: "managed instance group", TemplateKind: "instance template"}, "managed instance group", "instance template"},
		{"a group kind alone", CloudRecord{GroupKind: "node pool"}, "node pool", "launch template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group, template := tc.rec.Kinds()
			if group != tc.wantGroup || template != tc.wantTemplate {
				t.Errorf("Kinds() = %q, %q; want %q, %q", group, template, tc.wantGroup, tc.wantTemplate)
			}
		})
	}
}
