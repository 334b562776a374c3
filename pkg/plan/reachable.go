package plan

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// What plan proves before a run starts: that the target can be reached and
// that every pod to move has somewhere to go. Each is a blocker finding, so
// plan shows it and run refuses it (exit 2) before anything changes.

// unreachableTarget finds target labels the cloud target cannot give: the
// nodes that already run the target version carry other values, or, when
// none does yet, the nodes of the version the target copies apart from its
// image (what --ami makes, see CloudGroup.TargetLike) do; so the new nodes
// would too, and the run would replace nodes forever towards labels
// nothing sets. The labels that follow the image and the version are
// foreseen from the target itself.
func unreachableTarget(group []corev1.Node, in Input) []check.Finding {
	cg := in.Cloud
	if cg == nil || len(in.TargetLabels) == 0 {
		return nil
	}
	like, runs := nodesLikeTarget(group, cg)
	var out []check.Finding
	for _, k := range slices.Sorted(maps.Keys(in.TargetLabels)) {
		want := in.TargetLabels[k]
		got, from := "", ""
		switch {
		case k == cg.ImageLabel && cg.TargetImage != "":
			if cg.TargetImage != want {
				got, from = cg.TargetImage, "its image"
			}
		case k == cg.VersionLabel:
			if cg.TargetVersion != NewVersion && cg.TargetVersion != want {
				got, from = cg.TargetVersion, "its version number"
			}
		default:
			for _, n := range like {
				if v := n.Labels[k]; v != want {
					got, from = v, fmt.Sprintf("node %q, %s,", n.Name, runs)
					break
				}
			}
		}
		if from == "" {
			continue
		}
		out = append(out, check.Finding{
			Check: check.CheckUnreachableTarget, Severity: check.Blocker, Kind: "NodeGroup", Name: in.NodeGroup,
			Message: fmt.Sprintf("--target-label %s=%s cannot be reached: the target is %s %s version %s, and %s has %s=%s", k, want, cg.TemplateKind, cg.Template, cg.TargetVersion, from, k, orNone(got)),
			Fix:     "give the labels the target's nodes carry (set others in the " + cg.TemplateKind + " first), or use --ignore-check " + check.CheckUnreachableTarget + " if the new image sets them",
		})
	}
	return out
}

// nodesLikeTarget are the group's nodes whose labels the target's nodes
// will carry, and what they run, for messages: those that run the target
// version, else those of the version it copies apart from the image. None
// when neither runs.
func nodesLikeTarget(group []corev1.Node, cg *CloudGroup) ([]*corev1.Node, string) {
	runs := func(version string) []*corev1.Node {
		var out []*corev1.Node
		for i := range group {
			m, ok := cg.Nodes[group[i].Name]
			if ok && !m.Leaving() && version != NewVersion && version != "" && m.Template == cg.Template && m.Version == version {
				out = append(out, &group[i])
			}
		}
		return out
	}
	if nodes := runs(cg.TargetVersion); len(nodes) > 0 {
		return nodes, "which runs it"
	}
	return runs(cg.TargetLike), fmt.Sprintf("which runs version %s, the target's but for the image", cg.TargetLike)
}

// pinnedPods finds the pods of outdated nodes that fit no other node: their
// node selector or required node affinity matches no node that stays, and
// not the nodes the run brings either (taken to look like the pod's node
// with the target labels and a name of their own). Their drain would wait
// until --drain-timeout for nothing. It returns the findings and the pods
// found ("namespace/name").
func pinnedPods(snap snapshot.Cluster, outdated []string, podsByNode map[string][]*corev1.Pod, in Input) ([]check.Finding, sets.Set[string]) {
	s := newPinSearch(snap, outdated, in)
	for _, name := range slices.Sorted(slices.Values(outdated)) {
		if node := s.byName[name]; node != nil {
			s.searchNode(node, podsByNode[name])
		}
	}
	return s.findings(), s.found
}

// pinSearch is pinnedPods' state: the nodes that stay, and what was found,
// one finding per workload as the audit reports them.
type pinSearch struct {
	in      Input
	byName  map[string]*corev1.Node
	staying []*corev1.Node
	rsOwner check.DeploymentOwners
	volumes func(*corev1.Pod) []*corev1.PersistentVolume
	// The pods of a workload share their node selector and affinity (the
	// snapshot interns them): once one that mounts no volume is found to
	// reach a node that stays, so do the others.
	reachesStaying map[selectorsOf]bool
	found          sets.Set[string]
	byWorkload     map[string]*pinnedWorkload
	order          []string
}

type selectorsOf struct {
	nodeSelector unsafe.Pointer
	affinity     *corev1.Affinity
}

// pinnedWorkload is a workload with pods that can run nowhere.
type pinnedWorkload struct {
	finding check.Finding
	pods    int
	example *corev1.Pod
	volume  string // the volume that pins it, when its selectors alone do not
}

func newPinSearch(snap snapshot.Cluster, outdated []string, in Input) *pinSearch {
	gone := make(map[string]bool, len(outdated))
	for _, n := range outdated {
		gone[n] = true
	}
	s := &pinSearch{
		in: in, byName: make(map[string]*corev1.Node, len(snap.Nodes)),
		rsOwner: check.DeploymentOwnersOf(snap.ReplicaSets, nil), volumes: volumesByClaim(snap),
		reachesStaying: map[selectorsOf]bool{}, found: sets.New[string](), byWorkload: map[string]*pinnedWorkload{},
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		s.byName[n.Name] = n
		if !gone[n.Name] {
			s.staying = append(s.staying, n)
		}
	}
	return s
}

// searchNode looks at the pods of one outdated node.
func (s *pinSearch) searchNode(node *corev1.Node, pods []*corev1.Pod) {
	var replacement *corev1.Node // made when a pod needs it
	for _, pod := range pods {
		if s.in.Namespace != "" && pod.Namespace != s.in.Namespace {
			continue
		}
		pvs := s.volumes(pod)
		if len(pvs) == 0 && len(pod.Spec.NodeSelector) == 0 && (pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil) {
			continue
		}
		key := selectorsOf{reflect.ValueOf(pod.Spec.NodeSelector).UnsafePointer(), pod.Spec.Affinity}
		if len(pvs) == 0 && s.reachesStaying[key] {
			continue
		}
		affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
		selects := func(n *corev1.Node) bool { ok, _ := affinity.Match(n); return ok }
		reaches := func(n *corev1.Node) bool { return selects(n) && volumeBlocking(pvs, n) == "" }
		if slices.ContainsFunc(s.staying, reaches) {
			if len(pvs) == 0 {
				s.reachesStaying[key] = true
			}
			continue
		}
		if replacement == nil {
			replacement = replacementOf(node, s.in.TargetLabels)
		}
		if reaches(replacement) {
			continue
		}
		volume := ""
		if selects(replacement) || slices.ContainsFunc(s.staying, selects) {
			volume = volumeBlocking(pvs, replacement)
		}
		s.add(pod, node.Name, volume)
	}
}

// add counts a pod that can run nowhere in its workload's finding; volume
// is what pins it when its selectors alone do not.
func (s *pinSearch) add(pod *corev1.Pod, node, volume string) {
	s.found.Insert(podKey(pod))
	kind, ns, wname := check.WorkloadOf(pod, s.rsOwner)
	workload := kind + "/" + ns + "/" + wname
	w := s.byWorkload[workload]
	if w == nil {
		w = &pinnedWorkload{finding: check.Finding{Check: check.CheckPodCannotMove, Severity: check.Blocker, Kind: kind, Namespace: ns, Name: wname}, example: pod, volume: volume}
		s.byWorkload[workload] = w
		s.order = append(s.order, workload)
	}
	w.pods++
	if !slices.Contains(w.finding.Nodes, node) {
		w.finding.Nodes = append(w.finding.Nodes, node)
	}
}

// findings words the workloads found, in the order they were found.
func (s *pinSearch) findings() []check.Finding {
	var out []check.Finding
	for _, key := range s.order {
		w := s.byWorkload[key]
		f := w.finding
		example := fmt.Sprintf("%d pods (%q among them)", w.pods, w.example.Namespace+"/"+w.example.Name)
		if w.volume != "" {
			f.Message = fmt.Sprintf("%s mount PersistentVolume %q, which only outdated nodes %s can reach: evicted, they can run nowhere", example, w.volume, quoteNames(f.Nodes))
			f.Fix = "move the data off those nodes first (a local volume stays with its node), or leave those nodes out of the group"
		} else {
			f.Message = fmt.Sprintf("%s select nodes (%s) that only outdated nodes %s match: evicted, they can run nowhere", example, selectorText(w.example), quoteNames(f.Nodes))
			f.Fix = "let them run on other nodes (node selector, required node affinity), or leave those nodes out of the group"
		}
		out = append(out, f)
	}
	return out
}

// replacementOf is the node the run brings in node's stead, as pinnedPods
// takes it: node with the target labels and a name of its own.
func replacementOf(node *corev1.Node, target map[string]string) *corev1.Node {
	r := node.DeepCopy()
	r.Name = node.Name + "-replacement"
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	r.Labels[corev1.LabelHostname] = r.Name
	for k, v := range target {
		r.Labels[k] = v
	}
	return r
}

// volumesByClaim returns, for a pod, the bound persistent volumes it mounts
// that can be reached from some nodes only (a local volume, a zonal disk).
func volumesByClaim(snap snapshot.Cluster) func(*corev1.Pod) []*corev1.PersistentVolume {
	pvs := make(map[string]*corev1.PersistentVolume, len(snap.PVs))
	for i := range snap.PVs {
		if pv := &snap.PVs[i]; pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
			pvs[pv.Name] = pv
		}
	}
	claims := make(map[string]string, len(snap.PVCs))
	for _, c := range snap.PVCs {
		claims[c.Namespace+"/"+c.Name] = c.Spec.VolumeName
	}
	return func(pod *corev1.Pod) []*corev1.PersistentVolume {
		var out []*corev1.PersistentVolume
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if pv := pvs[claims[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]]; pv != nil {
				out = append(out, pv)
			}
		}
		return out
	}
}

// volumeBlocking names the first volume node cannot reach, or "".
func volumeBlocking(pvs []*corev1.PersistentVolume, node *corev1.Node) string {
	for _, pv := range pvs {
		if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(pv.Spec.NodeAffinity.Required).Match(node); !ok {
			return pv.Name
		}
	}
	return ""
}

func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// selectorText says briefly how a pod chooses its nodes.
func selectorText(pod *corev1.Pod) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range pod.Spec.NodeSelector {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+"="+pod.Spec.NodeSelector[k])
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		parts = append(parts, "required node affinity")
	}
	return strings.Join(parts, ", ")
}
