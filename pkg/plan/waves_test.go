package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// batchesOf makes n nodes in batches of size per, as a strategy would.
func batchesOf(n, per int) [][]PlannedNode {
	var out [][]PlannedNode
	for i := 0; i < n; i++ {
		if i%per == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], PlannedNode{Name: fmt.Sprintf("n%02d", i)})
	}
	return out
}

func TestCutWaves(t *testing.T) {
	tests := []struct {
		name    string
		nodes   int
		per     int
		waves   Waves
		done    int
		sizes   []int  // nodes per wave
		numbers []int  // wave numbers
		gated   []bool // per wave
		batches []int  // nodes per batch
	}{
		{name: "counts are the waves' sizes", nodes: 20, per: 3, waves: Waves{Sizes: []string{"1", "2", "7", "10"}},
			sizes: []int{1, 2, 7, 10}, numbers: []int{1, 2, 3, 4}, gated: []bool{false, true, true, true}, batches: []int{1, 2, 3, 3, 1, 2, 3, 3, 2}},
		{name: "shares are cumulative", nodes: 20, per: 4, waves: Waves{Sizes: []string{"1", "10%", "50%", "100%"}},
			sizes: []int{1, 1, 8, 10}, numbers: []int{1, 2, 3, 4}, gated: []bool{false, true, true, true}, batches: []int{1, 1, 2, 4, 2, 2, 4, 4}},
		{name: "what the sizes leave is a last wave", nodes: 5, per: 5, waves: Waves{Sizes: []string{"1", "1"}},
			sizes: []int{1, 1, 3}, numbers: []int{1, 2, 3}, gated: []bool{false, true, true}, batches: []int{1, 1, 3}},
		{name: "an empty wave is dropped", nodes: 5, per: 2, waves: Waves{Sizes: []string{"1", "10%", "100%"}},
			sizes: []int{1, 4}, numbers: []int{1, 2}, gated: []bool{false, true}, batches: []int{1, 1, 2, 1}},
		{name: "a run going on after its first wave gates its next", nodes: 19, per: 3, done: 1, waves: Waves{Sizes: []string{"1", "2", "7", "10"}},
			sizes: []int{2, 7, 10}, numbers: []int{2, 3, 4}, gated: []bool{true, true, true}, batches: []int{2, 1, 3, 3, 3, 3, 3, 1}},
		{name: "a run going on inside a wave does not gate it again", nodes: 18, per: 3, done: 2, waves: Waves{Sizes: []string{"1", "2", "7", "10"}},
			sizes: []int{1, 7, 10}, numbers: []int{2, 3, 4}, gated: []bool{false, true, true}, batches: []int{1, 2, 3, 2, 1, 3, 3, 3}},
		{name: "gates without waves gate each batch", nodes: 5, per: 2, waves: Waves{Gates: []string{"exec:true"}},
			sizes: []int{2, 2, 1}, numbers: []int{1, 2, 3}, gated: []bool{false, true, true}, batches: []int{2, 2, 1}},
		{name: "gates without waves on a run going on gate its first batch", nodes: 3, per: 2, done: 2, waves: Waves{Gates: []string{"exec:true"}},
			sizes: []int{2, 1}, numbers: []int{2, 3}, gated: []bool{true, true}, batches: []int{2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{}
			batches := p.cutWaves(batchesOf(tt.nodes, tt.per), Input{Waves: tt.waves, WavesDone: tt.done})
			var sizes, numbers, perBatch []int
			var gated []bool
			for _, w := range p.Waves.Waves {
				sizes, numbers, gated = append(sizes, len(w.Nodes)), append(numbers, w.Number), append(gated, w.Gated)
			}
			for _, b := range batches {
				perBatch = append(perBatch, len(b))
				if len(b) > tt.per {
					t.Fatalf("batch of %d nodes, more than %d", len(b), tt.per)
				}
			}
			if !slices.Equal(sizes, tt.sizes) || !slices.Equal(numbers, tt.numbers) || !slices.Equal(gated, tt.gated) || !slices.Equal(perBatch, tt.batches) {
				t.Fatalf("waves %v numbers %v gated %v batches %v; want %v %v %v %v", sizes, numbers, gated, perBatch, tt.sizes, tt.numbers, tt.gated, tt.batches)
			}
			// The order of the nodes is the strategy's: a wave's end
			// splits a batch, whose parts are as safe as the whole.
			var order []string
			for _, b := range batches {
				for _, n := range b {
					order = append(order, n.Name)
				}
			}
			if !slices.IsSorted(order) || len(order) != tt.nodes {
				t.Fatalf("nodes %v: not the strategy's order", order)
			}
		})
	}
}

func TestWavesValidate(t *testing.T) {
	tests := []struct {
		w   Waves
		err string
	}{
		{w: Waves{Sizes: []string{"1", "10%", "100%"}, Soak: time.Minute, Gates: []string{"exec:true"}}},
		{w: Waves{Sizes: []string{"1", "10%", "100%"}}},
		{w: Waves{Sizes: []string{"50%", "10%"}}, err: `invalid --waves "50%,10%": "10%" is not above 50% before it`},
		{w: Waves{Sizes: []string{"1", "100%", "1"}}, err: `invalid --waves "1,100%,1": "1" comes after 100%`},
		{w: Waves{Sizes: []string{"1", "2"}, Soak: time.Minute}, err: "--wave-soak 1m0s needs a --gate"},
		{w: Waves{Sizes: []string{"1", "2"}, OnFail: OnGateFailRollback}, err: "--on-gate-fail rollback needs a --gate"},
		{w: Waves{Sizes: []string{"1", "2"}, PrometheusURL: "http://p:9090"}, err: "--prometheus-url is used by no --gate"},
		{w: Waves{Gates: []string{"exec:true"}, AlertmanagerURL: "http://am"}, err: "--alertmanager-url is used by no --gate"},
		{w: Waves{Gates: []string{"prometheus:x<1"}, PrometheusURL: "prometheus:9090"}, err: `invalid --prometheus-url "prometheus:9090": must be an http:// or https:// URL`},
		{w: Waves{Gates: []string{"prometheus:x<1"}, PrometheusURL: "http//prom"}, err: `invalid --prometheus-url "http//prom"`},
		{w: Waves{Gates: []string{"alertmanager:a=b"}, AlertmanagerURL: "am:9093"}, err: `invalid --alertmanager-url "am:9093"`},
		{w: Waves{Sizes: []string{"0"}}, err: `invalid --waves "0": must be a count`},
		{w: Waves{Sizes: []string{"150%"}}, err: `invalid --waves "150%": a share must be`},
		{w: Waves{Sizes: []string{"x"}}, err: `invalid --waves "x"`},
		{w: Waves{Soak: -time.Second}, err: "invalid --wave-soak -1s"},
		{w: Waves{OnFail: "ignore"}, err: `invalid --on-gate-fail "ignore": must be pause or rollback`},
		{w: Waves{Gates: []string{"prometheus:x"}}, err: `invalid --gate "prometheus:x"`},
		{w: Waves{Gates: []string{"prometheus:x<1"}}, err: `--gate "prometheus:x<1" needs --prometheus-url`},
		{w: Waves{Gates: []string{"alertmanager:a=b"}, AlertmanagerURL: "http://am"}},
	}
	for _, tt := range tests {
		t.Run(tt.err, func(t *testing.T) {
			err := tt.w.Validate()
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
			if (err == nil) != (tt.err == "") || err != nil && !strings.HasPrefix(err.Error(), tt.err) {
				t.Fatalf("Validate() = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestGatePreflightBlocks(t *testing.T) {
	p := &Plan{Waves: &WavePlan{}}
	p.AddGatePreflight([]gate.Verdict{
		{Gate: "exec:true", Pass: true},
		{Gate: "prometheus:x<1", Reason: gate.ReasonUnreachable, Detail: "connection refused"},
	}, true)
	b := p.Blockers()
	if len(b) != 1 || b[0].Check != "gate-failing" || !strings.Contains(b[0].Message, "connection refused") {
		t.Fatalf("blockers %+v", b)
	}
}

// TestOnGateFailIsWhatTheRunDoes: the plan says a failed gate rolls back
// only where the run turns around live (blue/green); elsewhere it says
// pause, as the run does, and a note says why.
func TestOnGateFailIsWhatTheRunDoes(t *testing.T) {
	for _, tt := range []struct {
		strategy StrategyName
		asked    string
		want     string
		noted    bool
	}{
		{StrategyBlueGreen, OnGateFailRollback, OnGateFailRollback, false},
		{StrategyEKS, OnGateFailRollback, OnGateFailPause, true},
		{StrategySurge, OnGateFailRollback, OnGateFailPause, true},
		{StrategyEKS, "", OnGateFailPause, false},
	} {
		t.Run(string(tt.strategy)+" "+tt.asked, func(t *testing.T) {
			p := &Plan{Strategy: string(tt.strategy)}
			p.cutWaves(batchesOf(3, 1), Input{Waves: Waves{Sizes: []string{"1"}, Gates: []string{"exec:true"}, OnFail: tt.asked}})
			var b strings.Builder
			writeWaves(&b, p)
			if p.Waves.OnFail != tt.want || !strings.Contains(b.String(), "a failed gate does: "+tt.want+")") {
				t.Errorf("onFail %q, table:\n%s\nwant %q", p.Waves.OnFail, b.String(), tt.want)
			}
			if noted := slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "a failed gate pauses") }); noted != tt.noted {
				t.Errorf("notes %q: noted %v, want %v", p.Notes, noted, tt.noted)
			}
		})
	}
}

// TestWavesThatMeanNothingAreNoted: a canary of every outdated node (no
// gate ever evaluated) and waves the group is too small for are said in
// the plan's notes, not dropped in silence.
func TestWavesThatMeanNothingAreNoted(t *testing.T) {
	for _, tt := range []struct {
		name  string
		nodes int
		sizes []string
		want  string
	}{
		{"a canary of the whole group", 9, []string{"20"}, "the canary (wave 1) takes all 9 outdated nodes: no gate is evaluated"},
		{"a share the group is too small for", 5, []string{"1", "10%", "100%"}, "--waves 1,10%,100%: 1 of the waves take no node of the 5 outdated"},
		{"waves that fit", 9, []string{"1", "50%"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{}
			p.cutWaves(batchesOf(tt.nodes, 1), Input{Waves: Waves{Sizes: tt.sizes, Gates: []string{"exec:true"}}})
			got := strings.Join(p.Notes, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("notes %q, want %q", got, tt.want)
			}
		})
	}
}
