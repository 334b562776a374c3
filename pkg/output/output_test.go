package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type group struct {
	Kind  string   `json:"kind"`
	Name  string   `json:"name"`
	Nodes []string `json:"nodes"`
}

func (g group) ResourceRefs() []ResourceRef {
	refs := []ResourceRef{{APIVersion: "nodeupgrade.dev/v1alpha1", Kind: "NodeGroup", Name: g.Name}}
	for _, n := range g.Nodes {
		refs = append(refs, ResourceRef{Kind: "Node", Name: n})
	}
	return refs
}

type unnamed struct {
	Name string `json:"name"`
}

func TestPrint(t *testing.T) {
	dir := t.TempDir()
	jsonPathFile := filepath.Join(dir, "q.jsonpath")
	templateFile := filepath.Join(dir, "q.tmpl")
	if err := os.WriteFile(jsonPathFile, []byte(`{.nodes[1]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(templateFile, []byte(`{{range .nodes}}{{.}};{{end}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := group{Kind: "Group", Name: "workers", Nodes: []string{"n1", "n2"}}
	tests := []struct {
		format string
		v      any
		want   string
	}{
		{"json", g, "{\n  \"kind\": \"Group\",\n  \"name\": \"workers\",\n  \"nodes\": [\n    \"n1\",\n    \"n2\"\n  ]\n}\n"},
		{"yaml", g, "kind: Group\nname: workers\nnodes:\n- n1\n- n2\n"},
		{"name", g, "nodegroup.nodeupgrade.dev/workers\nnode/n1\nnode/n2\n"},
		{"jsonpath={.name}", g, "workers"},
		{"jsonpath={range .nodes[*]}{@}{\"\\n\"}{end}", g, "n1\nn2\n"},
		{"jsonpath={.missing}", g, ""},
		{"jsonpath-file=" + jsonPathFile, g, "n2"},
		{"go-template={{.name}} has {{len .nodes}}", g, "workers has 2"},
		{"template={{.kind}}", g, "Group"},
		{"go-template-file=" + templateFile, g, "n1;n2;"},
		{"go-template={{.name}}", &unnamed{Name: "p"}, "p"},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			if err := ValidateFormat(tc.format); err != nil {
				t.Fatalf("ValidateFormat: %v", err)
			}
			var buf bytes.Buffer
			if err := Print(&buf, tc.format, tc.v); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("got %q, want %q", buf.String(), tc.want)
			}
		})
	}
}

func TestFormatErrors(t *testing.T) {
	tests := []struct {
		name     string
		validate func(string) error
		format   string
		want     string
	}{
		{"unknown", ValidateFormat, "xml", `invalid --output "xml": must be one of json, yaml, name, jsonpath=...`},
		{"wide is a table", ValidateFormat, "wide", `invalid --output "wide"`},
		{"unknown, with wide", ValidateTableFormat, "xml", "must be one of wide, json"},
		{"json takes no template", ValidateFormat, "json={.a}", `invalid --output "json={.a}"`},
		{"jsonpath without template", ValidateFormat, "jsonpath", `give the template after "jsonpath="`},
		{"empty jsonpath", ValidateTableFormat, "jsonpath=", `give the template after "jsonpath="`},
		{"jsonpath does not parse", ValidateTableFormat, "jsonpath={.items[", "the jsonpath does not parse"},
		{"template does not parse", ValidateFormat, "go-template={{.name", "the template does not parse"},
		{"missing template file", ValidateFormat, "go-template-file=/nonexistent/t", "cannot read the template file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.validate(tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	for _, f := range []string{"", "wide"} {
		if err := ValidateTableFormat(f); err != nil || !IsTable(f) {
			t.Errorf("%q: %v", f, err)
		}
	}
}

func TestPrintErrorsWriteNothing(t *testing.T) {
	tests := []struct {
		name   string
		format string
		v      any
		want   string
	}{
		{"name of an unnamed value", "name", unnamed{Name: "p"}, "cannot print -o name"},
		{"template on a list", "jsonpath={.a}", []string{"a"}, "not an object"},
		{"template fails", "go-template={{index .nodes 5}}", group{Nodes: []string{"n1"}}, "cannot print the template"},
		{"table", "", group{}, "table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Print(&buf, tc.format, tc.v)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line with %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q before failing", buf.String())
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"two\nlines  and\ttabs", 0, "two lines and tabs"},
		{strings.Repeat("x", 20), 10, "xxxxxxx..."},
		{"ünïcödé ünïcödé", 10, "ünïcödé..."},
	}
	for _, tc := range tests {
		if got := OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestPrintJSONIsMarshalIndent(t *testing.T) {
	type inner struct {
		Empty []string          `json:"empty"`
		None  map[string]string `json:"none"`
		Nil   *inner            `json:"nil"`
	}
	for name, v := range map[string]any{
		"struct":           group{Kind: "Group", Name: "a<b>&c \u2028 é", Nodes: []string{}},
		"empty containers": inner{Empty: []string{}, None: map[string]string{}},
		"nested":           map[string]any{"a": []any{map[string]any{}, []any{}, 1.5, nil, "x"}},
		"scalar":           "just a string",
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := Print(&got, "json", v); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want)+"\n" {
				t.Errorf("got\n%s\nwant\n%s", got.String(), want)
			}
		})
	}
}

// BenchmarkPrintJSON prints a value the size of a 5,000-node plan's node
// list; its B/op is what -o json costs beyond the plan itself.
func BenchmarkPrintJSON(b *testing.B) {
	nodes := make([]group, 5000)
	for i := range nodes {
		nodes[i] = group{Kind: "Node", Name: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250), Nodes: []string{"batch-1", "zone-a", "ami-0123456789abcdef0"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Print(io.Discard, "json", nodes); err != nil {
			b.Fatal(err)
		}
	}
}
