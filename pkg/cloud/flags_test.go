package cloud

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// twoClouds registers two clouds that share --region, each with a group
// flag of its own name and a target flag, and alpha with a setting only it
// has and a green group flag.
func twoClouds(t *testing.T) {
	t.Helper()
	registered(t,
		&fakeCloud{name: "alpha", bind: func(f *Flags) {
			f.Option("region", "alpha's region")
			f.BoolOption("alpha-keep", "alpha's switch")
			f.String(&f.Target().Group, "alpha-group", "alpha's group")
			f.Option("alpha-channel", "alpha's release channel")
			f.TargetOption("alpha-version", "alpha's service's version")
			f.GreenGroup("alpha-green", "alpha's existing green group")
		}, values: map[string][]string{"version": {"$Latest", "$Default"}}},
		&fakeCloud{name: "beta", bind: func(f *Flags) {
			f.Option("region", "beta's region")
			f.String(&f.Target().Group, "beta-pool", "beta's group")
			f.String(&f.Target().Image, "beta-image", "beta's image")
		}, values: map[string][]string{"version": {"$Latest", "stable"}, "beta-image": {"cos"}}},
		plainCloud{name: "gamma"},
	)
}

// TestBindFlags: each cloud's flags fill the neutral fields of the
// request under the cloud's own names; a flag two clouds share is bound
// once and belongs to both; a cloud's own setting lands in Options under
// its flag's name.
func TestBindFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want plan.CloudTarget
		// green is the request's green group, target whether the target
		// names a version to upgrade to.
		green  string
		target bool
	}{
		{"no cloud flag given", nil, plan.CloudTarget{}, "", false},
		{"alpha's flags", []string{"--region=r1", "--alpha-group=ng-1", "--alpha-channel=rapid"},
			plan.CloudTarget{Group: "ng-1", Options: map[string]string{"region": "r1", "alpha-channel": "rapid"}}, "", false},
		{"a switch given", []string{"--alpha-keep"}, plan.CloudTarget{Options: map[string]string{"alpha-keep": "true"}}, "", false},
		{"a switch turned off", []string{"--alpha-keep", "--alpha-keep=false"}, plan.CloudTarget{}, "", false},
		{"beta's flags", []string{"--region", "r2", "--beta-pool", "pool-1", "--beta-image", "img-2"},
			plan.CloudTarget{Group: "pool-1", Image: "img-2", Options: map[string]string{"region": "r2"}}, "", true},
		{"a setting given twice keeps the last", []string{"--alpha-channel=rapid", "--alpha-channel=stable"},
			plan.CloudTarget{Options: map[string]string{"alpha-channel": "stable"}}, "", false},
		{"a target through a setting, and a green group", []string{"--alpha-version=2", "--alpha-green=ng-2"},
			plan.CloudTarget{Options: map[string]string{"alpha-version": "2"}}, "ng-2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			twoClouds(t)
			var req plan.Request
			fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
			bound := BindFlags(fs, &req)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			target := req.Cloud
			if target.Group != tc.want.Group || target.Image != tc.want.Image || !maps.Equal(target.Options, tc.want.Options) {
				t.Errorf("target %+v, want %+v", target, tc.want)
			}
			if req.BlueGreen.GreenGroup != tc.green || bound.TargetGiven(target) != tc.target {
				t.Errorf("green group %q, target given %v; want %q, %v", req.BlueGreen.GreenGroup, bound.TargetGiven(target), tc.green, tc.target)
			}
			checkBound(t, bound)
		})
	}
}

// checkBound checks what twoClouds bind: who takes each flag, and what
// each names.
func checkBound(t *testing.T, b *Bound) {
	t.Helper()
	wantOwners := map[string][]string{"region": {"alpha", "beta"}, "alpha-group": {"alpha"}, "alpha-channel": {"alpha"}, "alpha-keep": {"alpha"}, "alpha-version": {"alpha"},
		"alpha-green": {"alpha"}, "beta-pool": {"beta"}, "beta-image": {"beta"}}
	if !maps.EqualFunc(b.Owners, wantOwners, slices.Equal) {
		t.Errorf("owners %v, want %v", b.Owners, wantOwners)
	}
	if want := map[string][]string{"alpha": {"alpha-version"}, "beta": {"beta-image"}}; !maps.EqualFunc(b.Targets, want, slices.Equal) {
		t.Errorf("target flags %v, want %v", b.Targets, want)
	}
	if want := map[string]string{"alpha": "alpha-group", "beta": "beta-pool"}; !maps.Equal(b.Group, want) {
		t.Errorf("group flags %v, want %v", b.Group, want)
	}
	if want := map[string]string{"alpha": "alpha-green"}; !maps.Equal(b.Green, want) {
		t.Errorf("green group flags %v, want %v", b.Green, want)
	}
}

// TestBindFlagsShownInHelp: the help shows a shared flag once, with the
// usage of the cloud that bound it first, and a setting's value is what
// was given (nothing by default).
func TestBindFlagsShownInHelp(t *testing.T) {
	twoClouds(t)
	req := plan.Request{Cloud: plan.CloudTarget{Options: map[string]string{"other": "kept"}}}
	target := &req.Cloud
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	BindFlags(fs, &req)
	region, channel := fs.Lookup("region"), fs.Lookup("alpha-channel")
	if region == nil || region.Usage != "alpha's region" {
		t.Fatalf("--region %+v, want alpha's usage", region)
	}
	if channel == nil || channel.DefValue != "" || channel.Value.Type() != "string" || channel.Value.String() != "" {
		t.Fatalf("--alpha-channel %+v, want an empty string flag", channel)
	}
	if err := fs.Parse([]string{"--alpha-channel=rapid"}); err != nil {
		t.Fatal(err)
	}
	if got := channel.Value.String(); got != "rapid" {
		t.Errorf("--alpha-channel reads %q after it was given rapid", got)
	}
	if want := map[string]string{"other": "kept", "alpha-channel": "rapid"}; !maps.Equal(target.Options, want) {
		t.Errorf("options %v, want %v: a setting keeps the others", target.Options, want)
	}
	if got := (&optionValue{name: "alpha-channel"}).String(); got != "" {
		t.Errorf("a setting with no target reads %q, want empty", got)
	}
}

// TestProviderHelp: --provider's help has every cloud that describes
// itself, and none; a cloud without help is left out.
func TestProviderHelp(t *testing.T) {
	twoClouds(t)
	help := ProviderHelp()
	want := []string{"alpha", "beta", NoneName}
	if got := slices.Sorted(maps.Keys(help)); !slices.Equal(got, want) {
		t.Errorf("help for %q, want %q", got, want)
	}
	if help["alpha"] != "remove the alpha machine" || help[NoneName] == "" {
		t.Errorf("help %q", help)
	}
}

// TestValuesOf: a flag's values are every cloud's, sorted, each once.
func TestValuesOf(t *testing.T) {
	twoClouds(t)
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"version", []string{"$Default", "$Latest", "stable"}},
		{"beta-image", []string{"cos"}},
		{"region", nil},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			if got := ValuesOf(tc.flag); !slices.Equal(got, tc.want) {
				t.Errorf("ValuesOf(%q) = %q, want %q", tc.flag, got, tc.want)
			}
		})
	}
}

// TestBindFlagsRefusesAClash: two clouds binding one flag name to
// different fields, or a cloud binding a name the plugin already has,
// fail at start-up; otherwise one of them would silently never see its
// value.
func TestBindFlagsRefusesAClash(t *testing.T) {
	for _, tc := range []struct {
		name      string
		beta      func(f *Flags)
		plugin    string // a flag the plugin defines before the clouds
		wantPanic string
	}{
		{name: "same flag, same field", beta: func(f *Flags) { f.String(&f.Target().Group, "group", "") }},
		{name: "same option", beta: func(f *Flags) { f.Option("channel", "") }},
		{name: "same flag, another field", beta: func(f *Flags) { f.String(&f.Target().Image, "group", "") },
			wantPanic: `cloud "beta" binds --group to another field than alpha did`},
		{name: "an option where a field is bound", beta: func(f *Flags) { f.Option("group", "") },
			wantPanic: `cloud "beta" binds --group to another field than alpha did`},
		{name: "a switch where a string option is bound", beta: func(f *Flags) { f.BoolOption("channel", "") },
			wantPanic: `cloud "beta" binds --channel to another field than alpha did`},
		{name: "a flag of the plugin's", beta: func(f *Flags) { f.String(&f.Target().Image, "output", "") }, plugin: "output",
			wantPanic: `cloud "beta" binds --output, which the plugin already has`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			registered(t,
				&fakeCloud{name: "alpha", bind: func(f *Flags) {
					f.String(&f.Target().Group, "group", "")
					f.Option("channel", "")
				}},
				&fakeCloud{name: "beta", bind: tc.beta},
			)
			fs := pflag.NewFlagSet("", pflag.ContinueOnError)
			if tc.plugin != "" {
				fs.String(tc.plugin, "", "")
			}
			got := func() (msg string) {
				defer func() {
					if r := recover(); r != nil {
						msg = fmt.Sprint(r)
					}
				}()
				BindFlags(fs, &plan.Request{})
				return ""
			}()
			if tc.wantPanic == "" && got != "" || !strings.HasPrefix(got, tc.wantPanic) {
				t.Errorf("BindFlags panicked with %q, want %q", got, tc.wantPanic)
			}
		})
	}
}
