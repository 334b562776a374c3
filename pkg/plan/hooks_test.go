package plan

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// The plan shows the command hooks a run will run and the nodes whose
// annotation hooks hold their drain or removal now.
func TestPlanShowsHooks(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hooks       Hooks
		annotations map[string]map[string]string // node -> annotations
		want        []string
		wantNot     []string
		wantHooked  []HookedNode
	}{
		{name: "no hooks", wantNot: []string{"Hooks:", "Annotation hooks"}},
		{name: "command hooks in the order they run",
			hooks: Hooks{PreTerminate: "deregister $NODE", PreDrain: "notify", Timeout: Duration(time.Minute)},
			want:  []string{`Hooks:           pre-drain "notify", pre-terminate "deregister $NODE"; once per node, each up to 1m0s (--hook-timeout)`}, wantNot: []string{`post-drain "`, "Annotation hooks"}},
		{name: "nodes carrying annotation hooks, current ones too",
			annotations: map[string]map[string]string{
				"old-1": {PreDrainHookPrefix + "lb": "team-net", PreTerminateHookPrefix + "backup": "team-data", "other/annotation": "x"},
				"new-0": {PreTerminateHookPrefix + "backup": "team-data"},
				"old-2": {PreDrainHookPrefix: "no name: not a hook"},
			},
			want: []string{"Annotation hooks (a node's drain, or removal, waits up to 10m0s until its owner takes them off):",
				"  new-0: pre-terminate.hook.nodeupgrade.dev/backup\n",
				"  old-1: pre-drain.hook.nodeupgrade.dev/lb, pre-terminate.hook.nodeupgrade.dev/backup\n"},
			wantNot:    []string{"old-2:", "other/annotation", "Hooks:"},
			wantHooked: []HookedNode{{Node: "new-0", PreTerminate: []string{PreTerminateHookPrefix + "backup"}}, {Node: "old-1", PreDrain: []string{PreDrainHookPrefix + "lb"}, PreTerminate: []string{PreTerminateHookPrefix + "backup"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := groupSnapshot()
			for i := range snap.Nodes {
				snap.Nodes[i].Annotations = tc.annotations[snap.Nodes[i].Name]
			}
			in := baseInput()
			in.Hooks = tc.hooks
			p, err := Build(snap, in)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteTable(&buf, p, time.Now(), output.Colorizer(false), false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("plan lacks %q:\n%s", w, buf.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(buf.String(), w) {
					t.Errorf("plan shows %q:\n%s", w, buf.String())
				}
			}
			if !slices.EqualFunc(p.HookedNodes, tc.wantHooked, func(a, b HookedNode) bool {
				return a.Node == b.Node && slices.Equal(a.PreDrain, b.PreDrain) && slices.Equal(a.PreTerminate, b.PreTerminate)
			}) {
				t.Errorf("hooked nodes %+v, want %+v", p.HookedNodes, tc.wantHooked)
			}
		})
	}
}
