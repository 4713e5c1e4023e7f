package redact

import (
	"strings"
	"unicode/utf8"
)

// kubectl prints a table with text/tabwriter: each column as wide as its
// widest cell plus this padding, the last one unpadded.
const columnPadding = 3

// table is one kubectl table of an evidence output: a header line and rows,
// every column starting at the same rune offset in each line.
type table struct {
	starts []int
	header []string
	rows   [][]string
}

// tablesIn returns the tables of an output: its blocks of lines between
// empty lines that read as tables.
func tablesIn(output string) []table {
	var out []table
	lines := strings.Split(output, "\n")
	for _, b := range blocks(lines) {
		if t, ok := parseTable(lines[b[0]:b[1]]); ok {
			out = append(out, t)
		}
	}
	return out
}

// blocks are the [start, end) line ranges of the runs of non-empty lines.
func blocks(lines []string) [][2]int {
	var out [][2]int
	start := -1
	for i, l := range append(lines, "") {
		switch {
		case l != "" && start < 0:
			start = i
		case l == "" && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	return out
}

// parseTable reads lines as a table when they are one: a header of at least
// two columns, each after two spaces or more (a header may hold one space:
// NOMINATED NODE), and rows with at least two spaces before every column
// start. The output of `| grep` (rows of different tables, no header) is not.
func parseTable(lines []string) (table, bool) {
	if len(lines) < 2 {
		return table{}, false
	}
	header := []rune(lines[0])
	var starts []int
	for i, r := range header {
		if r != ' ' && (i == 0 || i >= 2 && header[i-1] == ' ' && header[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	if len(starts) < 2 || starts[0] != 0 {
		return table{}, false
	}
	t := table{starts: starts, header: cells([]rune(lines[0]), starts)}
	for _, l := range lines[1:] {
		row := []rune(l)
		for _, c := range starts[1:] {
			if len(row) > c-1 && (row[c-1] != ' ' || row[c-2] != ' ') {
				return table{}, false
			}
		}
		t.rows = append(t.rows, cells(row, starts))
	}
	return t, true
}

// cells splits a line at the column starts; trailing spaces are padding.
func cells(row []rune, starts []int) []string {
	out := make([]string, len(starts))
	for i, s := range starts {
		if s >= len(row) {
			break
		}
		end := len(row)
		if i+1 < len(starts) {
			end = min(end, starts[i+1])
		}
		out[i] = strings.TrimRight(string(row[s:end]), " ")
	}
	return out
}

// output redacts an evidence output. Tables whose cells change are laid out
// again: a column keeps its width, or widens when a pseudonym is longer than
// what it replaced, so that the columns still line up. Other text is
// replaced as is, and may shift.
func (rp *replacer) output(s string) string {
	lines := strings.Split(s, "\n")
	for _, b := range blocks(lines) {
		block := lines[b[0]:b[1]]
		t, ok := parseTable(block)
		if !ok {
			for i := range block {
				block[i] = rp.replace(block[i])
			}
			continue
		}
		if out, changed := t.redact(rp); changed {
			copy(block, out)
		}
	}
	return strings.Join(lines, "\n")
}

// redact returns the table's lines with their cells redacted, or false when
// no cell changed.
func (t table) redact(rp *replacer) ([]string, bool) {
	rows := append([][]string{t.header}, t.rows...)
	changed := false
	redacted := make([][]string, len(rows))
	for i, row := range rows {
		redacted[i] = make([]string, len(row))
		for j, c := range row {
			redacted[i][j] = rp.replace(c)
			changed = changed || redacted[i][j] != c
		}
	}
	if !changed {
		return nil, false
	}
	last := len(t.starts) - 1
	widths := make([]int, last)
	for j := range widths {
		widths[j] = t.starts[j+1] - t.starts[j]
		for _, row := range redacted {
			widths[j] = max(widths[j], utf8.RuneCountInString(row[j])+columnPadding)
		}
	}
	out := make([]string, len(redacted))
	for i, row := range redacted {
		var b strings.Builder
		for j, c := range row {
			b.WriteString(c)
			if j < last {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c)))
			}
		}
		out[i] = b.String()
	}
	return out, true
}
