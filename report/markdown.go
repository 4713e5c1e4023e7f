package report

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aiconform/aiconform/checks"
)

// Markdown writes report.md, the evidence document an auditor attaches to a
// submission. Per requirement it gives the verdict, then each check with its
// reason and numbered evidence blocks (the kubectl command, exactly what it
// printed, and when), then a one-line conclusion. Everything in it comes
// from r, so it can be regenerated from report.json at any time.
func Markdown(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("markdown: no report")
	}
	m := &md{w: w, r: r}
	m.header()
	m.summary()
	m.operators()
	for _, req := range r.Requirements {
		m.requirement(req)
	}
	return m.err
}

// md writes Markdown and keeps the first write error, so the rendering code
// reads top to bottom without an error check per line.
type md struct {
	w   io.Writer
	r   *Report
	err error
}

func (m *md) printf(format string, args ...any) {
	if m.err != nil {
		return
	}
	_, m.err = fmt.Fprintf(m.w, format, args...)
}

func (m *md) header() {
	r := m.r
	info := r.Run.Cluster
	m.printf("# aiconform conformance report\n\n")
	if !info.Live {
		// Said before anything else: evidence replayed from a recording
		// must never be mistaken for a live observation.
		m.printf("> **Recorded, not live.** This report was produced from %s, not from a live "+
			"cluster. Its evidence shows what the recording holds.\n\n", recording(info.Source, info.RecordedAt))
	}
	m.printf("- **Tool:** %s\n", inline(strings.TrimSpace(r.Tool.Name+" "+r.Tool.Version)))
	if r.Tool.CatalogDigest != "" {
		m.printf("- **Checks catalog:** `%s`\n", r.Tool.CatalogDigest)
	}
	m.printf("- **Kubernetes:** %s\n", orUnknown(inline(info.ServerVersion)))
	clusterID := "unknown"
	if info.ClusterID != "" {
		clusterID = code(info.ClusterID) + " (UID of namespace kube-system)"
	}
	m.printf("- **Cluster ID:** %s\n", clusterID)
	m.printf("- **Context:** %s\n", orUnknown(code(info.Context)))
	m.printf("- **Server:** %s\n", orUnknown(code(info.Server)))
	if info.Live {
		m.printf("- **Source:** live cluster\n")
	} else {
		m.printf("- **Source:** %s (a recording, not a live cluster)\n", recording(info.Source, info.RecordedAt))
	}
	if p := r.Run.Probe; p != nil {
		m.printf("- **Probes:** on: run %s wrote in namespace %s, labelled "+
			"`aiconform.io/run=%s`, and deleted it at the end\n", code(p.RunID), code(p.Namespace), p.RunID)
	} else {
		m.printf("- **Probes:** off: the run only read the cluster\n")
	}
	if r.Run.Redacted {
		m.printf("- **Redacted:** node names, addresses, hosts and cloud account ids are keyed pseudonyms; commands naming them will not run as printed\n")
	}
	m.printf("- **Started:** %s\n", stamp(r.Run.StartedAt))
	finished := stamp(r.Run.FinishedAt)
	if !r.Run.StartedAt.IsZero() && !r.Run.FinishedAt.IsZero() {
		finished += fmt.Sprintf(" (took %s)", r.Run.FinishedAt.Sub(r.Run.StartedAt).Round(time.Millisecond))
	}
	m.printf("- **Finished:** %s\n", finished)
	m.printf("- **Verdict:** %s\n", inline(verdict(r)))
	digest := "none (the report was not sealed)"
	if r.Digest != "" {
		digest = code(r.Digest) + " (SHA-256 of the report's compact JSON with the digest field empty)"
	}
	m.printf("- **Digest:** %s\n\n", digest)
}

// recording names where a recording came from and when it was made.
func recording(source string, at time.Time) string {
	s := "a recording"
	if source != "" {
		s = "fixture " + code(source)
	}
	if at.IsZero() {
		return s + " recorded at an unknown time"
	}
	return s + " recorded at " + stamp(at)
}

func (m *md) summary() {
	r := m.r
	m.printf("## Summary\n\n")
	if len(r.Requirements) == 0 {
		m.printf("No requirement was judged.\n\n")
		return
	}
	m.table([]string{"Requirement", "Title", "Level", "Status", "Result"}, nil, func(row func(...string)) {
		for _, req := range r.Requirements {
			row(fmt.Sprintf("[%s](#%s)", inline(req.ID), anchor(req.ID)), inline(req.Title), inline(req.Level),
				inline(req.Status), inline(req.Result))
		}
	})
	m.printf("Requirements: %s. Checks: %s.\n\n",
		counts(r.Summary.Requirements, statusOrder), counts(r.Summary.Checks, resultOrder))
}

// statusOrder and resultOrder are the order summaries list requirement
// statuses and check results in: best first, not-applicable last.
var (
	statusOrder = []string{
		string(checks.Implemented), string(checks.PartiallyImplemented),
		string(checks.NotImplemented), string(checks.NotApplicable),
	}
	resultOrder = []string{
		string(checks.Pass), string(checks.Warn), string(checks.Fail),
		string(checks.Error), string(checks.Skip),
	}
)

// counts lists a summary map in a fixed order, then any key it does not
// know in sorted order, so that the text never depends on map iteration.
func counts(c map[string]int, order []string) string {
	var parts []string
	for _, t := range tally(c, order) {
		parts = append(parts, fmt.Sprintf("%d %s", t.N, inline(t.Key)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// count is one entry of a summary map.
type count struct {
	Key string
	N   int
}

// tally is a summary map's non-zero entries in order, then those order does
// not know, sorted: the order every renderer lists counts in.
func tally(c map[string]int, order []string) []count {
	var out []count
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		if c[k] > 0 {
			out = append(out, count{k, c[k]})
		}
	}
	var rest []string
	for k := range c {
		if !seen[k] && c[k] > 0 {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, count{k, c[k]})
	}
	return out
}

func (m *md) operators() {
	m.printf("## Operators\n\n")
	if len(m.r.Operators) == 0 {
		m.printf("No operator profile was looked for.\n\n")
		return
	}
	m.printf("Operators are detected from the CRD groups the cluster serves, and their " +
		"controllers found in any namespace; versions are the controller's images.\n\n")
	if len(m.r.absent()) < len(m.r.Operators) {
		m.table([]string{"Operator", "CRDs", "Controller", "Versions"}, nil, func(row func(...string)) {
			for _, op := range m.r.Operators {
				if !op.Detected {
					continue
				}
				controller := "—"
				if op.Controller != "" {
					controller = "`" + op.Controller + "`, found by " + strings.Join(op.FoundBy, "; ")
				}
				row(m.operatorName(op.Name), codes(op.CRDs), controller, codes(op.Versions))
			}
		})
	}
	m.notInstalled("Looked for, not installed", m.r.absent())
}

// notInstalled names, in a line, the operator profiles the cluster does
// not have: with a catalog of many, a table row each would bury the
// installed ones.
func (m *md) notInstalled(label string, names []string) {
	if len(names) == 0 {
		return
	}
	titled := make([]string, len(names))
	for i, n := range names {
		titled[i] = m.operatorName(n)
	}
	m.printf("%s: %s.\n\n", label, strings.Join(titled, ", "))
}

// operatorName is an operator's title with its profile name, which is what
// --operator and the JSON use.
func (m *md) operatorName(name string) string {
	for _, op := range m.r.Operators {
		if op.Name == name && op.Title != "" && op.Title != name {
			return inline(op.Title) + " (" + code(name) + ")"
		}
	}
	return code(name)
}

func (m *md) requirement(req Requirement) {
	m.printf("## %s\n\n", inline(req.ID))
	if req.Title != "" {
		m.printf("**%s**\n\n", inline(req.Title))
	}
	m.printf("Category: %s · Level: %s · Program: %s\n\n",
		orUnknown(inline(req.Category)), orUnknown(inline(req.Level)), orUnknown(inline(req.Program)))
	m.printf("**Status: %s** (result: %s)\n\n", inline(req.Status), inline(req.Result))
	if req.Operator != "" {
		m.printf("Carried by: %s\n\n", m.operatorName(req.Operator))
	}
	var absent []string
	for _, ov := range req.Operators {
		if !m.r.installed(ov.Operator) {
			absent = append(absent, ov.Operator)
		}
	}
	if len(absent) < len(req.Operators) {
		m.printf("Per operator:\n\n")
		m.table([]string{"Operator", "Result", "Reason"}, nil, func(row func(...string)) {
			for _, ov := range req.Operators {
				if m.r.installed(ov.Operator) {
					row(m.operatorName(ov.Operator), inline(ov.Result), inline(ov.Reason))
				}
			}
		})
	}
	m.notInstalled("Not installed", absent)
	// Numbering runs across the whole requirement, as in a hand-made
	// submission, so that a conclusion can cite "block 4".
	n := 0
	for _, c := range req.Checks {
		if m.r.shown(c) {
			m.check(c, &n)
		}
	}
	m.printf("→ %s\n\n", orUnknown(inline(req.Conclusion)))
}

func (m *md) check(c Check, n *int) {
	if c.Operator != "" {
		m.printf("### %s (%s)\n\n", inline(c.ID), inline(c.Operator))
	} else {
		m.printf("### %s\n\n", inline(c.ID))
	}
	if c.Title != "" {
		m.printf("%s\n\n", inline(c.Title))
	}
	status := "**Status:** " + inline(c.Status)
	if c.Reason != "" {
		status += " — " + inline(c.Reason)
	}
	if took := c.FinishedAt.Sub(c.StartedAt).Round(time.Millisecond); !c.StartedAt.IsZero() && took > 0 {
		status += fmt.Sprintf(" (took %s)", took)
	}
	m.printf("%s\n\n", status)
	m.details(c.Details)
	if c.Remediation != "" {
		m.printf("**To fix:** %s\n\n", withCode(c.Remediation))
	}
	if c.Table != nil {
		m.printf("Computed by aiconform from the objects it read (a summary, not kubectl output):\n\n")
		header := make([]string, len(c.Table.Header))
		for i, h := range c.Table.Header {
			header[i] = inline(h)
		}
		m.table(header, c.Table.Rows, nil)
	}
	for _, e := range c.Evidence {
		*n++
		m.evidence(*n, e)
	}
}

// details lists one-line findings as bullets. A multi-line detail (a panic's
// stack) goes in a code block of its own, since joining its lines would make
// it unreadable.
func (m *md) details(details []string) {
	if len(details) == 0 {
		return
	}
	m.printf("Details:\n\n")
	inList := false
	for _, d := range details {
		if !strings.ContainsAny(d, "\r\n") {
			m.printf("- %s\n", inline(d))
			inList = true
			continue
		}
		if inList {
			m.printf("\n")
			inList = false
		}
		m.fenced("", d)
	}
	if inList {
		m.printf("\n")
	}
}

// evidence writes one numbered block: the command with a shell prompt, its
// output byte for byte, and the capture time, all inside one fence so that
// a reader can copy the block whole.
func (m *md) evidence(n int, e Evidence) {
	m.printf("**Evidence %d**\n\n", n)
	command, output, captured := evidenceLines(e)
	m.fenced("text", command+output+captured)
	if e.Note != "" {
		m.printf("Note: %s\n\n", inline(e.Note))
	}
}

// evidenceLines are the three parts of an evidence block, which joined
// make its text: the command with a shell prompt, the output byte for byte,
// and the capture line. Markdown and HTML both show a block as this text, so
// that the two files cannot disagree on what a command printed.
func evidenceLines(e Evidence) (command, output, captured string) {
	command = "$ " + e.Command + "\n"
	output = e.Output
	if !strings.HasSuffix(command+output, "\n") {
		// A newline added after the output, never inside it, so that the
		// capture line stands on its own.
		output += "\n"
	}
	return command, output, "# captured: " + stamp(e.CapturedAt) + "\n"
}

// fenced writes body in a code block whose fence is longer than any run of
// backticks in body, so that output containing ``` cannot close it early.
func (m *md) fenced(lang, body string) {
	fence := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	m.printf("%s%s\n%s%s\n\n", fence, lang, body, fence)
}

// table writes a Markdown table. Cells given through row must already be
// Markdown; raw rows (a check's computed Table) are escaped here. Pipes are
// escaped in every cell, code spans included, since GitHub splits a row on
// them before it reads spans. Rows shorter or longer than the header are
// padded, since a ragged Markdown table does not render.
func (m *md) table(header []string, raw [][]string, fill func(row func(...string))) {
	var rows [][]string
	for _, r := range raw {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = inline(c)
		}
		rows = append(rows, cells)
	}
	if fill != nil {
		fill(func(cells ...string) { rows = append(rows, cells) })
	}
	width := len(header)
	for _, r := range rows {
		width = max(width, len(r))
	}
	if width == 0 {
		return
	}
	line := func(cells []string) {
		padded := make([]string, width)
		for i, c := range cells {
			padded[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		m.printf("| %s |\n", strings.Join(padded, " | "))
	}
	line(header)
	sep := make([]string, width)
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
	m.printf("\n")
}

// stamp is a time as RFC 3339 in UTC, the form every timestamp of a report
// takes.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// anchor is the fragment GitHub and most renderers give a heading: lower
// case, spaces to hyphens, punctuation other than - and _ dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// inline makes text from the cluster or a check safe inside a Markdown
// paragraph: one line, with the characters that would start emphasis,
// a link, an HTML tag or a code span escaped. `<none>` in a reason must
// show, not vanish as an unknown tag.
// withCode is inline text of aiconform's own (a check's remediation) whose
// `code spans` stay code; the text between them is escaped as inline does.
func withCode(s string) string {
	var b strings.Builder
	for _, p := range codeSpans(s) {
		if p.Code {
			b.WriteString("`" + p.Text + "`")
		} else {
			b.WriteString(inline(p.Text))
		}
	}
	return b.String()
}

// codeSpans splits s at its backticks into text and code. An unbalanced
// backtick opens no span: then all of s is text.
func codeSpans(s string) []part {
	pieces := strings.Split(s, "`")
	if len(pieces)%2 == 0 {
		return []part{prose(s)}
	}
	var out []part
	for i, p := range pieces {
		if p != "" {
			out = append(out, part{Text: p, Code: i%2 == 1})
		}
	}
	return out
}

func inline(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	var b strings.Builder
	prev := rune(0)
	for i, r := range s {
		switch r {
		case '\\', '`', '*', '[', ']', '<':
			b.WriteByte('\\')
		case '_':
			// Inside a word (robust_controller) an underscore is literal;
			// only at a word's edge can it open or close emphasis.
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			if !(isWord(prev) && isWord(next)) {
				b.WriteByte('\\')
			}
		case '#', '>', '+', '-', '=':
			// At the start of a line these would make a heading, a quote
			// or a list.
			if i == 0 {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// code is s as a code span: names (CRDs, images, contexts) shown verbatim.
func code(s string) string {
	if s == "" {
		return ""
	}
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func codes(list []string) string {
	if len(list) == 0 {
		return "—"
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}

func longestRun(s string, c rune) int {
	best, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// MarkdownRequirement writes the section of one requirement under the
// report's header, as a document of its own: the evidence file a submission
// cites for that requirement (evidence/ID.md). The header travels with it so
// that the file alone says which run, cluster and digest its blocks come
// from, and whether they were observed live.
func MarkdownRequirement(w io.Writer, r *Report, id string) error {
	if r == nil {
		return errors.New("markdown: no report")
	}
	for _, req := range r.Requirements {
		if req.ID != id {
			continue
		}
		m := &md{w: w, r: r}
		m.header()
		m.requirement(req)
		return m.err
	}
	return fmt.Errorf("markdown: the report has no requirement %q", id)
}
