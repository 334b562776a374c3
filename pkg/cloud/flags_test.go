package cloud

import (
	"maps"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
)

// twoClouds registers two clouds that share --region, each with a group
// flag of its own name and alpha with a setting only it has.
func twoClouds(t *testing.T) {
	t.Helper()
	registered(t,
		&fakeCloud{name: "alpha", bind: func(f *Flags) {
			f.String(&f.Target().Region, "region", "alpha's region")
			f.String(&f.Target().Group, "alpha-group", "alpha's group")
			f.Option("alpha-channel", "alpha's release channel")
		}, values: map[string][]string{"version": {"$Latest", "$Default"}}},
		&fakeCloud{name: "beta", bind: func(f *Flags) {
			f.String(&f.Target().Region, "region", "beta's region")
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
	}{
		{"no cloud flag given", nil, plan.CloudTarget{}},
		{"alpha's flags", []string{"--region=r1", "--alpha-group=ng-1", "--alpha-channel=rapid"},
			plan.CloudTarget{Region: "r1", Group: "ng-1", Options: map[string]string{"alpha-channel": "rapid"}}},
		{"beta's flags", []string{"--region", "r2", "--beta-pool", "pool-1", "--beta-image", "img-2"},
			plan.CloudTarget{Region: "r2", Group: "pool-1", Image: "img-2"}},
		{"a setting given twice keeps the last", []string{"--alpha-channel=rapid", "--alpha-channel=stable"},
			plan.CloudTarget{Options: map[string]string{"alpha-channel": "stable"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			twoClouds(t)
			var target plan.CloudTarget
			fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
			owners := BindFlags(fs, &target)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if target.Region != tc.want.Region || target.Group != tc.want.Group || target.Image != tc.want.Image || !maps.Equal(target.Options, tc.want.Options) {
				t.Errorf("target %+v, want %+v", target, tc.want)
			}
			wantOwners := map[string][]string{"region": {"alpha", "beta"}, "alpha-group": {"alpha"}, "alpha-channel": {"alpha"}, "beta-pool": {"beta"}, "beta-image": {"beta"}}
			if !maps.EqualFunc(owners, wantOwners, slices.Equal) {
				t.Errorf("owners %v, want %v", owners, wantOwners)
			}
		})
	}
}

// TestBindFlagsShownInHelp: the help shows a shared flag once, with the
// usage of the cloud that bound it first, and a setting's value is what
// was given (nothing by default).
func TestBindFlagsShownInHelp(t *testing.T) {
	twoClouds(t)
	target := plan.CloudTarget{Options: map[string]string{"other": "kept"}}
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	BindFlags(fs, &target)
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
