package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/internal/plugin"
	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

// readmeSample is the ```text block that follows the README's marker
// "<!-- sample: NAME -->" (hack/readme-samples.sh writes them).
func readmeSample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", docsReadme))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- sample: "+name+" -->\n```text\n")
	block, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 {
		t.Fatalf("the README has no sample %q", name)
	}
	return block
}

// planShape is what of a printed plan does not depend on where the
// scheduler put the demo's pods or on the nodes' ages: the header and the
// phases as printed, how many nodes each batch takes, the nodes with their
// instance, zone and why they are outdated (sorted: which node goes in
// which batch follows the pods on it, as the order keeps each workload
// within its budget, so even a batch's zones do, and the notes of batches
// over a budget), and the findings that do not count pods by zone.
func planShape(text string) []string {
	var out, nodes []string
	section := "header"
	for line := range strings.SplitSeq(text, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "BATCH "):
			section = "nodes"
			continue
		case strings.HasPrefix(line, "Findings: "):
			section = "findings"
			continue
		case len(f) == 0 || strings.HasPrefix(line, "SEVERITY "):
			continue
		case strings.HasPrefix(line, "Note: batch "):
			// Which batch takes more pods of a workload than its budget
			// follows the pods on its nodes.
			continue
		}
		switch section {
		case "header":
			out = append(out, line)
		case "nodes":
			if len(f) >= 6 {
				out = append(out, "batch "+f[0])
				nodes = append(nodes, strings.Join([]string{f[1], f[2], f[3], f[5]}, " "))
			}
		case "findings":
			if len(f) >= 3 && f[1] != "zone-concentration" {
				out = append(out, strings.Join(f[:3], " "))
			}
		}
	}
	slices.Sort(nodes)
	return append(out, nodes...)
}

// TestReadmePlanSample fails when the README's sample plan drifts from
// what plan prints on the AWS demo with the README's command and the demo
// script's --seed 1 (hack/readme-samples.sh regenerates it): the header
// lines, the phases, the batches, the findings. Nothing else checks it:
// readme-samples.sh only rewrites the README, and docs/docs_test.go checks
// the docs' facts, not the samples.
func TestReadmePlanSample(t *testing.T) {
	ctx := testContext(t, 5*time.Minute)
	srv, err := awsfake.StartDemo(ctx, client, awsfake.DemoOptions{LaunchDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		clearLabelDemo(t, ctx)
	})
	env := append(cleanAWSEnv(), "AWS_ENDPOINT_URL="+srv.URL,
		"AWS_ACCESS_KEY_ID=demo", "AWS_SECRET_ACCESS_KEY=demo", "AWS_REGION="+awsfake.DemoRegion)
	r := runCmd(t, setupCmd(env, "plan", "demo", "--ami", "ami-new", "--max-unavailable", "2", "--seed", "1"))
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("plan: %s", r)
	}
	got, want := planShape(r.stdout), planShape(readmeSample(t, "plan"))
	if !slices.Equal(got, want) {
		t.Errorf("the README's sample plan drifted from plan's output (run hack/readme-samples.sh):\nREADME:\n%s\nplan:\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}
