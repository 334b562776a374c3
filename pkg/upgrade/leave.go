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
func (e *Engine) machineOf(ctx context.Context, node string) (string, error) {
	d, ok := e.group.(cloud.Departures)
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
func (e *Engine) awaitGone(ctx context.Context, machines map[string]string) error {
	d, ok := e.group.(cloud.Departures)
	for node, id := range machines {
		if id == "" {
			delete(machines, node)
		}
	}
	if !ok || len(machines) == 0 {
		return nil
	}
	timeout := e.cfg.TerminateTimeout
	if timeout <= 0 {
		timeout = DefaultTerminateTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	told := map[string]bool{}
	last := map[string]cloud.Departure{}
	// Most terminations end in seconds: look again soon at first, then
	// back off to the poll interval.
	pause := min(250*time.Millisecond, e.cfg.PollInterval)
	rounds := 0 // rounds in a row with a throttled look
	for {
		nodes := make([]string, 0, len(machines))
		for node := range machines {
			nodes = append(nodes, node)
		}
		sort.Strings(nodes)
		var waiting []string
		ids := make([]string, len(nodes))
		for i, node := range nodes {
			ids[i] = machines[node]
		}
		// One look at every machine waited for, whatever their number.
		deps, err := d.Leaving(wctx, ids)
		throttled := err != nil && cloud.Transient(err) && wctx.Err() == nil
		switch {
		case throttled:
			// Throttling passes: still leaving, look again later.
			for _, id := range ids {
				waiting = append(waiting, fmt.Sprintf("%s to terminate", id))
			}
		case err != nil && wctx.Err() == nil:
			return err
		case err == nil:
			for _, node := range nodes {
				id := machines[node]
				dep, ok := deps[id]
				if ok && dep.Gone {
					delete(machines, node)
					continue
				}
				last[id] = dep
				what := fmt.Sprintf("%s to terminate", id)
				if len(dep.HeldBy) > 0 {
					what += ": " + heldBy(dep)
					if !told[id] {
						told[id] = true
						e.logf("waiting for %s", what)
					}
				}
				waiting = append(waiting, what)
			}
		}
		if len(machines) == 0 {
			e.progress.waitingFor("")
			return nil
		}
		if wctx.Err() == nil {
			e.progress.waitingFor(listNames(waiting, waitNamesShown))
			if throttled {
				rounds++
				pause = max(pause, cloud.Backoff(e.cfg.PollInterval, rounds))
			} else {
				rounds = 0
			}
			t := time.NewTimer(pause)
			pause = min(2*pause, e.cfg.PollInterval)
			select {
			case <-wctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		node := nodes[0]
		for _, n := range nodes {
			if _, left := machines[n]; left {
				node = n
				break
			}
		}
		id := machines[node]
		why := "still " + strings.ToLower(orUnknown(last[id].Lifecycle))
		if len(last[id].HeldBy) > 0 {
			why = heldBy(last[id]) + ", which belongs to another system and was not completed"
		}
		more := ""
		if len(machines) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(machines)-1)
		}
		return fmt.Errorf("%s %s of node %q did not terminate within %s (--terminate-timeout)%s: %s; complete the hook where it belongs or raise --terminate-timeout, then run again",
			e.machineKind(), id, node, plan.FormatDuration(timeout), more, why)
	}
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
func (e *Engine) machineKind() string {
	if c := e.cfg.Plan.Cloud; c != nil && c.MachineKind != "" {
		return c.MachineKind
	}
	return "machine"
}
