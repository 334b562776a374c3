package awsfake

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The IAM policy language as the fake evaluates it, from the IAM User
// Guide's "IAM JSON policy element reference"
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements.html)
// and "Policy evaluation logic"
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html),
// for identity-based policies in one account.

// Policy is an IAM policy document.
type Policy struct {
	Version   string
	Statement []Statement
}

// Statement is one statement; Action, NotAction, Resource and NotResource
// are each a string or a list ("Statement" element reference).
type Statement struct {
	Sid                   string
	Effect                string
	Action, NotAction     strings1
	Resource, NotResource strings1
	Condition             map[string]map[string]strings1
}

// strings1 is a JSON string or list of strings.
type strings1 []string

func (s *strings1) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = []string{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("want a string or a list of strings: %s", b)
	}
	*s = list
	return nil
}

// UnmarshalJSON takes Statement as one object or a list ("Statement":
// "an array of individual statements" or a single one).
func (p *Policy) UnmarshalJSON(b []byte) error {
	var raw struct {
		Version   string
		Statement json.RawMessage
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.Version = raw.Version
	var one Statement
	if len(raw.Statement) > 0 && raw.Statement[0] == '{' {
		if err := json.Unmarshal(raw.Statement, &one); err != nil {
			return err
		}
		p.Statement = []Statement{one}
		return nil
	}
	return json.Unmarshal(raw.Statement, &p.Statement)
}

// ParsePolicy reads a policy document, refusing what the fake does not
// evaluate (a condition operator it does not know), so a test never
// passes on a rule it ignored.
func ParsePolicy(doc string) (*Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	for _, st := range p.Statement {
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fmt.Errorf("policy: statement %q: Effect %q is neither Allow nor Deny", st.Sid, st.Effect)
		}
		for op := range st.Condition {
			if _, ok := conditionOp(op); !ok {
				return nil, fmt.Errorf("policy: statement %q: condition operator %q is not evaluated by the fake", st.Sid, op)
			}
		}
	}
	return &p, nil
}

// Decision is SimulatePrincipalPolicy's EvalDecision.
type Decision string

const (
	Allowed      Decision = "allowed"
	ExplicitDeny Decision = "explicitDeny"
	ImplicitDeny Decision = "implicitDeny"
)

// Request is what a policy is evaluated on: the action, the resource's
// ARN ("*" where the action takes none) and the request context's keys.
type Request struct {
	Action, Resource string
	Context          map[string][]string
}

// Evaluate decides req under the policies: "an explicit deny in any
// policy overrides any allows", an allow needs a matching Allow
// statement, and by default every request is implicitly denied ("Policy
// evaluation logic", "Explicit and implicit denies"). missing are the
// condition keys of the statements that matched req's action and resource
// that req's context lacks: SimulatePrincipalPolicy's MissingContextValues
// ("context keys that are required by the included input policies but
// that were not provided").
func Evaluate(policies []*Policy, req Request) (d Decision, missing []string) {
	d = ImplicitDeny
	for _, p := range policies {
		for _, st := range p.Statement {
			if !st.matchesAction(req.Action) || !st.matchesResource(req.Resource) {
				continue
			}
			for _, k := range st.conditionKeys() {
				if _, ok := req.Context[k]; !ok && !slices.Contains(missing, k) {
					missing = append(missing, k)
				}
			}
			if !st.conditionHolds(req.Context) {
				continue
			}
			if st.Effect == "Deny" {
				return ExplicitDeny, missing
			}
			d = Allowed
		}
	}
	return d, missing
}

// matchesAction: "Action element values are case-insensitive", and a
// "*" or "?" is a globMatch within them; NotAction matches every action
// but those it lists ("IAM JSON policy elements: Action", "NotAction").
func (st Statement) matchesAction(action string) bool {
	match := func(list []string) bool {
		return slices.ContainsFunc(list, func(p string) bool { return globMatch(strings.ToLower(p), strings.ToLower(action)) })
	}
	if st.NotAction != nil {
		return !match(st.NotAction)
	}
	return match(st.Action)
}

// matchesResource: an ARN with "*" and "?" wildcards in any segment
// ("IAM JSON policy elements: Resource"), NotResource every resource but
// those listed. A request on "*" (no resource-level permission, or a
// simulation without ResourceArns) is matched by a "*" only.
func (st Statement) matchesResource(resource string) bool {
	match := func(list []string) bool {
		return slices.ContainsFunc(list, func(p string) bool {
			if resource == "*" {
				return p == "*"
			}
			return globMatch(p, resource)
		})
	}
	if st.NotResource != nil {
		return !match(st.NotResource)
	}
	return match(st.Resource)
}

// globMatch matches s against pattern, whose "*" stands for any run of
// characters and "?" for one; path.Match's "[" and "\" are literal here.
func globMatch(pattern, s string) bool {
	var b strings.Builder
	for _, r := range pattern {
		if r == '[' || r == '\\' || r == ']' {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	// path.Match's "*" stops at "/": an ARN's "/" is matched by IAM's.
	p := strings.ReplaceAll(b.String(), "/", "\x00")
	ok, _ := path.Match(p, strings.ReplaceAll(s, "/", "\x00"))
	return ok
}

// conditionKeys are the keys a statement's Condition reads; IAM
// condition key names are case-insensitive ("Condition"), kept here as
// written.
func (st Statement) conditionKeys() []string {
	var out []string
	for _, keys := range st.Condition {
		for k := range keys {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// conditionHolds: every operator of the block must hold, every key of
// an operator, and one of a key's values ("Creating a condition with
// multiple keys or values": AND between operators and keys, OR between
// values; for a negated operator, NOR between values).
func (st Statement) conditionHolds(ctx map[string][]string) bool {
	for opName, keys := range st.Condition {
		op, _ := conditionOp(opName)
		for k, values := range keys {
			v, present := ctx[k]
			if !op.holds(v, present, values) {
				return false
			}
		}
	}
	return true
}

// condOp is a condition operator ("IAM JSON policy elements: Condition
// operators",
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html).
type condOp struct {
	match    func(policy, value string) bool
	negated  bool   // StringNotEquals, StringNotLike, ArnNotLike...
	ifExists bool   // "...IfExists": true where the key is absent
	null     bool   // Null: whether the key is absent
	set      string // "ForAnyValue" or "ForAllValues", "" for a single-valued key
}

var condMatchers = map[string]func(policy, value string) bool{
	"StringEquals":           func(p, v string) bool { return p == v },
	"StringEqualsIgnoreCase": strings.EqualFold,
	"StringLike":             globMatch,
	"ArnEquals":              globMatch, // "ArnEquals, ArnLike: case-sensitive matching of the ARN", wildcards in each segment
	"ArnLike":                globMatch,
	"Bool":                   strings.EqualFold,
}

var condNegated = map[string]string{
	"StringNotEquals": "StringEquals", "StringNotEqualsIgnoreCase": "StringEqualsIgnoreCase", "StringNotLike": "StringLike",
	"ArnNotEquals": "ArnEquals", "ArnNotLike": "ArnLike",
}

// conditionOp parses an operator with its set prefix (ForAnyValue:,
// ForAllValues:) and IfExists suffix.
func conditionOp(name string) (condOp, bool) {
	var op condOp
	if set, rest, ok := strings.Cut(name, ":"); ok {
		if set != "ForAnyValue" && set != "ForAllValues" {
			return op, false
		}
		op.set, name = set, rest
	}
	if name == "Null" {
		op.null = true
		return op, op.set == ""
	}
	if base, ok := strings.CutSuffix(name, "IfExists"); ok {
		op.ifExists, name = true, base
	}
	if pos, ok := condNegated[name]; ok {
		op.negated, name = true, pos
	}
	op.match = condMatchers[name]
	return op, op.match != nil
}

// holds evaluates the operator on a key's request values. "If the key
// that you specify in a policy condition is not present in the request
// context, the values do not match and the condition is false. If the
// policy condition requires that the key is not matched, such as
// StringNotLike or ArnNotLike, and the right key is not present, the
// condition is true" (Condition operators); ...IfExists is true on an
// absent key; ForAllValues is true on an absent key, ForAnyValue false
// ("Single-valued vs. multivalued context keys"); Null "true" holds on
// an absent key, "false" on a present one.
func (op condOp) holds(values []string, present bool, policy []string) bool {
	if op.null {
		return slices.Contains(policy, "true") != present
	}
	if !present {
		switch op.set {
		case "ForAllValues":
			return true
		case "ForAnyValue":
			return false
		}
		return op.ifExists || op.negated
	}
	matches := func(v string) bool {
		return slices.ContainsFunc(policy, func(p string) bool { return op.match(p, v) }) != op.negated
	}
	if op.set == "ForAllValues" {
		return !slices.ContainsFunc(values, func(v string) bool { return !matches(v) })
	}
	if op.negated && op.set == "" { // NOR: no value of the request matches a value of the policy
		return !slices.ContainsFunc(values, func(v string) bool { return !matches(v) })
	}
	return slices.ContainsFunc(values, matches)
}
