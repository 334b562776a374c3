package plugin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestStatusTargetText: status names the target as the plan does; a GCE
// record's instance template is named with its project, not "instance
// template in project version T".
func TestStatusTargetText(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  state.GroupRecord
		want string
	}{
		{"aws", state.GroupRecord{TemplateKind: "launch template", Template: "lt-1", TargetVersion: "2"}, ", launch template lt-1 version 2"},
		{"aws, a record older than Template", state.GroupRecord{TargetVersion: "2"}, ", launch template version 2"},
		{"gce", state.GroupRecord{GroupKind: "managed instance group", TemplateKind: "instance template in project", Template: "demo-proj", TargetVersion: "demo-v1-abc"},
			", instance template demo-v1-abc in project demo-proj"},
		{"karpenter, no version set", state.GroupRecord{TemplateKind: "NodeClass", Template: "kwok/default"}, ", NodeClass kwok/default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &state.CloudRecord{GroupRecord: tc.rec}
			_, template := c.Kinds()
			if got := targetText(c, template); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// An aborted run's line says where the run was going, not what the group
// launches: abort gave the group its default of before back.
func TestStatusOfAnAbortedRunNamesItsTargetAsAbandoned(t *testing.T) {
	var out bytes.Buffer
	o := &StatusOptions{NodeGroup: "ng"}
	o.Out = &out
	rec := recordFor("ng")
	rec.State = state.StateAborted
	rec.Cloud = &state.CloudRecord{GroupRecord: state.GroupRecord{TemplateKind: "launch template", Template: "lt-1", TargetVersion: "3", Group: "ng"}}
	o.writeRunDetails(RunStatus{Record: rec, Status: StatusAborted}, nil, testNow)
	if want := `the run was on its way to launch template lt-1 version 3`; !strings.Contains(out.String(), want) {
		t.Errorf("status says %q, want %q", out.String(), want)
	}
}
