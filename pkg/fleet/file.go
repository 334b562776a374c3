// Package fleet reads a fleet plan file (kind FleetPlan) and runs its
// stages: every target a node group of a cluster (a kubeconfig context),
// run by the caller's Runner through the per-group session, with the
// fleet's own decisions (stage entered, soak, gate verdicts, approvals,
// the plan's hash) in one small Record. It is cobra-free and knows no
// cluster but the coordinator's record.
package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The file's type, as its apiVersion and kind spell it.
const (
	APIVersion = "nodeupgrade.dev/v1alpha1"
	Kind       = "FleetPlan"
)

// File is a fleet plan file as written.
type File struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Defaults   Defaults `json:"defaults,omitempty"`
	Stages     []Stage  `json:"stages"`
}

// Metadata names the fleet: its record and every target's stamp carry it.
type Metadata struct {
	Name string `json:"name"`
}

// Defaults are the run flags of every target, name → value, each
// overridden by a target's own.
type Defaults struct {
	Run map[string]any `json:"run,omitempty"`
}

// Stage is a set of targets run together, after the stage before it.
type Stage struct {
	Name string `json:"name"`
	// MaxConcurrency is how many targets run at once: a count, or a
	// percentage of the stage's targets (rounded up); 1 when absent.
	MaxConcurrency *intstr.IntOrString `json:"maxConcurrency,omitempty"`
	// MaxFailures is how many targets may fail before no more start.
	MaxFailures int          `json:"maxFailures,omitempty"`
	Targets     []TargetSpec `json:"targets"`
	AfterStage  *AfterStage  `json:"afterStage,omitempty"`
}

// TargetSpec selects one or more targets: a context (or the contexts a
// glob selects) and a node group (or a label selector of its nodes).
type TargetSpec struct {
	Context         string         `json:"context,omitempty"`
	ContextSelector string         `json:"contextSelector,omitempty"`
	NodeGroup       string         `json:"nodeGroup,omitempty"`
	Selector        string         `json:"selector,omitempty"`
	Run             map[string]any `json:"run,omitempty"`
}

// AfterStage is what must hold before the next stage starts.
type AfterStage struct {
	// Soak is how long to wait after the stage's last target (a Go
	// duration); the gates are evaluated over it.
	Soak string `json:"soak,omitempty"`
	// Gates are --gate specs: prometheus:, alertmanager:, exec:.
	Gates []string `json:"gates,omitempty"`
	// Approval holds the next stage until "fleet approve NAME STAGE".
	Approval bool `json:"approval,omitempty"`
}

// FileError is a bad fleet file, in one line naming the key and value.
type FileError struct{ Msg string }

func (e *FileError) Error() string { return "fleet file: " + e.Msg }

func fileErrorf(format string, args ...any) error {
	return &FileError{Msg: fmt.Sprintf(format, args...)}
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// Parse decodes a fleet file strictly: an unknown key is refused, named
// with its value.
func Parse(data []byte) (*File, error) {
	var f File
	err := yaml.UnmarshalStrict(data, &f)
	if err == nil {
		return &f, nil
	}
	if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
		var generic any
		_ = yaml.Unmarshal(data, &generic)
		key := m[1][strings.LastIndex(m[1], ".")+1:]
		path, value := findKey(generic, key, "")
		if path == "" {
			path = m[1]
		}
		return nil, fileErrorf("unknown key %q (value %v)", path, value)
	}
	return nil, fileErrorf("cannot decode: %s", lastLine(err.Error()))
}

// findKey finds key in the decoded document, depth first, keys sorted,
// and returns its path and value.
func findKey(doc any, key, at string) (string, any) {
	switch v := doc.(type) {
	case map[string]any:
		if val, ok := v[key]; ok {
			return join(at, key), val
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, val := findKey(v[k], key, join(at, k)); p != "" {
				return p, val
			}
		}
	case []any:
		for i, e := range v {
			if p, val := findKey(e, key, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p, val
			}
		}
	}
	return "", nil
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func lastLine(s string) string {
	parts := strings.Split(strings.TrimSpace(s), ": ")
	return parts[len(parts)-1]
}

// IsFileError reports whether err is a bad fleet file.
func IsFileError(err error) bool {
	var fe *FileError
	return errors.As(err, &fe)
}
