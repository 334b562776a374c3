package upgrade

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

var deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")

// handoverCluster is two outdated nodes, one batch each, and a current
// one, running two Deployments ("fast" and "slow") of 2 replicas, one
// pod of each on each outdated node.
func handoverCluster() []runtime.Object {
	objs := []runtime.Object{
		imageNode("old-1", "z1", "old"), imageNode("old-2", "z1", "old"), imageNode("new-1", "z1", "new"),
	}
	for _, app := range []string{"fast", "slow"} {
		objs = append(objs,
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app, Generation: 1},
				Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, AvailableReplicas: 2}},
			&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app + "-1", Generation: 1,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: app, Controller: ptr.To(true)}}},
				Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)},
				Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: 2, AvailableReplicas: 2}})
		for _, node := range []string{"old-1", "old-2"} {
			objs = append(objs, replicaPod(app, app+"-"+node, node))
		}
	}
	return objs
}

// replicaPod is a pod of app's ReplicaSet.
func replicaPod(app, name, node string) *corev1.Pod {
	return testPod(name, node, "100m", func(p *corev1.Pod) {
		p.UID = types.UID("uid-" + name)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-1", UID: types.UID("rs-" + app), Controller: ptr.To(true)}}
	})
}

// TestRecoverHandsOverToTheNextBatch: a batch's Recover ends once the
// evicted workloads have their pods on nodes again, and the next batch
// evicts a workload's pods only once that workload is Ready again, each
// on its own: "fast" is back at once and its pod of the second batch goes
// while "slow" is still recovering; "slow"'s waits for it.
func TestRecoverHandsOverToTheNextBatch(t *testing.T) {
	tests := []struct {
		name string
		// slowComesBack: "slow" is Ready again once "fast"'s pod of the
		// second batch is evicted; otherwise never
		slowComesBack bool
		// bindLater: the replacements are made unscheduled, and bound to
		// "new-1" only once both pods of the first batch are gone
		bindLater bool
		wantErr   string
	}{
		{name: "each workload's pods go as soon as it is back", slowComesBack: true},
		{name: "replacements not yet scheduled: the next batch waits for them", slowComesBack: true, bindLater: true},
		{name: "a workload that does not recover stops the next batch's drain", wantErr: "workloads evicted in batch 1 did not recover within 2s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newTestClient(handoverCluster()...)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			if len(p.Batches) != 2 {
				t.Fatalf("plan has %d batches, want 2", len(p.Batches))
			}
			first, second := p.Batches[0].Nodes[0].Name, p.Batches[1].Nodes[0].Name

			var mu sync.Mutex
			var log []string // what happened, in order
			note := func(s string) {
				mu.Lock()
				log = append(log, s)
				mu.Unlock()
			}
			setAvailable := func(app string, n int32) {
				obj, err := client.Tracker().Get(deploymentsResource, "ns", app)
				if err != nil {
					t.Error(err)
					return
				}
				d := obj.(*appsv1.Deployment).DeepCopy()
				d.Status.AvailableReplicas = n
				if err := client.Tracker().Update(deploymentsResource, d, "ns"); err != nil {
					t.Error(err)
				}
			}
			var unbound []*corev1.Pod
			client.afterEvict = func(_, name string) {
				app, node, _ := strings.Cut(name, "-")
				note("evicted " + name)
				if app == "slow" && node == first {
					setAvailable("slow", 1)
				}
				r := replicaPod(app, name+"-again", "new-1")
				if tt.bindLater && node == first {
					r.Spec.NodeName = ""
					unbound = append(unbound, r)
				}
				if err := client.Tracker().Add(r); err != nil {
					t.Error(err)
				}
				if len(unbound) == 2 {
					pods := unbound
					unbound = nil
					go func() {
						time.Sleep(100 * time.Millisecond) // past the drain's end
						note("bound")
						for _, r := range pods {
							p, err := client.CoreV1().Pods("ns").Get(context.Background(), r.Name, metav1.GetOptions{})
							if err == nil {
								p.Spec.NodeName = "new-1"
								_, err = client.CoreV1().Pods("ns").Update(context.Background(), p, metav1.UpdateOptions{})
							}
							if err != nil {
								t.Error(err)
							}
						}
					}()
				}
				if app == "fast" && node == second && tt.slowComesBack {
					note("slow back")
					setAvailable("slow", 2)
				}
			}
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Events: NewRecorder(client, nil), Record: &state.Record{}}
			if tt.wantErr != "" {
				cfg.RecoverTimeout = 2 * time.Second
			}
			got := runEngine(t, cfg, func(s plan.State) { note(phaseName(s)) })
			mu.Lock()
			defer mu.Unlock()
			if tt.wantErr != "" {
				if got.err == nil || !strings.Contains(got.err.Error(), tt.wantErr) || !strings.Contains(got.err.Error(), `Deployment "ns/slow" has 1/2 available`) {
					t.Fatalf("run: %v, want an error with %q naming the Deployment\n%s", got.err, tt.wantErr, got.out)
				}
				if slices.Contains(log, "evicted slow-"+second) {
					t.Errorf("the pod of the workload that did not recover was evicted: %v", log)
				}
				if !slices.Contains(log, "evicted fast-"+second) {
					t.Errorf("the pod of the workload that recovered was not evicted: %v", log)
				}
				held := `node "` + second + `": pod "ns/slow-` + second + `" waits for ReplicaSet "ns/slow-1", evicted in batch 1, to be Ready again`
				if !strings.Contains(got.out, held) || strings.Contains(got.out, `pod "ns/fast-`+second+`" waits`) {
					t.Errorf("the output does not say only that slow's pod waits (%q):\n%s", held, got.out)
				}
				if !slices.Contains(cfg.Record.Recovering, Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "slow-1"}) {
					t.Errorf("the record's recovering workloads %v lack the one that did not recover", cfg.Record.Recovering)
				}
				return
			}
			if got.err != nil {
				t.Fatalf("run: %v\n%s\n%v", got.err, got.out, log)
			}
			at := func(s string) int {
				i := slices.Index(log, s)
				if i < 0 {
					t.Fatalf("%q did not happen: %v", s, log)
				}
				return i
			}
			if !(at("WaitForRoom 2") < at("slow back") && at("evicted fast-"+second) < at("slow back") && at("slow back") < at("evicted slow-"+second)) {
				t.Errorf("want the second batch to start and evict fast's pod while slow recovers, and slow's pod after: %v", log)
			}
			if tt.bindLater && at("bound") > at("WaitForRoom 2") {
				t.Errorf("the second batch's room check came before the replacements were scheduled: %v", log)
			}
			if len(cfg.Record.Recovering) != 0 {
				t.Errorf("the record still lists recovering workloads: %v", cfg.Record.Recovering)
			}
			if !strings.Contains(got.out, "batch 1/2: waiting for 2 workloads to have their pods scheduled again") || !strings.Contains(got.out, "batch 2/2: waiting for 2 workloads to be Ready again") {
				t.Errorf("output:\n%s", got.out)
			}
		})
	}
}

// TestRerunHoldsWhatTheInterruptedRunLeftRecovering: the record of an
// interrupted run lists "slow", evicted and not Ready again yet; the run
// that goes on evicts slow's pods only once it is back, and fast's at
// once.
func TestRerunHoldsWhatTheInterruptedRunLeftRecovering(t *testing.T) {
	objs := handoverCluster()
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == "slow" {
			d.Status.AvailableReplicas = 1
		}
	}
	client := newTestClient(objs...)
	p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "2", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	var backOnce sync.Once
	var back func()
	client.afterEvict = func(_, name string) {
		app, _, _ := strings.Cut(name, "-")
		note("evicted " + name)
		if err := client.Tracker().Add(replicaPod(app, name+"-again", "new-1")); err != nil {
			t.Error(err)
		}
		if app == "fast" {
			// slow comes back well after fast's pods went: a drain that did
			// not hold slow would have evicted it by then. Measured from
			// fast's eviction, not the phase's start, so a loaded machine
			// cannot reorder the two.
			backOnce.Do(func() { time.AfterFunc(200*time.Millisecond, back) })
		}
	}
	back = func() {
		note("slow back")
		obj, err := client.Tracker().Get(deploymentsResource, "ns", "slow")
		if err == nil {
			d := obj.(*appsv1.Deployment).DeepCopy()
			d.Status.AvailableReplicas = 2
			err = client.Tracker().Update(deploymentsResource, d, "ns")
		}
		if err != nil {
			t.Error(err)
		}
	}
	rec := &state.Record{Recovering: []state.Workload{{Kind: "ReplicaSet", Namespace: "ns", Name: "slow-1"}}}
	cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Events: NewRecorder(client, nil), Record: rec}
	got := runEngine(t, cfg, nil)
	mu.Lock()
	defer mu.Unlock()
	if got.err != nil {
		t.Fatalf("run: %v\n%s\n%v", got.err, got.out, log)
	}
	first := func(prefix string) int {
		return slices.IndexFunc(log, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	if i, j := first("evicted slow-"), first("slow back"); i < 0 || j < 0 || i < j {
		t.Errorf("slow's pods were evicted before it was back: %v", log)
	}
	if i, j := first("evicted fast-"), first("slow back"); i < 0 || i > j {
		t.Errorf("fast's pods waited for slow: %v", log)
	}
	if !strings.Contains(got.out, `evicted before the run was interrupted, maybe not Ready again yet: ReplicaSet "ns/slow-1"; their pods are evicted once they are`) ||
		!strings.Contains(got.out, `waits for ReplicaSet "ns/slow-1", evicted before the run was interrupted, to be Ready again`) {
		t.Errorf("output:\n%s", got.out)
	}
	if len(rec.Recovering) != 0 {
		t.Errorf("the record still lists recovering workloads: %v", rec.Recovering)
	}
}

// TestTheRecordListsWhatADrainIsAboutToEvict: the record written as a
// batch's Drain is entered already lists the workloads of the pods on its
// nodes, so a run killed during the drain leaves them listed; the drain's
// end takes off the ones it evicted no pod of.
func TestTheRecordListsWhatADrainIsAboutToEvict(t *testing.T) {
	fast := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "fast-1"}
	slow := Owner{Kind: "ReplicaSet", Namespace: "ns", Name: "slow-1"}
	tests := []struct {
		name string
		// slowLeaves: slow's pod of the first batch is deleted once the
		// Drain state is recorded, before its eviction
		slowLeaves    bool
		afterTheDrain []Owner
	}{
		{name: "killed during the drain", afterTheDrain: []Owner{fast, slow}},
		{name: "a pod gone before its eviction", slowLeaves: true, afterTheDrain: []Owner{fast}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newTestClient(handoverCluster()...)
			p := buildPlan(t, client, plan.Input{Strategy: "eks", MaxUnavailable: "1", Provider: cloud.NoneName, TargetLabels: map[string]string{"image": "new"}})
			first := p.Batches[0].Nodes[0].Name
			client.afterEvict = func(_, name string) {
				app, _, _ := strings.Cut(name, "-")
				if err := client.Tracker().Add(replicaPod(app, name+"-again", "new-1")); err != nil {
					t.Error(err)
				}
			}
			cfg := Config{Client: client, Plan: p, Provider: &cloud.None{Client: client, DeleteNode: true}, Drain: drainOpts(), Events: NewRecorder(client, nil), Record: &state.Record{}}
			written := map[plan.State][]Owner{}
			var order []plan.State
			got := runEngine(t, cfg, func(s plan.State) {
				written[s] = slices.Clone(cfg.Record.Recovering)
				order = append(order, s)
				if s == (plan.State{Phase: plan.PhaseDrain, Batch: 0}) && tt.slowLeaves {
					if err := client.Tracker().Delete(podsResource, "ns", "slow-"+first); err != nil {
						t.Error(err)
					}
				}
			})
			if got.err != nil {
				t.Fatalf("run: %v\n%s", got.err, got.out)
			}
			drain := slices.Index(order, plan.State{Phase: plan.PhaseDrain, Batch: 0})
			if drain < 0 || drain+1 >= len(order) {
				t.Fatalf("no state recorded after the first drain: %v", order)
			}
			if w := written[order[drain]]; !slices.Equal(w, []Owner{fast, slow}) {
				t.Errorf("the record written on entering the drain lists %v, want %v", w, []Owner{fast, slow})
			}
			if w := written[order[drain+1]]; !slices.Equal(w, tt.afterTheDrain) {
				t.Errorf("the record written after the drain (%v) lists %v, want %v", order[drain+1], w, tt.afterTheDrain)
			}
			if len(cfg.Record.Recovering) != 0 {
				t.Errorf("the record still lists recovering workloads: %v", cfg.Record.Recovering)
			}
		})
	}
}
