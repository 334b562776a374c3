package awsfake

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The constraints the published models put on the query-protocol requests
// the fake serves, checked before a request does anything, as the service
// checks them: what the SDK checks on the client (validators.go: required
// members) is checked again here for callers other than the SDK, and what
// only the service checks (lengths, ranges, enums, patterns, reserved
// prefixes, list limits) is refused here as the service refuses it.
//
// Sources, cited per rule: the aws-sdk-go-v2 models in the module cache
// (service/<name>/api_op_<Op>.go doc comments, types/enums.go) and, for
// length constraints the Go models do not carry, the API Reference page of
// the shape (https://docs.aws.amazon.com/autoscaling/ec2/APIReference/,
// .../AWSEC2/latest/APIReference/, .../elasticloadbalancing/latest/APIReference/).

// paramRule is one constraint on one parameter of a query request.
type paramRule struct {
	// param is the parameter as the query protocol names it; "#" stands
	// for any list index (Tags.member.#.Key).
	param string
	// check says which constraint v breaks, in the service's words ("" if
	// none).
	check func(v string) string
	// source is where the constraint is published.
	source string
}

// listRule limits how many members a list parameter may have.
type listRule struct {
	list   string // "Tags.member": its members are Tags.member.1, ...
	max    int
	source string
}

// opModel is what the model says of one operation's request.
type opModel struct {
	required []string // members validators.go requires
	params   []paramRule
	lists    []listRule
	// whole is a rule over the whole request, nil if none.
	whole func(f form) error
}

// length is a Length Constraints rule of the API Reference, in characters.
func length(lo, hi int) func(string) string {
	return func(v string) string {
		switch n := utf8.RuneCountInString(v); {
		case n < lo:
			return fmt.Sprintf("Member must have length greater than or equal to %d", lo)
		case hi > 0 && n > hi:
			return fmt.Sprintf("Member must have length less than or equal to %d", hi)
		}
		return ""
	}
}

// intRange is a range a doc comment states.
func intRange(lo, hi int64) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return "Member must be an integer"
		case n < lo:
			return fmt.Sprintf("Member must have value greater than or equal to %d", lo)
		case n > hi:
			return fmt.Sprintf("Member must have value less than or equal to %d", hi)
		}
		return ""
	}
}

// oneOf is an enum; each value of a comma-separated v must be one of vals.
func oneOf(vals ...string) func(string) string {
	return func(v string) string {
		for _, x := range strings.Split(v, ",") {
			if !slices.Contains(vals, x) {
				return "Member must satisfy enum value set: [" + strings.Join(vals, ", ") + "]"
			}
		}
		return ""
	}
}

// matches is a Pattern rule.
func matches(re *regexp.Regexp) func(string) string {
	return func(v string) string {
		if !re.MatchString(v) {
			return "Member must satisfy regular expression pattern: " + re.String()
		}
		return ""
	}
}

// notReserved refuses the aws: prefix AWS reserves for its own tags, in
// any case.
func notReserved(v string) string {
	if strings.HasPrefix(strings.ToLower(v), "aws:") {
		return "Member must not start with the aws: prefix, which is reserved for AWS use"
	}
	return ""
}

// all is every check in turn; the first broken one counts.
func all(checks ...func(string) string) func(string) string {
	return func(v string) string {
		for _, c := range checks {
			if msg := c(v); msg != "" {
				return msg
			}
		}
		return ""
	}
}

// checkModel holds a query request of one of models' operations to its
// model; an operation not in models is left to its handler.
func checkModel(models map[string]opModel, action string, f form, refuse func(member, value, msg string) error) error {
	m, ok := models[action]
	if !ok {
		return nil
	}
	for _, p := range m.required {
		if !f.has(p) && !f.hasPrefix(p+".") {
			return refuse(p, "null", "Member must not be null")
		}
	}
	for _, l := range m.lists {
		if n := len(memberIndexes(f, l.list)); n > l.max {
			return refuse(l.list, fmt.Sprintf("%d members", n), fmt.Sprintf("Member must have length less than or equal to %d", l.max))
		}
	}
	for _, r := range m.params {
		for _, k := range paramKeys(f, r.param) {
			if msg := r.check(f.get(k)); msg != "" {
				return refuse(k, f.get(k), msg)
			}
		}
	}
	if m.whole != nil {
		return m.whole(f)
	}
	return nil
}

// paramKeys are the request's keys that param (with "#" for any index)
// names, in order.
func paramKeys(f form, param string) []string {
	re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(param), "#", "[0-9]+") + "$")
	var out []string
	for k := range f {
		if re.MatchString(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// memberIndexes are the indexes the list's members have in the request.
func memberIndexes(f form, list string) map[string]bool {
	out := map[string]bool{}
	for k := range f {
		if rest, ok := strings.CutPrefix(k, list+"."); ok {
			idx, _, _ := strings.Cut(rest, ".")
			out[idx] = true
		}
	}
	return out
}

// memberPath names a parameter as the services' validation messages do:
// Tags.member.3.Key is tags.3.member.key.
func memberPath(param string) string {
	parts := strings.Split(param, ".")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToLower(p[:1]) + p[1:]
		}
		if p == "member" && i+1 < len(parts) {
			if _, err := strconv.Atoi(parts[i+1]); err == nil {
				parts[i], parts[i+1] = parts[i+1], "member"
			}
		}
	}
	return strings.Join(parts, ".")
}

// refuseValidation is the query services' (Auto Scaling, Elastic Load
// Balancing) answer to a request that breaks its model: 400
// ValidationError, "1 validation error detected: Value 'v' at 'member'
// failed to satisfy constraint: ..." (Auto Scaling API Reference, Common
// Errors: ValidationError).
func refuseValidation(member, value, msg string) error {
	return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: %s", value, memberPath(member), msg)
}

// refuseEC2 is EC2's: 400 InvalidParameterValue, or MissingParameter for
// a required one (EC2 API Reference, Error codes).
func refuseEC2(member, value, msg string) error {
	if value == "null" {
		return &apiError{status: http.StatusBadRequest, code: "MissingParameter", message: fmt.Sprintf("The request must contain the parameter %s", member)}
	}
	return ec2Err("InvalidParameterValue", "Value (%s) for parameter %s is invalid. %s", value, member, msg)
}
