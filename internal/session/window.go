package session

import (
	"time"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/window"
)

// schedule reads the request's maintenance windows (--window,
// --not-before, --not-after); its errors are bad input naming the flag.
func schedule(r plan.Request) (window.Schedule, error) {
	s, err := window.ParseSchedule(r.Windows, r.NotBefore, r.NotAfter)
	if err != nil {
		return window.Schedule{}, Usagef("%v", err)
	}
	return s, nil
}

// scheduleIn puts the request's windows in the plan, refusing a schedule
// under which nothing would start: --not-after past, or before any window
// opens.
func scheduleIn(pl *Planned, now time.Time) error {
	s, err := schedule(pl.Request.Request)
	if err != nil || s.Empty() {
		return err
	}
	if _, ok := s.NextOpen(now); !ok {
		return Usagef("no maintenance window opens before --not-after %s: nothing would start; give a later --not-after", s.NotAfter.Format(time.RFC3339))
	}
	pl.ScheduleIn(s, now)
	return nil
}
