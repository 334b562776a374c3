package session

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeupgrade/kubectl-nodeupgrade/internal/upgrade"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/state"
)

var sequenceSeed = flag.Uint64("lifecycle-seed", 0, "the seed of TestLifecycleSequences (0: a new one each run, printed)")

// A step of a generated sequence: what happens to the run, through the
// same writers the commands use, and the status it must read as after.
type step struct {
	name string
	// can says the step may happen now (a command only where the run
	// takes it); do makes it happen and returns the status to read.
	can func(w *world) bool
	do  func(w *world) state.RunState
}

// world is one group's run: its record as stored, whether a process
// holds its lock, and its pending request.
type world struct {
	t       *testing.T
	s       *Session
	rec     *state.Record
	alive   bool
	request string
}

func (w *world) run() Run { return Describe(w.rec, w.alive, w.request, time.Now()) }

// stop ends the live process the way err says, as runLocked does, and
// returns the status it reads as: what stopped it, or paused where a
// cancel is pending (run refuses the group until resume, whatever ended
// the process; LAST ERROR still says what did).
func (w *world) stop(err error, stopped state.RunState) state.RunState {
	recordEnd(w.rec, err, "", false)
	w.alive = false
	if w.request == state.RequestCancel {
		return state.StatePaused
	}
	return stopped
}

var steps = []step{
	{"run", func(w *world) bool { return !w.alive && w.run().Accept(CmdRun) == nil }, func(w *world) state.RunState {
		if w.rec.State.Over() {
			w.rec = &state.Record{NodeGroup: "g", Strategy: "eks", StartedAt: time.Now()}
		}
		w.rec.State, w.rec.LastError, w.rec.Phase, w.alive = state.StateRunning, "", string(plan.PhaseDrain), true
		return state.StateRunning
	}},
	{"resume", func(w *world) bool { return !w.alive && w.run().Accept(CmdResume) == nil }, func(w *world) state.RunState {
		w.request = "" // resume clears the pending request
		w.rec.State, w.rec.LastError, w.alive = state.StateRunning, "", true
		return state.StateRunning
	}},
	{"cancel", func(w *world) bool { return w.run().Accept(CmdCancel) == nil && w.run().Status != state.StateSubmitted },
		func(w *world) state.RunState {
			w.request = state.RequestCancel
			if w.alive {
				return StatusPausing
			}
			return state.StatePaused
		}},
	{"the run pauses", func(w *world) bool { return w.alive && w.request == state.RequestCancel }, func(w *world) state.RunState {
		return w.stop(&upgrade.PausedError{Phase: plan.Phase(w.rec.Phase)}, state.StatePaused)
	}},
	{"SIGKILL", func(w *world) bool { return w.alive }, func(w *world) state.RunState {
		w.alive = false
		if w.request == state.RequestCancel {
			return state.StatePaused
		}
		return state.StateInterrupted
	}},
	{"Ctrl-C", func(w *world) bool { return w.alive }, func(w *world) state.RunState {
		return w.stop(context.Canceled, state.StateInterrupted)
	}},
	{"the drain fails", func(w *world) bool { return w.alive }, func(w *world) state.RunState {
		return w.stop(errors.New(`pod "shop/web-1" cannot be evicted`), state.StateFailed)
	}},
	{"--not-after passes", func(w *world) bool { return w.alive && w.request == "" }, func(w *world) state.RunState {
		return w.stop(&upgrade.WindowClosedError{What: "batch 2/3", NotAfter: time.Now()}, state.StateWindowClosed)
	}},
	{"the run finishes", func(w *world) bool { return w.alive && w.request == "" }, func(w *world) state.RunState {
		return w.stop(nil, state.StateFinished)
	}},
	{"abort", func(w *world) bool { return !w.alive && w.run().Unfinished() && w.run().Accept(CmdAbort) == nil },
		func(w *world) state.RunState {
			if err := w.s.Controls().MarkAborted(context.Background(), w.rec, "g", ""); err != nil {
				w.t.Fatal(err)
			}
			w.request = ""
			return state.StateAborted
		}},
}

// TestLifecycleSequences drives random sequences of commands and stops
// through the writers the commands use, and after each step holds the
// lifecycle to what the step means: the status it reads as, report's
// outcome the same, every suggested command taken, a finished run
// suggesting nothing. Seeded: a failure prints its seed, which
// -lifecycle-seed replays.
func TestLifecycleSequences(t *testing.T) {
	seed := *sequenceSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -lifecycle-seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for n := range 40 {
		var out bytes.Buffer
		s := &Session{Client: fake.NewClientset(), StateNamespace: "kube-system", IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}
		w := &world{t: t, s: s, rec: &state.Record{NodeGroup: "g", Strategy: "eks", StartedAt: time.Now()}}
		var path []string
		for range 12 {
			var possible []step
			for _, st := range steps {
				if st.can(w) {
					possible = append(possible, st)
				}
			}
			st := possible[rng.IntN(len(possible))]
			path = append(path, st.name)
			want := st.do(w)
			run := w.run()
			if run.Status != want {
				t.Fatalf("sequence %d %v: status %q, want %q", n, path, run.Status, want)
			}
			if got := Outcome(w.rec, w.alive, w.request, time.Now()); got != string(want) {
				t.Fatalf("sequence %d %v: report's outcome %q, status %q", n, path, got, want)
			}
			for _, cmd := range commandsIn(run.Suggest()) {
				if err := run.Accept(cmd); err != nil {
					t.Fatalf("sequence %d %v: suggests %s, refused: %v", n, path, cmd, err)
				}
			}
			if run.Status.Over() && len(run.Next()) > 0 {
				t.Fatalf("sequence %d %v: %s run suggests %v", n, path, run.Status, run.Next())
			}
		}
	}
}
