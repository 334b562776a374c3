package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// awsNode is a node of group ng whose instance is id, with the EKS labels
// of launch template version ltv (none when ltv is "").
func awsNode(name, zone, id, ltv string) corev1.Node {
	n := node(name, "ng", zone, "")
	delete(n.Labels, imageKey)
	if ltv != "" {
		n.Labels[versionLabel] = ltv
	}
	n.Spec.ProviderID = "aws:///" + zone + "/" + id
	return n
}

func cloudInput(target string, machines map[string]Machine) Input {
	in := baseInput()
	in.TargetLabels = nil
	in.MaxUnavailable = "1"
	in.Provider = "aws"
	in.Cloud = &CloudGroup{
		GroupID: GroupID{
			Provider:     "aws",
			Group:        "asg-ng",
			GroupKind:    "Auto Scaling group",
			Template:     "lt-1",
			TemplateKind: "launch template",
			MachineKind:  "instance",
		}, Can: CapRemoveNodes | CapResize | CapNewGroups,
		Launches: Launches{
			CurrentVersion: "1",
			TargetVersion:  target,
			VersionLabel:   versionLabel,
			ImageLabel:     imageKey,
		},
		Sizes: Sizes{Min: 1, Desired: 4, Max: 5}, Nodes: machines,
	}
	return in
}

func TestBuildWithCloudGroup(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService, Lifecycle: "InService"},
		"b1": {ID: "i-b1", Zone: "b", Template: "lt-1", Version: "1", State: MachineInService, Lifecycle: "InService"},
		"b2": {ID: "i-b2", Zone: "b", Template: "lt-1", Version: "2", State: MachineInService, Lifecycle: "InService"},
		"c1": {ID: "i-c1", Zone: "c", Template: "lt-0", Version: "2", State: MachineInService, Lifecycle: "InService"},
		"c2": {ID: "i-c2", Zone: "c", Template: "lt-1", Version: "1", State: MachineLeaving, Lifecycle: "Terminating"},
	}
	nodes := []corev1.Node{
		awsNode("a1", "a", "i-a1", ""),
		awsNode("b1", "b", "i-b1", ""),
		awsNode("b2", "b", "i-b2", ""),
		awsNode("c1", "c", "i-c1", ""),
		awsNode("c2", "c", "i-c2", ""),
		awsNode("x1", "a", "i-x1", ""), // not in the Auto Scaling group
	}
	for _, tc := range []struct {
		name         string
		target       string
		recorded     *Sizes
		rescaleFrom  string
		labels       map[string]string // EKS version labels by node
		wantOutdated []string
		wantScaleUp  int32
		wantDuring   Sizes
		wantBefore   Sizes
	}{
		{name: "existing target version", target: "2", wantOutdated: []string{"a1", "b1", "c1"},
			wantScaleUp: 6, wantBefore: Sizes{1, 4, 5}, wantDuring: Sizes{1, 10, 11}},
		{name: "version to be created", target: NewVersion, wantOutdated: []string{"a1", "b1", "b2", "c1"},
			wantScaleUp: 6, wantBefore: Sizes{1, 4, 5}, wantDuring: Sizes{1, 10, 11}},
		{name: "current version is the target", target: "1", wantOutdated: []string{"b2", "c1"},
			wantScaleUp: 6, wantBefore: Sizes{1, 4, 5}, wantDuring: Sizes{1, 10, 11}},
		// The EKS label disagrees with the instance: the node is outdated.
		{name: "eks label checked too", target: "2", labels: map[string]string{"b2": "1"}, wantOutdated: []string{"a1", "b1", "b2", "c1"},
			wantScaleUp: 6, wantBefore: Sizes{1, 4, 5}, wantDuring: Sizes{1, 10, 11}},
		// An interrupted run scaled up already: no second scale-up, and the
		// sizes the end restores are the recorded ones.
		{name: "resumed", target: "2", recorded: &Sizes{1, 3, 4}, wantOutdated: []string{"a1", "b1", "c1"},
			wantScaleUp: 0, wantBefore: Sizes{1, 3, 4}, wantDuring: Sizes{1, 4, 5}},
		// The interrupted run scaled up for another version: this one
		// scales up again, from the sizes now.
		{name: "resumed after a scale-up for another version", target: "2", recorded: &Sizes{1, 3, 4}, rescaleFrom: "1", wantOutdated: []string{"a1", "b1", "c1"},
			wantScaleUp: 6, wantBefore: Sizes{1, 3, 4}, wantDuring: Sizes{1, 10, 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := make([]corev1.Node, len(nodes))
			for i := range nodes {
				ns[i] = *nodes[i].DeepCopy()
				if v, ok := tc.labels[ns[i].Name]; ok {
					ns[i].Labels[versionLabel] = v
				}
			}
			in := cloudInput(tc.target, machines)
			in.Resume.Recorded, in.Resume.RescaleFrom = tc.recorded, tc.rescaleFrom
			p, err := Build(snapshot.Cluster{Nodes: ns}, in)
			if err != nil {
				t.Fatal(err)
			}
			got := p.OutdatedNames()
			slices.Sort(got)
			if !slices.Equal(got, tc.wantOutdated) {
				t.Errorf("outdated %v, want %v", got, tc.wantOutdated)
			}
			c := p.Cloud
			if c == nil || c.ScaleUp != tc.wantScaleUp || c.Before != tc.wantBefore || c.During != tc.wantDuring || c.Resumed != (tc.recorded != nil) {
				t.Errorf("cloud plan %+v, want scale-up %d, %v -> %v", c, tc.wantScaleUp, tc.wantBefore, tc.wantDuring)
			}
			if line := scaleUpLine(c); tc.rescaleFrom != "" && !strings.Contains(line, "+6 nodes again: the interrupted run scaled up for version 1") {
				t.Errorf("scale-up line %q", line)
			}
			for _, b := range p.Batches {
				for _, n := range b.Nodes {
					if n.MachineID != "i-"+n.Name {
						t.Errorf("node %q: instance %q", n.Name, n.MachineID)
					}
				}
			}
			if !slices.ContainsFunc(p.Notes, func(s string) bool { return strings.Contains(s, `"x1"`) && strings.Contains(s, "not an instance") }) {
				t.Errorf("no note about the node outside the Auto Scaling group: %q", p.Notes)
			}
			if !slices.ContainsFunc(p.Notes, func(s string) bool { return strings.Contains(s, `"i-c2" is already terminating`) }) {
				t.Errorf("no note about the terminating instance: %q", p.Notes)
			}
		})
	}
}

func TestScaleUpCount(t *testing.T) {
	for _, tc := range []struct{ zones, maxUnavailable, want int }{
		{5, 1, 10}, {5, 20, 20}, {3, 2, 6}, {1, 1, 2}, {0, 1, 1},
	} {
		t.Run("", func(t *testing.T) {
			if got := ScaleUpCount(tc.zones, tc.maxUnavailable); got != int32(tc.want) {
				t.Errorf("ScaleUpCount(%d, %d) = %d, want %d", tc.zones, tc.maxUnavailable, got, tc.want)
			}
		})
	}
}

// TestCloudPlanJSON reads a plan's cloud side as saved now and as saved
// before its fields were neutral.
func TestCloudPlanJSON(t *testing.T) {
	want := CloudPlan{GroupID: GroupID{
		Provider:     "aws",
		Group:        "asg-1",
		GroupKind:    "Auto Scaling group",
		Template:     "lt-1",
		TemplateKind: "launch template",
	}, Launches: Launches{TargetVersion: "3"}}
	now, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, saved string }{
		{name: "neutral fields", saved: string(now)},
		{name: "saved with autoScalingGroup and launchTemplateID", saved: `{"provider":"aws","autoScalingGroup":"asg-1","launchTemplateID":"lt-1","targetVersion":"3"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got CloudPlan
			if err := json.Unmarshal([]byte(tc.saved), &got); err != nil {
				t.Fatal(err)
			}
			if got.Provider != want.Provider || got.Group != want.Group || got.GroupKind != want.GroupKind || got.Template != want.Template || got.TemplateKind != want.TemplateKind || got.TargetVersion != want.TargetVersion {
				t.Errorf("read %+v, want %+v", got, want)
			}
		})
	}
	if strings.Contains(string(now), "autoScalingGroup") {
		t.Errorf("saved with the provider's field names: %s", now)
	}
}

// TestUnreachableTarget: target labels the cloud target cannot give are a
// blocker, found from the nodes that already run the target or from the
// target's image.
func TestUnreachableTarget(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService},
		"b1": {ID: "i-b1", Zone: "b", Template: "lt-1", Version: "2", State: MachineInService},
	}
	withImage := func(name, zone, image string) corev1.Node {
		n := awsNode(name, zone, "i-"+name, "")
		n.Labels[imageKey] = image
		return n
	}
	for _, tc := range []struct {
		name        string
		target      string
		targetImage string
		like        string // CloudGroup.TargetLike
		b1Image     string
		labels      map[string]string
		want        string // in the blocker's message; "" for none
	}{
		{name: "target is the current version, whose nodes have another image", target: "1", b1Image: "ami-new",
			labels: map[string]string{imageKey: "ami-new"}, want: `node "a1", which runs it, has eks.amazonaws.com/nodegroup-image=ami-old`},
		{name: "target's image is another", target: NewVersion, targetImage: "ami-newer", b1Image: "ami-new",
			labels: map[string]string{imageKey: "ami-new"}, want: "its image has eks.amazonaws.com/nodegroup-image=ami-newer"},
		{name: "a label the target's nodes lack", target: "2", b1Image: "ami-new",
			labels: map[string]string{"team": "blue"}, want: `node "b1", which runs it, has team=<none>`},
		{name: "the target's nodes carry the labels", target: "2", b1Image: "ami-new",
			labels: map[string]string{imageKey: "ami-new"}},
		{name: "no target labels", target: "1", b1Image: "ami-new"},
		// --ami: no node runs the version the run makes, but those of the
		// version it copies show the labels the new nodes get.
		{name: "a label the nodes of the copied version lack", target: NewVersion, targetImage: "ami-old", like: "2", b1Image: "ami-new",
			labels: map[string]string{"team": "blue"}, want: `node "b1", which runs version 2, the target's but for the image, has team=<none>`},
		{name: "the copied version's nodes carry the label", target: NewVersion, targetImage: "ami-newer", like: "1", b1Image: "ami-new",
			labels: map[string]string{"topology.kubernetes.io/zone": "a", imageKey: "ami-newer"}},
		{name: "a version number label the new version cannot have", target: "2", like: "1", b1Image: "ami-new",
			labels: map[string]string{versionLabel: "3"}, want: "its version number has " + versionLabel + "=2"},
		{name: "nothing tells what the new nodes carry", target: NewVersion, targetImage: "ami-newer", b1Image: "ami-new",
			labels: map[string]string{"team": "blue"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloudInput(tc.target, machines)
			in.TargetLabels, in.Cloud.TargetImage, in.Cloud.TargetLike = tc.labels, tc.targetImage, tc.like
			p, err := Build(snapshot.Cluster{Nodes: []corev1.Node{withImage("a1", "a", "ami-old"), withImage("b1", "b", tc.b1Image)}}, in)
			if err != nil {
				t.Fatal(err)
			}
			var got []check.Finding
			for _, f := range p.Blockers() {
				if f.Check == check.CheckUnreachableTarget {
					got = append(got, f)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("blockers %+v, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tc.want) || got[0].Object() != "NodeGroup/ng"):
				t.Errorf("blockers %+v, want one saying %q", got, tc.want)
			}
		})
	}
}

func TestJoining(t *testing.T) {
	cg := &CloudGroup{GroupID: GroupID{
		Template:    "lt-1",
		MachineKind: "instance",
		GroupKind:   "Auto Scaling group",
		Group:       "ng",
	}, Launches: Launches{TargetVersion: "1"}}
	tests := []struct {
		name    string
		target  string
		machine Machine
		joining bool
	}{
		{name: "launching on another version", target: "1", machine: Machine{ID: "i-1", Template: "lt-1", Version: "2", State: MachinePending}, joining: true},
		{name: "launching on the target version", target: "1", machine: Machine{ID: "i-1", Template: "lt-1", Version: "1", State: MachinePending}},
		{name: "of another launch template", target: "1", machine: Machine{ID: "i-1", Template: "lt-0", Version: "1", State: MachinePending}, joining: true},
		{name: "leaving", target: "1", machine: Machine{ID: "i-1", Template: "lt-1", Version: "2", State: MachineLeaving}},
		{name: "a version the run creates replaces every machine", target: NewVersion, machine: Machine{ID: "i-1", Template: "lt-1", Version: "1", State: MachineInService}, joining: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := *cg
			c.TargetVersion, c.Unjoined = tc.target, []Machine{tc.machine}
			got := c.Joining()
			if (len(got) == 1) != tc.joining {
				t.Fatalf("Joining() = %v, want joining %v", got, tc.joining)
			}
			if tc.joining && !strings.Contains(c.JoiningNote(got), "i-1 (") {
				t.Errorf("note %q must name the instance", c.JoiningNote(got))
			}
		})
	}
}

func TestRebalanceLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy string
		maxSurge int
		c        CloudPlan
		want     string // a part of the line; "" for none
	}{
		{name: "eks scale-down", strategy: "eks", c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance"}, ScaleUp: 2}, want: "AZRebalance suspended from the first termination"},
		{name: "suspended before the run", strategy: "eks", c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance", RebalanceHeld: true}, ScaleUp: 2}, want: "left suspended"},
		{name: "surge removals", strategy: "surge", maxSurge: 1, c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance"}}, want: "AZRebalance suspended from"},
		{name: "resumed run", strategy: "eks", c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance"}, Resumed: true}, want: "AZRebalance suspended from"},
		{name: "nothing lowers the desired size", strategy: "eks", c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance"}}},
		{name: "blue-green replaces the group", strategy: "blue-green", c: CloudPlan{Removal: Removal{Rebalance: "AZRebalance"}, ScaleUp: 2}},
		{name: "a cloud that does not rebalance", strategy: "eks", c: CloudPlan{ScaleUp: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rebalanceLine(&Plan{Strategy: tc.strategy, MaxSurge: tc.maxSurge}, &tc.c)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("line %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWholeGroupReplacedOnlyWhenOutdated: blue/green replaces every node
// of the group, current ones too, but only when some node is outdated; a
// group already on the target is nothing to do, as for eks (issue 32: a
// finished run started again made green of green).
func TestWholeGroupReplacedOnlyWhenOutdated(t *testing.T) {
	on := func(versions ...string) map[string]Machine {
		m := map[string]Machine{}
		for i, v := range versions {
			name := string(rune('a'+i)) + "1"
			m[name] = Machine{ID: "i-" + name, Zone: "a", Template: "lt-1", Version: v, State: MachineInService, Lifecycle: "InService"}
		}
		return m
	}
	for _, tc := range []struct {
		name         string
		strategy     StrategyName
		machines     map[string]Machine
		wantOutdated int
	}{
		{name: "blue-green, every node on the target", strategy: "blue-green", machines: on("2", "2", "2")},
		{name: "autoscaled blue-green, every node on the target", strategy: "autoscaled-blue-green", machines: on("2", "2")},
		{name: "blue-green, one node outdated: the whole group goes", strategy: "blue-green", machines: on("2", "1", "2"), wantOutdated: 3},
		{name: "eks, every node on the target", strategy: "eks", machines: on("2", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []corev1.Node
			for name, m := range tc.machines {
				nodes = append(nodes, awsNode(name, "a", m.ID, ""))
			}
			in := cloudInput("2", tc.machines)
			in.Strategy = tc.strategy
			in.BlueGreen = BlueGreenInput{BatchNodes: 1}
			p, err := Build(snapshot.Cluster{Nodes: nodes}, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(p.OutdatedNames()); got != tc.wantOutdated {
				t.Errorf("%d outdated nodes %v, want %d", got, p.OutdatedNames(), tc.wantOutdated)
			}
			if p.NothingToDo() != (tc.wantOutdated == 0) {
				t.Errorf("NothingToDo() = %v with %d outdated", p.NothingToDo(), tc.wantOutdated)
			}
		})
	}
}

// TestPlanOfAnInterruptedGreen: blue's nodes all gone after a blue/green
// run made green and was killed (the autoscaler removed them), the run
// after has nothing to drain but blue to delete: it is no "Nothing to do",
// and its steps are those after the drain.
func TestPlanOfAnInterruptedGreen(t *testing.T) {
	machines := map[string]Machine{"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "2", State: MachineInService}}
	nodes := []corev1.Node{awsNode("a1", "a", "i-a1", "")}
	for _, tc := range []struct {
		name      string
		strategy  StrategyName
		green     string
		wantSteps []string
		want      string
	}{
		{name: "autoscaled blue-green", strategy: StrategyAutoscaledBlueGreen, green: "asg-ng-v2", wantSteps: []string{"DeleteBlue"},
			want: `Nothing left to drain: blue Auto Scaling group "asg-ng" has no node left; run finishes the interrupted run on green "asg-ng-v2" and deletes blue.`},
		{name: "blue-green", strategy: StrategyBlueGreen, green: "asg-ng-v2", wantSteps: []string{"Soak", "DeleteBlue"}, want: "Nothing left to drain: blue"},
		{name: "no interrupted run", strategy: StrategyAutoscaledBlueGreen, want: "Nothing to do: every node of the group runs the target launch template version."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloudInput("2", machines)
			in.Strategy = tc.strategy
			in.BlueGreen = BlueGreenInput{BatchNodes: 1}
			in.Resume.InterruptedGreen = tc.green
			p, err := Build(snapshot.Cluster{Nodes: nodes}, in)
			if err != nil {
				t.Fatal(err)
			}
			if p.NothingToDo() != (tc.green == "") {
				t.Errorf("NothingToDo() = %v with interrupted green %q", p.NothingToDo(), tc.green)
			}
			if tc.wantSteps != nil {
				var got []string
				for _, st := range p.Steps {
					got = append(got, st.Phase)
				}
				if !slices.Equal(got, tc.wantSteps) {
					t.Errorf("steps %v, want %v", got, tc.wantSteps)
				}
			}
			var b strings.Builder
			if err := WriteTable(&b, p, time.Now(), output.Colorizer(false), false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("plan lacks %q:\n%s", tc.want, b.String())
			}
		})
	}
}

// TestRemovesOnly: only a group the run can remove nodes from but neither
// resize nor have a service update is planned without Setup, scale-up and
// scale-down.
func TestRemovesOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		cg   CloudGroup
		want bool
	}{
		{"removes nodes only", CloudGroup{Can: CapRemoveNodes}, true},
		{"a group the run resizes", CloudGroup{Can: CapRemoveNodes | CapResize}, false},
		{"green groups only", CloudGroup{Can: CapNewGroups}, false},
		{"a service runs the update", CloudGroup{Can: CapRemoveNodes | CapManagedUpdate, Managed: serviceOf(scalingService{})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cloudPlan(&tc.cg, Resume{}).RemovesOnly; got != tc.want {
				t.Errorf("RemovesOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCloudGroupFindings: what the provider found of the group itself
// (an EKS managed node group DEGRADED) is among the plan's blockers.
func TestCloudGroupFindings(t *testing.T) {
	machines := map[string]Machine{"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService, Lifecycle: "InService"}}
	in := cloudInput("2", machines)
	f := check.Finding{Check: check.CheckGroupDegraded, Severity: check.Blocker, Kind: "NodeGroup", Name: "ng", Message: "degraded", Fix: "mend it"}
	in.Cloud.Findings = []check.Finding{f}
	p, err := Build(snapshot.Cluster{Nodes: []corev1.Node{awsNode("a1", "a", "i-a1", "")}}, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Blockers(), func(b check.Finding) bool { return b.Check == check.CheckGroupDegraded }) {
		t.Errorf("blockers %+v, want the group's %s", p.Blockers(), check.CheckGroupDegraded)
	}
}
