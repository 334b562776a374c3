package plan

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// planner is what a provider's service implements (cloud.ServicePlanner).
type planner interface {
	Runs(StrategyName) bool
	Plan(Input, int, int) (*ManagedPlan, error)
}

// serviceOf is the planner's view of s, as cloud.ServiceOf makes it.
func serviceOf(s planner) *Service { return &Service{Runs: s.Runs, Plan: s.Plan} }

// fakeService is a service that runs the eks strategy itself.
type fakeService struct {
	refuse error
	asked  struct{ nodes, zones int }
}

func (s *fakeService) Runs(strategy StrategyName) bool { return strategy == StrategyEKS }

func (s *fakeService) Plan(in Input, nodes, zones int) (*ManagedPlan, error) {
	s.asked.nodes, s.asked.zones = nodes, zones
	if s.refuse != nil {
		return nil, s.refuse
	}
	return &ManagedPlan{Service: "fake service", Before: UpdateSettings{MaxUnavailable: "1"}, During: UpdateSettings{MaxUnavailable: in.MaxUnavailable},
		ScaleUp: 4, MaxScaleUp: 4, Target: "release 2", Steps: []Step{{Phase: "ServiceUpdate", Detail: "the service replaces every node"}}}, nil
}

// TestManagedPlan: where the group's service runs the strategy, the plan
// takes the service's phases and scale-up, keeps the audit's batches, and
// needs no capability of the run's own; a strategy the service does not
// run is checked as before; what the service refuses ends the plan.
func TestManagedPlan(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService},
		"b1": {ID: "i-b1", Zone: "b", Template: "lt-1", Version: "1", State: MachineInService},
	}
	snap := snapshot.Cluster{Nodes: []corev1.Node{awsNode("a1", "a", "i-a1", ""), awsNode("b1", "b", "i-b1", "")}}
	for _, tc := range []struct {
		name     string
		strategy StrategyName
		refuse   error
		waves    Waves
		wantErr  string
		managed  bool
	}{
		{name: "the service runs eks", strategy: "eks", managed: true},
		{name: "waves on the service's update: no boundary to gate at", strategy: "eks", waves: Waves{Sizes: []string{"1", "100%"}}, wantErr: "--waves, --gate"},
		{name: "a gate on the service's update", strategy: "eks", waves: Waves{Gates: []string{"exec:true"}}, wantErr: "paces the batches itself"},
		{name: "the service does not run blue-green, the provider cannot either", strategy: "blue-green", wantErr: "creates node groups"},
		{name: "the service refuses the settings", strategy: "eks", refuse: errors.New("invalid --max-unavailable"), wantErr: "invalid --max-unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &fakeService{refuse: tc.refuse}
			in := cloudInput("2", machines)
			in.Strategy, in.MaxUnavailable, in.Waves = tc.strategy, "2", tc.waves
			in.Cloud.Can, in.Cloud.Managed = 0, serviceOf(svc)
			p, err := Build(snap, in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Managed == nil || len(p.Steps) != 1 || p.Steps[0].Phase != "ServiceUpdate" || p.Cloud.ScaleUp != 4 {
				t.Fatalf("plan %+v: want the service's plan, its one phase and scale-up 4", p.Managed)
			}
			if c := p.Cloud; c.During.Desired != c.Before.Desired+4 || c.During.Max != c.Before.Max+4 {
				t.Errorf("sizes %+v -> %+v, want desired and max both raised by the service's 4", c.Before, c.During)
			}
			if svc.asked.nodes != 2 || svc.asked.zones != 2 || len(p.Batches) != 1 {
				t.Errorf("the service was asked for %+v and the audit has %d batches; want 2 nodes, 2 zones, 1 batch", svc.asked, len(p.Batches))
			}
			s, err := p.RunStrategy()
			if err != nil {
				t.Fatal(err)
			}
			var phases []Phase
			for st := (State{Phase: s.First(Flow{})}); st.Phase != PhaseDone; st = s.Next(st, Flow{}) {
				phases = append(phases, st.Phase)
			}
			if got := phasesString(phases); got != "Configure Update RestoreSettings" {
				t.Errorf("a run goes through %s", got)
			}
			if s.ResumeAt(PhaseUpdate, Flow{}) != PhaseUpdate || s.ResumeAt(PhaseDrain, Flow{}) != "" {
				t.Error("a re-run must follow the recorded update, and only that")
			}
		})
	}
}

func phasesString(ps []Phase) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return strings.Join(out, " ")
}

// scalingService is a service that runs eks adding scaleUp nodes.
type scalingService struct{ scaleUp int32 }

func (s scalingService) Runs(strategy StrategyName) bool { return strategy == StrategyEKS }

func (s scalingService) Plan(in Input, _, _ int) (*ManagedPlan, error) {
	return &ManagedPlan{Service: "EKS managed node group", ScaleUp: s.scaleUp}, nil
}

// TestNoRoomUnderAServiceAddingNoNode: EKS's MINIMAL strategy adds no
// node, so the pods of the batches must fit on the nodes that stay, as
// with provider none; with its DEFAULT scale-up they need not.
func TestNoRoomUnderAServiceAddingNoNode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scaleUp int32
		want    bool
	}{
		{"MINIMAL adds no node", 0, true},
		{"DEFAULT scales up first", 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := groupSnapshot()
			for i := range 6 {
				p := pod("ns", fmt.Sprintf("app-%d", i), fmt.Sprintf("old-%d", i), "app", "ReplicaSet/app-1")
				p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}}}
				snap.Pods = append(snap.Pods, p)
			}
			machines := map[string]Machine{}
			for _, n := range snap.Nodes {
				version := "1"
				if strings.HasPrefix(n.Name, "new-") {
					version = "2"
				}
				machines[n.Name] = Machine{ID: "i-" + n.Name, Zone: n.Labels[ZoneLabel], Template: "lt-1", Version: version, State: MachineInService}
			}
			in := baseInput()
			in.TargetLabels = nil
			in.Provider = "aws"
			in.Cloud = &CloudGroup{GroupID: GroupID{
				Provider: "aws",
				Group:    "ng",
				Template: "lt-1",
			}, Launches: Launches{CurrentVersion: "1", TargetVersion: "2"}, Nodes: machines, Managed: serviceOf(scalingService{tc.scaleUp})}
			var got []check.Finding
			for _, f := range mustBuild(t, snap, in).Findings {
				if f.Check == check.CheckNoRoom {
					got = append(got, f)
				}
			}
			if (len(got) > 0) != tc.want {
				t.Fatalf("no-room findings %+v, want some: %v", got, tc.want)
			}
			if tc.want && !strings.Contains(got[0].Message, "provider EKS managed node group (adding no node)") {
				t.Errorf("the finding must say what adds no node: %q", got[0].Message)
			}
		})
	}
}

// TestPlanFollowingAServiceUpdate: the plan of a run that follows a
// service's update an interrupted run started counts the nodes that run
// recorded, not the service's new ones (on the old version by the
// group's reckoning until the update ends), and raises from the sizes
// recorded before the service's scale-up, not from the raised ones.
func TestPlanFollowingAServiceUpdate(t *testing.T) {
	machines := map[string]Machine{}
	var all []corev1.Node
	for _, n := range []struct{ name, zone string }{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"b2", "b"}, {"a3", "a"}, {"b3", "b"}} {
		machines[n.name] = Machine{ID: "i-" + n.name, Zone: n.zone, Template: "lt-1", Version: "1", State: MachineInService}
		all = append(all, awsNode(n.name, n.zone, "i-"+n.name, ""))
	}
	recorded := &Sizes{Min: 1, Desired: 2, Max: 3}
	for _, tc := range []struct {
		name         string
		nodes        []corev1.Node
		wantOutdated []string
		want         []string
	}{
		{name: "recorded nodes left", nodes: all, wantOutdated: []string{"a1", "b1"},
			want: []string{"6 total, 2 outdated, 4 current", "Scale-up:        the fake service's, under way: desired 2 -> 6, max 3 -> 7; back to desired 2, max 3 at its end"}},
		{name: "every recorded node replaced", nodes: all[2:],
			want: []string{"4 total, 0 outdated, 4 current", "Nothing left to drain: run follows the fake service's update under way to its end."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := cloudInput("2", machines)
			in.Strategy = StrategyEKS
			in.Cloud.Can, in.Cloud.Managed = 0, serviceOf(&fakeService{})
			in.Cloud.Sizes = Sizes{Min: 1, Desired: 6, Max: 7} // raised by the service
			in.Resume.Following = &ServiceUpdate{Nodes: []string{"a1", "b1"}, Sizes: recorded}
			p, err := Build(snapshot.Cluster{Nodes: tc.nodes}, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.OutdatedNames(); !slices.Equal(sorted(got), tc.wantOutdated) {
				t.Errorf("outdated %v, want %v", got, tc.wantOutdated)
			}
			if p.Cloud.Before != *recorded || p.NothingToDo() {
				t.Errorf("sizes before %+v, nothing to do %v; want %+v and a run that follows the update", p.Cloud.Before, p.NothingToDo(), *recorded)
			}
			var b strings.Builder
			if err := WriteTable(&b, p, time.Now(), output.Colorizer(false), false); err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("plan lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

// poolService runs eks and surge itself, as GKE's and AKS's services do.
type poolService struct{ fakeService }

func (s *poolService) Runs(strategy StrategyName) bool {
	return strategy == StrategyEKS || strategy == StrategySurge
}

// TestWavesOnAServiceUpdateSuggestOnlyWhatIsAccepted: waves refused on
// the service's own update name only strategies that take them there;
// each suggested flag set is planned with the same waves and accepted,
// and where none would be, none is suggested.
func TestWavesOnAServiceUpdateSuggestOnlyWhatIsAccepted(t *testing.T) {
	machines := map[string]Machine{
		"a1": {ID: "i-a1", Zone: "a", Template: "lt-1", Version: "1", State: MachineInService},
		"b1": {ID: "i-b1", Zone: "b", Template: "lt-1", Version: "1", State: MachineInService},
	}
	snap := snapshot.Cluster{Nodes: []corev1.Node{awsNode("a1", "a", "i-a1", ""), awsNode("b1", "b", "i-b1", "")}}
	waves := Waves{Sizes: []string{"1", "100%"}, Gates: []string{"exec:true"}}
	for _, tc := range []struct {
		name string
		can  Capability
		want []string
	}{
		{"the provider drains nothing itself", 0, nil},
		{"the provider makes groups", CapRemoveNodes | CapResize | CapNewGroups, []string{"blue-green", "autoscaled-blue-green"}},
	} {
		for _, asked := range []StrategyName{StrategyEKS, StrategySurge} {
			t.Run(tc.name+" --strategy "+string(asked), func(t *testing.T) {
				in := cloudInput("1", machines)
				in.Strategy, in.Waves = asked, waves
				in.Cloud.Can, in.Cloud.Managed = tc.can, serviceOf(&poolService{})
				_, err := Build(snap, in)
				if err == nil {
					t.Fatal("waves on the service's update: want a refusal")
				}
				suggested := regexp.MustCompile(`--strategy ([a-z-]+)`).FindAllStringSubmatch(err.Error(), -1)
				var got []string
				for _, m := range suggested {
					got = append(got, m[1])
				}
				if !slices.Equal(got, tc.want) || len(got) == 0 && !strings.Contains(err.Error(), "without --waves and --gate") {
					t.Fatalf("error %q suggests %q, want %q", err, got, tc.want)
				}
				for _, s := range got {
					again := in
					again.Strategy = StrategyName(s)
					if _, err := Build(snap, again); err != nil {
						t.Errorf("the suggested --strategy %s is refused: %v", s, err)
					}
				}
			})
		}
	}
}
