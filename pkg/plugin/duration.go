package plugin

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// durationValue is a duration flag that also takes days ("3d", "1d12h"),
// as the help's ranges are given, and shows its default in them.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return plan.FormatDuration(*v.d)
}

func (v durationValue) Set(s string) error {
	d, err := plan.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (v durationValue) Type() string { return "duration" }

// durationVar binds a duration flag that takes days, like pflag's
// DurationVar otherwise.
func durationVar(f *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	f.Var(durationValue{p}, name, usage)
}
