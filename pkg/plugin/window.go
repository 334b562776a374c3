package plugin

import (
	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// addWindowFlags binds the maintenance-window flags (package window) of
// run and plan.
func addWindowFlags(f *pflag.FlagSet, r *plan.Request) {
	f.StringArrayVar(&r.Windows, "window", nil, `Start batches, the scale-down and blue's deletion only inside this maintenance window (repeatable): DAYS START-END [ZONE], e.g. "Sat-Sun 22:00-06:00 Europe/Berlin" (days Mon..Sun, ranges, lists or daily; HH:MM or HH:MM:SS; an END before START ends the next day; ZONE an IANA name, default UTC). A batch started runs to its end; between windows the run waits`)
	f.StringVar(&r.NotBefore, "not-before", "", "Start nothing before this time: RFC 3339 (2026-12-05T22:00:00+01:00) or a date (2026-12-05, 00:00 UTC)")
	f.StringVar(&r.NotAfter, "not-after", "", "Start no batch at or after this time (RFC 3339 or a date): the run stops there, exit 8, and the same command with a later --not-after goes on")
}
