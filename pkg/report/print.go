package report

import (
	"fmt"
	"io"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/output"
)

// WriteTable prints the report for a reader: per run its outcome and
// times, the estimate against what happened, its attempts, the top
// blockers, the phases, and each attempt's batches and node timelines.
func WriteTable(w io.Writer, rep Report) error {
	if len(rep.Runs) == 0 {
		_, err := fmt.Fprintf(w, "No run of %q reported yet.\n", rep.NodeGroup)
		return err
	}
	for i, run := range rep.Runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeRun(w, rep.NodeGroup, run); err != nil {
			return err
		}
	}
	return nil
}

func writeRun(w io.Writer, group string, run RunReport) error {
	fmt.Fprintf(w, "Run of %q started %s (%s; attempts: %d): %s\n", group, run.StartedAt.UTC().Format(time.RFC3339), output.OrNone(run.Strategy), len(run.Attempts), run.Outcome)
	which := "the plan"
	if len(run.Attempts) > 1 {
		which = "the first plan" // the run's, not what was left to its last attempt
	}
	fmt.Fprintf(w, "Took %s; %s estimated %s%s\n", short(run.Took), which, estimated(run), overrun(run))
	if run.Trimmed > 0 {
		fmt.Fprintf(w, "(%d of the shortest refused evictions left out to keep the report within %d KiB)\n", run.Trimmed, MaxBytes>>10)
	}
	if run.TrimmedAttempts > 0 {
		fmt.Fprintf(w, "(the node timelines of the %d oldest attempts left out to keep the report within %d KiB)\n", run.TrimmedAttempts, MaxBytes>>10)
	}
	sections := []func(io.Writer, RunReport) error{writeAttempts, writeGates, writeBlockers, writeSurges, writePhases, writeBatches, writeNodes}
	for _, section := range sections {
		if err := section(w, run); err != nil {
			return err
		}
	}
	return nil
}

func overrun(run RunReport) string {
	if run.Estimate <= 0 || run.Took <= run.Estimate {
		return ""
	}
	return fmt.Sprintf(" (%s over)", short(run.Took-run.Estimate))
}

// estimated is the plan's estimate, the node-pool soak apart: a run whose
// soak "complete" ended is measured against the work.
func estimated(run RunReport) string {
	if run.Soak <= 0 {
		return short(run.Estimate)
	}
	return fmt.Sprintf("%s plus a soak of %s", short(run.Estimate-run.Soak), short(run.Soak))
}

func short(d Duration) string { return time.Duration(d).Truncate(time.Second).String() }

func writeBlockers(w io.Writer, run RunReport) error {
	if len(run.Blockers) == 0 {
		_, err := fmt.Fprintln(w, "\nNo eviction was refused.")
		return err
	}
	return writeSection(w, "Top blockers (refused evictions, by time held):", []any{"Held", "Pod", "PDB", "Node", "Refusals"}, run.Blockers, func(b Blocker) []any {
		return []any{short(b.Held), b.Pod, output.OrNone(b.PDB), b.Node, fmt.Sprint(b.Refusals)}
	})
}

func writePhases(w io.Writer, run RunReport) error {
	return writeSection(w, "Phases (over all attempts):", []any{"Phase", "Took"}, run.PhaseTotals, func(p PhaseTotal) []any {
		return []any{p.Phase, short(p.Took)}
	})
}

func writeBatches(w io.Writer, run RunReport) error {
	return writeSection(w, "Batches:", []any{"Attempt", "Batch", "From", "To", "Took"}, run.Batches, func(b BatchRow) []any {
		return []any{fmt.Sprint(b.Attempt), fmt.Sprint(b.Batch), clock(&b.From), clock(&b.To), short(Duration(b.To.Sub(b.From)))}
	})
}

func writeNodes(w io.Writer, run RunReport) error {
	header := []any{"Node", "Attempt", "Batch", "Tainted", "Drain start", "Drained", "Held", "Removed", "Replacement", "Ready"}
	return writeSection(w, "Nodes (UTC):", header, run.Nodes, func(n NodeReport) []any {
		var held time.Duration
		for _, b := range n.Blocks {
			held += b.Held()
		}
		return []any{n.Name, fmt.Sprint(n.Attempt), batchCell(n.Batch), clock(n.Tainted), clock(n.DrainStart), clock(n.Drained), short(Duration(held)),
			clock(n.Removed), output.OrNone(n.Replacement), clock(n.ReplacementReady)}
	})
}

// writeSection writes a section of the report: its title and a table of
// header with a row per item; nothing where there is no item.
func writeSection[T any](w io.Writer, title string, header []any, items []T, row func(T) []any) error {
	if len(items) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n"+title)
	t := output.NewTable(w, header...)
	for _, it := range items {
		if err := t.Append(row(it)...); err != nil {
			return err
		}
	}
	return t.Render()
}

// batchCell is a node's batch, "-" for a node its attempt did not drain
// in a batch.
func batchCell(batch int) string {
	if batch == 0 {
		return "-"
	}
	return fmt.Sprint(batch)
}

// writeAttempts lists the run's attempts: each one's kind, times and
// outcome.
func writeAttempts(w io.Writer, run RunReport) error {
	fmt.Fprintln(w, "\nAttempts (UTC):")
	t := output.NewTable(w, "Attempt", "Kind", "Started", "Ended", "Took", "Batches", "Outcome")
	for _, a := range run.Attempts {
		kind := output.OrNone(a.Kind)
		if a.Pod != "" {
			kind += " pod " + a.Pod
		}
		end := a.EndedAt
		if end == nil {
			end = &a.LastSeen // killed, or under way: its last word
		}
		if err := t.Append(fmt.Sprint(a.Attempt), kind, clock(&a.StartedAt), clock(end), short(a.Took), fmt.Sprint(a.Batches), output.OrNone(a.Outcome)); err != nil {
			return err
		}
	}
	return t.Render()
}

// clock is a time of the report's tables: the time of day, UTC.
func clock(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}
