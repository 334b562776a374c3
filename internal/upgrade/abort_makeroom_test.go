package upgrade

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestAbortSaysItPutTheSurgesBack: a run killed with a --make-room surge
// up leaves it in the record; abort scales the Deployment back and its
// last word (the note status and the record keep) names what it put back,
// and to what.
func TestAbortSaysItPutTheSurgesBack(t *testing.T) {
	t.Parallel()
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}},
		Spec:   corev1.PodSpec{NodeName: "old-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	client := newTestClient(imageNode("old-1", "z1", "old", tainted), web, pod)
	surgedAt := time.Now().Add(-time.Minute)
	rec := &state.Record{Phase: string(plan.PhaseDrain), MakeRoom: []state.Surge{{
		Surge: makeroom.Surge{Kind: "Deployment", Namespace: "shop", Name: "web", Replicas: 1, Extra: 1, Ready: 1},
		Batch: 1, State: state.SurgeUp, SurgedAt: &surgedAt, MinReady: -1}}}
	p := &plan.Plan{NodeGroup: "ng", NodeGroupLabel: groupLabel, Strategy: string(plan.DefaultStrategy)}
	out, e, err := abortRun(t, Config{Client: client, Plan: p, Provider: &cloud.None{Client: client}, Record: rec})
	if err != nil {
		t.Fatalf("abort: %v\n%s", err, out)
	}
	d, err := client.AppsV1().Deployments("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 || len(rec.Surged()) != 0 {
		t.Fatalf("the surge is not put back: %v, %d replicas, %d surged", err, *d.Spec.Replicas, len(rec.Surged()))
	}
	if want := `--make-room's surges put back: Deployment "shop/web" back to 1 replicas`; !strings.Contains(e.Note(), want) {
		t.Errorf("abort's note %q lacks %q", e.Note(), want)
	}
}
