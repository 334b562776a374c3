package plugin

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

func TestWatchLineNamesWhatHoldsTheNodesNow(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": name[:3]}},
			Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	pdb := func(name string, allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
	}
	client := fake.NewClientset(pod("web-0"), pod("api-0"), pdb("web", 0), pdb("api", 1))
	o := &StatusOptions{client: client}
	tests := []struct {
		name  string
		phase string
		alive bool
		want  string
	}{
		{"draining", "Drain", true, "held: pod shop/web-0 by PDB shop/web on n1"},
		{"not draining", "Remove", true, ""},
		{"not alive", "Drain", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := recordFor("ng")
			r.Phase, r.InFlight = tt.phase, []string{"n1"}
			s := describeRun(r, tt.alive, "", testNow)
			held, err := o.heldNow(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			s.Held = held
			line := o.watchLine(s)
			if tt.want == "" && strings.Contains(line, "held:") || tt.want != "" && !strings.HasSuffix(line, tt.want) {
				t.Errorf("line %q, want it to end %q", line, tt.want)
			}
		})
	}
}

// TestWatchLineNamesWhatHoldsTheServicesDrain: where the service drains
// (EKS, GKE, AKS), status -w names the pods the run following it
// recorded as held, while that run lives.
func TestWatchLineNamesWhatHoldsTheServicesDrain(t *testing.T) {
	for _, tt := range []struct {
		name  string
		alive bool
		want  string
	}{
		{"the run follows", true, "held: pod shop/web-2 by PDB shop/web on n1"},
		{"the run is gone", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := recordFor("ng")
			r.Phase = "Update"
			r.Managed = &state.ManagedRecord{Group: "ng", Held: []state.HeldPod{{Node: "n1", Pod: "shop/web-2", PDB: "shop/web"}}}
			line := (&StatusOptions{}).watchLine(describeRun(r, tt.alive, "", testNow))
			if tt.want == "" && strings.Contains(line, "held:") || tt.want != "" && !strings.HasSuffix(line, tt.want) {
				t.Errorf("line %q, want it to end %q", line, tt.want)
			}
		})
	}
}
