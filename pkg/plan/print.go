package plan

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// WriteTable prints the plan for review: a header block, one row per
// outdated node, and the blockers with their fixes.
func WriteTable(w io.Writer, p *Plan, now time.Time, color output.Colorizer) error {
	group := p.NodeGroup + " (" + p.NodeGroupLabel + ")"
	if p.Selector != "" {
		group = "-l " + p.Selector
	}
	provider := p.Provider
	if p.Provider == "none" {
		provider = "none (nothing launches replacement nodes)"
	}
	header := [][2]string{
		{"Context", orNone(p.Context)},
		{"Node group", group},
		{"Target", joinLabels(p.TargetLabels)},
		{"Nodes", fmt.Sprintf("%d total, %d outdated, %d current, %d done", p.Nodes.Total, p.Nodes.Outdated, p.Nodes.Current, p.Nodes.Done)},
		{"Zones", orNone(strings.Join(p.Zones, ", "))},
		{"Strategy", p.Strategy},
		{"Max unavailable", fmt.Sprintf("%d (%s), %d batches, seed %d", p.MaxUnavailable, p.MaxUnavailableInput, len(p.Batches), p.Seed)},
		{"Taint", p.Taint},
		{"Provider", provider},
	}
	for _, h := range header {
		if _, err := fmt.Fprintf(w, "%-17s%s\n", h[0]+":", h[1]); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(p.Batches) == 0 {
		_, err := fmt.Fprintln(w, color.Green("Nothing to do: every node of the group carries the target labels."))
		return err
	}
	t := output.NewTable(w, "Batch", "Node", "Zone", "Age", "Outdated labels", "Pods", "Blockers")
	for _, b := range p.Batches {
		for _, n := range b.Nodes {
			diffs := make([]string, len(n.Outdated))
			for i, d := range n.Outdated {
				diffs[i] = d.Key + "=" + orNone(d.Current)
			}
			blockers := "<none>"
			if len(n.Blockers) > 0 {
				blockers = color.Red(fmt.Sprintf("%d", len(n.Blockers)))
			}
			age := "<unknown>"
			if !n.Created.IsZero() {
				age = duration.HumanDuration(now.Sub(n.Created))
			}
			if err := t.Append(fmt.Sprint(b.Number), n.Name, orNone(n.Zone), age, strings.Join(diffs, ","), fmt.Sprint(len(n.Pods)), blockers); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(p.Blockers) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n", color.Red(fmt.Sprintf("Blockers (%d): the drain of these pods will not succeed as things stand", len(p.Blockers))))
	bt := output.NewTable(w, "Node", "Pod", "Reason", "PDB", "Fix")
	for _, b := range p.Blockers {
		if err := bt.Append(b.Node, b.Pod, b.Reason, orNone(b.PDB), b.Fix); err != nil {
			return err
		}
	}
	return bt.Render()
}

func joinLabels(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
