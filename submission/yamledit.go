package submission

// The editing of a template's bytes: only the values build sets change,
// located through yaml.v3's node positions, so that every other byte of
// the template (ids, descriptions, levels, comments, order, line endings)
// stays as the program's validator compares it.

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// yamlQuote is s as a YAML double-quoted scalar on one line.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0xFEFF || r == 0x2028 || r == 0x2029 || (r >= 0x80 && r < 0xA0) || !unicode.IsPrint(r):
			if r <= 0xFFFF {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				fmt.Fprintf(&b, `\U%08X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// yamlFlowList is a flow sequence of double-quoted strings.
func yamlFlowList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = yamlQuote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// mapPair returns the key and value nodes of key in a mapping node.
func mapPair(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j], m.Content[j+1]
		}
	}
	return nil, nil
}

// yamlEditor changes the values of a YAML file in place, by byte spans
// found from yaml.v3's node positions, so that everything else stays
// exactly as written. yaml.v3 gives where a node starts (line, and column
// in characters) but not where it ends; the end is found by scanning the
// source for the node's style.
type yamlEditor struct {
	data []byte
	// lines holds the offset of each line's first byte.
	lines []int
	// order is every node in document order; after[n] is the index in
	// order just past n's subtree.
	order []*yaml.Node
	after map[*yaml.Node]int
	nl    string
	edits []edit
}

type edit struct {
	from, to int
	text     string
}

type field struct{ key, value string }

func newYAMLEditor(data []byte, doc *yaml.Node) *yamlEditor {
	e := &yamlEditor{data: data, lines: []int{0}, after: map[*yaml.Node]int{}, nl: "\n"}
	for i, b := range data {
		if b == '\n' {
			e.lines = append(e.lines, i+1)
		}
	}
	if bytes.Contains(data, []byte("\r\n")) {
		e.nl = "\r\n"
	}
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		e.order = append(e.order, n)
		for _, c := range n.Content {
			walk(c)
		}
		e.after[n] = len(e.order)
	}
	for _, c := range doc.Content {
		walk(c)
	}
	return e
}

// setFields replaces the value of each key the mapping has and adds the
// others after its last entry.
func (e *yamlEditor) setFields(m *yaml.Node, fields []field) error {
	var add []string
	for _, f := range fields {
		k, v := mapPair(m, f.key)
		if k == nil {
			add = append(add, f.key+": "+f.value)
			continue
		}
		if err := e.replace(k, v, f.value); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return e.insertAfter(m, add)
}

// replace swaps the value of a mapping entry, from just after its colon to
// the end of the value, for " " + text; a comment after the value stays.
func (e *yamlEditor) replace(key, value *yaml.Node, text string) error {
	from, err := e.afterColon(key)
	if err != nil {
		return err
	}
	to := from
	if !emptyNull(value) {
		if to, err = e.end(value); err != nil {
			return err
		}
	}
	if to < from {
		return fmt.Errorf("line %d: the value ends before it starts", value.Line)
	}
	e.edits = append(e.edits, edit{from, to, " " + text})
	return nil
}

// insertAfter adds lines to a block mapping after the line its last value
// ends on, indented as its keys.
func (e *yamlEditor) insertAfter(m *yaml.Node, lines []string) error {
	if m.Style&yaml.FlowStyle != 0 || len(m.Content) < 2 {
		return fmt.Errorf("line %d: keys can only be added to a block mapping", m.Line)
	}
	lastKey, lastValue := m.Content[len(m.Content)-2], m.Content[len(m.Content)-1]
	end, err := e.afterColon(lastKey)
	if err != nil {
		return err
	}
	if !emptyNull(lastValue) {
		if end, err = e.end(lastValue); err != nil {
			return err
		}
	}
	indent := strings.Repeat(" ", m.Content[0].Column-1)
	var b strings.Builder
	if nl := bytes.IndexByte(e.data[end:], '\n'); nl >= 0 {
		for _, l := range lines {
			b.WriteString(indent + l + e.nl)
		}
		pos := end + nl + 1
		e.edits = append(e.edits, edit{pos, pos, b.String()})
		return nil
	}
	// The last line has no line break: add ours before each new line,
	// and none after, as the file had.
	for _, l := range lines {
		b.WriteString(e.nl + indent + l)
	}
	e.edits = append(e.edits, edit{len(e.data), len(e.data), b.String()})
	return nil
}

func (e *yamlEditor) apply() ([]byte, error) {
	sort.SliceStable(e.edits, func(i, j int) bool { return e.edits[i].from < e.edits[j].from })
	var out bytes.Buffer
	pos := 0
	for _, ed := range e.edits {
		if ed.from < pos {
			return nil, fmt.Errorf("overlapping edits at byte %d", ed.from)
		}
		out.Write(e.data[pos:ed.from])
		out.WriteString(ed.text)
		pos = ed.to
	}
	out.Write(e.data[pos:])
	return out.Bytes(), nil
}

// emptyNull is a value written as nothing at all (`notes:`).
func emptyNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" && n.Style&yaml.TaggedStyle == 0
}

// offset is the byte offset of a node position: line and column are
// 1-based, the column counted in characters.
func (e *yamlEditor) offset(line, col int) (int, error) {
	if line < 1 || line > len(e.lines) {
		return 0, fmt.Errorf("line %d is outside the file", line)
	}
	off := e.lines[line-1]
	for i := 1; i < col; i++ {
		if off >= len(e.data) || e.data[off] == '\n' {
			return 0, fmt.Errorf("line %d has no column %d", line, col)
		}
		_, size := utf8.DecodeRune(e.data[off:])
		off += size
	}
	return off, nil
}

func (e *yamlEditor) start(n *yaml.Node) (int, error) { return e.offset(n.Line, n.Column) }

// limit is where the next node outside n starts: the start of its line
// when it is on a later line, as in block context it always is.
func (e *yamlEditor) limit(n *yaml.Node) (int, error) {
	next := e.after[n]
	if next >= len(e.order) {
		return len(e.data), nil
	}
	m := e.order[next]
	if m.Line > n.Line {
		return e.lines[m.Line-1], nil
	}
	return e.start(m)
}

// afterColon is the offset just past the ':' that follows a key.
func (e *yamlEditor) afterColon(key *yaml.Node) (int, error) {
	off, err := e.start(key)
	if err != nil {
		return 0, err
	}
	d := e.data
	switch {
	case off < len(d) && d[off] == '"':
		off, err = e.scanDouble(off)
	case off < len(d) && d[off] == '\'':
		off, err = e.scanSingle(off)
	default:
		// A plain key ends at the first ':' followed by a blank.
		for off < len(d) && d[off] != '\n' && !(d[off] == ':' && (off+1 == len(d) || isBlank(d[off+1]))) {
			off++
		}
	}
	if err != nil {
		return 0, err
	}
	for off < len(d) && (d[off] == ' ' || d[off] == '\t') {
		off++
	}
	if off >= len(d) || d[off] != ':' {
		return 0, fmt.Errorf("line %d: no ':' after the key %q", key.Line, key.Value)
	}
	return off + 1, nil
}

// end is the offset just past the text of a value node.
func (e *yamlEditor) end(n *yaml.Node) (int, error) {
	start, err := e.start(n)
	if err != nil {
		return 0, err
	}
	lim, err := e.limit(n)
	if err != nil {
		return 0, err
	}
	start = e.skipProperties(start)
	switch {
	case n.Kind == yaml.AliasNode:
		i := start + 1
		for i < len(e.data) && !isBlank(e.data[i]) && !strings.ContainsRune(",[]{}", rune(e.data[i])) {
			i++
		}
		return i, nil
	case n.Kind == yaml.ScalarNode && n.Style&yaml.DoubleQuotedStyle != 0:
		return e.scanDouble(start)
	case n.Kind == yaml.ScalarNode && n.Style&yaml.SingleQuotedStyle != 0:
		return e.scanSingle(start)
	case n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return e.trimTail(start, lim, true), nil
	case n.Kind == yaml.ScalarNode:
		return e.trimTail(start, lim, false), nil
	case n.Style&yaml.FlowStyle != 0:
		return e.scanFlow(start)
	case len(n.Content) == 0:
		return 0, fmt.Errorf("line %d: an empty block collection", n.Line)
	case n.Kind == yaml.MappingNode && emptyNull(n.Content[len(n.Content)-1]):
		return e.afterColon(n.Content[len(n.Content)-2])
	default:
		// A block collection ends where its last child does.
		return e.end(n.Content[len(n.Content)-1])
	}
}

// skipProperties steps over a node's tag and anchor.
func (e *yamlEditor) skipProperties(off int) int {
	d := e.data
	for off < len(d) && (d[off] == '!' || d[off] == '&') {
		for off < len(d) && !isBlank(d[off]) {
			off++
		}
		for off < len(d) && isBlank(d[off]) {
			off++
		}
	}
	return off
}

// trimTail finds the end of a plain or block scalar starting at start,
// given where the next node starts: trailing blank and comment lines are
// not part of it, nor is a comment after a plain scalar on its last line.
// A block scalar's content is more indented than the line it starts on,
// so only a comment line indented no deeper ends it.
func (e *yamlEditor) trimTail(start, lim int, block bool) int {
	d := e.data
	indent := 0
	if block {
		ls := bytes.LastIndexByte(d[:start], '\n') + 1
		for ls+indent < len(d) && d[ls+indent] == ' ' {
			indent++
		}
	}
	end := lim
	for end > start {
		lineEnd := end
		if d[lineEnd-1] == '\n' {
			lineEnd--
		}
		lineStart := start
		if i := bytes.LastIndexByte(d[start:lineEnd], '\n'); i >= 0 {
			lineStart = start + i + 1
		}
		text := d[lineStart:lineEnd]
		body := bytes.TrimLeft(text, " \t")
		depth := len(text) - len(body)
		first := lineStart == start
		blank := len(bytes.TrimRight(body, " \t\r")) == 0
		comment := !first && len(body) > 0 && body[0] == '#' && (!block || depth <= indent)
		if !first && (blank || comment) {
			end = lineStart
			continue
		}
		if !block {
			if i := commentStart(text); i >= 0 {
				lineEnd = lineStart + i
			}
		}
		for lineEnd > lineStart && (d[lineEnd-1] == ' ' || d[lineEnd-1] == '\t' || d[lineEnd-1] == '\r') {
			lineEnd--
		}
		return lineEnd
	}
	return start
}

// commentStart is where a " #" comment starts in a line of a plain scalar.
func commentStart(line []byte) int {
	for i := 1; i < len(line); i++ {
		if line[i] == '#' && (line[i-1] == ' ' || line[i-1] == '\t') {
			return i
		}
	}
	return -1
}

func (e *yamlEditor) scanDouble(i int) (int, error) {
	d := e.data
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("byte %d: unterminated double-quoted string", i)
}

func (e *yamlEditor) scanSingle(i int) (int, error) {
	d := e.data
	for j := i + 1; j < len(d); j++ {
		if d[j] != '\'' {
			continue
		}
		if j+1 < len(d) && d[j+1] == '\'' {
			j++
			continue
		}
		return j + 1, nil
	}
	return 0, fmt.Errorf("byte %d: unterminated single-quoted string", i)
}

// scanFlow finds the end of a flow collection, stepping over quoted
// strings and comments.
func (e *yamlEditor) scanFlow(i int) (int, error) {
	d := e.data
	depth := 0
	for j := i; j < len(d); j++ {
		prevBlank := j == i || isBlank(d[j-1]) || strings.ContainsRune("[{,:", rune(d[j-1]))
		switch c := d[j]; {
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		case c == '"' && prevBlank:
			end, err := e.scanDouble(j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case c == '\'' && prevBlank:
			end, err := e.scanSingle(j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case c == '#' && j > i && isBlank(d[j-1]):
			for j < len(d) && d[j] != '\n' {
				j++
			}
		}
	}
	return 0, fmt.Errorf("byte %d: unterminated flow collection", i)
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
