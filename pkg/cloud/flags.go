package cloud

import (
	"slices"

	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// FlagBinder is a cloud with command-line flags of its own: it binds them
// to the neutral fields of the request's target (plan.CloudTarget), under
// its own names (--asg and --mig both fill Group).
type FlagBinder interface {
	BindFlags(f *Flags)
}

// FlagValues is a cloud that can complete values of its flags offline
// ($Latest for a launch template version, say).
type FlagValues interface {
	FlagValues(flag string) []string
}

// Helper is a cloud that describes itself for the --provider help: what
// removing a drained node means with it.
type Helper interface {
	Help() string
}

// Flags is where a cloud binds its flags; a flag that two clouds share
// (--region) is bound once and belongs to both.
type Flags struct {
	fs     *pflag.FlagSet
	target *plan.CloudTarget
	cloud  string
	owners map[string][]string
}

// String binds a string flag of the cloud to *p.
func (f *Flags) String(p *string, name, usage string) {
	if f.fs.Lookup(name) == nil {
		f.fs.StringVar(p, name, "", usage)
	}
	f.owners[name] = append(f.owners[name], f.cloud)
}

// Bool binds a boolean flag of the cloud to *p.
func (f *Flags) Bool(p *bool, name, usage string) {
	if f.fs.Lookup(name) == nil {
		f.fs.BoolVar(p, name, false, usage)
	}
	f.owners[name] = append(f.owners[name], f.cloud)
}

// Option binds a string flag whose value the target keeps in Options
// under the flag's name: a setting only this cloud has.
func (f *Flags) Option(name, usage string) {
	if f.fs.Lookup(name) == nil {
		f.fs.Var(&optionValue{t: f.target, name: name}, name, usage)
	}
	f.owners[name] = append(f.owners[name], f.cloud)
}

// Target is the request's target the flags fill in.
func (f *Flags) Target() *plan.CloudTarget { return f.target }

// BindFlags binds every registered cloud's flags to t and returns, by
// flag, the clouds that take it.
func BindFlags(fs *pflag.FlagSet, t *plan.CloudTarget) map[string][]string {
	f := &Flags{fs: fs, target: t, owners: map[string][]string{}}
	for _, name := range Names() {
		if b, ok := clouds[name].(FlagBinder); ok {
			f.cloud = name
			b.BindFlags(f)
		}
	}
	return f.owners
}

// ProviderHelp is the --provider help: every cloud's own, then none's.
func ProviderHelp() map[string]string {
	out := map[string]string{NoneName: "delete the Node object, or with --delete-node=false leave it cordoned"}
	for name, c := range clouds {
		if h, ok := c.(Helper); ok {
			out[name] = h.Help()
		}
	}
	return out
}

// ValuesOf completes the values of a cloud's flag that need no call.
func ValuesOf(flag string) []string {
	var out []string
	for _, name := range Names() {
		if v, ok := clouds[name].(FlagValues); ok {
			out = append(out, v.FlagValues(flag)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// optionValue is a flag kept in CloudTarget.Options.
type optionValue struct {
	t    *plan.CloudTarget
	name string
}

func (v *optionValue) String() string {
	if v.t == nil {
		return ""
	}
	return v.t.Options[v.name]
}

func (v *optionValue) Set(s string) error {
	if v.t.Options == nil {
		v.t.Options = map[string]string{}
	}
	v.t.Options[v.name] = s
	return nil
}

func (v *optionValue) Type() string { return "string" }
