package upgrade

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// DefaultTerminateTimeout bounds the wait for a removed machine to be gone
// when the run is not given --terminate-timeout.
const DefaultTerminateTimeout = 15 * time.Minute

// machineOf names a node's machine before its removal, where the group can
// say when a machine is gone; "" otherwise.
func (cg *cloudGroup) machineOf(ctx context.Context, node string) (string, error) {
	d, ok := cg.pool.(cloud.Departures)
	if !ok {
		return "", nil
	}
	return d.MachineOf(ctx, node)
}

// awaitGone waits until each removed machine (by node) is gone from the
// group, up to --terminate-timeout. A machine held on its way out by
// another system's hook is counted as leaving and named with the hook
// until its owner lets go or the hook times out; the run never lets go
// for it.
func (cg *cloudGroup) awaitGone(ctx context.Context, machines map[string]string) error {
	d, ok := cg.pool.(cloud.Departures)
	for node, id := range machines {
		if id == "" {
			delete(machines, node)
		}
	}
	if !ok || len(machines) == 0 {
		return nil
	}
	timeout := cg.cfg.TerminateTimeout
	if timeout <= 0 {
		timeout = DefaultTerminateTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w := &departureWait{poll: cg.cfg.PollInterval, logf: cg.logf, machineKind: cg.words.machineKind(), d: d, machines: machines, told: map[string]bool{}, last: map[string]cloud.Departure{},
		// Most terminations end in seconds: look again soon at first, then
		// back off to the poll interval.
		pause: min(250*time.Millisecond, cg.cfg.PollInterval)}
	for {
		nodes := make([]string, 0, len(machines))
		for node := range machines {
			nodes = append(nodes, node)
		}
		sort.Strings(nodes)
		waiting, throttled, err := w.look(wctx, nodes)
		if err != nil {
			return err
		}
		if len(machines) == 0 {
			cg.progress.waitingFor("")
			return nil
		}
		if wctx.Err() == nil {
			cg.progress.waitingFor(listNames(waiting, waitNamesShown))
			w.sleep(wctx, throttled)
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return w.timedOut(nodes, timeout)
	}
}

// departureWait is awaitGone's wait for removed machines to leave.
type departureWait struct {
	poll        time.Duration
	logf        func(format string, args ...any)
	machineKind string
	d           cloud.Departures
	machines    map[string]string // by node: those not gone yet
	told        map[string]bool   // machines whose hooks were logged
	last        map[string]cloud.Departure
	pause       time.Duration // before the next look
	rounds      int           // rounds in a row with a throttled look
}

// look asks once after every machine waited for, whatever their number,
// forgets those gone, and says what is still awaited. Throttling passes:
// a throttled look counts them all as still leaving.
func (w *departureWait) look(ctx context.Context, nodes []string) (waiting []string, throttled bool, err error) {
	ids := make([]string, len(nodes))
	for i, node := range nodes {
		ids[i] = w.machines[node]
	}
	deps, err := w.d.Leaving(ctx, ids)
	throttled = err != nil && cloud.Transient(err) && ctx.Err() == nil
	switch {
	case throttled:
		for _, id := range ids {
			waiting = append(waiting, fmt.Sprintf("%s to terminate", id))
		}
	case err != nil && ctx.Err() == nil:
		return nil, false, err
	case err == nil:
		for _, node := range nodes {
			id := w.machines[node]
			dep, ok := deps[id]
			if ok && dep.Gone {
				delete(w.machines, node)
				continue
			}
			w.last[id] = dep
			waiting = append(waiting, w.awaited(id, dep))
		}
	}
	return waiting, throttled, nil
}

// awaited says what is awaited of a machine still leaving; the hooks
// holding it are logged once.
func (w *departureWait) awaited(id string, dep cloud.Departure) string {
	what := fmt.Sprintf("%s to terminate", id)
	if len(dep.HeldBy) > 0 {
		what += ": " + heldBy(dep)
		if !w.told[id] {
			w.told[id] = true
			w.logf("waiting for %s", what)
		}
	}
	return what
}

// sleep pauses before the next look, doubling the pause up to the poll
// interval, and backing off further while the cloud throttles the looks.
func (w *departureWait) sleep(ctx context.Context, throttled bool) {
	poll := w.poll
	if throttled {
		w.rounds++
		w.pause = max(w.pause, cloud.Backoff(poll, w.rounds))
	} else {
		w.rounds = 0
	}
	t := time.NewTimer(w.pause)
	defer t.Stop()
	w.pause = min(2*w.pause, poll)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// timedOut is the error of a wait past --terminate-timeout: it names the
// first machine still there, and why it is.
func (w *departureWait) timedOut(nodes []string, timeout time.Duration) error {
	node := nodes[0]
	for _, n := range nodes {
		if _, left := w.machines[n]; left {
			node = n
			break
		}
	}
	id := w.machines[node]
	why := "still " + strings.ToLower(orUnknown(w.last[id].Lifecycle))
	if len(w.last[id].HeldBy) > 0 {
		why = heldBy(w.last[id]) + ", which belongs to another system and was not completed"
	}
	more := ""
	if len(w.machines) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(w.machines)-1)
	}
	return fmt.Errorf("%s %s of node %q did not terminate within %s (--terminate-timeout)%s: %s; complete the hook where it belongs or raise --terminate-timeout, then run again",
		w.machineKind, id, node, plan.FormatDuration(timeout), more, why)
}

// heldBy says which hooks hold a leaving machine, and how long each may.
func heldBy(dep cloud.Departure) string {
	names := make([]string, len(dep.HeldBy))
	for i, h := range dep.HeldBy {
		names[i] = fmt.Sprintf("%q", h.Name)
	}
	word := "hook"
	if len(names) > 1 {
		word = "hooks"
	}
	beats := make([]string, len(dep.HeldBy))
	for i, h := range dep.HeldBy {
		beats[i] = fmt.Sprintf("%d s", int64(time.Duration(h.Timeout)/time.Second))
	}
	return fmt.Sprintf("held by lifecycle %s %s (%s, heartbeat %s)", word, strings.Join(names, ", "), orUnknown(dep.Lifecycle), strings.Join(beats, ", "))
}

// machineKind is the provider's word for a machine, from the plan.
func (w cloudWords) machineKind() string {
	if c := w.cloud; c != nil && c.MachineKind != "" {
		return c.MachineKind
	}
	return "machine"
}
