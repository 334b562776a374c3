package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
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

// planLines is a printed plan line by line as the README holds it, but
// for what the clock decides: the nodes' ages (the AGE column), and so the
// node table's padding, which follows the widest age; and the durations of
// the phases and of what they assume, which the group's pace measured on
// this start decides (plan.Pace); and the fake endpoint's number in the
// test process, which its IDs and node names carry (the demo script's
// endpoint is the first of its process, number 0). Each node row is its
// cells joined by one space, the age cell "AGE"; each duration of the
// phases is "D".
func planLines(text string) []string {
	text = endpointInID.ReplaceAllString(text, "${1}0")
	text = endpointInNode.ReplaceAllString(text, "${1}0-")
	var out []string
	phases := false // within the phases, from "Phases (" to the blank line
	age := -1       // the AGE column's index in the node table, -1 outside it
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "BATCH ") || strings.HasPrefix(line, "NODE "):
			age = slices.Index(f, "AGE")
		case strings.HasPrefix(line, "Phases ("):
			phases = true
		case len(f) == 0:
			age, phases = -1, false
		}
		// The estimates (phases and the added nodes' cost) move with the
		// machine, and the account's vCPUs in use with the tests beside
		// this one.
		if phases || strings.Contains(line, "instance-hours") {
			line = paceDuration.ReplaceAllString(line, "D")
		}
		line = quotaFree.ReplaceAllString(line, "N free")
		if age >= 0 && len(f) > age {
			f[age] = "AGE"
			line = strings.Join(f, " ")
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}

// endpointInID and endpointInNode are an awsfake Server's number in an
// ID (its 8th hex digit: lt-…, i-…) and in a node name (ip-10-N-…).
var (
	endpointInID   = regexp.MustCompile(`\b((?:lt|i)-0{7})[0-9a-f]`)
	endpointInNode = regexp.MustCompile(`\b(ip-10-)\d+-`)
)

// quotaFree is what a quota had free when planned.
var quotaFree = regexp.MustCompile(`\b\d+ free\b`)

// paceDuration is a duration as plan.FormatDuration writes it.
var paceDuration = regexp.MustCompile(`\b\d+(?:h|m|s)(?:\d+(?:m|s))*\b`)

// TestReadmePlanSample fails when the README's sample plan differs from
// what plan prints on the AWS demo with the README's command and the demo
// script's flags (hack/readme-samples.sh regenerates it): every line,
// but for the nodes' ages and the phases' durations (planLines). The demo places its pods in a fixed
// layout (scenario.CreateAppsPlaced), so the batches, which keep each
// workload within its budget, do not follow the scheduler's choices.
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
	r := runCmd(t, setupCmd(env, "plan", "demo", "--ami", "ami-new", "--max-unavailable", "2", "--seed", "1", "--post-drain-wait", "5s"))
	if r.code != nodeupgrade.ExitOK {
		t.Fatalf("plan: %s", r)
	}
	got, want := planLines(r.stdout), planLines(readmeSample(t, "plan"))
	if !slices.Equal(got, want) {
		t.Errorf("the README's sample plan drifted from plan's output (run hack/readme-samples.sh):\nREADME:\n%s\nplan:\n%s\nplan, as printed:\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"), r.stdout)
	}
}
