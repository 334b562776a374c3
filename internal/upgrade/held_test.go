package upgrade

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/drain"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

// TestHeldTracker: a hold (pod and PDB) is reported once when first
// seen and keeps the time it was first seen; a read that misses it while
// its pod is still on its node (PDB status lagging an eviction) neither
// releases it nor makes it new again; it is released once the pod has
// left its node, and a hold by another PDB is new.
func TestHeldTracker(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tr := newHeldTracker(func() time.Time { return now })
	db := HeldPod{Node: "n1", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}}
	web := HeldPod{Node: "n2", Namespace: "shop", Pod: "web-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "web"}}
	dbByQuorum := db
	dbByQuorum.PDB.Name = "quorum"
	steps := []struct {
		name      string
		held      []HeldPod
		onNode    []string // pods still on their nodes
		wantFresh []string
		wantSince map[string]time.Duration // ago, by pod
	}{
		{"first seen", []HeldPod{db}, []string{"db-0"}, []string{"db-0"}, map[string]time.Duration{"db-0": 0}},
		{"still held a minute later", []HeldPod{db, web}, []string{"db-0", "web-0"}, []string{"web-0"}, map[string]time.Duration{"db-0": time.Minute, "web-0": 0}},
		{"a read without db: its PDB lags", []HeldPod{web}, []string{"db-0", "web-0"}, nil, map[string]time.Duration{"web-0": time.Minute}},
		{"db held again is not new", []HeldPod{web, db}, []string{"db-0", "web-0"}, nil, map[string]time.Duration{"web-0": 2 * time.Minute, "db-0": 3 * time.Minute}},
		{"web evicted, db held by another PDB", []HeldPod{dbByQuorum}, []string{"db-0"}, []string{"db-0"}, map[string]time.Duration{"db-0": 0}},
		{"web back on its node is a new hold", []HeldPod{dbByQuorum, web}, []string{"db-0", "web-0"}, []string{"web-0"}, map[string]time.Duration{"db-0": time.Minute, "web-0": 0}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			fresh := tr.update(st.held, func(h HeldPod) bool { return slices.Contains(st.onNode, h.Pod) })
			var names []string
			for _, h := range fresh {
				names = append(names, h.Pod)
			}
			if strings.Join(names, ",") != strings.Join(st.wantFresh, ",") {
				t.Errorf("fresh %v, want %v", names, st.wantFresh)
			}
			all := tr.all()
			if len(all) != len(st.wantSince) {
				t.Fatalf("held %v, want %d pods", all, len(st.wantSince))
			}
			for _, h := range all {
				if ago := now.Sub(h.Since); ago != st.wantSince[h.Pod] {
					t.Errorf("%s held since %s ago, want %s", h.Pod, ago, st.wantSince[h.Pod])
				}
			}
		})
		now = now.Add(time.Minute)
	}
}

// TestMarkedByService: a node the service cordoned or tainted
// unschedulable before its drain; a node with another NoSchedule taint is
// not one.
func TestMarkedByService(t *testing.T) {
	for _, tc := range []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}}, true},
		{"EKS's taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "eks.amazonaws.com/nodegroup", Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}}}}, true},
		{"a dedicated taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}}}, false},
		{"in service", corev1.Node{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := markedByService(&tc.node); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestServiceUpdateFailureNamesNodesPodsAndPDBs: the one-line error of a
// failed service update keeps what the service said and adds what held
// the nodes.
func TestServiceUpdateFailureNamesNodesPodsAndPDBs(t *testing.T) {
	f := &ServiceUpdateFailure{Service: "EKS managed node group", ID: "u-1", Group: "ng",
		Errors: []cloud.UpdateError{{Code: "PodEvictionFailure", Message: "Reached max retries while trying to evict pods from nodes in node group ng", Nodes: []string{"n1"}}},
		Held:   []HeldPod{{Node: "n1", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}}}}
	msg := f.Error()
	for _, want := range []string{"PodEvictionFailure", "nodes n1", `pod "shop/db-0" on node "n1" (PodDisruptionBudget "shop/db")`, `"kubectl nodeupgrade abort ng" puts it back`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") || f.Code() != "PodEvictionFailure" {
		t.Errorf("want one line and code PodEvictionFailure: %q, %q", msg, f.Code())
	}
}

// heldStep is what the service (or another) does to the cluster while the
// run follows it: "delete" or "terminate" a pod, "taint" (EKS's
// unschedulable taint) or "untaint" a node.
type heldStep struct{ do, name string }

// TestHeldPodsOnlyWhereTheServiceDrains: a pod is held where the service
// drains now: on a node it marked from which the run has seen a pod it
// evicts leave (or terminating), not on the nodes it marked before their
// turn (EKS's taint of every old node at its scale-up, GKE's cordon of
// all of blue), while its own eviction holds a budget at 0. A pod
// terminating is not held; pods that left before the mark, DaemonSet pods
// and a node put back in service say no drain. Where every pod left on a
// marked node is one a budget lets none go, no drain can show: those are
// named on the mark.
func TestHeldPodsOnlyWhereTheServiceDrains(t *testing.T) {
	for _, tc := range heldCases() {
		t.Run(tc.name, func(t *testing.T) {
			v, client := heldTestView(t, tc.nodes, tc.pods, tc.pdbs)
			for i, st := range tc.steps {
				heldDo(t, client, st)
				syncDrains(t, client, v, i+1)
			}
			outdated := tc.outdated
			if outdated == nil {
				outdated = slices.Sorted(maps.Keys(tc.nodes))
			}
			var got []string
			for _, h := range v.heldPods(outdated) {
				got = append(got, h.Node+"/"+h.Pod)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
		})
	}
}

type heldCase struct {
	name     string
	nodes    map[string]string // name: how marked
	pods     []*corev1.Pod
	pdbs     []*policyv1.PodDisruptionBudget
	steps    []heldStep
	outdated []string // the plan's; all the nodes when nil
	want     []string // node/pod
}

func heldCases() []heldCase {
	eks, blue, none := "taint", "cordon", ""
	web := heldPDB("web", 0, 2, 3) // maxUnavailable 1, one pod evicted
	db := heldPDB("db", 0, 2, 2)   // minAvailable 2 of 2: none ever
	return []heldCase{
		{name: "EKS tainted every old node at scale-up and drains one",
			nodes: map[string]string{"n1": eks, "n2": eks, "n3": eks},
			pods:  []*corev1.Pod{heldTestPod("web-1", "n1", "web"), heldTestPod("web-2", "n1", "web"), heldTestPod("web-3", "n2", "web"), heldTestPod("web-4", "n3", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"terminate", "web-1"}},
			want: []string{"n1/web-2"}},
		{name: "GKE cordoned all of blue and drains one batch",
			nodes: map[string]string{"n1": blue, "n2": blue, "n3": blue, "n4": blue},
			pods: []*corev1.Pod{heldTestPod("web-1", "n1", "web"), heldTestPod("web-2", "n1", "web"), heldTestPod("api-1", "n2", "api"),
				heldTestPod("web-3", "n2", "web"), heldTestPod("web-4", "n3", "web"), heldTestPod("web-5", "n4", "web")},
			pdbs: []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"delete", "web-1"}, {"terminate", "api-1"}},
			want: []string{"n1/web-2", "n2/web-3"}},
		{name: "a node drained whose pod a budget lets none go",
			nodes: map[string]string{"n1": eks, "n2": eks},
			pods:  []*corev1.Pod{heldTestPod("db-0", "n1", "db"), heldTestPod("log-1", "n1", "log"), heldTestPod("db-1", "n2", "db"), heldTestPod("log-2", "n2", "log")},
			pdbs:  []*policyv1.PodDisruptionBudget{db}, steps: []heldStep{{"delete", "log-1"}},
			want: []string{"n1/db-0"}},
		{name: "nothing can leave: a budget that lets none go holds every marked node",
			nodes: map[string]string{"n1": eks, "n2": eks, "n3": eks},
			pods:  []*corev1.Pod{heldTestPod("db-0", "n1", "db"), heldTestPod("db-1", "n2", "db"), heldTestPod("web-1", "n3", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{db, web},
			want:  []string{"n1/db-0", "n2/db-1"}},
		{name: "a re-run meets a pod terminating: it is not held, its node drains",
			nodes: map[string]string{"n1": eks, "n2": eks},
			pods:  []*corev1.Pod{terminating(heldTestPod("web-1", "n1", "web")), heldTestPod("web-2", "n1", "web"), heldTestPod("web-3", "n2", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{web},
			want:  []string{"n1/web-2"}},
		{name: "pods gone before the node was marked are no drain",
			nodes: map[string]string{"n1": none},
			pods:  []*corev1.Pod{heldTestPod("web-1", "n1", "web"), heldTestPod("web-2", "n1", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"delete", "web-1"}, {"taint", "n1"}}},
		{name: "DaemonSet and finished pods leaving are no drain",
			nodes: map[string]string{"n1": eks},
			pods:  []*corev1.Pod{daemonPod(heldTestPod("agent-1", "n1", "agent")), finished(heldTestPod("job-1", "n1", "job")), heldTestPod("web-1", "n1", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"delete", "agent-1"}, {"delete", "job-1"}}},
		{name: "a node put back in service and marked again drains anew",
			nodes: map[string]string{"n1": eks},
			pods:  []*corev1.Pod{heldTestPod("api-1", "n1", "api"), heldTestPod("web-1", "n1", "web")},
			pdbs:  []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"delete", "api-1"}, {"untaint", "n1"}, {"taint", "n1"}}},
		{name: "another node's drain says nothing of this one",
			nodes: map[string]string{"n1": eks, "other": eks}, outdated: []string{"n1"},
			pods: []*corev1.Pod{heldTestPod("web-1", "n1", "web"), heldTestPod("api-1", "other", "api"), heldTestPod("web-2", "other", "web")},
			pdbs: []*policyv1.PodDisruptionBudget{web}, steps: []heldStep{{"delete", "api-1"}}},
	}
}

const heldNS = "shop"

// heldPDB is a budget over the pods of app with its status as the
// disruption controller would write it.
func heldPDB(app string, allowed, desired, expected int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: heldNS, Name: app},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: desired, DesiredHealthy: desired, ExpectedPods: expected}}
}

func heldTestPod(name, node, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: heldNS, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func daemonPod(p *corev1.Pod) *corev1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	return p
}

func finished(p *corev1.Pod) *corev1.Pod {
	p.Status.Phase = corev1.PodSucceeded
	return p
}

// markNode marks n as the service does: EKS's taint, or a cordon.
func markNode(n *corev1.Node, how string) {
	n.Spec.Unschedulable = how == "cordon"
	n.Spec.Taints = nil
	if how == "taint" {
		n.Spec.Taints = []corev1.Taint{{Key: "eks.amazonaws.com/nodegroup", Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule}}
	}
}

// heldTestView is the view of a cluster of the nodes (and a marked node
// "sentinel" for syncDrains), pods and PDBs, watching the PDBs and the
// drains as a run following a service does.
func heldTestView(t *testing.T, nodes map[string]string, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) (*clusterView, *fake.Clientset) {
	t.Helper()
	var objs []runtime.Object
	for name, how := range maps.All(nodes) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		markNode(n, how)
		objs = append(objs, n)
	}
	sentinel := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sentinel"}}
	markNode(sentinel, "taint")
	objs = append(objs, sentinel)
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, p := range pdbs {
		objs = append(objs, p.DeepCopy())
	}
	client := fake.NewClientset(objs...)
	v := newTestClusterView(t, client)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := v.watchPDBs(ctx); err != nil {
		t.Fatal(err)
	}
	syncDrains(t, client, v, 0) // the watches are up: no step is missed
	return v, client
}

// heldDo carries out a step.
func heldDo(t *testing.T, client *fake.Clientset, st heldStep) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch st.do {
	case "delete":
		err = client.CoreV1().Pods(heldNS).Delete(ctx, st.name, metav1.DeleteOptions{})
	case "terminate":
		var p *corev1.Pod
		if p, err = client.CoreV1().Pods(heldNS).Get(ctx, st.name, metav1.GetOptions{}); err == nil {
			_, err = client.CoreV1().Pods(heldNS).Update(ctx, terminating(p), metav1.UpdateOptions{})
		}
	case "taint", "untaint":
		err = updateNode(ctx, client, st.name, map[string]string{"taint": "taint", "untaint": ""}[st.do])
	}
	if err != nil {
		t.Fatalf("%s %s: %v", st.do, st.name, err)
	}
}

func updateNode(ctx context.Context, client *fake.Clientset, name, how string) error {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	markNode(n, how)
	_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

// syncDrains returns once the view's drain notes have taken every pod and
// node event before it: a pod deleted from the marked sentinel node is
// noted after the events before it (a handler takes its events in
// order), the sentinel put back in service is forgotten after the node
// events before it; then it is marked again for the next sync. Until
// the watches are up, a step may be missed: it is tried again.
func syncDrains(t *testing.T, client *fake.Clientset, v *clusterView, i int) {
	t.Helper()
	ctx := context.Background()
	waitFor := func(what string, done func() bool, again func() error) {
		deadline := time.Now().Add(10 * time.Second)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("sync %d: %s never seen", i, what)
			}
			if err := again(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	try := 0
	waitFor("a sentinel pod deleted", func() bool { return v.drains.seen("sentinel") }, func() error {
		try++
		p := heldTestPod(fmt.Sprintf("sync-%d-%d", i, try), "sentinel", "sync")
		if _, err := client.CoreV1().Pods(heldNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
		return client.CoreV1().Pods(heldNS).Delete(ctx, p.Name, metav1.DeleteOptions{})
	})
	waitFor("the sentinel put back in service", func() bool { return !v.drains.seen("sentinel") }, func() error {
		return updateNode(ctx, client, "sentinel", "")
	})
	marked := func() bool {
		n, ok, _ := v.nodes.GetStore().GetByKey("sentinel")
		return ok && markedByService(n.(*corev1.Node))
	}
	waitFor("the sentinel marked", marked, func() error { return updateNode(ctx, client, "sentinel", "taint") })
}

// TestHeldPodsAreRecordedWhenTheyChange: the run following a service's
// update keeps the pods held now in its record, for status -w in another
// terminal; it writes the record only when they change (a hold seen
// again keeps its first sight), and again once nothing holds a node.
func TestHeldPodsAreRecordedWhenTheyChange(t *testing.T) {
	since := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	web := HeldPod{Node: "n1", Namespace: "shop", Pod: "web-2", PDB: drain.PDBStatus{Namespace: "shop", Name: "web"}, Since: since}
	db := HeldPod{Node: "n2", Namespace: "shop", Pod: "db-0", PDB: drain.PDBStatus{Namespace: "shop", Name: "db"}, Since: since}
	rec := &state.Record{Managed: &state.ManagedRecord{Group: "ng"}}
	saves := 0
	r := &managedRun{toolkit: toolkit{cfg: &Config{Record: rec}, save: func(context.Context) error { saves++; return nil }}}
	for _, tc := range []struct {
		name      string
		held      []HeldPod
		want      []string // node/pod/pdb
		wantSaves int
	}{
		{"one held", []HeldPod{web}, []string{"n1/shop/web-2/shop/web"}, 1},
		{"the same again", []HeldPod{web}, []string{"n1/shop/web-2/shop/web"}, 1},
		{"another too", []HeldPod{web, db}, []string{"n1/shop/web-2/shop/web", "n2/shop/db-0/shop/db"}, 2},
		{"none left", nil, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.recordHeld(context.Background(), tc.held); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range rec.Managed.Held {
				got = append(got, h.Node+"/"+h.Pod+"/"+h.PDB)
				if !h.Since.Equal(since) {
					t.Errorf("%s held since %s, want %s", h.Pod, h.Since, since)
				}
			}
			if !slices.Equal(got, tc.want) || saves != tc.wantSaves {
				t.Errorf("recorded %v after %d saves, want %v after %d", got, saves, tc.want, tc.wantSaves)
			}
		})
	}
}
