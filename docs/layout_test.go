package docs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyThePluginImportsInternal: architecture.md's layout, where
// pkg/plugin is the one package of pkg/ above internal/ (cmd → pkg/plugin →
// internal/session → internal/upgrade → the other pkg/ libraries): no
// other package under pkg/ depends on internal/, directly, through another
// package or in its tests, so each serves a program outside the module
// (the provider conformance suite an external provider runs, above all).
func TestOnlyThePluginImportsInternal(t *testing.T) {
	const module = "github.com/nodeupgrade/kubectl-nodeupgrade/"
	cmd := exec.Command("go", "list", "-f",
		"{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}", "./pkg/...")
	cmd.Dir = ".." // the module's root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		checked++
		if pkg == "pkg/plugin" {
			continue
		}
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, module+"internal/") {
				t.Errorf("%s depends on %s: only pkg/plugin may sit above internal/ (docs/architecture.md)", pkg, strings.TrimPrefix(dep, module))
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named %d packages under pkg/: the test checked nothing", checked)
	}
}
