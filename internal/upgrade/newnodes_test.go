package upgrade

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

func TestWhyNotCounted(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{Cloud: &plan.CloudPlan{GroupID: plan.GroupID{Template: "lt-1", TemplateKind: "launch template"}}}
	ready := groupNode("n", "z1", "2")
	notReady := groupNode("n", "z1", "2")
	notReady.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	tainted := groupNode("n", "z1", "2")
	tainted.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	m := plan.Machine{ID: "i-1", Zone: "z1", Template: "lt-1", Version: "2", Lifecycle: "InService"}
	other := m
	other.Version = "1"
	elsewhere := m
	elsewhere.Template = "lt-9"
	pending := m
	pending.Lifecycle, pending.State = "Pending", plan.MachinePending
	for _, tc := range []struct {
		name    string
		m       plan.Machine
		n       *corev1.Node
		current bool
		want    string
	}{
		{name: "pending, no node", m: pending, want: "pending, no node has joined"},
		{name: "in service, never joined", m: m, want: "inservice, no node has joined"},
		{name: "joined, not Ready", m: m, n: notReady, current: true, want: "not Ready"},
		{name: "Ready, still tainted", m: m, n: tainted, current: true, want: "Ready, still tainted node.kubernetes.io/not-ready"},
		{name: "Ready on another version (the default moved)", m: other, n: ready, want: "Ready, but launched from launch template lt-1 version 1, not lt-1 version 2"},
		{name: "Ready from another launch template (someone else's)", m: elsewhere, n: ready, want: "Ready, but launched from launch template lt-9 version 2, not lt-1 version 2"},
		{name: "not Ready on another version", m: other, n: notReady, want: "not Ready, but launched from launch template lt-1 version 1, not lt-1 version 2"},
		{name: "counts", m: m, n: ready, current: true, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := whyNotCounted(tc.m, tc.n, tc.current, "2", p); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNodeCreationFailureNamesEveryInstance(t *testing.T) {
	t.Parallel()
	f := &NodeCreationFailure{Group: "asg", GroupKind: "Auto Scaling group", Timeout: time.Minute, Zones: []string{"z2"},
		Instances: []string{`"i-2" (z2): pending, no node has joined`},
		Others:    []string{`"i-3" (z2, node "c"): Ready, but launched from launch template lt-1 version 1, not lt-1 version 2`},
		Launched:  3, Wanted: 3, Original: plan.Sizes{Min: 1, Desired: 2, Max: 3}}
	msg := f.Error()
	for _, want := range []string{`no new Ready node in zones "z2"`, `instances not Ready: "i-2" (z2): pending, no node has joined`,
		`instances of another version, not counted: "i-3" (z2, node "c"): Ready, but launched from launch template lt-1 version 1, not lt-1 version 2`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\ndoes not say %s", msg, want)
		}
	}
}

// TestTemplateVersion: a version is named with its template, as the
// plan's header names it; Compute Engine's kind alone read "instance
// template in project version demo-v1".
func TestTemplateVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cloud *plan.CloudPlan
		want  string
	}{
		{"aws", &plan.CloudPlan{GroupID: plan.GroupID{Template: "lt-0abc", TemplateKind: "launch template"}}, "launch template lt-0abc version 2"},
		{"gce", &plan.CloudPlan{GroupID: plan.GroupID{Template: "demo-proj", TemplateKind: "instance template in project"}}, "instance template in project demo-proj version 2"},
		{"no template", &plan.CloudPlan{GroupID: plan.GroupID{TemplateKind: "Kubernetes/AMI release"}}, "Kubernetes/AMI release version 2"},
		{"no cloud", nil, "template version 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (cloudWords{cloud: tc.cloud}).templateVersion("2"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
