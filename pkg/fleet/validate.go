package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/gate"
)

// Fleet is a validated fleet file: every selector resolved to targets.
type Fleet struct {
	Name   string          `json:"name"`
	Stages []ResolvedStage `json:"stages"`
	// Hash is the resolved fleet's hash: a fleet in flight refuses a
	// file that resolves differently.
	Hash string `json:"hash"`
}

// ResolvedStage is a stage with its targets and limits resolved.
type ResolvedStage struct {
	Name           string        `json:"name"`
	MaxConcurrency int           `json:"maxConcurrency"`
	MaxFailures    int           `json:"maxFailures"`
	Targets        []Target      `json:"targets"`
	Soak           time.Duration `json:"soak,omitempty"`
	Gates          []string      `json:"gates,omitempty"`
	Approval       bool          `json:"approval,omitempty"`
	// Hash names the stage's content, so a change is named by stage.
	Hash string `json:"hash"`
}

// Target is one node group of one cluster, with its run flags.
type Target struct {
	Stage     string `json:"stage"`
	Context   string `json:"context"`
	NodeGroup string `json:"nodeGroup,omitempty"`
	Selector  string `json:"selector,omitempty"`
	// Args are its run flags (defaults, then its own), as --name=value.
	Args []string `json:"args,omitempty"`
}

// Group is the target's group as the record names it.
func (t Target) Group() string {
	if t.Selector != "" {
		return "-l " + t.Selector
	}
	return t.NodeGroup
}

// ID names the target across the fleet.
func (t Target) ID() string { return t.Context + "/" + t.Group() }

// Options are what validation checks the file against.
type Options struct {
	// Contexts are the kubeconfig's contexts.
	Contexts []string
	// CheckRun validates a target's run flags with run's own flag set.
	CheckRun func(args []string) error
}

// Resolve validates the file and resolves its targets, before any cluster
// is touched.
func Resolve(f *File, o Options) (*Fleet, error) {
	if err := checkHeader(f); err != nil {
		return nil, err
	}
	fl := &Fleet{Name: f.Metadata.Name}
	seenStage, seenTarget := map[string]bool{}, map[string]string{}
	for i, s := range f.Stages {
		rs, err := resolveStage(f, i, s, o, seenTarget)
		if err != nil {
			return nil, err
		}
		if seenStage[s.Name] {
			return nil, fileErrorf("stages[%d]: duplicate stage name %q", i, s.Name)
		}
		seenStage[s.Name] = true
		fl.Stages = append(fl.Stages, rs)
	}
	fl.Hash = hashOf(fl.Stages)
	return fl, nil
}

func checkHeader(f *File) error {
	switch {
	case f.APIVersion != APIVersion:
		return fileErrorf("apiVersion %q: want %q", f.APIVersion, APIVersion)
	case f.Kind != Kind:
		return fileErrorf("kind %q: want %q", f.Kind, Kind)
	case f.Metadata.Name == "":
		return fileErrorf("metadata.name is empty: name the fleet")
	case len(f.Stages) == 0:
		return fileErrorf("stages is empty: list at least one stage")
	}
	return nil
}

func resolveStage(f *File, i int, s Stage, o Options, seen map[string]string) (ResolvedStage, error) {
	at := fmt.Sprintf("stages[%d]", i)
	if s.Name == "" {
		return ResolvedStage{}, fileErrorf("%s.name is empty", at)
	}
	at = fmt.Sprintf("stages[%d] %q", i, s.Name)
	if len(s.Targets) == 0 {
		return ResolvedStage{}, fileErrorf("%s: targets is empty (an empty stage)", at)
	}
	if s.MaxFailures < 0 {
		return ResolvedStage{}, fileErrorf("%s: maxFailures %d: must be 0 or more", at, s.MaxFailures)
	}
	rs := ResolvedStage{Name: s.Name, MaxFailures: s.MaxFailures}
	for j, ts := range s.Targets {
		targets, err := resolveTargets(f, fmt.Sprintf("%s targets[%d]", at, j), s.Name, ts, o)
		if err != nil {
			return ResolvedStage{}, err
		}
		for _, t := range targets {
			if prev, dup := seen[t.ID()]; dup {
				return ResolvedStage{}, fileErrorf("%s targets[%d]: duplicate target %q (also in stage %q)", at, j, t.ID(), prev)
			}
			seen[t.ID()] = s.Name
		}
		rs.Targets = append(rs.Targets, targets...)
	}
	n, err := concurrency(s.MaxConcurrency, len(rs.Targets))
	if err != nil {
		return ResolvedStage{}, fileErrorf("%s: %v", at, err)
	}
	rs.MaxConcurrency = n
	if err := resolveAfter(f, at, s.AfterStage, &rs); err != nil {
		return ResolvedStage{}, err
	}
	rs.Hash = hashOf(rs)
	return rs, nil
}

// concurrency is maxConcurrency as a count: a percentage of n rounded
// up, 1 when absent.
func concurrency(v *intstr.IntOrString, n int) (int, error) {
	if v == nil {
		return 1, nil
	}
	got, err := intstr.GetScaledValueFromIntOrPercent(v, n, true)
	if err != nil || got < 1 {
		return 0, fmt.Errorf("maxConcurrency %q: must be a count or percentage of at least 1", v.String())
	}
	return got, nil
}

func resolveTargets(f *File, at, stage string, ts TargetSpec, o Options) ([]Target, error) {
	if (ts.Context == "") == (ts.ContextSelector == "") {
		return nil, fileErrorf("%s: give one of context and contextSelector", at)
	}
	if (ts.NodeGroup == "") == (ts.Selector == "") {
		return nil, fileErrorf("%s: give one of nodeGroup and selector", at)
	}
	contexts, err := matchContexts(at, ts, o.Contexts)
	if err != nil {
		return nil, err
	}
	args, err := runArgs(f.Defaults.Run, ts.Run)
	if err != nil {
		return nil, fileErrorf("%s: %v", at, err)
	}
	if o.CheckRun != nil {
		if err := o.CheckRun(args); err != nil {
			return nil, fileErrorf("%s: run: %v", at, err)
		}
	}
	out := make([]Target, 0, len(contexts))
	for _, c := range contexts {
		out = append(out, Target{Stage: stage, Context: c, NodeGroup: ts.NodeGroup, Selector: ts.Selector, Args: args})
	}
	return out, nil
}

func matchContexts(at string, ts TargetSpec, known []string) ([]string, error) {
	if ts.Context != "" {
		if !slices.Contains(known, ts.Context) {
			return nil, fileErrorf("%s: unknown context %q: not in the kubeconfig (--kubeconfig changes which)", at, ts.Context)
		}
		return []string{ts.Context}, nil
	}
	var out []string
	for _, c := range known {
		ok, err := path.Match(ts.ContextSelector, c)
		if err != nil {
			return nil, fileErrorf("%s: contextSelector %q: %v", at, ts.ContextSelector, err)
		}
		if ok {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fileErrorf("%s: contextSelector %q selects no context of the kubeconfig", at, ts.ContextSelector)
	}
	sort.Strings(out)
	return out, nil
}

func resolveAfter(f *File, at string, a *AfterStage, rs *ResolvedStage) error {
	if a == nil {
		return nil
	}
	if a.Soak != "" {
		d, err := time.ParseDuration(a.Soak)
		if err != nil || d < 0 {
			return fileErrorf("%s: afterStage.soak %q: want a duration such as 10m", at, a.Soak)
		}
		rs.Soak = d
	}
	specs, err := gate.ParseAll(a.Gates)
	if err != nil {
		return fileErrorf("%s: afterStage.gates: %v", at, err)
	}
	for _, s := range specs {
		if flag := serverFlag(s.Kind); flag != "" && f.Defaults.Run[flag] == nil {
			return fileErrorf("%s: afterStage gate %q needs its server: set defaults.run.%s", at, s.Text, flag)
		}
	}
	rs.Gates, rs.Approval = a.Gates, a.Approval
	return nil
}

// serverFlag is the run flag naming the server a gate kind asks.
func serverFlag(k gate.Kind) string {
	switch k {
	case gate.Prometheus:
		return "prometheus-url"
	case gate.Alertmanager:
		return "alertmanager-url"
	}
	return ""
}

// Evaluator is the gate evaluator of the fleet's after-stage gates: the
// servers defaults.run names.
func (f *File) Evaluator() gate.Evaluator {
	str := func(k string) string {
		if v, ok := f.Defaults.Run[k]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	return gate.Evaluator{PrometheusURL: str("prometheus-url"), AlertmanagerURL: str("alertmanager-url")}
}

// runArgs are the run flags of a target: defaults, then its own, sorted
// by name so the hash is stable; a list repeats its flag.
func runArgs(defaults, own map[string]any) ([]string, error) {
	merged := maps.Clone(defaults)
	if merged == nil {
		merged = map[string]any{}
	}
	maps.Copy(merged, own)
	var args []string
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		vals, ok := merged[k].([]any)
		if !ok {
			vals = []any{merged[k]}
		}
		for _, v := range vals {
			if _, nested := v.(map[string]any); nested || v == nil {
				return nil, fmt.Errorf("run.%s: want a value or a list of values", k)
			}
			args = append(args, fmt.Sprintf("--%s=%v", k, v))
		}
	}
	return args, nil
}

func hashOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}
