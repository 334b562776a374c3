package cloud

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// FlagBinder is a cloud with command-line flags of its own: it binds them
// to the neutral fields of the request (its target, plan.CloudTarget, and
// the green group of blue/green), under its own names (--asg and --mig
// both fill Group). The shared code names them to the user by what they
// fill (see Bound).
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
	fs    *pflag.FlagSet
	req   *plan.Request
	cloud string
	bound *Bound
	// dest is where each flag the clouds bound writes: a second cloud
	// binding the same name must write the same place, or one of them
	// would silently never see its value.
	dest map[string]any
}

// bind defines the flag with define unless a cloud bound it already, and
// panics, at start-up, where the name is taken by another flag or bound
// by another cloud to another place: a programming error, never input.
func (f *Flags) bind(name string, to any, define func()) {
	prev, ours := f.dest[name]
	switch {
	case f.fs.Lookup(name) == nil:
		define()
		f.dest[name] = to
	case !ours:
		panic(fmt.Sprintf("cloud %q binds --%s, which the plugin already has", f.cloud, name))
	case prev != to:
		panic(fmt.Sprintf("cloud %q binds --%s to another field than %s did: clouds that share a flag must bind it to the same field", f.cloud, name, strings.Join(f.bound.Owners[name], " and ")))
	}
	f.own(name)
}

// Bound is what the clouds bound, for the shared code's messages and
// checks: by flag, the clouds that take it; by cloud, its flags that name
// a target (bound to the target's Image or Version, or TargetOption), the
// one that names its group (bound to Group), the one that names an
// existing template version (bound to the target's Version) and the one
// that names an existing green group (GreenGroup).
type Bound struct {
	Owners  map[string][]string
	Targets map[string][]string
	Group   map[string]string
	Version map[string]string
	Green   map[string]string
}

// String binds a string flag of the cloud to *p, a field of Target or
// another of the cloud's own.
func (f *Flags) String(p *string, name, usage string) {
	f.bind(name, p, func() { f.fs.StringVar(p, name, "", usage) })
	switch t := f.Target(); p {
	case &t.Image:
		f.bound.Targets[f.cloud] = append(f.bound.Targets[f.cloud], name)
	case &t.Version:
		f.bound.Targets[f.cloud] = append(f.bound.Targets[f.cloud], name)
		f.bound.Version[f.cloud] = name
	case &t.Group:
		f.bound.Group[f.cloud] = name
	}
}

// own records that the cloud takes the flag.
func (f *Flags) own(name string) {
	f.bound.Owners[name] = append(f.bound.Owners[name], f.cloud)
}

// GreenGroup binds the flag of a cloud that makes groups which names an
// existing group to use as blue/green's green (plan.BlueGreenInput's
// GreenGroup) instead of creating one.
func (f *Flags) GreenGroup(name, usage string) {
	f.String(&f.req.BlueGreen.GreenGroup, name, usage)
	f.bound.Green[f.cloud] = name
}

// BoolOption is an Option that is a switch: given, the target's Options
// hold "true" under its name.
func (f *Flags) BoolOption(name, usage string) {
	f.bind(name, boolOptionKey(name), func() {
		f.fs.Var(&optionValue{t: f.Target(), name: name, typ: "bool"}, name, usage)
		f.fs.Lookup(name).NoOptDefVal = "true"
	})
}

// Option binds a string flag whose value the target keeps in Options
// under the flag's name: a setting only this cloud has.
func (f *Flags) Option(name, usage string) {
	f.bind(name, optionKey(name), func() { f.fs.Var(&optionValue{t: f.Target(), name: name}, name, usage) })
}

// optionKey is where an Option writes: the target's Options under its
// name, the same for every cloud that binds it.
type optionKey string

// boolOptionKey is where a BoolOption writes: the same Options as an
// Option, but a cloud binding the name as a string would parse it
// otherwise.
type boolOptionKey string

// TargetOption is an Option that names a target by itself (a version the
// cloud's service updates to), as Image and Version do.
func (f *Flags) TargetOption(name, usage string) {
	f.Option(name, usage)
	f.bound.Targets[f.cloud] = append(f.bound.Targets[f.cloud], name)
}

// Target is the request's target the flags fill in.
func (f *Flags) Target() *plan.CloudTarget { return &f.req.Cloud }

// BindFlags binds every registered cloud's flags to r and returns what
// they bound.
func BindFlags(fs *pflag.FlagSet, r *plan.Request) *Bound {
	b := &Bound{Owners: map[string][]string{}, Targets: map[string][]string{}, Group: map[string]string{}, Version: map[string]string{}, Green: map[string]string{}}
	f := &Flags{fs: fs, req: r, bound: b, dest: map[string]any{}}
	for _, name := range Names() {
		if fb, ok := clouds[name].(FlagBinder); ok {
			f.cloud = name
			fb.BindFlags(f)
		}
	}
	return b
}

// BoundFlags is what BindFlags binds, for messages and completion, with
// nothing to fill in.
func BoundFlags() *Bound {
	return BindFlags(pflag.NewFlagSet("", pflag.ContinueOnError), &plan.Request{})
}

// TargetGiven reports whether t names a target through one of the clouds' flags
// (Image, Version or a TargetOption).
func (b *Bound) TargetGiven(t plan.CloudTarget) bool {
	if t.Image != "" || t.Version != "" {
		return true
	}
	for _, flags := range b.Targets {
		for _, name := range flags {
			if t.Options[name] != "" {
				return true
			}
		}
	}
	return false
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
	typ  string // "bool" for a BoolOption; "" a string
}

func (v *optionValue) String() string {
	if v.t == nil {
		return ""
	}
	return v.t.Options[v.name]
}

func (v *optionValue) Set(s string) error {
	if v.typ == "bool" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		if !b {
			delete(v.t.Options, v.name)
			return nil
		}
		s = "true"
	}
	if v.t.Options == nil {
		v.t.Options = map[string]string{}
	}
	v.t.Options[v.name] = s
	return nil
}

func (v *optionValue) Type() string { return cmp.Or(v.typ, "string") }
