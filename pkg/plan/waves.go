package plan

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// Waves is what --waves, --wave-soak and the gate flags ask for: the run
// replaces the outdated nodes wave by wave, each drained in batches of
// --max-unavailable; before every wave but the first (the canary) it
// soaks, then evaluates the gates over the soak.
type Waves struct {
	// Sizes are --waves as given: a count is how many nodes the wave
	// takes, a share (10%) how far the run has got by the wave's end.
	Sizes []string      `json:"sizes,omitempty"`
	Soak  time.Duration `json:"soak,omitempty"`
	// Gates are --gate as given, evaluated against PrometheusURL and
	// AlertmanagerURL; OnFail is pause (the default) or rollback.
	Gates           []string `json:"gates,omitempty"`
	PrometheusURL   string   `json:"prometheusURL,omitempty"`
	AlertmanagerURL string   `json:"alertmanagerURL,omitempty"`
	OnFail          string   `json:"onFail,omitempty"`
}

// What a failed gate does (--on-gate-fail).
const (
	OnGateFailPause    = "pause"
	OnGateFailRollback = "rollback"
)

// Any reports whether waves or gates were asked for.
func (w Waves) Any() bool { return len(w.Sizes) > 0 || len(w.Gates) > 0 }

// Validate checks the flags, each error naming its flag (bad input).
func (w Waves) Validate() error {
	if err := w.validateSizes(); err != nil {
		return err
	}
	if w.Soak < 0 {
		return fmt.Errorf("invalid --wave-soak %s: must not be negative", w.Soak)
	}
	switch w.OnFail {
	case "", OnGateFailPause, OnGateFailRollback:
	default:
		return fmt.Errorf("invalid --on-gate-fail %q: must be pause or rollback", w.OnFail)
	}
	specs, err := gate.ParseAll(w.Gates)
	if err != nil {
		return err
	}
	if need := gate.NeedsFlag(specs, w.PrometheusURL, w.AlertmanagerURL); need != "" {
		return fmt.Errorf("%s", need)
	}
	return w.validateGateFlags(specs)
}

// validateSizes refuses --waves whose waves would take no node whatever
// the group: a share not above the one before it, or anything after
// 100%. (Shares are how far the run has got.)
func (w Waves) validateSizes() error {
	last := 0.0
	for _, s := range w.Sizes {
		v, share, err := waveSize(s)
		switch {
		case err != nil:
			return err
		case last == 100:
			return fmt.Errorf("invalid --waves %q: %q comes after 100%%, so its wave takes no node; end --waves at 100%%", strings.Join(w.Sizes, ","), s)
		case share && v <= last:
			return fmt.Errorf("invalid --waves %q: %q is not above %g%% before it, so its wave takes no node; a share is how far the run has got", strings.Join(w.Sizes, ","), s, last)
		case share:
			last = v
		}
	}
	return nil
}

// validateGateFlags refuses the flags of gates that no --gate uses, and
// servers' URLs that could never be asked.
func (w Waves) validateGateFlags(specs []gate.Spec) error {
	uses := map[gate.Kind]bool{}
	for _, s := range specs {
		uses[s.Kind] = true
	}
	switch {
	case len(specs) == 0 && w.Soak > 0:
		return fmt.Errorf("--wave-soak %s needs a --gate: the soak is what the gates are evaluated over", w.Soak)
	case len(specs) == 0 && w.OnFail == OnGateFailRollback:
		return fmt.Errorf("--on-gate-fail rollback needs a --gate")
	case w.PrometheusURL != "" && !uses[gate.Prometheus]:
		return fmt.Errorf("--prometheus-url is used by no --gate: add a \"prometheus:QUERY<THRESHOLD\" gate, or leave it out")
	case w.AlertmanagerURL != "" && !uses[gate.Alertmanager]:
		return fmt.Errorf("--alertmanager-url is used by no --gate: add an \"alertmanager:MATCHERS\" gate, or leave it out")
	}
	if err := serverURL("prometheus-url", w.PrometheusURL, "http://prometheus.monitoring:9090"); err != nil {
		return err
	}
	return serverURL("alertmanager-url", w.AlertmanagerURL, "http://alertmanager.monitoring:9093")
}

// serverURL refuses a --prometheus-url or --alertmanager-url that is no
// http(s) URL with a host: it would be an unreachable gate at every
// evaluation, not bad input said once.
func serverURL(flag, v, example string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("invalid --%s %q: must be an http:// or https:// URL with a host, e.g. %s", flag, v, example)
	}
	return nil
}

// Specs are the gates, parsed (Validate accepted them).
func (w Waves) Specs() []gate.Spec {
	specs, _ := gate.ParseAll(w.Gates)
	return specs
}

// Evaluator evaluates the gates against the flags' servers.
func (w Waves) Evaluator() gate.Evaluator {
	return gate.Evaluator{PrometheusURL: w.PrometheusURL, AlertmanagerURL: w.AlertmanagerURL}
}

// waveSize reads one --waves value: a count (n, share false) or a share
// in percent.
func waveSize(s string) (float64, bool, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v <= 0 || v > 100 {
			return 0, false, fmt.Errorf("invalid --waves %q: a share must be above 0%% and at most 100%%", s)
		}
		return v, true, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false, fmt.Errorf("invalid --waves %q: must be a count of nodes (1) or a share of the outdated nodes (10%%)", s)
	}
	return float64(n), false, nil
}

// WavePlan is the run's waves, as the plan shows them.
type WavePlan struct {
	Sizes []string `json:"sizes,omitempty"`
	Soak  Duration `json:"soak"`
	Waves []Wave   `json:"waves"`
	// Gates are evaluated after each soak; OnFail says what a failed one
	// does; Preflight is each gate's evaluation when planned.
	Gates           []string       `json:"gates,omitempty"`
	PrometheusURL   string         `json:"prometheusURL,omitempty"`
	AlertmanagerURL string         `json:"alertmanagerURL,omitempty"`
	OnFail          string         `json:"onFail,omitempty"`
	Preflight       []gate.Verdict `json:"preflight,omitempty"`
}

// Wave is one wave: its batches (numbers into Plan.Batches) and nodes.
type Wave struct {
	// Number counts the run's waves from 1, the canary, also on a run
	// that goes on after earlier attempts replaced the first waves.
	Number  int      `json:"number"`
	Size    string   `json:"size"`
	Batches []int    `json:"batches"`
	Nodes   []string `json:"nodes"`
	// Gated: the run soaks and evaluates the gates before the wave.
	Gated bool `json:"gated"`
}

// WaveOf returns the wave whose first batch is batch i (an index into
// Plan.Batches), or nil.
func (p *Plan) WaveOf(i int) *Wave {
	if p.Waves == nil {
		return nil
	}
	for k := range p.Waves.Waves {
		if w := &p.Waves.Waves[k]; len(w.Batches) > 0 && w.Batches[0] == i+1 {
			return w
		}
	}
	return nil
}

// bounds are the run's cumulative node counts at each wave's end, for
// total outdated nodes; a last wave takes what the sizes leave.
func (w Waves) bounds(total int) (ends []int, sizes []string) {
	at := 0
	for _, s := range w.Sizes {
		v, share, _ := waveSize(s)
		end := at + int(v)
		if share {
			end = int(math.Ceil(v * float64(total) / 100))
		}
		end = min(end, total)
		if end > at {
			ends, sizes = append(ends, end), append(sizes, s)
			at = end
		}
	}
	if at < total {
		ends, sizes = append(ends, total), append(sizes, "100%")
	}
	return ends, sizes
}

// cutWaves splits the strategy's batches at the waves' ends, so no batch
// spans two waves (a part of a batch the strategy ordered is as safe as
// the batch), and puts the waves in the plan. done counts the nodes
// earlier attempts of the run replaced: the waves are the run's, and it
// goes on in the wave it stopped in. Without waves but with gates each
// batch is a wave.
func (p *Plan) cutWaves(batches [][]PlannedNode, in Input) [][]PlannedNode {
	w := in.Waves
	if !w.Any() || len(batches) == 0 || p.Managed != nil {
		return batches
	}
	var ends []int
	var sizes []string
	if len(w.Sizes) == 0 {
		// Each batch its own wave; the nodes done are the waves before.
		at := in.WavesDone
		if at > 0 {
			ends, sizes = append(ends, at), append(sizes, strconv.Itoa(at))
		}
		for _, b := range batches {
			at += len(b)
			ends, sizes = append(ends, at), append(sizes, strconv.Itoa(len(b)))
		}
	} else {
		n := 0
		for _, b := range batches {
			n += len(b)
		}
		ends, sizes = w.bounds(in.WavesDone + n)
		if dropped := len(w.Sizes) - len(sizes); dropped > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("--waves %s: %d of the waves take no node of the %d outdated and are left out; the run has %d waves", strings.Join(w.Sizes, ","), dropped, in.WavesDone+n, len(sizes)))
		}
	}
	p.Waves = &WavePlan{Sizes: w.Sizes, Soak: Duration(w.Soak), Gates: w.Gates, PrometheusURL: w.PrometheusURL, AlertmanagerURL: w.AlertmanagerURL, OnFail: p.onFail(w.OnFail)}
	out := p.splitAt(batches, ends, sizes, in.WavesDone)
	if ws := p.Waves.Waves; len(ws) == 1 && ws[0].Number == 1 {
		p.Notes = append(p.Notes, fmt.Sprintf("the canary (wave 1) takes all %d outdated nodes: no gate is evaluated before any of them; give --waves a smaller first wave", len(ws[0].Nodes)))
	}
	return out
}

// onFail is what a failed gate does in a run of p: --on-gate-fail
// rollback turns only a run that can go back live (blue/green) around;
// the others pause, and the plan says so rather than promise a rollback.
func (p *Plan) onFail(s string) string {
	if s == OnGateFailRollback && p.Traits().Rollback != RollbackGreen {
		p.Notes = append(p.Notes, fmt.Sprintf("--on-gate-fail rollback: a failed gate pauses a --strategy %s run (only blue-green turns around mid-run); \"kubectl nodeupgrade rollback\" then puts the group back", p.Strategy))
		return OnGateFailPause
	}
	return onFail(s)
}

func lastOr(xs []int, or int) int {
	if len(xs) == 0 {
		return or
	}
	return xs[len(xs)-1]
}

func onFail(s string) string {
	if s == "" {
		return OnGateFailPause
	}
	return s
}

// splitAt cuts batches (the nodes after the done first) at the waves'
// cumulative ends and records each wave left.
func (p *Plan) splitAt(batches [][]PlannedNode, ends []int, sizes []string, done int) [][]PlannedNode {
	var out [][]PlannedNode
	at := done
	queue := batches
	for k, end := range ends {
		if end <= done {
			continue
		}
		wave := Wave{Number: k + 1, Size: sizes[k], Gated: k > 0 && at == lastOr(ends[:k], 0)}
		for at < end && len(queue) > 0 {
			b := queue[0]
			take := min(len(b), end-at)
			out = append(out, b[:take])
			wave.Batches = append(wave.Batches, len(out))
			for _, n := range b[:take] {
				wave.Nodes = append(wave.Nodes, n.Name)
			}
			at += take
			if take < len(b) {
				queue[0] = b[take:]
			} else {
				queue = queue[1:]
			}
		}
		if len(wave.Batches) > 0 {
			p.Waves.Waves = append(p.Waves.Waves, wave)
		}
	}
	return out
}

// addWaveSoak counts the soaks in the estimates: one before each gated
// wave.
func (p *Plan) addWaveSoak() {
	if p.Waves == nil {
		return
	}
	gated := 0
	for _, w := range p.Waves.Waves {
		if w.Gated {
			gated++
		}
	}
	if gated == 0 {
		return
	}
	detail := fmt.Sprintf("before each of %d waves: soak %s, then the gates over the soak", gated, FormatDuration(time.Duration(p.Waves.Soak)))
	if len(p.Waves.Gates) == 0 {
		detail = fmt.Sprintf("before each of %d waves: soak %s (no gates)", gated, FormatDuration(time.Duration(p.Waves.Soak)))
	}
	p.Steps = append(p.Steps, Step{Phase: "WaveSoak", Detail: detail, Estimate: Duration(time.Duration(gated) * time.Duration(p.Waves.Soak))})
}

// AddGatePreflight puts the gates' evaluation when planned in the plan:
// with block, each gate that failed or could not be evaluated is a
// blocker.
func (p *Plan) AddGatePreflight(vs []gate.Verdict, block bool) {
	if p.Waves == nil || len(vs) == 0 {
		return
	}
	p.Waves.Preflight = vs
	if !block {
		return
	}
	var fs []check.Finding
	for _, v := range gate.Failed(vs) {
		fix := "fix what the gate sees, or the gate, and plan again; --ignore-check " + check.CheckGateFailing + " starts despite it"
		if v.Unevaluated() {
			fix = "make the gate evaluable (--prometheus-url, --alertmanager-url, the query) and plan again"
		}
		fs = append(fs, check.Finding{Check: check.CheckGateFailing, Severity: check.Blocker, Kind: "Gate", Name: v.Gate, Message: v.String(), Fix: fix})
	}
	p.AddFindings(fs...)
}

// writeWaves shows the waves, their nodes, the soak and the gates.
func writeWaves(w io.Writer, p *Plan) {
	wp := p.Waves
	if wp == nil {
		return
	}
	fmt.Fprintf(w, "\nWaves (soak %s before each gated wave; a failed gate does: %s):\n", FormatDuration(time.Duration(wp.Soak)), wp.OnFail)
	for _, wave := range wp.Waves {
		mark := "gated"
		if !wave.Gated {
			mark = "     "
		}
		if wave.Number == 1 {
			mark = "canary"
		}
		fmt.Fprintf(w, "  %d. %-6s %-5s batches %s: %s\n", wave.Number, mark, wave.Size, batchRange(wave.Batches), strings.Join(wave.Nodes, ", "))
	}
	for _, v := range wp.Preflight {
		fmt.Fprintf(w, "  gate  %s\n", v.String())
	}
}

func batchRange(bs []int) string {
	if len(bs) == 1 {
		return strconv.Itoa(bs[0])
	}
	return fmt.Sprintf("%d-%d", bs[0], bs[len(bs)-1])
}
