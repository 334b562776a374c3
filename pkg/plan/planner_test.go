package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

const (
	groupKey = "eks.amazonaws.com/nodegroup"
	imageKey = "eks.amazonaws.com/nodegroup-image"
	// versionLabel is the node label naming the node's launch template
	// version, as EKS's (see CloudGroup.VersionLabel).
	versionLabel = "eks.amazonaws.com/sourceLaunchTemplateVersion"
)

// node is a Ready node with room for 4 CPUs and 110 pods.
func node(name, group, zone, image string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		groupKey: group, ZoneLabel: zone, imageKey: image, corev1.LabelHostname: name,
	}}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

func pod(ns, name, nodeName string, app string, owner string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if owner != "" {
		kind, oname, _ := strings.Cut(owner, "/")
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: oname, Controller: ptr.To(true), APIVersion: "apps/v1"}}
	}
	return p
}

func pdb(ns, name, app string, allowed int32) policyv1.PodDisruptionBudget {
	return policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2},
	}
}

func baseInput() Input {
	return Input{
		NodeGroup:      "ng",
		NodeGroupLabel: groupKey,
		TargetLabels:   map[string]string{imageKey: "ami-new"},
		MaxUnavailable: "2",
		Taint:          corev1.Taint{Key: groupKey, Value: "unschedulable", Effect: corev1.TaintEffectNoSchedule},
		Provider:       "none",
		Seed:           7,
	}
}

// group of 6 outdated and 3 current nodes over 3 zones, plus a node of another group.
func groupSnapshot() snapshot.Cluster {
	var s snapshot.Cluster
	zones := []string{"a", "b", "c"}
	for i := range 6 {
		s.Nodes = append(s.Nodes, node(fmt.Sprintf("old-%d", i), "ng", zones[i%3], "ami-old"))
	}
	for i := range 3 {
		s.Nodes = append(s.Nodes, node(fmt.Sprintf("new-%d", i), "ng", zones[i%3], "ami-new"))
	}
	s.Nodes = append(s.Nodes, node("other-0", "other", "a", "ami-old"))
	return s
}

func TestBuildSelectsOutdatedNodesAndBatches(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable string
		wantBatchSizes []int
		wantMax        int
	}{
		{"one at a time", "1", []int{1, 1, 1, 1, 1, 1}, 1},
		{"two at a time", "2", []int{2, 2, 2}, 2},
		{"more than outdated", "100", []int{6}, 100},
		{"percentage of the group rounds down", "25%", []int{2, 2, 2}, 2},
		{"small percentage is at least one", "1%", []int{1, 1, 1, 1, 1, 1}, 1},
		{"whole group", "100%", []int{6}, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput()
			in.MaxUnavailable = tc.maxUnavailable
			p, err := Build(groupSnapshot(), in)
			if err != nil {
				t.Fatal(err)
			}
			if p.MaxUnavailable != tc.wantMax {
				t.Errorf("MaxUnavailable = %d, want %d", p.MaxUnavailable, tc.wantMax)
			}
			var sizes []int
			for _, b := range p.Batches {
				sizes = append(sizes, len(b.Nodes))
			}
			if !reflect.DeepEqual(sizes, tc.wantBatchSizes) {
				t.Errorf("batch sizes = %v, want %v", sizes, tc.wantBatchSizes)
			}
			if p.Nodes != (NodeCounts{Total: 9, Outdated: 6, Current: 3}) {
				t.Errorf("counts = %+v", p.Nodes)
			}
			for _, name := range p.OutdatedNames() {
				if !strings.HasPrefix(name, "old-") {
					t.Errorf("node %q planned for a drain, but it carries the target labels or is in another group", name)
				}
			}
			if !reflect.DeepEqual(p.Zones, []string{"a", "b", "c"}) {
				t.Errorf("zones = %v", p.Zones)
			}
		})
	}
}

func TestBuildIsReproducibleBySeed(t *testing.T) {
	for _, order := range []string{OrderRandom, OrderZoneBalanced} {
		t.Run(order, func(t *testing.T) {
			build := func(seed int64) *Plan {
				in := baseInput()
				in.Seed, in.Order = seed, order
				p, err := Build(groupSnapshot(), in)
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			first, _ := json.Marshal(build(7))
			second, _ := json.Marshal(build(7))
			if string(first) != string(second) {
				t.Fatal("same seed gave different plans")
			}
			// The batches, not just the recorded seed, change with the seed.
			want := fmt.Sprint(build(7).OutdatedNames())
			differs := false
			for seed := int64(1); seed < 10; seed++ {
				if fmt.Sprint(build(seed).OutdatedNames()) != want {
					differs = true
				}
			}
			if !differs {
				t.Fatal("the seed never changes the order: the choice is not random")
			}
		})
	}
}

func TestBuildSkipsDoneNodes(t *testing.T) {
	snap := groupSnapshot()
	snap.Nodes[0].Labels[StateLabel] = StateDone
	p, err := Build(snap, baseInput())
	if err != nil {
		t.Fatal(err)
	}
	if p.Nodes.Outdated != 5 || p.Nodes.Done != 1 || !reflect.DeepEqual(p.Done, []string{"old-0"}) {
		t.Fatalf("counts %+v done %v", p.Nodes, p.Done)
	}
}

func TestBuildBlockers(t *testing.T) {
	ds := pod("ns", "ds-pod", "old-0", "ds", "DaemonSet/ds")
	mirror := pod("kube-system", "static", "old-0", "static", "")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	done := pod("ns", "finished", "old-0", "job", "")
	done.Status.Phase = corev1.PodSucceeded
	emptyDir := pod("ns", "cache", "old-0", "cache", "ReplicaSet/cache-1")
	emptyDir.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	web := func(name, node string) corev1.Pod { return pod("ns", name, node, "web", "ReplicaSet/web-1") }
	webPDB := []policyv1.PodDisruptionBudget{pdb("ns", "web", "web", 1)}
	selecting := func(sel map[string]string, affinity *corev1.Affinity) corev1.Pod {
		p := web("web-1", "old-0")
		p.Spec.NodeSelector, p.Spec.Affinity = sel, affinity
		return p
	}
	sharing := func(sel map[string]string) []corev1.Pod {
		a, b := selecting(sel, nil), selecting(sel, nil)
		b.Name = "web-3"
		return []corev1.Pod{a, b, web("web-2", "new-0")}
	}
	onImage := func(image string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: imageKey, Operator: corev1.NodeSelectorOpIn, Values: []string{image}}}}}}}}
	}
	// db-0 on old-0 mounts claim data, bound to volume pv whose node
	// affinity requires key=value.
	db := web("db-0", "old-0")
	db.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	claim := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}}}
	volume := func(key, value string) []corev1.PersistentVolume {
		return []corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}}}}}}
	}

	tests := []struct {
		name   string
		pods   []corev1.Pod
		pdbs   []policyv1.PodDisruptionBudget
		pvcs   []corev1.PersistentVolumeClaim
		pvs    []corev1.PersistentVolume
		force  bool
		emptyD bool
		want   []string // blocker check names on old-0
		pods0  int      // pods to evict on old-0
	}{
		{name: "managed pods with room in their PDB", pods: []corev1.Pod{web("web-1", "old-0"), web("web-2", "new-0")}, pdbs: []policyv1.PodDisruptionBudget{pdb("ns", "web", "web", 1)}, pods0: 1},
		{name: "PDB allowing no disruption", pods: []corev1.Pod{web("web-1", "old-0"), web("web-2", "new-0")}, pdbs: []policyv1.PodDisruptionBudget{pdb("ns", "web", "web", 0)}, want: []string{check.CheckPDBZeroDisruptions}, pods0: 1},
		{name: "several PDBs", pods: []corev1.Pod{web("web-1", "old-0"), web("web-2", "new-0")}, pdbs: []policyv1.PodDisruptionBudget{pdb("ns", "a", "web", 1), pdb("ns", "b", "web", 1)}, want: []string{check.CheckMultiplePDBs}, pods0: 1},
		{name: "bare pod", pods: []corev1.Pod{pod("ns", "bare", "old-0", "bare", "")}, want: []string{check.CheckBarePod}, pods0: 1},
		{name: "bare pod with force is a warning", pods: []corev1.Pod{pod("ns", "bare", "old-0", "bare", "")}, force: true, pods0: 1},
		{name: "emptyDir blocks without --delete-emptydir-data", pods: []corev1.Pod{emptyDir, pod("ns", "cache-2", "new-0", "cache", "ReplicaSet/cache-1")}, pdbs: []policyv1.PodDisruptionBudget{pdb("ns", "cache", "cache", 1)}, want: []string{check.CheckEmptyDirData}, pods0: 1},
		{name: "emptyDir allowed", pods: []corev1.Pod{emptyDir, pod("ns", "cache-2", "new-0", "cache", "ReplicaSet/cache-1")}, pdbs: []policyv1.PodDisruptionBudget{pdb("ns", "cache", "cache", 1)}, emptyD: true, pods0: 1},
		{name: "daemonset, mirror and finished pods are left alone", pods: []corev1.Pod{ds, mirror, done}, pods0: 0},
		{name: "pod pinned to its outdated node by hostname", pods: []corev1.Pod{selecting(map[string]string{corev1.LabelHostname: "old-0"}, nil), web("web-2", "new-0")}, pdbs: webPDB,
			want: []string{check.CheckPodCannotMove}, pods0: 1},
		// one selector map for both pods, as the snapshot interns them
		{name: "pods sharing a selector pinned to their outdated node", pods: sharing(map[string]string{corev1.LabelHostname: "old-0"}),
			pdbs: webPDB, want: []string{check.CheckPodCannotMove}, pods0: 2},
		{name: "pods sharing a selector a staying node matches", pods: sharing(map[string]string{ZoneLabel: "b"}), pdbs: webPDB, pods0: 2},
		{name: "pod selecting its zone moves to the replacement", pods: []corev1.Pod{selecting(map[string]string{ZoneLabel: "a"}, nil), web("web-2", "new-0")}, pdbs: webPDB, pods0: 1},
		{name: "pod requiring the target image moves to the replacement", pods: []corev1.Pod{selecting(nil, onImage("ami-new")), web("web-2", "new-0")}, pdbs: webPDB, pods0: 1},
		// other-0, of another group, runs the old image and stays.
		{name: "pod requiring the old image moves to another group's node", pods: []corev1.Pod{selecting(nil, onImage("ami-old")), web("web-2", "new-0")}, pdbs: webPDB, pods0: 1},
		{name: "pod on a local volume of its outdated node", pods: []corev1.Pod{db, web("web-2", "new-0")}, pdbs: webPDB, pvcs: claim, pvs: volume(corev1.LabelHostname, "old-0"),
			want: []string{check.CheckPodCannotMove}, pods0: 1},
		{name: "pod on a zonal disk moves within its zone", pods: []corev1.Pod{db, web("web-2", "new-0")}, pdbs: webPDB, pvcs: claim, pvs: volume(ZoneLabel, "a"), pods0: 1},
		{name: "pod on a disk of a zone no node reaches", pods: []corev1.Pod{db, web("web-2", "new-0")}, pdbs: webPDB, pvcs: claim, pvs: volume(ZoneLabel, "gone"),
			want: []string{check.CheckPodCannotMove}, pods0: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := groupSnapshot()
			snap.Pods, snap.PDBs, snap.PVCs, snap.PVs = tc.pods, tc.pdbs, tc.pvcs, tc.pvs
			in := baseInput()
			in.Force, in.DeleteEmptyDir = tc.force, tc.emptyD
			p, err := Build(snap, in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range p.Blockers() {
				got = append(got, f.Check)
				if f.Fix == "" || f.Message == "" {
					t.Errorf("blocker %+v: want a message and a fix", f)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("blockers %q, want %q; findings %+v", got, tc.want, p.Findings)
			}
			for _, f := range p.Blockers() {
				if f.Check == check.CheckPodCannotMove && tc.pvs != nil && !strings.Contains(f.Message, `PersistentVolume "pv"`) {
					t.Errorf("message %q must name the volume that pins the pod", f.Message)
				}
			}
			for _, b := range p.Batches {
				for _, n := range b.Nodes {
					if n.Name != "old-0" {
						continue
					}
					if len(n.Pods) != tc.pods0 {
						t.Errorf("old-0 evicts %v, want %d pods", n.Pods, tc.pods0)
					}
					if !reflect.DeepEqual(n.Blockers, tc.want) {
						t.Errorf("old-0 blockers column %q, want %q", n.Blockers, tc.want)
					}
				}
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	tests := []struct {
		name    string
		call    func() error
		wantMsg string
	}{
		{"max-unavailable 0", func() error { _, err := ParseMaxUnavailable("0", 9); return err }, `invalid --max-unavailable "0"`},
		{"max-unavailable 101", func() error { _, err := ParseMaxUnavailable("101", 9); return err }, `invalid --max-unavailable "101"`},
		{"max-unavailable -1", func() error { _, err := ParseMaxUnavailable("-1", 9); return err }, `invalid --max-unavailable "-1"`},
		{"max-unavailable abc", func() error { _, err := ParseMaxUnavailable("abc", 9); return err }, `invalid --max-unavailable "abc"`},
		{"max-unavailable 150%", func() error { _, err := ParseMaxUnavailable("150%", 9); return err }, `invalid --max-unavailable "150%"`},
		{"max-unavailable 0%", func() error { _, err := ParseMaxUnavailable("0%", 9); return err }, `invalid --max-unavailable "0%"`},
		{"target-label without =", func() error { _, err := ParseTargetLabels([]string{"image"}); return err }, `invalid --target-label "image"`},
		{"target-label bad key", func() error { _, err := ParseTargetLabels([]string{"bad key=v"}); return err }, `invalid --target-label "bad key=v"`},
		{"target-label empty key", func() error { _, err := ParseTargetLabels([]string{"=v"}); return err }, `invalid --target-label "=v"`},
		{"taint without effect", func() error { _, err := ParseTaint("a=b"); return err }, `invalid --taint "a=b"`},
		{"taint bad effect", func() error { _, err := ParseTaint("a=b:Sometimes"); return err }, `invalid --taint "a=b:Sometimes"`},
		{"unknown node group", func() error {
			_, err := ResolveNodeGroupLabel(groupSnapshot().Nodes, "nope", "", knownLabels)
			return err
		}, `node group "nope" not found`},
		{"unknown node group with key", func() error {
			_, err := ResolveNodeGroupLabel(groupSnapshot().Nodes, "ng", "pool", knownLabels)
			return err
		}, `node group "ng" not found: no node has label pool=ng; check --nodegroup-label`},
		{"selector matching nothing", func() error { in := baseInput(); in.Selector = "x=y"; _, err := Build(groupSnapshot(), in); return err }, `no node matches --selector "x=y"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an InputError", err)
			}
			if !strings.HasPrefix(err.Error(), tc.wantMsg) {
				t.Errorf("error %q, want prefix %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), "\n") || strings.HasSuffix(err.Error(), ".") {
				t.Errorf("error %q must be one line without a trailing period", err)
			}
		})
	}
}

func TestResolveNodeGroupLabel(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"cloud.google.com/gke-nodepool": "pool-1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"karpenter.sh/nodepool": "np", "kops.k8s.io/instancegroup": "np"}}},
	}
	key, err := ResolveNodeGroupLabel(nodes, "pool-1", "", knownLabels)
	if err != nil || key != "cloud.google.com/gke-nodepool" {
		t.Fatalf("got %q %v", key, err)
	}
	if _, err := ResolveNodeGroupLabel(nodes, "np", "", knownLabels); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("want ambiguity error, got %v", err)
	}
	if key, err := ResolveNodeGroupLabel(nodes, "np", "kops.k8s.io/instancegroup", knownLabels); err != nil || key != "kops.k8s.io/instancegroup" {
		t.Fatalf("explicit key: got %q %v", key, err)
	}
}

func TestZoneBalancedKeepsPDBBudget(t *testing.T) {
	// Both replicas of "pair" sit in zone a, where a zone-by-zone batch of 2
	// would take them together; its PDB allows one disruption.
	snap := groupSnapshot()
	snap.Pods = []corev1.Pod{pod("ns", "pair-1", "old-0", "pair", "ReplicaSet/pair-1"), pod("ns", "pair-2", "old-3", "pair", "ReplicaSet/pair-1")}
	snap.PDBs = []policyv1.PodDisruptionBudget{pdb("ns", "pair", "pair", 1)}
	together := func(p *Plan) bool {
		for _, b := range p.Batches {
			names := map[string]bool{}
			for _, n := range b.Nodes {
				names[n.Name] = true
			}
			if names["old-0"] && names["old-3"] {
				return true
			}
		}
		return false
	}
	randomPaired := 0
	for seed := int64(1); seed <= 30; seed++ {
		for _, order := range []string{OrderZoneBalanced, OrderRandom} {
			in := baseInput()
			in.Seed, in.Order = seed, order
			p, err := Build(snap, in)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case order == OrderRandom && together(p):
				randomPaired++
			case order == OrderZoneBalanced:
				if together(p) {
					t.Errorf("seed %d: zone-balanced batch takes both replicas of a PDB allowing 1", seed)
				}
				if len(p.Notes) != 0 {
					t.Errorf("seed %d: unexpected notes %q", seed, p.Notes)
				}
				for _, b := range p.Batches {
					if len(b.Nodes) != 2 {
						t.Errorf("seed %d: batch %d has %d nodes, want 2", seed, b.Number, len(b.Nodes))
					}
				}
			}
		}
	}
	if randomPaired == 0 {
		t.Fatal("the random order never paired the replicas: the scenario does not test anything")
	}
}

func TestZoneBalancedTakesFewZonesPerBatch(t *testing.T) {
	in := baseInput()
	in.Order = OrderZoneBalanced
	p, err := Build(groupSnapshot(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Batches {
		zones := map[string]bool{}
		for _, n := range b.Nodes {
			zones[n.Zone] = true
		}
		if len(zones) != 1 {
			t.Errorf("batch %d spans zones %v; each zone has 2 outdated nodes, so 1 zone per batch is possible", b.Number, zones)
		}
	}
}

// TestComparePodKeys: pods sort as their "namespace/name" keys do, also
// where one namespace starts another ("/" sorts after "-" and before "0").
func TestComparePodKeys(t *testing.T) {
	for _, tc := range []struct{ a, b [2]string }{
		{[2]string{"ns", "a"}, [2]string{"ns", "b"}},
		{[2]string{"ns", "b"}, [2]string{"ns", "a"}},
		{[2]string{"ns", "a"}, [2]string{"ns", "a"}},
		{[2]string{"a", "x"}, [2]string{"b", "a"}},
		{[2]string{"a", "x"}, [2]string{"a-b", "y"}},
		{[2]string{"a-b", "y"}, [2]string{"a", "x"}},
		{[2]string{"a", "x"}, [2]string{"a0", "y"}},
		{[2]string{"a0", "y"}, [2]string{"a", "x"}},
		{[2]string{"", "x"}, [2]string{"a", "y"}},
		{[2]string{"team-a", "web-1"}, [2]string{"team", "web-1"}},
	} {
		a, b := pod(tc.a[0], tc.a[1], "n", "app", ""), pod(tc.b[0], tc.b[1], "n", "app", "")
		t.Run(podKey(&a)+" vs "+podKey(&b), func(t *testing.T) {
			if got, want := comparePodKeys(&a, &b), strings.Compare(podKey(&a), podKey(&b)); got != want {
				t.Errorf("got %d, want %d", got, want)
			}
		})
	}
}

// TestReplacementInput: pods that select blue's node-group label can run
// nowhere once green's nodes carry green's name in it (EKS managed node
// groups); the pinned-pod check takes the replacements' labels so.
func TestReplacementInput(t *testing.T) {
	const label = "eks.amazonaws.com/nodegroup"
	in := Input{TargetLabels: map[string]string{imageKey: "ami-new"}}
	for _, tc := range []struct {
		name string
		bg   *BlueGreenPlan
		want map[string]string
	}{
		{name: "in place", want: map[string]string{imageKey: "ami-new"}},
		{name: "green with blue's labels", bg: &BlueGreenPlan{Green: "ng-v2", Create: true}, want: map[string]string{imageKey: "ami-new"}},
		{name: "green labelled with its own name", bg: &BlueGreenPlan{Green: "ng-v2", Create: true, GreenLabel: label},
			want: map[string]string{imageKey: "ami-new", label: "ng-v2"}},
		{name: "a green someone else made", bg: &BlueGreenPlan{Green: "other", GreenLabel: label}, want: map[string]string{imageKey: "ami-new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{BlueGreen: tc.bg}
			if got := p.replacementInput(in).TargetLabels; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("labels %v, want %v", got, tc.want)
			}
			if len(in.TargetLabels) != 1 {
				t.Errorf("the input's labels changed: %v", in.TargetLabels)
			}
		})
	}
}

// knownLabels are the node-group labels the registered clouds name.
var knownLabels = []string{"alpha.eksctl.io/nodegroup-name", "cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool", "kops.k8s.io/instancegroup"}
