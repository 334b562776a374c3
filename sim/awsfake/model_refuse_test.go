package awsfake

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// queryVersions are the Version each query service's requests carry.
var queryVersions = map[string]string{"autoscaling": autoScalingVersion, "ec2": ec2Version, "elb": elbVersion,
	"elbv2": elbv2Version, "iam": iamVersion, "sts": stsVersion}

// breach is one request that breaks one rule of the table: leaves are
// its members by the table's path ("#" as 1), want what the refusal must
// say of the member; nil leaves where no value can break the rule, want
// then saying why.
type breach struct {
	name, want string
	leaves     map[string]any
}

// TestModelTableRefuses sends, for every rule of model_table.jsonl (each
// constrained member of each call the product makes), a request that
// breaks it, past the SDK's client-side checks, and expects the
// service's refusal naming that member.
func TestModelTableRefuses(t *testing.T) {
	table, err := modelTable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	n := 0
	for _, svc := range slices.Sorted(func(yield func(string) bool) {
		for k := range table {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, op := range slices.Sorted(func(yield func(string) bool) {
			for k := range table[svc] {
				if !yield(k) {
					return
				}
			}
		}) {
			for _, r := range table[svc][op] {
				for _, b := range breaches(r) {
					if b.name == "required" {
						fillSiblings(b.leaves, table[svc][op], strings.ReplaceAll(r.Path, "#", "1"))
					}
					n++
					t.Run(svc+"/"+op+"/"+r.Path+"/"+b.name, func(t *testing.T) {
						if b.leaves == nil {
							t.Skip(b.want)
						}
						status, code, body := sendBreach(t, s, svc, op, b.leaves)
						if status != http.StatusBadRequest || !slices.Contains(refusalCodes[svc], code) {
							t.Fatalf("answer %d %s, want 400 %v: %s", status, code, refusalCodes[svc], body)
						}
						if !strings.Contains(body, b.want) {
							t.Errorf("refusal %q does not say %q", body, b.want)
						}
					})
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d requests: the table lost its rules", n)
	}
}

// refusalCodes are the codes each service refuses a request that breaks
// its model with (see refuseTable).
var refusalCodes = map[string][]string{"autoscaling": {"ValidationError"}, "elb": {"ValidationError"}, "elbv2": {"ValidationError"},
	"iam": {"ValidationError"}, "sts": {"ValidationError"}, "ec2": {"InvalidParameterValue", "MissingParameter"},
	"eks": {"InvalidParameterException"}, "ssm": {"ValidationException"}}

// breaches are the requests that break r, one per constraint.
func breaches(r *tableRule) []breach {
	path := strings.ReplaceAll(r.Path, "#", "1")
	if r.Path == "" {
		return nil
	}
	named := func(name string, v any, msg string) breach {
		return breach{name: name, want: says(r.Service, path, msg), leaves: map[string]any{path: v}}
	}
	var out []breach
	if r.Required && !strings.HasPrefix(path, "uri:") {
		b := breach{name: "required", want: says(r.Service, path, "not be null"), leaves: map[string]any{}}
		if parent := parentOf(path); parent != "" {
			b.leaves[parent+".Placeholder"] = "x"
		}
		if r.Service == "ec2" {
			b.want = "parameter " + path
		}
		out = append(out, b)
	}
	switch r.Type {
	case "list", "map":
		elem := strings.ReplaceAll(r.Elem, "#", "1")
		if r.Max != nil {
			out = append(out, breach{name: "max", want: says(r.Service, path, "have length less than or equal to"), leaves: entries(r.Type, elem, int(*r.Max)+1)})
		}
		if r.Min != nil && *r.Min > 0 {
			b := breach{name: "min", want: says(r.Service, path, "have length greater than or equal to"), leaves: entries(r.Type, elem, int(*r.Min)-1)}
			if *r.Min == 1 {
				b.leaves = map[string]any{path: emptyOf(r.Type)}
			}
			out = append(out, b)
		}
	case "integer", "long":
		if r.Min != nil && *r.Min > math.MinInt64 {
			out = append(out, named("min", json.Number(strconv.FormatInt(*r.Min-1, 10)), "have value greater than or equal to"))
		}
		if r.Max != nil && *r.Max < math.MaxInt64 {
			out = append(out, named("max", json.Number(strconv.FormatInt(*r.Max+1, 10)), "have value less than or equal to"))
		}
	case "string":
		if r.Min != nil && *r.Min > 0 && !strings.HasPrefix(path, "uri:") {
			out = append(out, named("min", strings.Repeat("a", int(*r.Min)-1), "have length greater than or equal to"))
		}
		if r.Max != nil && *r.Max < 1<<20 {
			out = append(out, named("max", strings.Repeat("a", int(*r.Max)+1), "have length less than or equal to"))
		}
		if r.re != nil {
			if v, ok := patternBreach(r); ok {
				out = append(out, named("pattern", v, "satisfy regular expression pattern"))
			} else {
				out = append(out, breach{name: "pattern", want: "no value of its length breaks pattern " + r.Pattern})
			}
		}
		if len(r.Enum) > 0 {
			out = append(out, named("enum", "NOT_IN_THE_ENUM", "satisfy enum value set"))
		}
	}
	return out
}

// says is what the service's refusal says of member.
func says(service, member, msg string) string {
	if service == "ec2" {
		return "parameter " + member + " is invalid"
	}
	return "at '" + memberPath(member) + "' failed to satisfy constraint: Member must " + msg
}

// entries are n members of a list or map at elem.
func entries(typ, elem string, n int) map[string]any {
	out := map[string]any{}
	for i := 1; i <= n; i++ {
		if typ == "map" {
			out[fmt.Sprintf("%s.%d.key", elem, i)] = fmt.Sprintf("k%d", i)
			out[fmt.Sprintf("%s.%d.value", elem, i)] = "v"
			continue
		}
		out[fmt.Sprintf("%s.%d", elem, i)] = fmt.Sprintf("x%d", i)
	}
	return out
}

// emptyList and emptyMap stand for an empty list or map in leaves.
type emptyList struct{}
type emptyMap struct{}

func emptyOf(typ string) any {
	if typ == "map" {
		return emptyMap{}
	}
	return emptyList{}
}

// patternBreach is a value within r's length that r's pattern refuses.
func patternBreach(r *tableRule) (string, bool) {
	lo, hi := int64(0), int64(64)
	if r.Min != nil {
		lo = *r.Min
	}
	if r.Max != nil {
		hi = *r.Max
	}
	for _, c := range []string{"\x01", " ", "~", "a b", "!", "é", "aa", "a", "A", "0", "-", "_", "aaaa", "AAAA", "0000", "a:b", "a/b", "arn:aws:x"} {
		for v := c; int64(len([]rune(v))) <= hi; v += c {
			if int64(len([]rune(v))) >= lo && !r.re.MatchString(v) {
				return v, true
			}
			if len(v) > 300 {
				break
			}
		}
	}
	return "", false
}

// sendBreach sends leaves as service's op and returns the answer's
// status, error code and body.
func sendBreach(t *testing.T, s *Server, service, op string, leaves map[string]any) (int, string, string) {
	t.Helper()
	var req *http.Request
	switch service {
	case "eks", "ssm":
		req = jsonRequest(t, s, service, op, leaves)
	default:
		v := url.Values{"Action": {op}, "Version": {queryVersions[service]}}
		for k, x := range leaves {
			switch x.(type) {
			case emptyList, emptyMap:
				v.Set(k, "")
			default:
				v.Set(k, fmt.Sprint(x))
			}
		}
		req, _ = http.NewRequest(http.MethodPost, s.URL, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code := resp.Header.Get("X-Amzn-ErrorType")
	if m := regexp.MustCompile(`<Code>([^<]*)</Code>`).FindSubmatch(b); m != nil {
		code = string(m[1])
	}
	return resp.StatusCode, code, html.UnescapeString(string(b))
}

// jsonRequest is a JSON 1.1 (SSM) or REST-JSON (EKS) request of leaves.
func jsonRequest(t *testing.T, s *Server, service, op string, leaves map[string]any) *http.Request {
	t.Helper()
	body, uri, query := map[string]any{}, map[string]string{}, url.Values{}
	for k, v := range leaves {
		switch {
		case strings.HasPrefix(k, "uri:"):
			uri[strings.TrimPrefix(k, "uri:")] = fmt.Sprint(v)
		case strings.HasPrefix(k, "querystring:"):
			query.Set(strings.TrimPrefix(k, "querystring:"), fmt.Sprint(v))
		default:
			setPath(body, strings.Split(k, "."), v)
		}
	}
	data, err := json.Marshal(unflatten(body))
	if err != nil {
		t.Fatal(err)
	}
	if service == "ssm" {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/", bytes.NewReader(data))
		req.Header.Set("X-Amz-Target", "AmazonSSM."+op)
		req.Header.Set("Content-Type", "application/x-amz-json-1.1")
		return req
	}
	table, _ := modelTable()
	method, path, _ := strings.Cut(table[service][op][0].HTTP, " ")
	path = regexp.MustCompile(`\{([^}+]+)\+?\}`).ReplaceAllStringFunc(path, func(m string) string {
		name := strings.Trim(m, "{}+")
		return url.PathEscape(cmp.Or(uri[name], "x"))
	})
	if q := query.Encode(); q != "" {
		path += "?" + q
	}
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	return req
}

func setPath(m map[string]any, parts []string, v any) {
	if len(parts) == 1 {
		m[parts[0]] = v
		return
	}
	next, ok := m[parts[0]].(map[string]any)
	if !ok {
		next = map[string]any{}
		m[parts[0]] = next
	}
	setPath(next, parts[1:], v)
}

// unflatten turns setPath's maps back into JSON: numbered members into
// lists, entry.N.key/value into maps, the empty markers into [] and {}.
func unflatten(v any) any {
	switch x := v.(type) {
	case emptyList:
		return []any{}
	case emptyMap:
		return map[string]any{}
	case map[string]any:
		if e, ok := x["entry"].(map[string]any); ok && len(x) == 1 {
			out := map[string]any{}
			for _, kv := range e {
				kv := kv.(map[string]any)
				out[fmt.Sprint(kv["key"])] = unflatten(kv["value"])
			}
			return out
		}
		if idx := numbered(x); idx != nil {
			out := make([]any, len(idx))
			for i, k := range idx {
				out[i] = unflatten(x[k])
			}
			return out
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = unflatten(e)
		}
		return out
	}
	return v
}

// numbered are m's keys in order when all are list indexes, nil if not.
func numbered(m map[string]any) []string {
	var keys []string
	for k := range m {
		if _, err := strconv.Atoi(k); err != nil {
			return nil
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return keys
}

// fillSiblings gives the members required beside path and its parents
// (and what they require in turn) valid values, so that the refusal is
// path's alone: EC2 names only the first parameter missing. The table
// lists a structure before its members.
func fillSiblings(leaves map[string]any, rules []*tableRule, path string) {
	present := map[string]bool{"": true}
	for p := parentOf(path); p != ""; p = parentOf(p) {
		present[p] = true
	}
	for _, r := range rules {
		p := strings.ReplaceAll(r.Path, "#", "1")
		if !r.Required || p == path || strings.HasPrefix(p, path+".") || !present[parentOf(p)] {
			continue
		}
		present[p] = true
		if v, ok := validValue(r); ok {
			leaves[p] = v
		}
	}
}

// validValue is a value r takes, for its scalars.
func validValue(r *tableRule) (any, bool) {
	switch r.Type {
	case "integer", "long":
		n := int64(1)
		if r.Min != nil {
			n = *r.Min
		}
		return json.Number(strconv.FormatInt(n, 10)), true
	case "string":
		if len(r.Enum) > 0 {
			return r.Enum[0], true
		}
		n := int64(1)
		if r.Min != nil {
			n = max(n, *r.Min)
		}
		for _, c := range []string{"a", "A", "1", "a-1"} {
			if v := strings.Repeat(c, int(n)); r.value(v) == "" {
				return v, true
			}
		}
	}
	return nil, false
}
