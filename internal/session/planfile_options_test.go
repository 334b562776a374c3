package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// fakePrometheus answers every query with the value v holds (a float's
// text), as Prometheus's HTTP API does (instant and range queries).
func fakePrometheus(t *testing.T, v *atomic.Value) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := float64(time.Now().Unix())
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[%g,%q]]}]}}`, now, v.Load())
			return
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%g,%q]}]}}`, now, v.Load())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPlanFileRunsAsThePlainRun: each of the options a plain run has
// (plan.Options, the one list) holds for run --plan-file of a plan saved
// with it: the request carries it, and the checks before the start
// (blockers, the gates' verdicts) are those a plain run finds now, not
// those saved. Given again with --plan-file, an option is refused.
func TestPlanFileRunsAsThePlainRun(t *testing.T) {
	var value atomic.Value
	value.Store("0.001")
	prom := fakePrometheus(t, &value)
	tests := []struct {
		name string
		set  func(*plan.Request)
		// bad changes the cluster's health after the plan is saved.
		bad          func()
		wantBlockers []string
	}{
		{name: "force", set: func(r *plan.Request) { r.Force = true }},
		{name: "delete-emptydir-data", set: func(r *plan.Request) { r.DeleteEmptyDirData = true }, wantBlockers: []string{"bare-pod"}},
		{name: "make-room", set: func(r *plan.Request) { r.MakeRoom = true }, wantBlockers: []string{"bare-pod"}},
		{name: "blue-green settings", set: func(r *plan.Request) { r.BlueGreen = plan.BlueGreenInput{BatchNodes: 2, BatchSoak: time.Minute} }, wantBlockers: []string{"bare-pod"}},
		{name: "waves and a gate made bad after the plan", set: func(r *plan.Request) {
			r.Force = true
			r.Waves = plan.Waves{Sizes: []string{"1"}, Soak: time.Minute, Gates: []string{"prometheus:max(errors_ratio)<0.01"}, PrometheusURL: prom, OnFail: plan.OnGateFailPause}
		}, bad: func() { value.Store("0.5") }, wantBlockers: []string{"gate-failing"}},
	}
	covered := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			value.Store("0.001")
			s, flags := planFileSession(t)
			tc.set(&flags)
			recordCovered(covered, plan.OptionsOf(flags))
			saved := planOf(t, s, &Request{Request: flags})
			file := filepath.Join(t.TempDir(), "plan.json")
			b, err := json.Marshal(saved.Plan)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.bad != nil {
				tc.bad()
			}
			plain := planOf(t, s, &Request{Request: flags})
			r := &Request{Request: plan.Request{PlanFile: file, DrainTimeout: time.Minute, TerminateTimeout: time.Minute, NodeReadyTimeout: time.Minute, MaxAge: time.Hour}, Given: map[string]bool{}}
			if err := r.LoadPlanFile(); err != nil {
				t.Fatal(err)
			}
			fromFile := planOf(t, s, r)
			if got, want := plan.OptionsOf(r.Request), plan.OptionsOf(flags); !reflect.DeepEqual(got, want) {
				t.Errorf("run --plan-file runs with options %+v, want the plan's %+v", got, want)
			}
			for what, pl := range map[string]*Planned{"plain run": plain, "run --plan-file": fromFile} {
				if got := blockerChecks(pl.Plan); !slices.Equal(got, tc.wantBlockers) {
					t.Errorf("%s: blockers %q, want %q", what, got, tc.wantBlockers)
				}
			}
			if plain.Waves != nil && !reflect.DeepEqual(verdictsPass(fromFile.Plan), verdictsPass(plain.Plan)) {
				t.Errorf("run --plan-file shows gate verdicts %v, a plain run %v", verdictsPass(fromFile.Plan), verdictsPass(plain.Plan))
			}
			for _, name := range plan.OptionFlags {
				again := &Request{Request: plan.Request{PlanFile: file}, Given: map[string]bool{name: true}}
				if err := again.LoadPlanFile(); err == nil || !strings.Contains(err.Error(), "--"+name+" cannot be used with --plan-file") {
					t.Errorf("--%s given with --plan-file: error %v, want a refusal naming it", name, err)
				}
			}
		})
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[plan.Options]()) {
		if !covered[f.Name] {
			t.Errorf("plan.Options.%s is tested by no case: add one", f.Name)
		}
	}
}

// planFileSession is a session on group "g" of 4 outdated nodes and a current
// one, a bare pod on an outdated one, and the flags of a plain run on it.
func planFileSession(t *testing.T) (*Session, plan.Request) {
	objs := paceCluster(time.Now().Add(-time.Hour))
	current := objs[0].(*corev1.Node).DeepCopy()
	current.Name, current.Labels = "current", map[string]string{"eks.amazonaws.com/nodegroup": "g", "img": "new", corev1.LabelHostname: "current"}
	objs = append(objs, current)
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		}
	}
	objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "bare"}, Spec: corev1.PodSpec{NodeName: "n0"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	var out bytes.Buffer
	s := &Session{Client: fake.NewClientset(objs...), StateNamespace: "kube-system", IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}
	flags := plan.Request{NodeGroup: "g", TargetLabels: []string{"img=new"}, MaxUnavailable: "1", Provider: "none", Seed: 1,
		NodeReadyTimeout: time.Minute, DrainTimeout: time.Minute, TerminateTimeout: time.Minute, MaxAge: time.Hour, DeleteNode: true}
	return s, flags
}

func planOf(t *testing.T, s *Session, r *Request) *Planned {
	t.Helper()
	if err := r.ValidateRun(); err != nil {
		t.Fatal(err)
	}
	pl, err := s.Plan(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func blockerChecks(p *plan.Plan) []string {
	var out []string
	for _, f := range p.Blockers() {
		out = append(out, f.Check)
	}
	return out
}

func verdictsPass(p *plan.Plan) []bool {
	var out []bool
	if p.Waves != nil {
		for _, v := range p.Waves.Preflight {
			out = append(out, v.Pass)
		}
	}
	return out
}

// recordCovered marks the fields of o that are set.
func recordCovered(covered map[string]bool, o *plan.Options) {
	v := reflect.ValueOf(*o)
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			covered[v.Type().Field(i).Name] = true
		}
	}
}
