package gce

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	compute "google.golang.org/api/compute/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestInstanceFromProviderID(t *testing.T) {
	for _, tc := range []struct {
		id                  string
		project, zone, name string
		ok                  bool
	}{
		{"gce://my-proj/us-central1-a/ng-abcd", "my-proj", "us-central1-a", "ng-abcd", true},
		{"gce:///us-central1-a/ng-abcd", "", "", "", false},
		{"gce://p/z", "", "", "", false},
		{"aws:///us-east-1a/i-0abc", "", "", "", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			p, z, n, ok := InstanceFromProviderID(tc.id)
			if p != tc.project || z != tc.zone || n != tc.name || ok != tc.ok {
				t.Errorf("got %q %q %q %v", p, z, n, ok)
			}
		})
	}
}

func TestParseMIG(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want MIG
		ok   bool
	}{
		{"projects/123/zones/us-central1-a/instanceGroupManagers/ng", MIG{Project: "123", Zone: "us-central1-a", Name: "ng"}, true},
		{"https://www.googleapis.com/compute/v1/projects/p/regions/us-central1/instanceGroupManagers/ng", MIG{Project: "p", Region: "us-central1", Name: "ng"}, true},
		{"projects/p/global/instanceGroupManagers/ng", MIG{}, false},
		{"projects/p/zones/z/instanceGroupManagers/ng/extra", MIG{}, false},
		{"ng", MIG{}, false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got, ok := ParseMIG(tc.url)
			if ok != tc.ok || ok && got != tc.want {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCopyName(t *testing.T) {
	a := CopyName("nodes-v1", "projects/p/global/images/img-2")
	if a != CopyName("nodes-v1", "projects/p/global/images/img-2") || !strings.HasPrefix(a, "nodes-v1-nu-") {
		t.Errorf("copy name %q is not deterministic or not after its source", a)
	}
	if a == CopyName("nodes-v1", "projects/p/global/images/img-3") {
		t.Error("two images give one name")
	}
	long := CopyName(strings.Repeat("a", 70), "img")
	if len(long) > 63 || !namePattern.MatchString(long) {
		t.Errorf("%q is no valid resource name", long)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		target  plan.CloudTarget
		wantErr string
	}{
		{"image name", plan.CloudTarget{Image: "cos-113"}, ""},
		{"image family", plan.CloudTarget{Image: "projects/cos-cloud/global/images/family/cos-stable"}, ""},
		{"an AMI", plan.CloudTarget{Image: "ami-0abc"}, ""},
		{"bad image", plan.CloudTarget{Image: "Bad_Image"}, "invalid --image"},
		{"template URL", plan.CloudTarget{Version: "projects/p/global/instanceTemplates/t-2"}, ""},
		{"bad template", plan.CloudTarget{Version: "T 2"}, "invalid --instance-template"},
		{"both", plan.CloudTarget{Image: "img", Version: "t"}, "cannot be used together"},
		{"groups", plan.CloudTarget{Group: "ng-a,projects/p/zones/z/instanceGroupManagers/ng-b"}, ""},
		{"bad group", plan.CloudTarget{Group: "ng_a"}, "invalid --mig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := gceCloud{}.Validate(tc.target)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if err != nil && !err.(*Error).Input() {
				t.Error("not an input error (exit 2)")
			}
		})
	}
}

func TestMachineState(t *testing.T) {
	for _, tc := range []struct {
		action, status string
		want           plan.MachineState
	}{
		{"NONE", "RUNNING", plan.MachineInService},
		{"CREATING", "", plan.MachinePending},
		{"RECREATING", "STOPPING", plan.MachinePending},
		{"VERIFYING", "RUNNING", plan.MachinePending},
		{"DELETING", "RUNNING", plan.MachineLeaving},
		{"ABANDONING", "RUNNING", plan.MachineLeaving},
		{"NONE", "TERMINATED", plan.MachinePending},
	} {
		t.Run(tc.action+"/"+tc.status, func(t *testing.T) {
			if got := machineState(&compute.ManagedInstance{CurrentAction: tc.action, InstanceStatus: tc.status}); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCheckOneGroup(t *testing.T) {
	a := MIG{Project: "p", Zone: "us-central1-a", Name: "ng-a"}
	b := MIG{Project: "p", Zone: "us-central1-b", Name: "ng-b"}
	a2 := MIG{Project: "p", Zone: "us-central1-a", Name: "other"}
	r := MIG{Project: "p", Region: "us-central1", Name: "ng"}
	for _, tc := range []struct {
		name string
		migs []MIG
		ok   bool
	}{
		{"one zonal", []MIG{a}, true},
		{"one regional", []MIG{r}, true},
		{"one per zone", []MIG{a, b}, true},
		{"two in a zone", []MIG{a, a2}, false},
		{"a regional among others", []MIG{a, r}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkOneGroup(tc.migs); (err == nil) != tc.ok {
				t.Errorf("err %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		total int64
		first int
		room  int64
		want  []int64
	}{
		{"eks scale-up: the zone worked on up to its old ones, then even", []int64{2, 2, 2}, 12, 0, 2, []int64{4, 4, 4}},
		{"surge in the second zone", []int64{2, 2, 2}, 8, 1, 2, []int64{2, 4, 2}},
		{"surge past the old ones of the zone", []int64{2, 2, 2}, 9, 2, 1, []int64{3, 3, 3}},
		{"no zone worked on: the fewest", []int64{3, 1, 2}, 8, -1, 0, []int64{3, 3, 2}},
		{"a cut off the most", []int64{4, 2, 3}, 6, -1, 0, []int64{2, 2, 2}},
		{"green's share of blue's", []int64{3, 2, 1}, 6, -1, 0, []int64{3, 2, 1}},
		{"green from zero", []int64{3, 2, 1}, 0, -1, 0, []int64{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spread(tc.sizes, tc.total, tc.first, tc.room); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGreenOfSeveralMIGs(t *testing.T) {
	n := &NodeGroup{MIGs: []MIG{
		{Project: "p", Zone: "us-central1-a", Name: "a-nodes"},
		{Project: "p", Zone: "us-central1-b", Name: "b-nodes"},
	}}
	name := n.GreenName("nodes-v1-nu-0a1b2c3d")
	greens := n.greenMIGs(name)
	if len(greens) != 2 || name != greens[0].Name+","+greens[1].Name {
		t.Fatalf("green %q is groups %+v, want one per blue group", name, greens)
	}
	for i, g := range greens {
		if g.Zone != n.MIGs[i].Zone || !strings.HasPrefix(g.Name, n.MIGs[i].Name+"-g") {
			t.Errorf("green %+v is not beside blue %+v", g, n.MIGs[i])
		}
	}
	if slices.Equal(n.groupMIGs(n.GroupName()), greens) || !slices.Equal(n.groupMIGs(name), greens) {
		t.Errorf("blue %q and green %q do not name their own groups", n.GroupName(), name)
	}
	if name == n.GreenName("nodes-v1-nu-ffffffff") {
		t.Error("two templates give one green")
	}
}

func TestCheckTemplates(t *testing.T) {
	igm := func(tmpl string) *compute.InstanceGroupManager {
		return &compute.InstanceGroupManager{InstanceTemplate: "projects/p/global/instanceTemplates/" + tmpl}
	}
	migs := []MIG{{Project: "p", Zone: "z-a", Name: "a"}, {Project: "p", Zone: "z-b", Name: "b"}}
	for _, tc := range []struct {
		name     string
		template string // --instance-template
		igms     []*compute.InstanceGroupManager
		target   string
		ok       bool
	}{
		{"one template", "", []*compute.InstanceGroupManager{igm("v1"), igm("v1")}, "v1-nu-1", true},
		{"a killed run pointed some at the target", "", []*compute.InstanceGroupManager{igm("v1"), igm("v1-nu-1")}, "v1-nu-1", true},
		{"two templates", "", []*compute.InstanceGroupManager{igm("v1"), igm("other")}, "v1-nu-1", false},
		{"two templates, one given for all", "v2", []*compute.InstanceGroupManager{igm("v1"), igm("other")}, "v2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &NodeGroup{MIGs: migs, Template: tc.template}
			err := n.checkTemplates(tc.igms, "v1", Target{Template: tc.target})
			if (err == nil) != tc.ok {
				t.Errorf("got %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// basePattern is baseInstanceName's pattern in compute-api.json
// (InstanceGroupManager.baseInstanceName), without the "-###" form.
var basePattern = regexp.MustCompile(`^[a-z][-a-z0-9]{0,57}$`)

func TestGreenName(t *testing.T) {
	long := "nodes-us-central1-a-production-cluster-example-com-k8s-local" // 60, kOps-style
	for _, tc := range []struct {
		name, blue, version string
		want                string // prefix of the green name
	}{
		{"short", "demo", "demo-v2", "demo-g"},
		{"green of a green does not compound", greenName("demo", "demo-v2"), "demo-v3", "demo-g"},
		{"long kOps-style name", long, "v2", long[:45]},
		{"green of a long green", greenName(long, "v2"), "v3", long[:45]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := greenName(tc.blue, tc.version)
			if len(got) > maxBaseName || !basePattern.MatchString(got) || !namePattern.MatchString(got) {
				t.Errorf("green %q (%d characters) is no valid name and baseInstanceName", got, len(got))
			}
			if !strings.HasPrefix(got, tc.want) || strings.Count(got, "-g") > strings.Count(tc.want, "-g")+1 {
				t.Errorf("green of %q is %q, want %q and one green suffix", tc.blue, got, tc.want+"…")
			}
			if got != greenName(tc.blue, tc.version) || got == greenName(tc.blue, tc.version+"x") || got == tc.blue {
				t.Errorf("green %q is not deterministic, or not one per version", got)
			}
		})
	}
	// Blues alike in their first 50 characters keep distinct greens.
	if a, b := greenName(long+"-a", "v2"), greenName(long+"-b", "v2"); a == b {
		t.Errorf("blues %q and %q have one green %q", long+"-a", long+"-b", a)
	}
}
