package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/pods"
)

// AnnDoNotDisrupt is Karpenter's annotation that blocks its voluntary
// disruption (consolidation, drift) of a node: on a pod, a Node or a
// NodeClaim (sigs.k8s.io/karpenter v1.15.0 pkg/apis/v1/labels.go).
const AnnDoNotDisrupt = "karpenter.sh/do-not-disrupt"

// DoNotDisrupt is a pod's karpenter.sh/do-not-disrupt as Karpenter reads
// it (v1.15.0 pkg/utils/pod/scheduling.go IsDoNotDisruptActive): "true",
// or a positive Go duration counted from the pod's start; any other
// value, Karpenter ignores (it only records an InvalidDoNotDisruptAnnotation
// event). Until is when a duration lapses; zero for "true", and for a pod
// that has not started, which Karpenter holds protected ("fail safe").
type DoNotDisrupt struct {
	Value  string
	Active bool
	Until  time.Time
}

// DoNotDisruptOf reads p's annotation at now; Active is false where p has
// none, or none in force.
func DoNotDisruptOf(p *corev1.Pod, now time.Time) DoNotDisrupt {
	v, ok := p.Annotations[AnnDoNotDisrupt]
	if !ok {
		return DoNotDisrupt{}
	}
	dnd := DoNotDisrupt{Value: v}
	if v == "true" {
		dnd.Active = true
		return dnd
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return dnd
	}
	if p.Status.StartTime == nil {
		dnd.Active = true
		return dnd
	}
	dnd.Until = p.Status.StartTime.Add(d)
	dnd.Active = now.Before(dnd.Until)
	return dnd
}

// NodeDoNotDisrupt says whether a Node's or NodeClaim's annotations block
// Karpenter's disruption: the value "true" alone, durations being a pod's
// (v1.15.0 pkg/controllers/state/statenode.go ValidateNodeDisruptable).
func NodeDoNotDisrupt(annotations map[string]string) bool {
	return annotations[AnnDoNotDisrupt] == "true"
}

// now is the time the audit reads durations at.
func (a *audit) now() time.Time {
	if a.in.Now.IsZero() {
		return time.Now()
	}
	return a.in.Now
}

// dndHits are the pods of one workload whose do-not-disrupt is in force.
type dndHits struct {
	acc
	pod     string    // the first, named in the message
	until   time.Time // when the last of them lapses
	forever bool      // one does not lapse ("true", or not started)
}

// doNotDisrupt reports, where Karpenter replaces the nodes, the pods on
// outdated nodes whose do-not-disrupt is in force, one finding per
// workload: Karpenter drifts no node that runs one. Karpenter counts
// every pod not finished nor terminating, DaemonSet and mirror pods too
// (statenode.go ValidatePodsDisruptable, IsDisruptable), so these are
// read from the input, not from the workloads the drain evicts.
func (a *audit) doNotDisrupt() []Finding {
	now := a.now()
	hits := map[workloadKey]*dndHits{}
	var keys []workloadKey
	for i := range a.in.Pods {
		p := &a.in.Pods[i]
		if !a.outdated[p.Spec.NodeName] || !a.inScope(p.Namespace) || pods.Finished(p) || p.DeletionTimestamp != nil {
			continue
		}
		d := DoNotDisruptOf(p, now)
		if !d.Active {
			continue
		}
		kind, ns, name := WorkloadOf(p, a.rsOwner)
		k := workloadKey{kind, ns, name}
		h := hits[k]
		if h == nil {
			h = &dndHits{pod: p.Name}
			hits[k] = h
			keys = append(keys, k)
		}
		h.add(p.Spec.NodeName, strconv.Quote(d.Value))
		h.forever = h.forever || d.Until.IsZero()
		if d.Until.After(h.until) {
			h.until = d.Until
		}
	}
	out := make([]Finding, 0, len(keys))
	for _, k := range keys {
		out = append(out, doNotDisruptFinding(k, hits[k]))
	}
	return out
}

func doNotDisruptFinding(k workloadKey, h *dndHits) Finding {
	values := AnnDoNotDisrupt + "=" + strings.Join(h.details, ", ")
	if !h.forever {
		values += " (in force until " + h.until.UTC().Format(time.RFC3339) + ")"
	}
	pod := k.ns + "/" + h.pod
	msg := fmt.Sprintf("pod %q annotated %s: Karpenter does not drift or consolidate its node while the annotation is in force", pod, values)
	if h.pods > 1 {
		msg = fmt.Sprintf("%s annotated %s (e.g. %q): Karpenter does not drift or consolidate their nodes while the annotation is in force",
			plural(h.pods, "pod"), values, pod)
	}
	return Finding{
		Check: CheckDoNotDisrupt, Severity: Blocker,
		Kind: k.kind, Namespace: k.ns, Name: k.name, Nodes: sortedKeys(h.nodes),
		Message: msg,
		Fix: fmt.Sprintf("remove the annotation (kubectl annotate pod -n %s %s %s-) or wait until it lapses; --force replaces the nodes anyway, as Karpenter's forceful termination would",
			k.ns, h.pod, AnnDoNotDisrupt),
	}
}
