package snapshot

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// interner hands out one copy of each string, label map and resource
// list it is given: a pod's namespace, node, labels, owner, requests and
// enumerated values repeat across the thousands of pods of a workload,
// and decoding gives each pod copies of its own (a small map alone takes
// hundreds of bytes). The snapshot's pods share what it hands out, so
// nothing may change a pod of a snapshot. It is not safe for concurrent
// use: each goroutine of listPages decodes with its own (pageSlot).
type interner struct {
	strs map[string]string
	maps map[string]map[string]string
	reqs map[string]corev1.ResourceList
	// rawMaps and rawReqs are what maps and reqs hand out, by the encoded
	// entries they were decoded from (decodePod), so that a pod whose
	// labels or requests were seen before decodes none of them.
	rawMaps map[string]map[string]string
	rawReqs map[string]corev1.ResourceList
	// the same for the slices and pointers decodePod hands out (repeated,
	// affinity), and the Ready condition by its status
	containers  map[string][]corev1.Container
	tolerations map[string][]corev1.Toleration
	volumes     map[string][]corev1.Volume
	owners      map[string][]metav1.OwnerReference
	affinities  map[string]*corev1.Affinity
	ready       map[string][]corev1.PodCondition
	// the pointers of optional scalars every pod sets alike (the API
	// server defaults enableServiceLinks and preemptionPolicy in each)
	bools       [2]*bool
	preemptions map[string]*corev1.PreemptionPolicy
	int64s      map[int64]*int64 // grace periods
	int32s      map[int32]*int32 // priorities
	// key, names, raw and scratch are reused to build lookup keys and
	// messages without allocating
	key, raw, scratch []byte
	names             []string
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, maps: map[string]map[string]string{}, reqs: map[string]corev1.ResourceList{},
		rawMaps: map[string]map[string]string{}, rawReqs: map[string]corev1.ResourceList{},
		containers: map[string][]corev1.Container{}, tolerations: map[string][]corev1.Toleration{}, volumes: map[string][]corev1.Volume{},
		owners: map[string][]metav1.OwnerReference{}, affinities: map[string]*corev1.Affinity{}, ready: map[string][]corev1.PodCondition{},
		bools: [2]*bool{new(false), new(true)}, preemptions: map[string]*corev1.PreemptionPolicy{},
		int64s: map[int64]*int64{}, int32s: map[int32]*int32{}}
}

func (in *interner) s(v string) string {
	if c, ok := in.strs[v]; ok {
		return c
	}
	in.strs[v] = v
	return v
}

// keyOf builds in.key from the sorted names and what value says of each.
func (in *interner) keyOf(names []string, value func(string) string) {
	slices.Sort(names)
	in.key = in.key[:0]
	for _, n := range names {
		in.key = append(append(append(append(in.key, n...), 0), value(n)...), 0)
	}
}

// strings returns the one map with m's keys and values.
func (in *interner) strings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	in.names = in.names[:0]
	for k := range m {
		in.names = append(in.names, k)
	}
	in.keyOf(in.names, func(k string) string { return m[k] })
	if c, ok := in.maps[string(in.key)]; ok {
		return c
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[in.s(k)] = in.s(v)
	}
	in.maps[string(in.key)] = out
	return out
}

// resources returns the one resource list with rl's quantities.
func (in *interner) resources(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	in.names = in.names[:0]
	for name := range rl {
		in.names = append(in.names, string(name))
	}
	in.keyOf(in.names, func(name string) string { q := rl[corev1.ResourceName(name)]; return q.String() })
	if c, ok := in.reqs[string(in.key)]; ok {
		return c
	}
	in.reqs[string(in.key)] = rl
	return rl
}

// pod interns the strings of a slimmed pod that many pods share.
func (in *interner) pod(p *corev1.Pod) {
	m := &p.ObjectMeta
	m.Namespace, m.GenerateName = in.s(m.Namespace), in.s(m.GenerateName)
	m.Labels, m.Annotations = in.strings(m.Labels), in.strings(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name, r.UID = in.s(r.APIVersion), in.s(r.Kind), in.s(r.Name), types.UID(in.s(string(r.UID)))
	}
	sp := &p.Spec
	sp.NodeName, sp.ServiceAccountName, sp.DeprecatedServiceAccount = in.s(sp.NodeName), in.s(sp.ServiceAccountName), in.s(sp.DeprecatedServiceAccount)
	sp.SchedulerName, sp.PriorityClassName = in.s(sp.SchedulerName), in.s(sp.PriorityClassName)
	sp.RestartPolicy, sp.DNSPolicy = corev1.RestartPolicy(in.s(string(sp.RestartPolicy))), corev1.DNSPolicy(in.s(string(sp.DNSPolicy)))
	sp.NodeSelector = in.strings(sp.NodeSelector)
	for _, cs := range [][]corev1.Container{sp.InitContainers, sp.Containers} {
		for i := range cs {
			cs[i].Name = in.s(cs[i].Name)
			cs[i].Resources.Requests = in.resources(cs[i].Resources.Requests)
		}
	}
	for i := range sp.Tolerations {
		t := &sp.Tolerations[i]
		t.Key, t.Value = in.s(t.Key), in.s(t.Value)
		t.Operator, t.Effect = corev1.TolerationOperator(in.s(string(t.Operator))), corev1.TaintEffect(in.s(string(t.Effect)))
	}
	for i := range sp.Volumes {
		sp.Volumes[i].Name = in.s(sp.Volumes[i].Name)
	}
	st := &p.Status
	st.Phase, st.QOSClass = corev1.PodPhase(in.s(string(st.Phase))), corev1.PodQOSClass(in.s(string(st.QOSClass)))
	for i := range st.Conditions {
		st.Conditions[i].Status = corev1.ConditionStatus(in.s(string(st.Conditions[i].Status)))
	}
}
