// Package discovery checks requests against a Google API's discovery
// document, the published model its Go client is generated from: the
// fakes of sim/ refuse what the document refuses, as the service would
// (400 INVALID_ARGUMENT). Every rule cites the document's own field:
// a request body's field must be a property of its schema ("properties"),
// of the property's "type" and, for a string, one of its "enum" values and
// matching its "pattern"; a query parameter must be one of the method's
// "parameters" or the document's global ones, matching its "enum" and
// "pattern", and a "required" query parameter must be given.
package discovery

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// containerDoc is google.golang.org/api's container/v1/container-api.json
// (v0.312.0, the version sim/go.mod requires), copied: the module cache is
// read-only and its path varies.
//
//go:embed container-api.json
var containerDoc []byte

// Schema is a discovery document's JSON schema, as far as it is checked.
type Schema struct {
	Ref        string             `json:"$ref"`
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
	var walk func(map[string]*resource)
	walk = func(rs map[string]*resource) {
		for _, r := range rs {
			for _, m := range r.Methods {
				d.methods[m.ID] = m
			}
			walk(r.Resources)
		}
	}
	walk(d.Resources)
	return &d, nil
}

// Check checks a call of the method with its query and body; the error
// says what the document refuses, in the words of Google's answers.
func (d *Doc) Check(methodID string, query url.Values, body []byte) error {
	m := d.methods[methodID]
	if m == nil {
		return fmt.Errorf("method %q is not in the %s discovery document", methodID, d.Name)
	}
	if err := d.checkQuery(m, query); err != nil {
		return err
	}
	if m.Request == nil || len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	return d.checkValue(m.Request, v, "")
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
			return fmt.Errorf("Invalid JSON payload received. Unknown name %q: Cannot bind query parameter. Field %q could not be found in request message.", k, k)
		}
		for _, v := range q[k] {
			if err := d.checkString(p, v, k); err != nil {
				return err
			}
		}
	}
	for k, p := range m.Parameters {
		if p.Location == "query" && p.Required && q.Get(k) == "" {
			return fmt.Errorf("Required query parameter %q is missing.", k)
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

// checkValue checks a JSON value against its schema; null stands for the
// field's default (proto3 JSON mapping), so it passes.
func (d *Doc) checkValue(s *Schema, v any, at string) error {
	s = d.resolve(s)
	if s == nil || v == nil {
		return nil
	}
	switch s.Type {
	case "object":
		return d.checkObject(s, v, at)
	case "array":
		list, ok := v.([]any)
		if !ok {
			return invalidValue(at, v, "a list")
		}
		for i, x := range list {
			if err := d.checkValue(s.Items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return invalidValue(at, v, "a string")
		}
		return d.checkString(s, str, at)
	case "boolean":
		if _, ok := v.(bool); !ok {
			return invalidValue(at, v, "a boolean")
		}
	case "integer", "number":
		return checkNumber(s, v, at)
	}
	return nil
}

func (d *Doc) checkObject(s *Schema, v any, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return invalidValue(at, v, "an object")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := s.Properties[k]
		if p == nil {
			p = s.Additional
		}
		if p == nil {
			return fmt.Errorf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, strings.TrimPrefix(at, "."))
		}
		if err := d.checkValue(p, obj[k], at+"."+k); err != nil {
			return err
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
		return fmt.Errorf("Invalid value at '%s' (%s), %q", strings.TrimPrefix(at, "."), "enum", v)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err == nil && !re.MatchString(v) {
			return fmt.Errorf("Invalid value at '%s': %q does not match %s", strings.TrimPrefix(at, "."), v, s.Pattern)
		}
	}
	return nil
}

func invalidValue(at string, v any, want string) error {
	return fmt.Errorf("Invalid value at '%s' (%T), want %s", strings.TrimPrefix(at, "."), v, want)
}
