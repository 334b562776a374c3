package plan

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// WriteTable prints the plan for review: a header block, one row per
// outdated node, and the blockers with their fixes. Wide adds to each node
// whether it is tainted and cordoned already, and its provider ID.
func WriteTable(w io.Writer, p *Plan, now time.Time, color output.Colorizer, wide bool) error {
	for _, h := range headerLines(p) {
		if _, err := fmt.Fprintf(w, "%-*s%s\n", headerKeyWidth, h[0]+":", h[1]); err != nil {
			return err
		}
	}
	writeManaged(w, p)
	writeSteps(w, p)
	writeCosts(w, p.Cost)
	writeWindow(w, p)
	writeWaves(w, p)
	writeHookedNodes(w, p)
	fmt.Fprintln(w)
	if p.Traits().LeavesRunning {
		return writeLeftRunning(w, p, now)
	}
	if len(p.Batches) == 0 && len(p.Deferred) == 0 {
		return writeNothingToDo(w, p, color)
	}
	write := writeBatches
	if p.Managed != nil {
		write = writeServiceNodes
	}
	if err := write(w, p, now, color, wide); err != nil {
		return err
	}
	writeMakeRoom(w, p, color)
	for _, note := range p.Notes {
		fmt.Fprintf(w, "%s\n", color.Yellow("Note: "+note))
	}
	if len(p.Findings) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return WriteFindings(w, p.Findings, color)
}

// headerLines are the plan's header block, key and value.
func headerLines(p *Plan) [][2]string {
	group := p.NodeGroup + " (" + p.NodeGroupLabel + ")"
	if p.Selector != "" {
		group = "-l " + p.Selector
	}
	provider := p.Provider
	if p.Provider == "none" {
		provider = "none (nothing launches replacement nodes)"
	}
	header := [][2]string{
		{"Context", output.OrNone(p.Context)},
		{"Node group", group},
		{"Target", targetLine(p)},
		{"Nodes", nodesLine(p.Nodes)},
		{"Zones", output.OrNone(strings.Join(p.Zones, ", "))},
		{"Strategy", strategyLine(p)},
	}
	// Where the service runs the update, it picks the nodes, their order
	// and how many go at once (its settings below), and marks them itself:
	// the run's batches, seed and taint would be a promise it does not keep.
	if p.Managed == nil {
		header = append(header, [][2]string{
			{"Max unavailable", maxUnavailableLine(p)},
			{"Batches", fmt.Sprintf("%d, %s order, seed %d", len(p.Batches), p.Order, p.Seed)},
			{"Taint", p.Taint},
		}...)
	}
	header = append(header, [2]string{"Provider", provider})
	if h := p.Hooks; h != nil && h.Any() {
		header = append(header, [2]string{"Hooks", hooksLine(h)})
	}
	return append(header, cloudLines(p)...)
}

// nodesLine counts the group's nodes; outdated ones the scale-down
// removes without a batch are counted apart.
func nodesLine(n NodeCounts) string {
	outdated := fmt.Sprintf("%d outdated", n.Outdated)
	if n.Deferred > 0 {
		outdated = fmt.Sprintf("%d outdated replaced, %d outdated removed by the scale-down", n.Outdated, n.Deferred)
	}
	return fmt.Sprintf("%d total, %s, %d current, %d done", n.Total, outdated, n.Current, n.Done)
}

// targetLine is what the nodes move to: the cloud's target version (or
// the service's words for it) and the target labels.
func targetLine(p *Plan) string {
	target := joinLabels(p.TargetLabels)
	c := p.Cloud
	if c == nil {
		return target
	}
	lt := TemplateText(c.TemplateKind, c.Template, c.TargetVersion)
	if c.TargetVersion == NewVersion {
		lt = fmt.Sprintf("%s %s, a new version from %s", c.TemplateKind, c.Template, c.CurrentVersion)
	}
	if c.TargetImage != "" {
		lt += " (image " + c.TargetImage + ")"
	}
	if c.TargetText != "" {
		lt = c.TargetText
	}
	if p.Managed != nil {
		lt = p.Managed.Target
	}
	if target != "" {
		lt += ", labels " + target
	}
	return lt
}

// TemplateText names version of a template in the provider's words:
// "launch template lt-1 version 2"; where the kind says the template
// names a project (GCE's instance templates, each a version of its own),
// "instance template demo-v2 in project p".
// A record older than its Template field has none: the kind alone then.
func TemplateText(kind, template, version string) string {
	k, inProject := strings.CutSuffix(kind, " in project")
	switch {
	case inProject && template == "":
		return k + " " + version
	case inProject:
		return fmt.Sprintf("%s %s in project %s", k, version, template)
	case template == "":
		return fmt.Sprintf("%s version %s", kind, version)
	}
	return fmt.Sprintf("%s %s version %s", kind, template, version)
}

// cloudLines are the header lines of the cloud group: what it is, its
// scale-up, what it launches after, and what the run holds off or waits
// for.
func cloudLines(p *Plan) [][2]string {
	c := p.Cloud
	if c == nil {
		return nil
	}
	group := [2]string{groupLineKey(c.GroupKind), fmt.Sprintf("%s%s, %s %s %s", c.Group, inRegion(c.Region), c.TemplateKind, c.Template, versionChange(c))}
	if group[0] == "Group" {
		group[1] = c.GroupKind + " " + group[1]
	}
	if c.TargetText != "" {
		group = [2]string{"Cloud group", fmt.Sprintf("%s %q%s, %s -> %s", c.GroupKind, c.Group, inRegion(c.Region), c.CurrentVersion, c.TargetVersion)}
	}
	if p.Managed != nil {
		group = [2]string{"Updated by", fmt.Sprintf("%s %q%s (the service runs the update)", p.Managed.Service, c.Group, inRegion(c.Region))}
	}
	scaleUp := scaleUpLine(c)
	if p.Managed != nil && c.Resumed {
		scaleUp = fmt.Sprintf("the %s's, under way: %s; back to %s at its end", p.Managed.Service, c.ResizeText(c.Before, c.During), c.SizeText(c.Before))
	}
	lines := [][2]string{group, {"Scale-up", scaleUp}}
	if c.LaunchesAfter != "" {
		lines = append(lines, [2]string{"Launches after", fmt.Sprintf("%s %s %s", c.TemplateKind, c.Template, c.LaunchesAfter)})
	}
	for _, l := range [][2]string{{"Rebalancing", rebalanceLine(p, c)}, {"Load balancers", loadBalancersLine(p, c)}, {"Terminating", leaveHooksLine(c)}, {"Capacity", p.Capacity.Line()}} {
		if l[1] != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// versionChange is how the group's template version moves; where it does
// not (a Karpenter NodePool's template hash, a group pointed at the target
// already), what changes is the nodes not on it.
func versionChange(c *CloudPlan) string {
	if c.CurrentVersion == c.TargetVersion {
		return fmt.Sprintf("version %s, unchanged: the outdated nodes (OUTDATED says why) are replaced by nodes of it", c.TargetVersion)
	}
	return fmt.Sprintf("version %s -> %s", c.CurrentVersion, c.TargetVersion)
}

// groupLineKey is the header key of the cloud group's line: its kind without
// " group" ("Auto Scaling"), or "Group" where the kind is too long for the
// key's column (the kind then leads the line).
func groupLineKey(kind string) string {
	key := strings.TrimSuffix(strings.TrimSuffix(kind, " groups"), " group")
	if len(key)+1 >= headerKeyWidth {
		return "Group"
	}
	return key
}

// headerKeyWidth is the column of the header's keys, colon included.
const headerKeyWidth = 17

// writeSteps lists the phases with their estimates.
func writeSteps(w io.Writer, p *Plan) {
	if len(p.Steps) > 0 {
		fmt.Fprintf(w, "\nPhases (estimated %s; assumes %s):\n", EstimateText(p.EstimatedDuration(), p.SoakEstimate()), p.EstimateAssumptions())
		for i, st := range p.Steps {
			est := ""
			if st.Estimate > 0 {
				est = " (~" + FormatDuration(time.Duration(st.Estimate)) + ")"
			}
			fmt.Fprintf(w, "  %d. %-9s %s%s\n", i+1, st.Phase, st.Detail, est)
		}
	}
}

// writeLeftRunning lists the nodes the short-lived strategy leaves running.
func writeLeftRunning(w io.Writer, p *Plan, now time.Time) error {
	fmt.Fprintf(w, "Short-lived: %d outdated nodes are left running, not drained:\n", len(p.ShortLived))
	t := output.NewTable(w, "Node", "Instance", "Zone", "Age")
	for _, n := range p.ShortLived {
		if err := t.Append(n.Name, output.OrNone(n.MachineID), output.OrNone(n.Zone), age(n, now)); err != nil {
			return err
		}
	}
	return t.Render()
}

func age(n PlannedNode, now time.Time) string {
	if n.Created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(n.Created))
}

// writeNothingToDo says why there is no batch.
func writeNothingToDo(w io.Writer, p *Plan, color output.Colorizer) error {
	msg := "Nothing to do: every node of the group carries the target labels."
	switch {
	case p.Cloud != nil && p.Cloud.BlueDeleted != "":
		msg = fmt.Sprintf("Nothing left to drain: the interrupted run deleted blue %s %q; run finishes it on green %q.", p.Cloud.GroupKind, p.Cloud.BlueDeleted, p.Cloud.Group)
	case p.Cloud != nil && p.Cloud.InterruptedGreen != "":
		msg = fmt.Sprintf("Nothing left to drain: blue %s %q has no node left; run finishes the interrupted run on green %q and deletes blue.", p.Cloud.GroupKind, p.Cloud.Group, p.Cloud.InterruptedGreen)
	case p.Cloud != nil && p.Cloud.Resumed && p.Managed != nil:
		msg = fmt.Sprintf("Nothing left to drain: run follows the %s's update under way to its end.", p.Managed.Service)
	case p.Cloud != nil && p.Cloud.Resumed:
		msg = "Nothing left to drain: run finishes the interrupted run (scale-down to the recorded sizes)."
	case p.Cloud != nil:
		msg = fmt.Sprintf("Nothing to do: every node of the group runs the target %s version.", p.Cloud.TemplateKind)
	}
	_, err := fmt.Fprintln(w, color.Green(msg))
	for _, note := range p.Notes {
		fmt.Fprintf(w, "%s\n", color.Yellow("Note: "+note))
	}
	return err
}

// writeBatches is one row per outdated node, in batch order.
func writeBatches(w io.Writer, p *Plan, now time.Time, color output.Colorizer, wide bool) error {
	cols := []any{"Batch", "Node", "Zone", "Age", "Outdated", "Pods", "Blockers", "Warnings"}
	if p.Cloud != nil {
		cols = slices.Insert(cols, 2, any("Instance"))
	}
	if wide {
		cols = append(cols, "Tainted", "Cordoned", "Provider ID")
	}
	t := output.NewTable(w, cols...)
	for _, b := range p.Batches {
		for _, n := range b.Nodes {
			if err := t.Append(nodeRow(p, fmt.Sprint(b.Number), n, now, color, wide)...); err != nil {
				return err
			}
		}
	}
	// Deferred nodes leave in the scale-down, named so in the batch column.
	for _, n := range p.Deferred {
		if err := t.Append(nodeRow(p, "scale-down", n, now, color, wide)...); err != nil {
			return err
		}
	}
	return t.Render()
}

// writeServiceNodes lists the nodes the group's service replaces, by name:
// it replaces them in an order of its own, which no batch number could
// promise.
func writeServiceNodes(w io.Writer, p *Plan, now time.Time, color output.Colorizer, wide bool) error {
	nodes := slices.SortedFunc(slices.Values(p.Outdated()), func(a, b PlannedNode) int { return strings.Compare(a.Name, b.Name) })
	fmt.Fprintf(w, "Outdated nodes, by name (the %s picks the order):\n", p.Managed.Service)
	cols := []any{"Node", "Zone", "Age", "Outdated", "Pods", "Blockers", "Warnings"}
	if p.Cloud != nil {
		cols = slices.Insert(cols, 1, any("Instance"))
	}
	if wide {
		cols = append(cols, "Tainted", "Cordoned", "Provider ID")
	}
	t := output.NewTable(w, cols...)
	for _, n := range nodes {
		if err := t.Append(nodeRow(p, "", n, now, color, wide)[1:]...); err != nil {
			return err
		}
	}
	return t.Render()
}

// nodeRow is the row of an outdated node in batch (its number, or
// "scale-down").
func nodeRow(p *Plan, batch string, n PlannedNode, now time.Time, color output.Colorizer, wide bool) []any {
	diffs := make([]string, len(n.Outdated))
	for i, d := range n.Outdated {
		diffs[i] = d.Key + "=" + output.OrNone(d.Current)
	}
	blockers := "<none>"
	if len(n.Blockers) > 0 {
		blockers = color.Red(strings.Join(n.Blockers, ","))
	}
	row := []any{batch, n.Name, output.OrNone(n.Zone), age(n, now), strings.Join(diffs, ","), fmt.Sprint(len(n.Pods)), blockers, fmt.Sprint(len(n.Warnings))}
	if p.Cloud != nil {
		row = slices.Insert(row, 2, any(output.OrNone(n.MachineID)))
	}
	if wide {
		row = append(row, fmt.Sprint(n.Tainted), fmt.Sprint(n.Cordoned), output.OrNone(n.ProviderID))
	}
	return row
}

// WriteFindings prints the workload audit: one row per workload and check.
func WriteFindings(w io.Writer, findings []check.Finding, color output.Colorizer) error {
	blockers := 0
	for _, f := range findings {
		if f.Severity == check.Blocker {
			blockers++
		}
	}
	fmt.Fprintf(w, "Findings: %s, %s\n", Count(blockers, "blocker"), Count(len(findings)-blockers, "warning"))
	t := output.NewTable(w, "Severity", "Check", "Workload", "Nodes", "Message", "Fix")
	for _, f := range findings {
		sev := string(f.Severity)
		if f.Severity == check.Blocker {
			sev = color.Red(sev)
		} else {
			sev = color.Yellow(sev)
		}
		if err := t.Append(sev, f.Check, f.Object(), fmt.Sprint(len(f.Nodes)), f.Message, f.Fix); err != nil {
			return err
		}
	}
	return t.Render()
}

// strategyLine is the strategy as the run carries it out, or, where the
// group's service runs it, its name and who runs it; and where it came
// from when --strategy did not name it.
func strategyLine(p *Plan) string {
	line := p.Strategy
	if p.StrategyFrom != "" {
		line += " (" + p.StrategyFrom + ")"
	}
	if p.Managed != nil {
		return line + fmt.Sprintf(", run by the %s's service with the update settings below", p.Managed.Service)
	}
	if s, err := LookupStrategy(p.Strategy); err == nil {
		line = s.Summary(p)
		if p.StrategyFrom != "" {
			line += " (" + p.StrategyFrom + ")"
		}
	}
	return line
}

// inRegion is " in REGION", or nothing for a cloud without regions.
func inRegion(region string) string {
	if region == "" {
		return ""
	}
	return " in " + region
}

// scaleUpLine says how the group's sizes move: up for the run, back after.
func scaleUpLine(c *CloudPlan) string {
	switch {
	case c.RescaleFrom != "" && c.ScaleUp > 0:
		return fmt.Sprintf("+%d nodes again: the interrupted run scaled up for version %s, whose nodes are outdated too; %s; %s restored at the end",
			c.ScaleUp, c.RescaleFrom, c.ResizeText(c.During.less(c.ScaleUp), c.During), c.SizeText(c.Before))
	case c.Resumed:
		return fmt.Sprintf("done by an interrupted run; %s restored at the end", c.SizeText(c.Before))
	case c.ScaleUp == 0:
		return "none"
	}
	return fmt.Sprintf("+%d nodes: %s; restored at the end", c.ScaleUp, c.ResizeText(c.Before, c.During))
}

// rebalanceLine says what the run does to the group's own rebalancing
// between zones, where it terminates machines with the desired size
// lowered (the scale-down, surge removals); "" where it does not.
func rebalanceLine(p *Plan, c *CloudPlan) string {
	traits := p.Traits()
	switch {
	case c.Rebalance == "" || traits.WholeGroup && !traits.GreenFromZero || !traits.WholeGroup && c.ScaleUp == 0 && p.MaxSurge == 0 && !c.Resumed:
		return ""
	case c.RebalanceHeld:
		return fmt.Sprintf("%s suspended before the run: left suspended", c.Rebalance)
	case traits.GreenFromZero:
		return fmt.Sprintf("%s of blue suspended from the creation of green until blue is deleted, so it terminates no blue node the autoscaler's removals leave in an uneven zone", c.Rebalance)
	}
	return fmt.Sprintf("%s suspended from the first termination that lowers the desired size to the end of the run (a killed run's abort or resume resumes it), so it terminates no undrained instance; zones the run leaves uneven are evened first with one node more and one drained off the fullest zone", c.Rebalance)
}

func joinLabels(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

// maxUnavailableLine is the resolved batch size, with what was asked for
// when that differs from it (a percentage).
func maxUnavailableLine(p *Plan) string {
	n := Count(p.MaxUnavailable, "node") + " per batch"
	if p.MaxUnavailableInput != "" && p.MaxUnavailableInput != fmt.Sprint(p.MaxUnavailable) {
		n += fmt.Sprintf(" (--max-unavailable %s)", p.MaxUnavailableInput)
	}
	return n
}

// Count is "1 node", "2 nodes": n and the noun, plural unless n is 1.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// hooksLine names the command hooks a run runs, in the order it runs them.
func hooksLine(h *Hooks) string {
	var parts []string
	for _, name := range []string{HookPreDrain, HookPostDrain, HookPreTerminate} {
		if c := h.Command(name); c != "" {
			parts = append(parts, fmt.Sprintf("%s %q", name, c))
		}
	}
	return fmt.Sprintf("%s; once per node, each up to %s (--hook-timeout)", strings.Join(parts, ", "), time.Duration(h.Timeout))
}

// writeHookedNodes lists the nodes whose drain or removal waits for
// annotation hooks to be taken off.
func writeHookedNodes(w io.Writer, p *Plan) {
	if len(p.HookedNodes) == 0 {
		return
	}
	timeout := DefaultHookTimeout
	if p.Hooks != nil {
		timeout = time.Duration(p.Hooks.Timeout)
	}
	fmt.Fprintf(w, "\nAnnotation hooks (a node's drain, or removal, waits up to %s until its owner takes them off):\n", timeout)
	for _, n := range p.HookedNodes {
		keys := slices.Concat(n.PreDrain, n.PreTerminate)
		fmt.Fprintf(w, "  %s: %s\n", n.Node, strings.Join(keys, ", "))
	}
}

// loadBalancersLine lists the load balancers each removed node leaves, with
// the delay each imposes, and the bound on waiting for them; "" where
// there are none.
func loadBalancersLine(p *Plan, c *CloudPlan) string {
	if len(c.LoadBalancers) == 0 {
		return ""
	}
	parts := make([]string, len(c.LoadBalancers))
	for i, lb := range c.LoadBalancers {
		parts[i] = fmt.Sprintf("%s %s (delay %s)", lb.Kind, lb.Name, FormatDuration(time.Duration(lb.Delay)))
	}
	line := strings.Join(parts, ", ") + "; each node is deregistered from them and removed once they let go"
	if t := time.Duration(p.DeregistrationTimeout); t > 0 {
		line += fmt.Sprintf(", at most %s later (--deregistration-timeout)", FormatDuration(t))
	}
	return line
}
