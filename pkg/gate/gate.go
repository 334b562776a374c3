// Package gate reads and evaluates the health gates a run checks between
// its waves (--gate): a PromQL query held to a threshold over the soak
// window, no alert firing in Alertmanager for a set of label matchers, or
// a command that exits 0. Each evaluation is a typed Verdict; a gate that
// cannot be evaluated (unreachable, a query error, no data) fails and says
// why.
package gate

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a gate asks.
type Kind string

// The kinds of gate, as their --gate prefix spells them.
const (
	Prometheus   Kind = "prometheus"
	Alertmanager Kind = "alertmanager"
	Exec         Kind = "exec"
)

// Spec is one --gate, parsed.
type Spec struct {
	// Text is the gate as given: how messages, the record and status name it.
	Text string
	Kind Kind
	// Query, Op and Threshold are a prometheus gate's: every sample of
	// Query over the window must satisfy "value Op Threshold".
	Query     string
	Op        Op
	Threshold float64
	// Matchers are an alertmanager gate's: no alert matching them all may
	// be firing.
	Matchers []Matcher
	// Command is an exec gate's: run by sh -c, it passes by exiting 0.
	Command string
}

// Op is the comparison a prometheus gate's samples must satisfy.
type Op string

// The comparisons, longest first (the parser tries them in this order).
const (
	LessEq    Op = "<="
	GreaterEq Op = ">="
	Less      Op = "<"
	Greater   Op = ">"
)

var ops = []Op{LessEq, GreaterEq, Less, Greater}

// Holds reports whether v satisfies the comparison with t (NaN never does).
func (o Op) Holds(v, t float64) bool {
	switch o {
	case LessEq:
		return v <= t
	case GreaterEq:
		return v >= t
	case Less:
		return v < t
	case Greater:
		return v > t
	}
	return false
}

// Matcher is one of an alertmanager gate's label matchers, in
// Alertmanager's own filter syntax: name, one of = != =~ !~, value.
type Matcher struct {
	Name, Op, Value string
}

func (m Matcher) String() string { return m.Name + m.Op + strconv.Quote(m.Value) }

// Parse reads one --gate value: "prometheus:QUERY<0.01" (also <=, >, >=),
// "alertmanager:severity=critical,team=db" or "exec:COMMAND". Its errors
// name the flag and the value, on one line.
func Parse(text string) (Spec, error) {
	kind, rest, ok := strings.Cut(text, ":")
	if !ok {
		return Spec{}, invalid(text, "must be prometheus:QUERY<THRESHOLD, alertmanager:LABEL=VALUE[,...] or exec:COMMAND")
	}
	spec := Spec{Text: text, Kind: Kind(kind)}
	rest = strings.TrimSpace(rest)
	var why string
	switch spec.Kind {
	case Prometheus:
		why = spec.parseQuery(rest)
	case Alertmanager:
		why = spec.parseMatchers(rest)
	case Exec:
		spec.Command = rest
		if rest == "" {
			why = "exec: needs a command"
		}
	default:
		why = fmt.Sprintf("unknown kind %q: must be prometheus, alertmanager or exec", kind)
	}
	if why != "" {
		return Spec{}, invalid(text, why)
	}
	return spec, nil
}

func invalid(text, why string) error {
	return fmt.Errorf("invalid --gate %q: %s", text, why)
}

// parseQuery splits "QUERY<THRESHOLD" at its last comparison whose right
// side is a number, so a query may compare inside itself.
func (s *Spec) parseQuery(text string) string {
	for i := len(text) - 1; i >= 0; i-- {
		for _, op := range ops {
			if !strings.HasPrefix(text[i:], string(op)) || (len(op) == 1 && i > 0 && strings.ContainsAny(text[i-1:i], "<>!=")) {
				continue
			}
			t, err := strconv.ParseFloat(strings.TrimSpace(text[i+len(op):]), 64)
			if err != nil {
				continue
			}
			s.Query, s.Op, s.Threshold = strings.TrimSpace(text[:i]), op, t
			if s.Query == "" {
				return "prometheus: needs a query before the comparison"
			}
			return ""
		}
	}
	return "prometheus: needs QUERY<THRESHOLD (or <=, >, >=) with a number for THRESHOLD, e.g. prometheus:sum(rate(errors[1m]))<0.01"
}

// parseMatchers reads "a=b,c!=d,e=~f.*".
func (s *Spec) parseMatchers(text string) string {
	if text == "" {
		return "alertmanager: needs label matchers, e.g. alertmanager:severity=critical"
	}
	for _, part := range strings.Split(text, ",") {
		m, ok := matcher(strings.TrimSpace(part))
		if !ok {
			return fmt.Sprintf("alertmanager: matcher %q must be LABEL=VALUE (or !=, =~, !~)", part)
		}
		s.Matchers = append(s.Matchers, m)
	}
	return ""
}

func matcher(text string) (Matcher, bool) {
	for _, op := range []string{"!=", "=~", "!~", "="} {
		if name, value, ok := strings.Cut(text, op); ok {
			name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
			if name == "" || strings.ContainsAny(name, "=!~") {
				return Matcher{}, false
			}
			return Matcher{Name: name, Op: op, Value: value}, true
		}
	}
	return Matcher{}, false
}

// ParseAll reads every --gate value; the first bad one is the error.
func ParseAll(texts []string) ([]Spec, error) {
	specs := make([]Spec, 0, len(texts))
	for _, t := range texts {
		s, err := Parse(t)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// ThresholdText says what a prometheus gate's samples must be ("< 0.01");
// "" for the other kinds.
func (s Spec) ThresholdText() string {
	if s.Kind != Prometheus {
		return ""
	}
	return string(s.Op) + " " + strconv.FormatFloat(s.Threshold, 'g', -1, 64)
}

// What is what the gate looks at: the query, the alert matchers, or the
// command.
func (s Spec) What() string {
	switch s.Kind {
	case Prometheus:
		return s.Query
	case Alertmanager:
		parts := make([]string, len(s.Matchers))
		for i, m := range s.Matchers {
			parts[i] = m.String()
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return s.Command
}
