// Package output prints tables the way kubectl does, typed values in the
// formats of kubectl's -o (json, yaml, name, jsonpath, go-template), and
// decides when colour is allowed.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Formats accepted by -o. The template formats take their template after
// "=", as kubectl's do: -o jsonpath='{.nodeGroup}'.
const (
	FormatTable = ""
	FormatWide  = "wide" // the table with more columns; commands print it themselves
	FormatJSON  = "json"
	FormatYAML  = "yaml"
	FormatName  = "name"

	FormatJSONPath       = "jsonpath"
	FormatJSONPathFile   = "jsonpath-file"
	FormatGoTemplate     = "go-template"
	FormatGoTemplateFile = "go-template-file"
)

// templateFormats are the formats that take a template, and whether the
// template is read from a file.
var templateFormats = []struct {
	name     string
	jsonPath bool
	file     bool
}{
	{FormatJSONPath, true, false},
	{FormatJSONPathFile, true, true},
	{FormatGoTemplate, false, false},
	{FormatGoTemplateFile, false, true},
	// kubectl's older spellings of go-template.
	{"template", false, false},
	{"templatefile", false, true},
}

// Formats lists the -o values of a command that prints values through
// Print, and with wide those of one that also prints a wide table: for
// help texts and shell completion.
func Formats(wide bool) []string {
	f := []string{FormatJSON, FormatYAML, FormatName, FormatJSONPath + "=", FormatJSONPathFile + "=", FormatGoTemplate + "=", FormatGoTemplateFile + "="}
	if wide {
		f = append([]string{FormatWide}, f...)
	}
	return f
}

func formatList(wide bool) string {
	f := Formats(wide)
	for i := range f {
		if strings.HasSuffix(f[i], "=") {
			f[i] += "..."
		}
	}
	return strings.Join(f, ", ")
}

// ValidateFormat checks an -o value of a command whose only table is its
// default: "" (the table), json, yaml, name, jsonpath=..., jsonpath-file=...,
// go-template=... or go-template-file=.... A template that does not parse,
// or a template file that cannot be read, is refused here, before any work.
func ValidateFormat(f string) error {
	if f == FormatTable {
		return nil
	}
	if _, err := valuePrinter(f); err != nil {
		return err
	}
	return nil
}

// ValidateTableFormat is ValidateFormat for a command that also prints a
// wide table (-o wide).
func ValidateTableFormat(f string) error {
	if f == FormatWide {
		return nil
	}
	if !knownFormat(f) {
		return fmt.Errorf("invalid --output %q: must be one of %s", f, formatList(true))
	}
	return ValidateFormat(f)
}

func knownFormat(f string) bool {
	name, _, _ := strings.Cut(f, "=")
	switch name {
	case FormatTable, FormatJSON, FormatYAML, FormatName:
		return !strings.Contains(f, "=")
	}
	for _, tf := range templateFormats {
		if name == tf.name {
			return true
		}
	}
	return false
}

// IsTable reports whether f asks for a table: the default or wide.
func IsTable(f string) bool { return f == FormatTable || f == FormatWide }

// ResourceRef is one line of -o name: kind and name, printed the way
// kubectl does (node/NAME, nodegroup.nodeupgrade.dev/NAME).
type ResourceRef struct {
	APIVersion string // empty for the core group
	Kind       string
	Name       string
}

// Named is implemented by values -o name can print.
type Named interface {
	ResourceRefs() []ResourceRef
}

// printer prints one value in one -o format.
type printer func(w io.Writer, v any) error

// valuePrinter resolves a non-table -o value to its printer.
func valuePrinter(f string) (printer, error) {
	switch f {
	case FormatJSON:
		return printJSON, nil
	case FormatYAML:
		return printYAML, nil
	case FormatName:
		return printNames, nil
	}
	name, tmpl, hasTemplate := strings.Cut(f, "=")
	for _, tf := range templateFormats {
		if name != tf.name {
			continue
		}
		if !hasTemplate || tmpl == "" {
			return nil, fmt.Errorf("invalid --output %q: give the template after %q, e.g. -o %s='{.kind}'", f, name+"=", name)
		}
		if tf.file {
			b, err := os.ReadFile(tmpl)
			if err != nil {
				return nil, fmt.Errorf("invalid --output %q: cannot read the template file: %v", f, err)
			}
			tmpl = string(b)
		}
		var p printers.ResourcePrinter
		if tf.jsonPath {
			jp, err := printers.NewJSONPathPrinter(tmpl)
			if err != nil {
				return nil, fmt.Errorf("invalid --output %q: the jsonpath does not parse: %v", f, err)
			}
			jp.AllowMissingKeys(true) // kubectl's default
			p = jp
		} else {
			gp, err := printers.NewGoTemplatePrinter([]byte(tmpl))
			if err != nil {
				return nil, fmt.Errorf("invalid --output %q: the template does not parse: %v", f, firstLine(err.Error()))
			}
			gp.AllowMissingKeys(true)
			p = gp
		}
		return func(w io.Writer, v any) error { return printTemplate(w, p, v) }, nil
	}
	return nil, fmt.Errorf("invalid --output %q: must be one of %s", f, formatList(false))
}

// Print writes v in format f (any format but the tables).
func Print(w io.Writer, f string, v any) error {
	if IsTable(f) {
		return fmt.Errorf("cannot print a value as a table with -o %q", f)
	}
	p, err := valuePrinter(f)
	if err != nil {
		return err
	}
	return p(w, v)
}

// printJSON writes what json.MarshalIndent makes and a newline. It
// indents through json.Indent, which sizes its output once: an Encoder
// with SetIndent grows its output a quarter at a time, 48 MB of copies for
// the 9 MB of a 5,000-node plan.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

func printYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// printNames prints kubectl's -o name lines through cli-runtime's
// NamePrinter, from what v says it names.
func printNames(w io.Writer, v any) error {
	named, ok := v.(Named)
	if !ok {
		return fmt.Errorf("cannot print -o name: %T names no objects; use -o json or -o yaml, or a jsonpath or go-template", v)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, r := range named.ResourceRefs() {
		u := unstructured.Unstructured{}
		u.SetAPIVersion(r.APIVersion)
		if r.APIVersion == "" {
			u.SetAPIVersion("v1")
		}
		u.SetKind(r.Kind)
		u.SetName(r.Name)
		list.Items = append(list.Items, u)
	}
	return (&printers.NamePrinter{}).PrintObj(list, w)
}

// printTemplate runs a jsonpath or go-template printer on v's JSON form,
// as kubectl does for objects. The output is buffered: on an error the
// printers write debugging text that must not reach stdout, and the error
// is cut to its first line.
func printTemplate(w io.Writer, p printers.ResourcePrinter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	content := map[string]any{}
	if err := json.Unmarshal(b, &content); err != nil {
		return fmt.Errorf("cannot apply a template to %T: it is not an object", v)
	}
	var buf bytes.Buffer
	if err := p.PrintObj(&unstructured.Unstructured{Object: content}, &buf); err != nil {
		return fmt.Errorf("cannot print the template: %s", firstLine(err.Error()))
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSuffix(strings.TrimSpace(s), ".")
}

// OneLine makes s fit one table cell: line breaks and runs of spaces become
// one space, and beyond max runes it is cut with "...". max <= 0 keeps the
// length.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); max > 0 && len(r) > max {
		return string(r[:max-3]) + "..."
	}
	return s
}

// Table is a borderless, left-aligned table like kubectl get prints.
type Table struct {
	w     io.Writer
	buf   bytes.Buffer
	table *tablewriter.Table
}

// NewTable starts a table written to w on Render.
func NewTable(w io.Writer, header ...any) *Table {
	t := &Table{w: w}
	t.table = tablewriter.NewTable(&t.buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Right: "   ", Overwrite: true}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoFormat(tw.On),
	)
	t.table.Header(header...)
	return t
}

// Append adds a row.
func (t *Table) Append(cells ...any) error { return t.table.Append(cells...) }

// Render writes the table without trailing blanks.
func (t *Table) Render() error {
	if err := t.table.Render(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(t.w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// ColorEnabled: colour only on a terminal, never with NO_COLOR set.
func ColorEnabled(w any) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return IsTerminal(w)
}

// Colorizer wraps text in ANSI colours when enabled.
type Colorizer bool

func (c Colorizer) wrap(code, s string) string {
	if !c {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Red, Yellow and Green colour s when enabled.
func (c Colorizer) Red(s string) string    { return c.wrap("31", s) }
func (c Colorizer) Yellow(s string) string { return c.wrap("33", s) }
func (c Colorizer) Green(s string) string  { return c.wrap("32", s) }

// OrNone shows an empty value as kubectl does.
func OrNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
