// Package output prints tables the way kubectl does, and typed values as
// JSON or YAML, and decides when colour is allowed.
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
	"sigs.k8s.io/yaml"
)

// Formats accepted by -o.
const (
	FormatTable = ""
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// ValidateFormat checks an -o value.
func ValidateFormat(f string) error {
	switch f {
	case FormatTable, FormatJSON, FormatYAML:
		return nil
	}
	return fmt.Errorf("invalid --output %q: must be json or yaml", f)
}

// Print writes v as JSON or YAML.
func Print(w io.Writer, format string, v any) error {
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case FormatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unsupported output format %q", format)
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
