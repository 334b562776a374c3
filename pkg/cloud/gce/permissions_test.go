package gce

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPermissionsAreTheRole: the probe asks for exactly the custom role of
// docs/providers/gce.md (which sim/gcefake's tests hold to the calls the
// provider makes), and --image's permissions are in it.
func TestPermissionsAreTheRole(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "providers", "gce.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, role, ok := strings.Cut(string(doc), "includedPermissions:\n")
	role, _, _ = strings.Cut(role, "```")
	if !ok {
		t.Fatal("docs/providers/gce.md has no includedPermissions")
	}
	var documented, probed []string
	for line := range strings.SplitSeq(role, "\n") {
		if p, ok := strings.CutPrefix(line, "- "); ok {
			documented = append(documented, p)
		}
	}
	for _, c := range calls {
		if !slices.Contains(probed, c.Permission) {
			probed = append(probed, c.Permission)
		}
	}
	slices.Sort(documented)
	slices.Sort(probed)
	if !slices.Equal(documented, probed) {
		t.Errorf("the probe asks for %v; docs/providers/gce.md's role is %v", probed, documented)
	}
	for _, p := range imageOnly {
		if !slices.Contains(probed, p) {
			t.Errorf("%s, needed for --image, is not probed", p)
		}
	}
}
