// Package discovery checks requests against a Google API's discovery
// document, the published model its Go client is generated from: the
// fakes of sim/ refuse what the document refuses, as the service would
// (400 INVALID_ARGUMENT). Every rule cites the document's own field:
// a request body's field must be a property of its schema ("properties"),
// of the property's "type" and, for a string, one of its "enum" values and
// matching its "pattern"; a query parameter must be one of the method's
// "parameters" or the document's global ones, matching its "enum" and
// "pattern", and a "required" query parameter must be given. A body field
// whose "annotations" list the method under "required" must be given, and
// a path parameter must match its "pattern". Patterns match whole values
// (Google's patterns are unanchored full matches, as the names of
// compute/v1 show: "[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?" with "The name must
// be 1-63 characters long"); compute/v1 states some in a field's
// description after "@pattern" (InstanceGroupManager.baseInstanceName:
// "The maximum character length is 58"), read as the field's pattern.
// Stated maximum lengths are held by these patterns: the documents carry
// no maxLength of their own.
package discovery

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// containerDoc is google.golang.org/api's container/v1/container-api.json
// (v0.312.0, the version sim/go.mod requires), copied: the module cache is
// read-only and its path varies.
//
//go:embed container-api.json
var containerDoc []byte

// Schema is a discovery document's JSON schema, as far as it is checked.
type Schema struct {
	Ref         string `json:"$ref"`
	Description string `json:"description"`
	// Annotations.Required are the methods that require the field.
	Annotations struct {
		Required []string `json:"required"`
	} `json:"annotations"`
	Type       string             `json:"type"`
	Format     string             `json:"format"`
	Enum       []string           `json:"enum"`
	Pattern    string             `json:"pattern"`
	Location   string             `json:"location"`
	Required   bool               `json:"required"`
	Repeated   bool               `json:"repeated"`
	Properties map[string]*Schema `json:"properties"`
	Items      *Schema            `json:"items"`
	Additional *Schema            `json:"additionalProperties"`
}

// Method is one API method.
type Method struct {
	ID         string             `json:"id"`
	Path       string             `json:"path"`
	Parameters map[string]*Schema `json:"parameters"`
	Request    *Schema            `json:"request"`
}

type resource struct {
	Methods   map[string]*Method   `json:"methods"`
	Resources map[string]*resource `json:"resources"`
}

// Doc is a loaded discovery document.
type Doc struct {
	Name       string             `json:"name"`
	Parameters map[string]*Schema `json:"parameters"`
	Schemas    map[string]*Schema `json:"schemas"`
	Resources  map[string]*resource
	methods    map[string]*Method
	// patterns are the schemas' patterns, compiled when first used
	// (compute/v1 has thousands) and kept.
	patterns map[*Schema]string
	mu       sync.Mutex
	compiled map[*Schema]*regexp.Regexp
}

// Error is a request the document refuses, in the words of Google's
// answers: Reason is the word of the error's "errors" item ("invalid", or
// "required" for a required field not given), Message the sentence.
type Error struct{ Reason, Message string }

func (e *Error) Error() string { return e.Message }

func invalidf(format string, args ...any) error {
	return &Error{Reason: "invalid", Message: fmt.Sprintf(format, args...)}
}

// Container is the container/v1 document.
func Container() (*Doc, error) { return Load(containerDoc) }

// Load reads a discovery document.
func Load(data []byte) (*Doc, error) {
	var d Doc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("cannot read the discovery document: %w", err)
	}
	d.methods = map[string]*Method{}
	d.patterns, d.compiled = map[*Schema]string{}, map[*Schema]*regexp.Regexp{}
	var walk func(map[string]*resource)
	walk = func(rs map[string]*resource) {
		for _, r := range rs {
			for _, m := range r.Methods {
				d.methods[m.ID] = m
				for _, p := range m.Parameters {
					d.prepare(p)
				}
			}
			walk(r.Resources)
		}
	}
	walk(d.Resources)
	for _, p := range d.Parameters {
		d.prepare(p)
	}
	for _, sc := range d.Schemas {
		d.prepare(sc)
	}
	return &d, nil
}

// prepare notes the patterns of s and the schemas within it, taking a
// pattern stated in a description after "@pattern" where there is no
// "pattern"; a description's pattern is Markdown, its backslashes doubled.
func (d *Doc) prepare(s *Schema) {
	if s == nil {
		return
	}
	p := s.Pattern
	if _, after, ok := strings.Cut(s.Description, "\n@pattern\n"); ok && p == "" {
		p, _, _ = strings.Cut(strings.ReplaceAll(after, `\\`, `\`), "\n")
	}
	if p != "" {
		d.patterns[s] = p
	}
	for _, c := range s.Properties {
		d.prepare(c)
	}
	d.prepare(s.Items)
	d.prepare(s.Additional)
}

// Check checks a call of the method with its query and body; the error
// (an *Error when the document refuses the call) says what is refused.
func (d *Doc) Check(methodID string, query url.Values, body []byte) error {
	m := d.methods[methodID]
	if m == nil {
		return fmt.Errorf("method %q is not in the %s discovery document", methodID, d.Name)
	}
	if err := d.checkQuery(m, query); err != nil {
		return err
	}
	if m.Request == nil {
		return nil
	}
	var v any = map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return invalidf("Invalid JSON payload received. %v", err)
		}
	}
	return (&checker{d, methodID}).value(m.Request, v, "")
}

// CheckPath checks the path parameters of a call of the method: path is
// the request's path after the document's servicePath, laid out as the
// method's "path" is.
func (d *Doc) CheckPath(methodID, path string) error {
	m := d.methods[methodID]
	if m == nil {
		return fmt.Errorf("method %q is not in the %s discovery document", methodID, d.Name)
	}
	want, got := strings.Split(m.Path, "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(want) != len(got) {
		return fmt.Errorf("path %q is not of method %q (%s)", path, methodID, m.Path)
	}
	for i, w := range want {
		name, ok := strings.CutPrefix(w, "{")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, "}")
		if p := m.Parameters[name]; p != nil {
			if err := d.checkString(p, got[i], name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *Doc) checkQuery(m *Method, q url.Values) error {
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p := m.Parameters[k]
		if p == nil || p.Location == "path" {
			p = d.Parameters[k]
		}
		if p == nil {
			return invalidf("Invalid JSON payload received. Unknown name %q: Cannot bind query parameter. Field %q could not be found in request message.", k, k)
		}
		for _, v := range q[k] {
			if err := d.checkString(p, v, k); err != nil {
				return err
			}
		}
	}
	for k, p := range m.Parameters {
		if p.Location == "query" && p.Required && q.Get(k) == "" {
			return &Error{Reason: "required", Message: fmt.Sprintf("Required query parameter %q is missing.", k)}
		}
	}
	return nil
}

func (d *Doc) resolve(s *Schema) *Schema {
	for s != nil && s.Ref != "" {
		s = d.Schemas[s.Ref]
	}
	return s
}

// checker checks a request body of one method, whose ID the fields'
// "required" annotations name.
type checker struct {
	d      *Doc
	method string
}

// value checks a JSON value against its schema; null stands for the
// field's default (proto3 JSON mapping), so it passes.
func (c *checker) value(s *Schema, v any, at string) error {
	s = c.d.resolve(s)
	if s == nil || v == nil {
		return nil
	}
	switch s.Type {
	case "object":
		return c.object(s, v, at)
	case "array":
		list, ok := v.([]any)
		if !ok {
			return invalidValue(at, v, "a list")
		}
		for i, x := range list {
			if err := c.value(s.Items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return invalidValue(at, v, "a string")
		}
		return c.d.checkString(s, str, at)
	case "boolean":
		if _, ok := v.(bool); !ok {
			return invalidValue(at, v, "a boolean")
		}
	case "integer", "number":
		return checkNumber(s, v, at)
	}
	return nil
}

func (c *checker) object(s *Schema, v any, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return invalidValue(at, v, "an object")
	}
	keys := slices.Sorted(maps.Keys(obj))
	for _, k := range keys {
		p := s.Properties[k]
		if p == nil {
			p = s.Additional
		}
		if p == nil {
			return invalidf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, strings.TrimPrefix(at, "."))
		}
		if err := c.value(p, obj[k], at+"."+k); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if slices.Contains(s.Properties[k].Annotations.Required, c.method) && obj[k] == nil {
			return &Error{Reason: "required", Message: fmt.Sprintf("Required field '%s' not specified", strings.TrimPrefix(at+"."+k, "."))}
		}
	}
	return nil
}

// checkNumber takes a JSON number, or the string int64 and uint64
// formats are sent as ("format": "int64").
func checkNumber(s *Schema, v any, at string) error {
	switch x := v.(type) {
	case json.Number:
		return nil
	case string:
		if strings.HasSuffix(s.Format, "64") {
			if _, err := json.Number(x).Int64(); err == nil {
				return nil
			}
		}
	}
	return invalidValue(at, v, "a number")
}

func (d *Doc) checkString(s *Schema, v, at string) error {
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		return invalidf("Invalid value at '%s' (%s), %q", strings.TrimPrefix(at, "."), "enum", v)
	}
	if re := d.pattern(s); re != nil && !re.MatchString(v) {
		return invalidf("Invalid value at '%s': %q does not match %s", strings.TrimPrefix(at, "."), v, d.patterns[s])
	}
	return nil
}

// pattern is s's pattern as a whole-value match, nil if it has none (or
// none RE2 compiles).
func (d *Doc) pattern(s *Schema) *regexp.Regexp {
	p, ok := d.patterns[s]
	if !ok {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	re, ok := d.compiled[s]
	if !ok {
		re, _ = regexp.Compile("^(?:" + p + ")$")
		d.compiled[s] = re
	}
	return re
}

func invalidValue(at string, v any, want string) error {
	return invalidf("Invalid value at '%s' (%T), want %s", strings.TrimPrefix(at, "."), v, want)
}
