// Package docs holds the tests that keep the documentation's facts in step
// with the code's single sources of them: which provider serves which
// strategy (the strategy and cloud registries), the exit codes (the
// plugin's constants), and the indexes that list every provider.
package docs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/check"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aks"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/aws"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gce"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/gke"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/karpenter"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud/vmss"
	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plan"
	nodeupgrade "github.com/nodeupgrade/kubectl-nodeupgrade/pkg/plugin"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs instead of failing on a difference")

// path is a way the plugin replaces nodes, as the docs and hack/demo.sh
// name it, with the providers a plan of it may run with: a strategy is
// served on the path when the path's service runs it, or one of those
// providers can do what the strategy needs.
type path struct {
	name      string
	page      string // its page under docs/providers
	providers []cloud.Provider
	service   cloud.ServicePlanner
}

// paths are the seven ways, by the providers their clouds' Open return.
func paths() []path {
	return []path{
		{name: "aks", page: "aks.md", providers: []cloud.Provider{&aks.AgentPool{}, &aks.PoolBlueGreen{}}, service: &aks.AgentPool{}},
		{name: "aws", page: "aws.md", providers: []cloud.Provider{&aws.NodeGroup{}}},
		{name: "eks-managed", page: "eks-managed.md", providers: []cloud.Provider{&aws.ManagedNodeGroup{}, &aws.ManagedBlueGreen{}}, service: &aws.ManagedNodeGroup{}},
		{name: "gce", page: "gce.md", providers: []cloud.Provider{&gce.NodeGroup{}, gce.RegionalNodeGroup{}}},
		{name: "gke", page: "gke.md", providers: []cloud.Provider{&gke.NodePool{}}, service: &gke.NodePool{}},
		{name: "karpenter", page: "karpenter.md", providers: []cloud.Provider{&karpenter.NodePool{}}},
		{name: "vmss", page: "vmss.md", providers: []cloud.Provider{&vmss.ScaleSet{}}},
		{name: cloud.NoneName, page: "none.md"},
	}
}

// serves says whether p carries out strategy s for the input (surge at
// its default, GKE's balanced profile, has --max-surge 1).
func (p path) serves(s plan.Strategy, in plan.Input) bool {
	if p.service != nil && p.service.Runs(s.Name()) {
		return true
	}
	var can plan.Capability
	if p.name == cloud.NoneName {
		can = plan.CapRemoveNodes // the Node objects (see plan's checkCapability)
	}
	for _, pr := range p.providers {
		can |= cloud.Capabilities(pr)
	}
	return can.Has(s.Needs(in))
}

// strategyTable is the strategy × path table of docs/phases.md.
func strategyTable(t *testing.T) string {
	t.Helper()
	ps := paths()
	var b strings.Builder
	b.WriteString("| strategy |")
	for _, p := range ps {
		fmt.Fprintf(&b, " [%s](providers/%s) |", p.name, p.page)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(ps)) + "\n")
	for _, name := range plan.StrategyNames() {
		s, err := plan.LookupStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, p := range ps {
			mark := "—"
			switch {
			case p.serves(s, plan.Input{MaxSurge: 1}):
				mark = "yes"
			case p.serves(s, plan.Input{}):
				mark = "`--max-surge 0`"
			}
			fmt.Fprintf(&b, " %s |", mark)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestPathsAreTheRegisteredClouds keeps paths in step with the registry:
// a cloud registered without a path here would be missing from every
// generated table.
func TestPathsAreTheRegisteredClouds(t *testing.T) {
	var names []string
	for _, p := range paths() {
		if p.name != "eks-managed" {
			names = append(names, p.name)
		}
	}
	slices.Sort(names)
	want := cloud.Names()
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the docs' paths are %v, the registered providers %v: add the new one to paths()", names, want)
	}
}

const (
	tableBegin = "<!-- strategies by provider: generated from the registries by docs/docs_test.go; go test ./docs -update rewrites it -->"
	tableEnd   = "<!-- end of strategies by provider -->"
)

// TestStrategyTableMatchesTheRegistries checks the table of docs/phases.md
// against the one the registries give (go test ./docs -update writes it).
func TestStrategyTableMatchesTheRegistries(t *testing.T) {
	const file = "phases.md"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	before, rest, ok := strings.Cut(text, tableBegin+"\n")
	got, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok || !ok2 {
		t.Fatalf("%s lacks the generated table's markers %q and %q", file, tableBegin, tableEnd)
	}
	want := strategyTable(t)
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(file, []byte(before+tableBegin+"\n"+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the strategy table differs from the registries' (go test ./docs -update rewrites it):\n got:\n%s\nwant:\n%s", file, got, want)
}

// exitCodes are the plugin's exit codes by name.
var exitCodes = map[string]int{
	"ExitOK": nodeupgrade.ExitOK, "ExitUsage": nodeupgrade.ExitUsage, "ExitPodEvictionError": nodeupgrade.ExitPodEvictionError,
	"ExitFailure": nodeupgrade.ExitFailure, "ExitBlockers": nodeupgrade.ExitBlockers, "ExitLocked": nodeupgrade.ExitLocked,
	"ExitNodeCreation": nodeupgrade.ExitNodeCreation, "ExitPaused": nodeupgrade.ExitPaused, "ExitUnreachable": nodeupgrade.ExitUnreachable,
	"ExitHookFailed": nodeupgrade.ExitHookFailed, "ExitCloudUnreachable": nodeupgrade.ExitCloudUnreachable,
	"ExitRolledBack": nodeupgrade.ExitRolledBack,
}

// TestExitCodeTable wants scripting.md's table to list each exit code once,
// and no other.
func TestExitCodeTable(t *testing.T) {
	data, err := os.ReadFile("scripting.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d+) \|`)
	var got []int
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	var want []int
	for _, c := range exitCodes {
		want = append(want, c)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("scripting.md's exit code table lists %v, the plugin exits with %v", got, want)
	}
}

// TestBlockerRefusalsSayExit5 wants every sentence of the docs that says a
// command refuses because of blockers to give the blockers' exit code.
func TestBlockerRefusalsSayExit5(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("providers/*.md")
	exit := regexp.MustCompile(`exit (\d+)`)
	for _, f := range append(append(files, more...), "../README.md") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// A table's row is a unit of its own, a paragraph's sentences others.
		var units []string
		for _, para := range strings.Split(string(data), "\n\n") {
			if strings.HasPrefix(para, "|") {
				units = append(units, strings.Split(para, "\n")...)
				continue
			}
			units = append(units, strings.Split(strings.Join(strings.Fields(para), " "), ". ")...)
		}
		for _, s := range units {
			{
				low := strings.ToLower(s)
				if !strings.Contains(low, "blocker") || !strings.Contains(low, "refuse") {
					continue
				}
				for _, m := range exit.FindAllStringSubmatch(s, -1) {
					if n, _ := strconv.Atoi(m[1]); n != nodeupgrade.ExitBlockers {
						t.Errorf("%s: %q: a refusal for blockers exits %d", f, s, nodeupgrade.ExitBlockers)
					}
				}
			}
		}
	}
}

// TestIndexesListEveryProvider wants the README and docs/README.md to link
// every path's provider page.
func TestIndexesListEveryProvider(t *testing.T) {
	for file, prefix := range map[string]string{"README.md": "providers/", "../README.md": "docs/providers/", "phases.md": "providers/"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths() {
			if link := "(" + prefix + p.page; !strings.Contains(string(data), link) {
				t.Errorf("%s does not link %s%s", file, prefix, p.page)
			}
		}
	}
}

// TestCheckTableListsEveryCheck wants check.md's table to list each check
// the code has, with its severity, and none it has not.
func TestCheckTableListsEveryCheck(t *testing.T) {
	data, err := os.ReadFile("check.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| ([^|]+) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	for _, name := range check.Names() {
		sev, _ := check.SeverityOf(name)
		got, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("check.md does not list check %q", name)
		case !strings.HasPrefix(got, strings.ToLower(string(sev))) && !strings.Contains(got, " without "):
			t.Errorf("check.md gives %q severity %q, the code %s", name, got, sev)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("check.md lists check %q, which the code does not have", name)
	}
}

// TestDemoServesEveryPath wants hack/demo.sh to take every path, and no
// other: its usage line names them.
func TestDemoServesEveryPath(t *testing.T) {
	data, err := os.ReadFile("../hack/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`usage="usage: hack/demo.sh \[([a-z|-]+)\]"`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("hack/demo.sh has no usage line naming its paths")
	}
	var want []string
	for _, p := range paths() {
		if noDemoYet[p.name] == "" {
			want = append(want, p.name)
		}
	}
	got := strings.Split(m[1], "|")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("hack/demo.sh takes %v, the paths are %v", got, want)
	}
}

// noDemoYet are the paths hack/demo.sh does not serve yet, and why.
var noDemoYet = map[string]string{"vmss": "the scale sets of sim/azurefake are served to the conformance suite and the e2e tests only"}

// providerList is a list of --provider's values as the docs write it,
// "--provider aws|gce|none" (in a table, its bars escaped).
var providerList = regexp.MustCompile(`--provider ([a-z-]+(?:\\?\|[a-z-]+)+)`)

// TestProviderListsAreTheRegistry wants every list of --provider's values
// in the docs and the README to be the registered providers, and the
// README's list of demos to name every path (aws is the demo without a
// name).
func TestProviderListsAreTheRegistry(t *testing.T) {
	files, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := filepath.Glob("providers/*.md")
	files = append(append(files, pages...), "../README.md")
	want := cloud.Names()
	slices.Sort(want)
	lists := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range providerList.FindAllStringSubmatch(string(data), -1) {
			lists++
			got := strings.Split(strings.ReplaceAll(m[1], `\|`, "|"), "|")
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s lists --provider %v, the registered providers are %v", file, got, want)
			}
		}
	}
	if lists == 0 {
		t.Error("no list of --provider's values found in the docs: the pattern no longer matches them")
	}
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, demos, _ := strings.Cut(string(data), "The other providers have their demo too:")
	demos, _, _ = strings.Cut(demos, "\n\n")
	for _, p := range paths() {
		if p.name != "aws" && noDemoYet[p.name] == "" && !strings.Contains(demos, "`"+p.name+"`") && !strings.Contains(demos, "demo.sh "+p.name+"`") {
			t.Errorf("the README's list of demos does not name %q", p.name)
		}
	}
}
