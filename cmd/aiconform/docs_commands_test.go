package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestDocsCommandsParse reads every aiconform command line in the code
// blocks of the README and docs/ (the CI recipes' included) and parses it
// with the real command tree: a renamed or removed flag or subcommand fails
// here, not in a reader's pipeline. Commands are parsed, not run.
func TestDocsCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../../README.md")
	seen := 0
	for _, file := range files {
		for _, c := range docCommands(t, file) {
			seen++
			root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard(), fixedClock)
			cmd, rest, err := root.Find(c.args)
			if !assert.NoError(t, err, "%s:%d: %s", file, c.line, c.text) {
				continue
			}
			assert.NotEqual(t, root, cmd, "%s:%d: no subcommand: %s", file, c.line, c.text)
			assert.NoError(t, cmd.ParseFlags(rest), "%s:%d: %s", file, c.line, c.text)
		}
	}
	t.Logf("%d commands parsed", seen)
	assert.GreaterOrEqual(t, seen, 30, "the docs' commands were found")
}

type docCommand struct {
	line int
	text string
	args []string
}

// docCommands finds the aiconform invocations in a Markdown file's fenced
// code blocks: a word naming the binary (aiconform, bin/aiconform,
// "$RUNNER_TEMP/aiconform", kubectl aiconform, go run ./cmd/aiconform)
// where a command starts, and
// its words up to the next shell operator or comment.
func docCommands(t *testing.T, file string) []docCommand {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []docCommand
	inFence, commands := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			if inFence {
				inFence, commands = false, false
			} else {
				// A text block shows output, which may say
				// "aiconform" in a sentence.
				inFence, commands = true, fence != "text"
			}
			continue
		}
		if !commands {
			continue
		}
		words := shellWords(line)
		start := true
		for i := 0; i < len(words); i++ {
			w := words[i]
			switch w {
			case "|", "||", "&&", ";", "(", "$", "-", "run:":
				start = true
				continue
			}
			if strings.HasPrefix(w, "#") {
				break
			}
			isBinary := (filepath.Base(w) == "aiconform" || filepath.Base(w) == pluginName) && !strings.HasPrefix(w, "./")
			switch {
			case start && w == "kubectl" && i+1 < len(words) && words[i+1] == "aiconform":
				i, isBinary = i+1, true
			case start && w == "go" && i+2 < len(words) && words[i+1] == "run" && words[i+2] == "./cmd/aiconform":
				i, isBinary = i+2, true
			}
			if !start || !isBinary {
				start = false
				continue
			}
			var args []string
			for i++; i < len(words); i++ {
				a := words[i]
				if a == "|" || a == "||" || a == "&&" || a == ";" || a == ")" || strings.HasPrefix(a, "#") {
					break
				}
				args = append(args, a)
			}
			if len(args) > 0 {
				out = append(out, docCommand{line: n, text: strings.TrimSpace(line), args: args})
			}
			start = true
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// shellWords splits a line as a shell would, enough for the docs: quotes
// group, operators stand alone.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	runes := []rune(line)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '|' || r == '&' || r == ';' || r == '(' || r == ')':
			flush()
			op := string(r)
			if i+1 < len(runes) && (r == '|' || r == '&') && runes[i+1] == r {
				op += string(r)
				i++
			}
			words = append(words, op)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return words
}
