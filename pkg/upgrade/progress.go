package upgrade

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/transport"
)

// plainEvery is how often, during a wait, a run without a terminal prints
// its status line: often enough that a CI log shows it is alive (at least
// once a minute), rarely enough not to drown the log lines.
const plainEvery = 30 * time.Second

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// progress renders where a run is: the phase, the batch, the nodes done,
// the time elapsed, an ETA, and what it waits for by name. On a terminal
// it keeps one status line under the log lines, rewritten in place; without
// one it prints the same content as a plain line during waits. The engine
// feeds it; the rendering and the timing live here only.
type progress struct {
	mu    sync.Mutex
	out   io.Writer
	live  bool
	now   func() time.Time
	width func() int // the terminal's columns; 0 when unknown

	start   time.Time
	state   plan.State
	entered bool
	batches int
	done    int // nodes done, earlier attempts included
	total   int

	// estimate is the plan's for this run, and batchEstimate the part of
	// it the batches take; measured batch times replace the latter.
	estimate      time.Duration
	batchEstimate time.Duration
	inBatch       bool
	batchStart    time.Time
	measured      []time.Duration

	waiting   string
	waitSince time.Time
	// retry is the last retry of a request to the API server, shown until
	// retryUntil, when it is sent again
	retry      string
	retryUntil time.Time
	lastPlain  time.Time
	shown      bool // a live line is on the screen
}

func newProgress(out io.Writer, live bool, now func() time.Time, p *plan.Plan, earlierDone int) *progress {
	pr := &progress{
		out: out, live: live, now: now,
		batches:       len(p.Batches),
		done:          earlierDone,
		total:         earlierDone + p.Nodes.Outdated,
		estimate:      p.EstimatedDuration(),
		batchEstimate: p.BatchEstimate(),
		width:         func() int { return terminalWidth(out) },
	}
	pr.start = now()
	return pr
}

func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// println prints a log line; a live status line is taken off first and
// drawn again under it, so the two never share a line.
func (p *progress) println(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.shown {
		fmt.Fprint(p.out, clearLine)
	}
	fmt.Fprintln(p.out, line)
	if p.live && p.entered {
		p.drawLocked()
	}
}

// enter is told every state the run enters, and the nodes done by now.
func (p *progress) enter(s plan.State, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	inBatch := plan.BatchPhase(s.Phase)
	if p.inBatch && (!inBatch || s.Batch != p.state.Batch) {
		p.measured = append(p.measured, now.Sub(p.batchStart))
		p.inBatch = false
	}
	if inBatch && !p.inBatch {
		p.inBatch, p.batchStart = true, now
	}
	p.state, p.entered, p.done = s, true, done
	p.waiting = ""
	if p.live {
		p.drawLocked()
	}
}

// waitingFor says what the run waits for now, by name; "" when it waits
// for nothing in particular.
func (p *progress) waitingFor(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if what != "" && p.waiting == "" {
		p.waitSince = p.now()
	}
	p.waiting = what
	if p.live && p.entered {
		p.drawLocked()
	}
}

// retrying tells a retry of a request to the API server: on the live
// line until it is sent again, or as a log line without a terminal.
func (p *progress) retrying(n transport.RetryNotice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.live {
		fmt.Fprintf(p.out, "%s %s\n", now.Format("15:04:05"), n)
		return
	}
	p.retry, p.retryUntil = n.String(), now.Add(n.Wait)
	if p.entered {
		p.drawLocked()
	}
}

// tick redraws the live line (elapsed and ETA move on) or, without a
// terminal, prints the status during a wait every plainEvery.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.entered {
		return
	}
	if p.live {
		p.drawLocked()
		return
	}
	now := p.now()
	if p.waiting == "" {
		return
	}
	since := p.waitSince
	if p.lastPlain.After(since) {
		since = p.lastPlain
	}
	if now.Sub(since) >= plainEvery {
		fmt.Fprintf(p.out, "%s progress: %s\n", now.Format("15:04:05"), p.lineLocked(now))
		p.lastPlain = now
	}
}

// close takes the live line off the screen for good.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.shown {
		fmt.Fprint(p.out, clearLine)
	}
	p.shown, p.entered = false, false
}

func (p *progress) drawLocked() {
	line := p.lineLocked(p.now())
	if w := p.width(); w > 1 && utf8.RuneCountInString(line) > w-1 {
		// A wrapped line cannot be rewritten in place.
		line = string([]rune(line)[:w-2]) + "…"
	}
	fmt.Fprint(p.out, clearLine+line)
	p.shown = true
}

// line is the status: phase, batch, nodes, elapsed, ETA, and the wait.
func (p *progress) lineLocked(now time.Time) string {
	parts := []string{string(p.state.Phase)}
	if plan.BatchPhase(p.state.Phase) && p.batches > 0 {
		parts = append(parts, fmt.Sprintf("batch %d/%d", p.state.Batch+1, p.batches))
	}
	elapsed := now.Sub(p.start)
	parts = append(parts, fmt.Sprintf("%d/%d nodes", p.done, p.total), "elapsed "+roundDuration(elapsed))
	if eta, ok := p.eta(elapsed); ok {
		parts = append(parts, "ETA "+eta)
	}
	line := strings.Join(parts, " | ")
	if p.waiting != "" {
		line += " | waiting for " + p.waiting
	}
	if p.retry != "" && now.Before(p.retryUntil) {
		line += " | " + p.retry
	}
	return line
}

// eta is the plan's estimate less the time elapsed, with the batches'
// share taken from the batches measured so far once one has finished.
func (p *progress) eta(elapsed time.Duration) (string, bool) {
	if p.estimate <= 0 && len(p.measured) == 0 {
		return "", false
	}
	total := p.estimate
	left := p.batches - len(p.measured)
	if p.inBatch {
		left--
	}
	if n := len(p.measured); n > 0 {
		var sum time.Duration
		for _, d := range p.measured {
			sum += d
		}
		mean := sum / time.Duration(n)
		total = p.estimate - p.batchEstimate + time.Duration(p.batches)*mean
		// However late the run is, the batches not begun take their time.
		remaining := max(total-elapsed, time.Duration(max(left, 0))*mean)
		if remaining > 0 {
			return "~" + roundDuration(remaining), true
		}
	} else if remaining := total - elapsed; remaining > 0 {
		return "~" + roundDuration(remaining), true
	}
	return "any moment (past the estimate)", true
}

// roundDuration shows whole seconds under an hour, whole minutes above.
func roundDuration(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// listNames shows up to limit names, then how many more there are.
func listNames(names []string, limit int) string {
	if len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s +%d more", strings.Join(names[:limit], ", "), len(names)-limit)
}
