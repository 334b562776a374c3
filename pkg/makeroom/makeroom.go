// Package makeroom decides, from one snapshot of the cluster, which
// Deployments a batch's drain would take below their Ready count or past
// what their PodDisruptionBudgets allow, by how many replicas each is
// surged before the drain so that none is, and whether the extra replicas
// fit on the nodes that stay (run --make-room; the plan shows it). What it
// does not surge is named with the reason: StatefulSets, bare pods,
// Deployments with the Recreate strategy or under a GitOps controller that
// would revert the change, and budgets no surge can open.
//
// Everything here is a pure function of its Input, as package check's
// audit, whose view of the workloads (check.Losses) it builds on.
package makeroom

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// Input is one batch over a snapshot.
type Input struct {
	Cluster *snapshot.Cluster
	HPAs    []autoscalingv2.HorizontalPodAutoscaler
	// Batch are the nodes the batch drains; Excluded the nodes that take
	// no pod while it does (the batch's, and every outdated node where the
	// run holds them all off).
	Batch    []string
	Excluded []string
	// Number is the batch's, 1-based, for the plan.
	Number int
}

// Surge is one Deployment made room for: its replicas before and the
// extra ones the batch needs.
type Surge struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Replicas is spec.replicas before; Extra what the surge adds; Ready
	// the Ready pods before, which the surge keeps the workload at.
	Replicas int32 `json:"replicas"`
	Extra    int32 `json:"extra"`
	Ready    int   `json:"ready"`
	// Evicted are its pods on the batch's nodes.
	Evicted int `json:"evicted"`
	// Reason is the audit's check the surge answers: single-replica,
	// pdb-zero-disruptions, or "ready-count" (no budget, Ready pods on
	// the batch).
	Reason string `json:"reason"`
	// HPA is the HorizontalPodAutoscaler that scales it, whose bounds the
	// surge raises instead of spec.replicas; nil without one.
	HPA *HPA `json:"hpa,omitempty"`
	// CPU and Memory are what the extra replicas request together.
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// Missing is what keeps an extra replica off every node that stays
	// (see capacity.Missing); "" when they fit.
	Missing string `json:"missing,omitempty"`
}

// HPA is a HorizontalPodAutoscaler's bounds.
type HPA struct {
	Name        string `json:"name"`
	MinReplicas int32  `json:"minReplicas"`
	MaxReplicas int32  `json:"maxReplicas"`
}

// Object is the surged workload as kind "namespace/name".
func (s Surge) Object() string { return fmt.Sprintf("%s %q", s.Kind, s.Namespace+"/"+s.Name) }

// Untouched is a workload the batch takes below its Ready count or past
// its budget that is not surged, and why.
type Untouched struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	// GitOps says a GitOps controller manages it: a warning, not a
	// blocker of its own.
	GitOps bool `json:"gitOps,omitempty"`
}

// Batch is what --make-room does around one batch.
type Batch struct {
	Number    int         `json:"number"`
	Surges    []Surge     `json:"surges,omitempty"`
	Untouched []Untouched `json:"untouched,omitempty"`
	// CPU and Memory are the extra requests at the batch's peak: every
	// surge up at once.
	CPU    string `json:"cpu,omitempty"`
	Memory string `json:"memory,omitempty"`
	// HoldSeconds is how long the surges are estimated to stay up: the
	// batch's drain and the waits after it (the plan's pace).
	HoldSeconds int64 `json:"holdSeconds,omitempty"`
}

// Fits reports whether every surge of the batch fits.
func (b Batch) Fits() bool {
	for _, s := range b.Surges {
		if s.Missing != "" {
			return false
		}
	}
	return true
}

// ForBatch is what --make-room does around in's batch.
func ForBatch(in Input) Batch {
	c := in.Cluster
	losses := check.Losses(check.Input{
		Nodes: c.Nodes, Pods: c.Pods, PDBs: c.PDBs, ReplicaSets: c.ReplicaSets, Deployments: c.Deployments,
		StatefulSets: c.StatefulSets, Services: c.Services, Namespaces: c.Namespaces, Outdated: in.Batch,
	})
	deps := map[[2]string]*appsv1.Deployment{}
	for i := range c.Deployments {
		d := &c.Deployments[i]
		deps[[2]string{d.Namespace, d.Name}] = d
	}
	b := Batch{Number: in.Number}
	var cpu, mem resource.Quantity
	for _, l := range losses {
		extra, reason := surgeFor(l)
		if l.Kind == "Job" || extra == 0 && reason == "" {
			continue
		}
		d := deps[[2]string{l.Namespace, l.Name}]
		if why, gitops := untouched(l, d, extra); why != "" {
			b.Untouched = append(b.Untouched, Untouched{Kind: l.Kind, Namespace: l.Namespace, Name: l.Name, Reason: why, GitOps: gitops})
			continue
		}
		s := Surge{Kind: l.Kind, Namespace: l.Namespace, Name: l.Name, Replicas: replicasOf(d), Extra: int32(extra), Ready: l.Ready, Evicted: l.Evicted, Reason: reason, HPA: hpaOf(in.HPAs, d)}
		c, m := requests(l.Pods[0], extra)
		s.CPU, s.Memory = text(c), text(m)
		cpu.Add(c)
		mem.Add(m)
		b.Surges = append(b.Surges, s)
	}
	b.CPU, b.Memory = text(cpu), text(mem)
	placeSurges(in, &b, losses)
	return b
}

// Reasons a surge answers, after the audit's checks.
const (
	ReasonReadyCount = "ready-count"
)

// surgeFor is how many extra replicas l needs so that the batch leaves
// its Ready count and its budgets whole, and the audit's check that says
// why; 0 and a reason where no surge can (a budget that no replica count
// opens); 0 and "" where it needs none.
func surgeFor(l check.Loss) (int, string) {
	need := l.ReadyEvicted
	if need == 0 {
		return 0, ""
	}
	reason := ReasonReadyCount
	if l.Replicas == 1 {
		reason = check.CheckSingleReplica
	}
	if len(l.Budgets) == 0 {
		// Nothing spaces the evictions: the batch's Ready pods go at
		// once, so as many come first.
		return need, reason
	}
	// Budgets that let the drain take the batch's Ready pods need no
	// surge. Where a surge opens them, it is what the batch takes away,
	// not the least that opens them: the drain then evicts the batch's
	// pods as the budgets allow, and the Ready count never drops below
	// the one before (the run waits for that many outside the batch).
	for extra := 0; extra <= need+l.Replicas; extra++ {
		if minAllowed(l.Budgets, extra) >= need {
			if extra == 0 {
				return 0, ""
			}
			if minAllowed(l.Budgets, 0) == 0 {
				reason = check.CheckPDBZeroDisruptions
			}
			return max(extra, need), reason
		}
	}
	if minAllowed(l.Budgets, 0) > 0 {
		// A maxUnavailable budget allows as many whatever the replicas:
		// the drain takes the pods as it allows, each replacement Ready
		// before the next goes.
		return 0, ""
	}
	return 0, check.CheckPDBZeroDisruptions
}

func minAllowed(budgets []check.Budget, extra int) int {
	least := -1
	for _, b := range budgets {
		if a := b.Allowed(extra); least < 0 || a < least {
			least = a
		}
	}
	return least
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d == nil || d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// hpaOf is the bounds of the HorizontalPodAutoscaler that scales d, if any.
func hpaOf(hpas []autoscalingv2.HorizontalPodAutoscaler, d *appsv1.Deployment) *HPA {
	for i := range hpas {
		h := &hpas[i]
		ref := h.Spec.ScaleTargetRef
		if h.Namespace == d.Namespace && ref.Kind == "Deployment" && ref.Name == d.Name {
			min := int32(1)
			if h.Spec.MinReplicas != nil {
				min = *h.Spec.MinReplicas
			}
			return &HPA{Name: h.Name, MinReplicas: min, MaxReplicas: h.Spec.MaxReplicas}
		}
	}
	return nil
}

// requests are what extra copies of p request, CPU and memory, as the
// scheduler counts a pod's (init containers, overhead).
func requests(p *corev1.Pod, extra int) (cpu, mem resource.Quantity) {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	c, m := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
	return *resource.NewMilliQuantity(c.MilliValue()*int64(extra), resource.DecimalSI),
		*resource.NewQuantity(m.Value()*int64(extra), resource.BinarySI)
}

func text(q resource.Quantity) string {
	if q.IsZero() {
		return ""
	}
	return q.String()
}
