package upgrade

import (
	"fmt"
	"io"
	"os"
	"slices"
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
	// of the first batch took (its drain, say); the plan's figures for
	// them.
	phaseStart time.Time
	firstBatch map[plan.Phase]time.Duration
	recovered  time.Duration // the batches' recoveries, which a scale-down has not
	planned    map[string]time.Duration
	// parts are the plan's parts (partOfStep) in their order, with their
	// estimates; at is the one under way (-1 before the first), entered
	// at atStart.
	parts       []string
	partPlanned map[string]time.Duration
	at          int
	atStart     time.Time
	postDrain   time.Duration
	drain       time.Duration // the plan's drain of a batch (plan.DrainTime)

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
		partPlanned:   map[string]time.Duration{},
		at:            -1,
		postDrain:     time.Duration(p.PostDrainWait),
		drain:         p.DrainTime(),
	}
	for _, st := range p.Steps {
		pr.planned[st.Phase] += time.Duration(st.Estimate)
		part := partOfStep(st.Phase, p.Managed != nil)
		if !slices.Contains(pr.parts, part) {
			pr.parts = append(pr.parts, part)
		}
		pr.partPlanned[part] += time.Duration(st.Estimate)
	}
	pr.start = now()
	pr.phaseStart, pr.atStart = pr.start, pr.start
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
	if i := slices.Index(p.parts, partOfPhase(s.Phase)); i > p.at {
		p.at, p.atStart = i, now
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

// learn keeps what the phase being left took: each phase of the first
// batch, and the batches' recoveries.
func (p *progress) learn(now time.Time, next plan.State) {
	if !p.entered || next.Phase == p.state.Phase && next.Batch == p.state.Batch {
		return
	}
	took := now.Sub(p.phaseStart)
	if plan.BatchPhase(p.state.Phase) && len(p.measured) == 0 {
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

// eta is the time the steps not yet ended take (left), or during a
// service's update its pace over the nodes left.
func (p *progress) eta(elapsed time.Duration) (string, bool) {
	now := p.start.Add(elapsed)
	if left, ok := p.serviceLeft(now); ok {
		return "~" + roundDuration(left), true
	}
	if p.estimate <= 0 && len(p.measured) == 0 {
		return "", false
	}
	if left := p.left(now); left > 0 {
		return "~" + roundDuration(left), true
	}
	return "any moment (past the estimate)", true
}

// left is what the run has still to do, at the pace it measured: the
// parts of the plan after the one under way (its batches, the
// scale-down and the wave soaks at the batches' measured pace; the
// others as planned), and the rest of the one under way. It is counted
// from what is left, not as the estimate less the time elapsed, so a
// part that ended sooner or later than planned moves no other (the GCE
// demo's said 1m46s with 73s left).
func (p *progress) left(now time.Time) time.Duration {
	batch := p.batchTime(now)
	var d time.Duration
	for i, part := range p.parts {
		switch {
		case i < p.at:
		case part == batchPart:
			d += p.batchesLeft(now, batch)
		case i == p.at:
			d += max(p.paced(part, batch)-now.Sub(p.atStart), 0)
		default:
			d += p.paced(part, batch)
		}
	}
	return d
}

// batchPart is the part of the plan its batches (and the wave soaks
// between them) make: the steps plan.BatchStep names.
const batchPart = "batches"

// partOfStep is the part of the plan a step is in: a service's update
// is one part from its settings to their restoring; the batches one.
func partOfStep(phase string, managed bool) string {
	switch {
	case managed && phase != string(plan.PhaseConfigure) && phase != string(plan.PhaseRestore):
		return string(plan.PhaseUpdate)
	case !managed && (plan.BatchStep(phase) || phase == waveSoakStep):
		return batchPart
	}
	return phase
}

// partOfPhase is the part of the plan a run's phase is in.
func partOfPhase(ph plan.Phase) string {
	if plan.BatchPhase(ph) {
		return batchPart
	}
	return string(ph)
}

const waveSoakStep = "WaveSoak"

// batchesLeft is the batches not ended at batch each, the one under way
// less what it has lasted, and the wave soaks in proportion.
func (p *progress) batchesLeft(now time.Time, batch time.Duration) time.Duration {
	n := max(p.batches-len(p.measured), 0)
	d := time.Duration(n) * batch
	if p.inBatch && n > 0 {
		d -= min(now.Sub(p.batchStart), batch)
	}
	if p.batches > 0 {
		d += p.planned[waveSoakStep] * time.Duration(n) / time.Duration(p.batches)
	}
	return d
}

// paced is a part's time at the run's pace: the scale-down's, a batch's
// work per node, by the batches measured; the others as planned.
func (p *progress) paced(part string, batch time.Duration) time.Duration {
	est := p.partPlanned[part]
	perBatch := p.plannedBatch()
	if part != string(plan.PhaseScaleDown) || perBatch <= 0 {
		return est
	}
	// The scale-down removes its nodes one by one as a batch does, but
	// waits for no recovery.
	perNode := batch
	if n := len(p.measured); n > 0 {
		perNode = max(batch-p.recovered/time.Duration(n), 0)
	}
	return time.Duration(float64(est) * float64(perNode) / float64(perBatch))
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
