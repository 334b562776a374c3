package plan

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

func TestEstimateCountsPostDrainWait(t *testing.T) {
	tests := []struct {
		name string
		wait time.Duration
		want time.Duration // 3 batches of a 1m drain and the wait
	}{
		{"no wait", 0, 3 * time.Minute},
		{"default wait", time.Minute, 6 * time.Minute},
		{"long wait", 10 * time.Minute, 33 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.PostDrainWait = tc.wait
			p, err := Build(groupSnapshot(), in)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.EstimatedDuration(); got != tc.want {
				t.Errorf("estimate %s, want %s", got, tc.want)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, p, time.Now(), false, false); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"(estimated " + FormatDuration(tc.want) + ";", "post-drain wait " + FormatDuration(tc.wait) + "):"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("the plan does not say %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestPlanTableWording(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable string
		want           []string
		dontWant       []string
	}{
		{"one node", "1", []string{"Max unavailable: 1 node per batch\n", "6 batches of up to 1 node:"}, []string{"(1)", "1 nodes"}},
		{"a percentage", "25%", []string{"Max unavailable: 2 nodes per batch (--max-unavailable 25%)\n", "3 batches of up to 2 nodes:"}, nil},
		{"more than outdated", "6", []string{"1 batch of up to 6 nodes:"}, []string{"1 batches"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.MaxUnavailable = tc.maxUnavailable
			p, err := Build(groupSnapshot(), in)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, p, time.Now(), false, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("says %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestPlanWideAndName(t *testing.T) {
	p, err := Build(groupSnapshot(), baseInput())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		print func(*bytes.Buffer) error
		want  []string
	}{
		{"wide", func(b *bytes.Buffer) error { return WriteTable(b, p, time.Now(), false, true) }, []string{"TAINTED", "CORDONED", "PROVIDER ID"}},
		{"name", func(b *bytes.Buffer) error { return output.Print(b, output.FormatName, p) }, []string{"node/old-0\n", "node/old-5\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.print(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			if tc.name == "name" && strings.Count(b.String(), "\n") != 6 {
				t.Errorf("want the 6 outdated nodes, got:\n%s", b.String())
			}
		})
	}
	var narrow bytes.Buffer
	if err := WriteTable(&narrow, p, time.Now(), false, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(narrow.String(), "PROVIDER ID") {
		t.Errorf("the default table has the wide columns:\n%s", narrow.String())
	}
}

func TestGroupLineKey(t *testing.T) {
	for _, tc := range []struct{ kind, want string }{
		{"Auto Scaling group", "Auto Scaling"},
		{"EKS managed node group", "Group"}, // "EKS managed node:" would touch its value
		{"regional managed instance group", "Group"},
		{"zonal managed instance groups", "Group"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if got := groupLineKey(tc.kind); got != tc.want {
				t.Errorf("groupLineKey(%q) = %q, want %q", tc.kind, got, tc.want)
			}
		})
	}
}

// TestServiceRunPlanShowsTheService: where the group's service runs the
// update (EKS managed node groups, GKE node pools), the plan shows the
// service's settings, the nodes it replaces in no promised order and what
// the run does meanwhile; nothing of the run's own batches, which the
// service does not follow (no batch table, seed, taint or batch size).
func TestServiceRunPlanShowsTheService(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService},
		"b1": {ID: "i-b1", Zone: "b", Template: "lt-1", Version: "1", State: MachineInService},
	}
	snap := snapshot.Cluster{Nodes: []corev1.Node{awsNode("b1", "b", "i-b1", ""), awsNode("a1", "a", "i-a1", "")}}
	for _, tc := range []struct {
		name     string
		managed  bool
		from     string
		want     []string
		dontWant []string
	}{
		{"service-run", true, "", []string{
			"Strategy:        eks, run by the fake service's service with the update settings below\n",
			"  update settings: maxUnavailable 2 for the run, then back to maxUnavailable 1\n",
			"  replaces:        the 2 outdated nodes below, as many at once as its update settings allow, in an order of its own (none promised)\n",
			"  meanwhile:       the run follows the update",
			"Outdated nodes, by name (the fake service picks the order):\nNODE   INSTANCE   ZONE",
		}, []string{"Batches:", "seed", "Max unavailable:", "per batch", "Taint:", "BATCH"}},
		{"service-run, the group's own strategy", true, "the pool's own upgrade strategy", []string{
			"Strategy:        eks (the pool's own upgrade strategy), run by the fake service's service",
		}, []string{"Batches:"}},
		{"run by the plugin", false, "", []string{"Max unavailable: 2 nodes per batch\n", "Batches:         1, zone-balanced order, seed ", "BATCH   NODE"}, []string{"replaces:", "meanwhile:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloudInput("2", machines)
			in.Strategy, in.MaxUnavailable, in.StrategyFrom = StrategyEKS, "2", tc.from
			if tc.managed {
				in.Cloud.Can, in.Cloud.Managed = 0, serviceOf(&fakeService{})
			}
			p, err := Build(snap, in)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteTable(&b, p, time.Now(), false, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("says %q in:\n%s", w, b.String())
				}
			}
			if a, b1 := strings.Index(b.String(), "\na1 "), strings.Index(b.String(), "\nb1 "); tc.managed && (a < 0 || b1 < a) {
				t.Errorf("want the nodes by name, a1 then b1:\n%s", b.String())
			}
		})
	}
}

// TestGroupLineSaysWhatChanges: a group whose template version does not
// move (a Karpenter NodePool's template hash, which drifted nodes are
// replaced to) says so, instead of "version X -> X".
func TestGroupLineSaysWhatChanges(t *testing.T) {
	for _, tc := range []struct {
		name, current, target, want string
	}{
		{"a new version", "1", "2", "NodePool:        default, NodeClass kwok/default version 1 -> 2"},
		{"the same hash", "h1", "h1", "NodePool:        default, NodeClass kwok/default version h1, unchanged: the outdated nodes (OUTDATED says why) are replaced by nodes of it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Cloud: &CloudPlan{GroupID: GroupID{Group: "default", GroupKind: "NodePool", Template: "kwok/default", TemplateKind: "NodeClass"},
				Launches: Launches{CurrentVersion: tc.current, TargetVersion: tc.target}}}
			lines := cloudLines(p)
			if got := fmt.Sprintf("%-*s%s", headerKeyWidth, lines[0][0]+":", lines[0][1]); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestTemplateText: a template's version in the provider's words; GCE's
// instance template is a version of its own, in its project.
func TestTemplateText(t *testing.T) {
	for _, tc := range []struct{ kind, template, version, want string }{
		{"launch template", "lt-1", "2", "launch template lt-1 version 2"},
		{"launch template", "", "2", "launch template version 2"},
		{"instance template in project", "demo-proj", "demo-v2", "instance template demo-v2 in project demo-proj"},
		{"instance template in project", "", "demo-v2", "instance template demo-v2"},
		{"NodeClass", "kwok/default", "h1", "NodeClass kwok/default version h1"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := TemplateText(tc.kind, tc.template, tc.version); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
