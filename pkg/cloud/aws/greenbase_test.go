package aws

import (
	"context"
	"testing"
)

// A second blue/green run names its green after the first run's blue, so
// names do not compound (issue 42: "demo-v3-v4").
func TestGreenNameOfAGreen(t *testing.T) {
	ctx := context.Background()
	first := blueGroup() // made by hand, not by a run
	delete(first.Tags, TagBlue)
	delete(first.Tags, TagRole)
	p, _, _ := newGroupsProvider(t, first)
	blue, err := p.Group(ctx, "ng1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CloneGroup(ctx, blue, GreenName(blue.Name, "3"), "3"); err != nil {
		t.Fatal(err)
	}
	green, err := p.Group(ctx, "ng1-v3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		n             *NodeGroup
		version, want string
	}{
		{"blue", &NodeGroup{ASG: blue.Name, ClonedFrom: clonedFrom(blue)}, "3", "ng1-v3"},
		{"green of an earlier run", &NodeGroup{ASG: green.Name, ClonedFrom: clonedFrom(green)}, "4", "ng1-v4"},
		// The base's name would be the green's own: the suffix is added.
		{"same version again", &NodeGroup{ASG: green.Name, ClonedFrom: clonedFrom(green)}, "3", "ng1-v3-v3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.GreenName(tc.version); got != tc.want {
				t.Fatalf("GreenName(%q) of %q: got %q, want %q", tc.version, tc.n.ASG, got, tc.want)
			}
		})
	}
	// The green of the green is cloned from it like any blue's.
	if _, err := p.CloneGroup(ctx, green, "ng1-v4", "4"); err != nil {
		t.Fatalf("cloning the green: %v", err)
	}
}
