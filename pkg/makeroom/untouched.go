package makeroom

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/capacity"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
)

// GitOps controllers mark what they apply; a surge of what they manage
// would be reverted at their next sync (Argo CD's self-heal, Flux's
// reconciliation) unless they are told to ignore spec.replicas.
var (
	gitOpsAnnotations = map[string]string{
		"argocd.argoproj.io/tracking-id": "Argo CD",
	}
	gitOpsLabels = map[string]string{
		"argocd.argoproj.io/instance":      "Argo CD",
		"kustomize.toolkit.fluxcd.io/name": "Flux",
		"helm.toolkit.fluxcd.io/name":      "Flux",
	}
)

// GitOpsOf names the GitOps controller that manages d and the key that
// says so; "" when none does.
func GitOpsOf(d *appsv1.Deployment) (controller, key string) {
	for k, who := range gitOpsAnnotations {
		if _, ok := d.Annotations[k]; ok {
			return who, k
		}
	}
	for k, who := range gitOpsLabels {
		if _, ok := d.Labels[k]; ok {
			return who, k
		}
	}
	return "", ""
}

// untouched says why l, which needs extra replicas (or which no surge
// helps: extra 0), is left as it is, and whether it is for a GitOps
// controller; "" when it is surged.
func untouched(l check.Loss, d *appsv1.Deployment, extra int) (string, bool) {
	switch {
	case l.Kind == "StatefulSet":
		return "a StatefulSet is not surged: its replicas have identities and volumes of their own", false
	case l.Kind == "Pod":
		return "a bare pod: nothing makes a second one", false
	case l.Kind != "Deployment":
		return fmt.Sprintf("only Deployments are surged, not a %s", l.Kind), false
	case d == nil:
		return "its Deployment was not listed", false
	case extra == 0:
		return "its PodDisruptionBudget allows no disruption however many replicas run (maxUnavailable 0 or minAvailable 100%)", false
	case d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType:
		return "strategy Recreate: its pods are not meant to run beside more of their own", false
	}
	if who, key := GitOpsOf(d); who != "" {
		return fmt.Sprintf("managed by %s (%s): it would revert spec.replicas; have it ignore replicas (Argo CD: ignoreDifferences on /spec/replicas) to let --make-room surge it", who, key), true
	}
	return "", false
}

// placeSurges estimates, as the run's room check does, whether every
// extra replica of b's surges fits on the nodes that take pods while the
// batch drains, all at once, and names what is missing for those that do
// not.
func placeSurges(in Input, b *Batch, losses []check.Loss) {
	nodes := make([]*corev1.Node, len(in.Cluster.Nodes))
	for i := range in.Cluster.Nodes {
		nodes[i] = &in.Cluster.Nodes[i]
	}
	running := map[string][]*corev1.Pod{}
	for i := range in.Cluster.Pods {
		if p := &in.Cluster.Pods[i]; p.Spec.NodeName != "" {
			running[p.Spec.NodeName] = append(running[p.Spec.NodeName], p)
		}
	}
	podsOn := func(n string) []*corev1.Pod { return running[n] }
	excluded := sets.New(in.Excluded...).Insert(in.Batch...)
	owner := map[*corev1.Pod]int{}
	var extra []*corev1.Pod
	for i, s := range b.Surges {
		template := templateOf(losses, s)
		for k := range int(s.Extra) {
			p := template.DeepCopy()
			p.Name = fmt.Sprintf("%s-extra-%d", s.Name, k+1)
			owner[p] = i
			extra = append(extra, p)
		}
	}
	// The batch's own pods go to the same nodes while the surges are up:
	// the peak is both.
	var evicted []*corev1.Pod
	for _, l := range losses {
		evicted = append(evicted, l.Pods...)
	}
	alone := fitAlone(nodes, podsOn, excluded, evicted)
	t := capacity.NewTracker(nodes, podsOn, append(slices.Clone(extra), evicted...))
	t.Exclude(excluded.UnsortedList()...)
	room := t.Place(extra)
	for _, pl := range room.Placed {
		running[pl.Node] = append(running[pl.Node], pl.Pod)
	}
	for _, p := range room.Unplaced {
		s := &b.Surges[owner[p]]
		if s.Missing == "" {
			if s.Missing = capacity.Missing(p, nodes, podsOn, excluded); s.Missing == "" {
				s.Missing = "room beside the batch's other surges"
			}
		}
	}
	if left := t.Place(evicted); !left.Fits() && room.Fits() && len(b.Surges) > 0 && alone {
		// The batch's pods fit without the surges: the surges take their
		// room. (Where they fit nowhere anyway, the plan's no-room check
		// says so.)
		what := capacity.Missing(left.Unplaced[0], nodes, podsOn, excluded)
		for i := range b.Surges {
			b.Surges[i].Missing = fmt.Sprintf("room for the batch's own pods beside the extra replicas (%s)", what)
		}
	}
}

func templateOf(losses []check.Loss, s Surge) *corev1.Pod {
	for _, l := range losses {
		if l.Kind == s.Kind && l.Namespace == s.Namespace && l.Name == s.Name {
			return l.Pods[0]
		}
	}
	return &corev1.Pod{}
}

// fitAlone reports whether pods fit on the nodes not excluded, as they
// run before any surge.
func fitAlone(nodes []*corev1.Node, podsOn func(string) []*corev1.Pod, excluded sets.Set[string], pods []*corev1.Pod) bool {
	t := capacity.NewTracker(nodes, podsOn, pods)
	t.Exclude(excluded.UnsortedList()...)
	return t.Place(pods).Fits()
}
