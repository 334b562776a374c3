package plan

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/makeroom"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/snapshot"
)

// writeMakeRoom prints, per batch, what --make-room surges: the
// workload, its replicas before and after, its HPA's bounds, the extra
// requests and whether they fit; then what it leaves untouched.
func writeMakeRoom(w io.Writer, p *Plan, color output.Colorizer) {
	if len(p.MakeRoom) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Make room (--make-room): scaled up before each batch drains, back to the values before once its replacements are Ready")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tWORKLOAD\tREPLICAS\tWHY\tEXTRA REQUESTS\tFOR (EST.)\tFITS")
	for _, b := range p.MakeRoom {
		for _, s := range b.Surges {
			replicas := fmt.Sprintf("%d -> %d", s.Replicas, s.Replicas+s.Extra)
			if s.HPA != nil {
				replicas += fmt.Sprintf(" (HPA %q min %d -> %d)", s.HPA.Name, s.HPA.MinReplicas, max(s.HPA.MinReplicas, s.Replicas+s.Extra))
			}
			fits := "yes"
			if s.Missing != "" {
				fits = color.Red("no: " + s.Missing)
			}
			hold := FormatDuration(time.Duration(b.HoldSeconds) * time.Second)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Number, s.Kind+"/"+s.Namespace+"/"+s.Name, replicas, s.Reason, requestsLine(s.CPU, s.Memory), hold, fits)
		}
		if len(b.Surges) > 1 {
			fmt.Fprintf(tw, "%d\t(peak, all at once)\t\t\t%s\t\t\n", b.Number, requestsLine(b.CPU, b.Memory))
		}
	}
	_ = tw.Flush()
	for _, b := range p.MakeRoom {
		for _, u := range b.Untouched {
			fmt.Fprintf(w, "%s\n", color.Yellow(fmt.Sprintf("Not surged (batch %d): %s %q: %s", b.Number, u.Kind, u.Namespace+"/"+u.Name, u.Reason)))
		}
	}
}

func requestsLine(cpu, memory string) string {
	return fmt.Sprintf("cpu %s, memory %s", cmp.Or(cpu, "0"), cmp.Or(memory, "0"))
}

// PlanMakeRoom sets what --make-room surges around each batch of p,
// planned on snap, and adjusts the audit to it: the single-replica,
// pdb-zero-disruptions and same-batch blockers of the Deployments surged
// become warnings (the surge answers them), and a surge that fits on no
// node that stays is a no-room blocker naming the workload and what it
// misses. Where the
// cloud's service drains the nodes, nothing is surged and a note says why.
func (p *Plan) PlanMakeRoom(snap *snapshot.Cluster, hpas []autoscalingv2.HorizontalPodAutoscaler) {
	if p.Managed != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("--make-room surges nothing here: the %s's service drains the nodes itself and does not wait for extra replicas; the audit's blockers stand (use --strategy surge or blue-green, whose drains are the run's, where the group offers them)", p.Managed.Service))
		return
	}
	p.MakeRoom = nil
	snap = withNewNodes(p, snap)
	for _, b := range p.Batches {
		names := make([]string, len(b.Nodes))
		for i, n := range b.Nodes {
			names[i] = n.Name
		}
		excluded := names
		if p.Traits().OutdatedHeldOff {
			excluded = p.OutdatedNames()
		}
		mb := makeroom.ForBatch(makeroom.Input{Cluster: snap, HPAs: hpas, Batch: names, Excluded: excluded, Number: b.Number})
		if len(mb.Surges) > 0 {
			mb.HoldSeconds = int64(surgeHold(p).Seconds())
		}
		p.MakeRoom = append(p.MakeRoom, mb)
	}
	answerMakeRoomFindings(p)
}

// answerMakeRoomFindings lowers the blockers the surges answer and adds those of
// the surges that do not fit.
func answerMakeRoomFindings(p *Plan) {
	surged := map[string]bool{}
	var unfit []check.Finding
	for i, b := range p.MakeRoom {
		for _, s := range b.Surges {
			surged[s.Namespace+"/"+s.Name] = true
			if s.Missing == "" {
				continue
			}
			nodes := make([]string, 0, len(p.Batches[i].Nodes))
			for _, n := range p.Batches[i].Nodes {
				nodes = append(nodes, n.Name)
			}
			unfit = append(unfit, check.Finding{Check: check.CheckNoRoom, Severity: check.Blocker, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Nodes: nodes,
				Message: fmt.Sprintf("batch %d: --make-room: %d extra replicas (%s) fit on no node that stays: missing %s", b.Number, s.Extra, requestsLine(s.CPU, s.Memory), s.Missing),
				Fix:     "add nodes that stay with room for them, or run without --make-room"})
		}
	}
	for i := range p.Findings {
		f := &p.Findings[i]
		if f.Kind == "Deployment" && f.Severity == check.Blocker && surged[f.Namespace+"/"+f.Name] && (f.Check == check.CheckSingleReplica || f.Check == check.CheckPDBZeroDisruptions || f.Check == check.CheckSameBatch) {
			f.Severity, f.Fix = check.Warning, "--make-room surges it before its batch drains and scales it back after"
		}
	}
	p.Findings = check.Sort(p.Findings)
	p.AddFindings(unfit...)
	p.markFindings()
}

// surgeHold is how long a batch's surges stay up: its drain, round by
// round (DrainRounds), with the wait for the evicted pods' replacements
// the drain's pace counts. The run puts them back right after, before the
// post-drain wait and the removal (internal/upgrade's afterDrain).
func surgeHold(p *Plan) time.Duration {
	return time.Duration(max(p.DrainRounds, 1)) * p.DrainTime()
}

// withNewNodes is snap with the nodes the run has created before its first
// batch drains, which take the surges as they take the batch's pods: the
// scale-up's (eks), the surge's (surge) and green's (blue/green). They do
// not exist yet when planned; each is made after an outdated node of the
// group (its labels with the target's, its capacity and zone, none of the
// run's taint), as the group's template makes them.
func withNewNodes(p *Plan, snap *snapshot.Cluster) *snapshot.Cluster {
	n := nodesBeforeFirstDrain(p)
	outdated := sets.New(p.OutdatedNames()...)
	var group []corev1.Node
	for _, node := range snap.Nodes {
		if outdated.Has(node.Name) {
			group = append(group, node)
		}
	}
	if n <= 0 || len(group) == 0 {
		return snap
	}
	taint, _ := ParseTaint(p.Taint)
	out := *snap
	out.Nodes = slices.Clone(snap.Nodes)
	for i := range n {
		node := group[i%len(group)].DeepCopy()
		node.Name, node.Spec.ProviderID, node.Spec.Unschedulable = fmt.Sprintf("(new node %d)", i+1), "", false
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == taint.Key })
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		maps.Copy(node.Labels, p.TargetLabels)
		out.Nodes = append(out.Nodes, *node)
	}
	return &out
}

// nodesBeforeFirstDrain counts the nodes the run creates before its first drain.
func nodesBeforeFirstDrain(p *Plan) int {
	switch c := p.Cloud; {
	case c == nil:
		return 0
	case p.BlueGreen != nil:
		if !p.BlueGreen.Create && !p.BlueGreen.Kept {
			return 0 // green exists: its nodes are in the snapshot
		}
		return int(c.Before.Desired)
	}
	return int(p.Cloud.During.Desired - p.Cloud.Before.Desired)
}
