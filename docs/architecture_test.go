package docs

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureTableListsEveryPackage: the package table of
// architecture.md names every package of the module (go list ./...) and
// nothing that is not one, so a newcomer reading it reads the tree as it is.
func TestArchitectureTableListsEveryPackage(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = ".." // the module's root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/nodeupgrade/kubectl-nodeupgrade/"
	var packages []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			packages = append(packages, rel)
		}
	}
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := tablePackages(string(doc))
	for _, p := range packages {
		if !slices.Contains(listed, p) {
			t.Errorf("architecture.md's package table lacks %s", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(packages, p) && p != "sim/" {
			t.Errorf("architecture.md's package table names %s, which is no package of the module", p)
		}
	}
}

// tablePackages are the packages in the first column of the package
// table (the one headed "| package |"), each in backquotes.
func tablePackages(doc string) []string {
	var out []string
	in := false
	for line := range strings.SplitSeq(doc, "\n") {
		switch {
		case strings.HasPrefix(line, "| package |"):
			in = true
			continue
		case in && !strings.HasPrefix(line, "|"):
			return out
		case !in || strings.HasPrefix(line, "|---"):
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			out = append(out, m[1])
		}
	}
	return out
}
