package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The documentation whose examples run on the demo: the README and every
// page under docs/, relative to the repository's root.
const (
	docsReadme = "README.md"
	docsDir    = "docs"
)

// docExampleEnv is what the docs' examples may take from the shell: the
// walkthrough of docs/providers/aws.md sets them, the test gives the demo's.
var docExampleEnv = []string{"ng=demo", "ami=ami-new"}

// docExample is a `kubectl nodeupgrade` example of the documentation.
type docExample struct {
	where  string // file:line of its block
	script string // a block that is more than such lines, run whole; "" runs the line
}

// docExamples reads the examples of the README and docs/ under root. A
// fenced block tagged sh, bash or shell that holds only `kubectl
// nodeupgrade` commands (comments and blank lines aside, "\" continuing a
// line) gives one example per command, keyed by the command on one line.
// A block with other commands besides is one script, keyed by its first
// line, which must be a comment naming it. An untagged block may not hold
// a `kubectl nodeupgrade` line: it would be neither run nor marked output.
func docExamples(root string) (map[string]docExample, error) {
	files := []string{docsReadme}
	err := filepath.WalkDir(filepath.Join(root, docsDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]docExample{}
	for _, f := range files {
		blocks, err := readShellBlocks(root, f)
		if err != nil {
			return nil, err
		}
		for _, b := range blocks {
			if err := b.addTo(out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// shellBlock is a fenced code block of a Markdown file, without the fence
// lines and the fence's indentation.
type shellBlock struct {
	where string
	lang  string
	lines []string
}

// readShellBlocks returns the fenced blocks of file that are tagged as
// shell, and refuses an untagged block with a `kubectl nodeupgrade` line.
func readShellBlocks(root, file string) ([]shellBlock, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var blocks []shellBlock
	var cur *shellBlock
	indent := ""
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			cur = &shellBlock{where: fmt.Sprintf("%s:%d", file, n), lang: strings.TrimPrefix(trimmed, "```")}
		case cur != nil && trimmed == "```":
			if cur.lang == "" && cur.hasCommand() {
				return nil, fmt.Errorf("%s: an untagged block shows a kubectl nodeupgrade command: tag it sh (an example the e2e test runs) or text (output)", cur.where)
			}
			if cur.lang == "sh" || cur.lang == "bash" || cur.lang == "shell" {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimPrefix(line, indent))
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the block is not closed", cur.where)
	}
	return blocks, sc.Err()
}

// commands are the block's shell commands, continuation lines joined,
// without blank lines and comments.
func (b shellBlock) commands() []string {
	var out []string
	joined := ""
	for _, l := range b.lines {
		l = strings.TrimSpace(l)
		if cont, ok := strings.CutSuffix(l, "\\"); ok {
			joined += strings.TrimSpace(cont) + " "
			continue
		}
		l, joined = joined+l, ""
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func isExampleCommand(cmd string) bool { return strings.HasPrefix(cmd, "kubectl nodeupgrade ") }

func (b shellBlock) hasCommand() bool {
	for _, c := range b.commands() {
		if isExampleCommand(c) {
			return true
		}
	}
	return false
}

// addTo adds the block's examples to out.
func (b shellBlock) addTo(out map[string]docExample) error {
	cmds := b.commands()
	other := 0
	for _, c := range cmds {
		if !isExampleCommand(c) {
			other++
		}
	}
	switch {
	case other == len(cmds): // no example: setup for the reader, e.g. exports
		return nil
	case other == 0:
		for _, c := range cmds {
			if _, ok := out[c]; !ok {
				out[c] = docExample{where: b.where}
			}
		}
		return nil
	}
	name := strings.TrimSpace(b.lines[0])
	if !strings.HasPrefix(name, "#") {
		return fmt.Errorf("%s: a block with commands besides kubectl nodeupgrade runs whole, and its first line must be a comment naming it", b.where)
	}
	script := strings.Join(b.lines, "\n")
	if prev, ok := out[name]; ok && prev.script != script {
		return fmt.Errorf("%s: another script, at %s, is named %q", b.where, prev.where, name)
	}
	out[name] = docExample{where: b.where, script: script}
	return nil
}
