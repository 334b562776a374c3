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
	// phaseDone is done when the state was entered: a service's update
	// counts its pace from it.
	phaseDone int

	// estimate is the plan's for this run, and batchEstimate the part of
	// it the batches take; measured batch times replace the latter.
	estimate      time.Duration
	batchEstimate time.Duration
	inBatch       bool
	batchStart    time.Time
	measured      []time.Duration
	// What the run learns before a batch has ended: how long the phases
	// of the first batch took (its drain, say), and how long new nodes
	// took to be Ready (the scale-up); the plan's figures for them.
	phaseStart time.Time
	firstBatch map[plan.Phase]time.Duration
	launch     time.Duration // measured; 0 until the scale-up ended
	recovered  time.Duration // the batches' recoveries, which a scale-down has not
	planned    map[string]time.Duration
	postDrain  time.Duration
	drain      time.Duration // the plan's drain of a batch (plan.DrainTime)

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
		firstBatch:    map[plan.Phase]time.Duration{},
		planned:       map[string]time.Duration{},
		postDrain:     time.Duration(p.PostDrainWait),
		drain:         p.DrainTime(),
	}
	for _, st := range p.Steps {
		pr.planned[st.Phase] += time.Duration(st.Estimate)
	}
	pr.start = now()
	pr.phaseStart = pr.start
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
	p.learn(now, s)
	inBatch := plan.BatchPhase(s.Phase)
	if p.inBatch && (!inBatch || s.Batch != p.state.Batch) {
		p.measured = append(p.measured, now.Sub(p.batchStart))
		p.inBatch = false
	}
	newBatch := inBatch && !p.inBatch
	if newBatch {
		p.inBatch, p.batchStart = true, now
	}
	p.state, p.entered, p.done, p.phaseStart, p.phaseDone = s, true, done, now, done
	p.waiting = ""
	switch {
	case p.live:
		p.drawLocked()
	case newBatch || s.Phase == plan.PhaseScaleDown:
		// Without a terminal too, each batch and the scale-down start
		// with the status and its ETA.
		p.printPlainLocked(now)
	}
}

// learn keeps what the phase being left took: the scale-up's wait for new
// nodes, and each phase of the first batch.
func (p *progress) learn(now time.Time, next plan.State) {
	if !p.entered || next.Phase == p.state.Phase && next.Batch == p.state.Batch {
		return
	}
	took := now.Sub(p.phaseStart)
	switch {
	case p.state.Phase == plan.PhaseScaleUp || p.state.Phase == plan.PhaseCreateGreen:
		p.launch = took
	case plan.BatchPhase(p.state.Phase) && len(p.measured) == 0:
		p.firstBatch[p.state.Phase] += took
	}
	if p.state.Phase == plan.PhaseRecover {
		p.recovered += took
	}
}

// printPlainLocked prints the status as a plain line.
func (p *progress) printPlainLocked(now time.Time) {
	fmt.Fprintf(p.out, "%s progress: %s\n", now.Format("15:04:05"), p.lineLocked(now))
	p.lastPlain = now
}

// setDone tells the nodes done by now within a state (those a service's
// update replaced, say).
func (p *progress) setDone(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = done
	if p.live && p.entered {
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
		p.printPlainLocked(now)
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

// eta is the plan's estimate less the time elapsed, corrected by what the
// run has measured: the batches' share by the mean batch once one has
// ended, and before that by the first batch's phases as they end (its
// drain, say); the scale-down, a batch's work per node, likewise; the wait
// for new nodes by the scale-up's.
func (p *progress) eta(elapsed time.Duration) (string, bool) {
	now := p.start.Add(elapsed)
	if left, ok := p.serviceLeft(now); ok {
		return "~" + roundDuration(left), true
	}
	if p.estimate <= 0 && len(p.measured) == 0 {
		return "", false
	}
	batch := p.batchTime(now)
	total := p.estimate - p.batchEstimate + time.Duration(p.batches)*batch
	if perBatch := p.plannedBatch(); perBatch > 0 {
		// The scale-down removes its nodes one by one as a batch does,
		// but waits for no recovery.
		sd := p.planned["ScaleDown"]
		perNode := batch
		if n := len(p.measured); n > 0 {
			perNode = max(batch-p.recovered/time.Duration(n), 0)
		}
		total += time.Duration(float64(sd)*float64(perNode)/float64(perBatch)) - sd
	}
	if launch := p.launchTime(now); launch > 0 {
		total += launch - p.planned["ScaleUp"] - p.planned["CreateGreen"]
	}
	remaining := total - elapsed
	if len(p.measured) > 0 {
		// However late the run is, the batches not begun take their time.
		left := p.batches - len(p.measured)
		if p.inBatch {
			left--
		}
		remaining = max(remaining, time.Duration(max(left, 0))*batch)
	}
	if remaining > 0 {
		return "~" + roundDuration(remaining), true
	}
	return "any moment (past the estimate)", true
}

// serviceLeft is, during a service's update, the time its nodes not yet
// replaced take at the pace of those it has replaced since the phase began:
// the plan's figure for an update is the service's documented worst case.
func (p *progress) serviceLeft(now time.Time) (time.Duration, bool) {
	n := p.done - p.phaseDone
	if p.state.Phase != plan.PhaseUpdate || n <= 0 || p.done >= p.total {
		return 0, false
	}
	return now.Sub(p.phaseStart) / time.Duration(n) * time.Duration(p.total-p.done), true
}

// plannedBatch is the plan's time for one batch.
func (p *progress) plannedBatch() time.Duration {
	if p.batches == 0 {
		return 0
	}
	return p.batchEstimate / time.Duration(p.batches)
}

// batchPhaseOrder are a batch's phases in their order.
var batchPhaseOrder = []plan.Phase{plan.PhaseSurge, plan.PhaseRoom, plan.PhaseDrain, plan.PhaseCordon, plan.PhaseRemove, plan.PhaseRecover, plan.PhaseBatchSoak}

// batchTime is what a batch takes: the mean of those ended; before one
// has, the first batch's phases as measured, the one under way at least
// as long as it has lasted, and the plan's figures for the rest (a drain
// of the plan's DrainTime, the post-drain wait, the remainder at removal).
func (p *progress) batchTime(now time.Time) time.Duration {
	if n := len(p.measured); n > 0 {
		var sum time.Duration
		for _, d := range p.measured {
			sum += d
		}
		return sum / time.Duration(n)
	}
	perBatch := p.plannedBatch()
	if !p.inBatch {
		return perBatch
	}
	planned := map[plan.Phase]time.Duration{
		plan.PhaseDrain:  min(p.drain, perBatch),
		plan.PhaseCordon: p.postDrain,
	}
	planned[plan.PhaseRemove] = max(perBatch-planned[plan.PhaseDrain]-p.postDrain, 0)
	var d time.Duration
	for _, ph := range batchPhaseOrder {
		took, ended := p.firstBatch[ph]
		switch {
		case ph == p.state.Phase:
			d += took + max(planned[ph], now.Sub(p.phaseStart))
		case ended:
			d += took
		default:
			d += planned[ph]
		}
	}
	return d
}

// launchTime is how long new nodes take to be Ready, as the scale-up
// measured it (at least as long as one under way has lasted); 0 when
// nothing was measured.
func (p *progress) launchTime(now time.Time) time.Duration {
	if p.state.Phase == plan.PhaseScaleUp || p.state.Phase == plan.PhaseCreateGreen {
		return max(p.planned["ScaleUp"]+p.planned["CreateGreen"], now.Sub(p.phaseStart))
	}
	return p.launch
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
