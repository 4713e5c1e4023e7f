package report

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"
)

//go:embed html.tmpl
var htmlSource string

// htmlTemplate is parsed on first use rather than at start-up, so that a
// mistake in it is an error of HTML, not a panic of every command.
var htmlTemplate = sync.OnceValues(func() (*template.Template, error) {
	return template.New("report.html").Parse(htmlSource)
})

// HTML writes report.html: the report as one page a browser opens offline,
// with no file beside it and nothing fetched (inline CSS, inline SVG, no
// script). It shows the verdict and the run first, then a matrix of each
// requirement's checks by operator, then one section per requirement whose
// checks fold open to their reason, details and evidence blocks, the same
// blocks as report.md, and a timeline of each probe that timed its steps.
// Everything comes from r, which html/template escapes, so evidence that
// holds markup is shown as text.
func HTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("html: no report")
	}
	t, err := htmlTemplate()
	if err != nil {
		return fmt.Errorf("html: template: %w", err)
	}
	// Rendered whole first, so that a failure half way never leaves a
	// truncated page that looks complete.
	var buf bytes.Buffer
	if err := t.Execute(&buf, newPage(r)); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// page is what the template shows: the report, already put into words, so
// that the template only lays it out.
type page struct {
	Title    string
	Notice   []part
	Passed   bool
	Headline string
	Why      string
	Meta     []field
	// ReqCounts and CheckCounts are the summary's counts in report order.
	ReqCounts   []count
	CheckCounts []count
	Absent      []string
	Columns     []matrixColumn
	Matrix      []matrixGroup
	// MatrixSpan is how many columns a requirement without a shown check
	// spans: the check's and every target's.
	MatrixSpan int
	Operators  []operatorRow
	// NotInstalled are the operator profiles looked for and not found.
	NotInstalled []part
	Sections     []section
}

// part is a piece of a sentence; Code parts are names shown verbatim.
type part struct {
	Text string
	Code bool
}

func prose(s string) part { return part{Text: s} }
func mono(s string) part  { return part{Text: s, Code: true} }

// field is one line of the run's metadata.
type field struct {
	Label string
	Parts []part
}

// matrixColumn is a column of the matrix: the cluster as a whole (Name "") or
// one operator.
type matrixColumn struct {
	Name  string
	Title string
}

// matrixGroup is a requirement's rows of the matrix, one per check id.
type matrixGroup struct {
	Req  *section
	Rows []matrixRow
}

type matrixRow struct {
	Check string
	Cells [][]mark
}

// mark is one check result in the matrix, linking to its section.
type mark struct {
	Status, Class, Symbol, Href string
}

type operatorRow struct {
	Name []part
	CRDs []string
	// Controller is where its controller was found, and FoundBy how.
	Controller string
	FoundBy    []string
	Versions   []string
}

// section is one requirement.
type section struct {
	ID, Anchor, Title, Category, Level, Program string
	Status, Result, Class, Symbol, Conclusion   string
	CarriedBy                                   []part
	Verdicts                                    []verdictRow
	// NotInstalled are the operators of Verdicts' requirement the cluster
	// does not have, named in a line, not a row each.
	NotInstalled []part
	Checks       []checkView
}

type verdictRow struct {
	Operator                      []part
	Result, Class, Symbol, Reason string
}

type checkView struct {
	Anchor, ID, Operator, Title         string
	Status, Class, Symbol, Reason, Took string
	Remediation                         []part
	Details                             []detail
	Table                               *Table
	Timeline                            *timeline
	Evidence                            []evidenceView
}

// detail is one finding; Block is a multi-line one (a stack), kept in a
// <pre> since joining its lines would make it unreadable.
type detail struct {
	Text  string
	Block bool
}

// evidenceView is one numbered block, split where report.md's text is, so
// that the page can set the command and capture line apart while its text
// stays the block's text byte for byte.
type evidenceView struct {
	N                         int
	Anchor                    string
	Command, Output, Captured string
	Note                      string
}

func newPage(r *Report) *page {
	v := verdict(r)
	headline, why, _ := strings.Cut(v, ": ")
	p := &page{
		Title:       "aiconform conformance report: " + headline + " (" + subject(r) + ")",
		Passed:      r.Summary.Passed,
		Headline:    headline,
		Why:         why,
		Meta:        metaFields(r),
		ReqCounts:   tally(r.Summary.Requirements, statusOrder),
		CheckCounts: tally(r.Summary.Checks, resultOrder),
		Absent:      r.absent(),
	}
	if info := r.Run.Cluster; !info.Live {
		// Said before anything else, as in report.md: evidence replayed
		// from a recording must never be mistaken for an observation.
		p.Notice = append([]part{prose("This report was produced from ")}, recordingParts(info.Source, info.RecordedAt)...)
		p.Notice = append(p.Notice, prose(", not from a live cluster. Its evidence shows what the recording holds."))
	}
	ids := newAnchors("verdict", "run", "matrix", "operators", "requirements")
	for _, req := range r.Requirements {
		p.Sections = append(p.Sections, newSection(r, req, ids))
	}
	for _, op := range r.Operators {
		if !op.Detected {
			if len(p.NotInstalled) > 0 {
				p.NotInstalled = append(p.NotInstalled, prose(", "))
			}
			p.NotInstalled = append(p.NotInstalled, operatorParts(r, op.Name)...)
			continue
		}
		p.Operators = append(p.Operators, operatorRow{Name: operatorParts(r, op.Name), CRDs: op.CRDs, Controller: op.Controller, FoundBy: op.FoundBy, Versions: op.Versions})
	}
	p.Columns, p.Matrix = matrix(r, p.Sections)
	p.MatrixSpan = len(p.Columns) + 1
	return p
}

// subject names the cluster in the page's title, so that tabs of several
// reports can be told apart.
func subject(r *Report) string {
	info := r.Run.Cluster
	for _, s := range []string{info.Context, info.Source, info.ClusterID} {
		if s != "" {
			return s
		}
	}
	return "unknown cluster"
}

// metaFields are report.md's header lines, as label and value.
func metaFields(r *Report) []field {
	info := r.Run.Cluster
	orUnknownCode := func(s string) []part {
		if s == "" {
			return []part{prose("unknown")}
		}
		return []part{mono(s)}
	}
	var f []field
	add := func(label string, parts ...part) { f = append(f, field{label, parts}) }
	add("Tool", prose(orUnknown(strings.TrimSpace(r.Tool.Name+" "+r.Tool.Version))))
	if r.Tool.CatalogDigest != "" {
		add("Checks catalog", mono(r.Tool.CatalogDigest))
	}
	add("Kubernetes", prose(orUnknown(info.ServerVersion)))
	if info.ClusterID != "" {
		add("Cluster ID", mono(info.ClusterID), prose(" (UID of namespace kube-system)"))
	} else {
		add("Cluster ID", prose("unknown"))
	}
	add("Context", orUnknownCode(info.Context)...)
	add("Server", orUnknownCode(info.Server)...)
	if info.Live {
		add("Source", prose("live cluster"))
	} else {
		add("Source", append(recordingParts(info.Source, info.RecordedAt), prose(" (a recording, not a live cluster)"))...)
	}
	if pr := r.Run.Probe; pr != nil {
		add("Probes", prose("on: run "), mono(pr.RunID), prose(" wrote in namespace "), mono(pr.Namespace),
			prose(", labelled "), mono("aiconform.io/run="+pr.RunID), prose(", and deleted it at the end"))
	} else {
		add("Probes", prose("off: the run only read the cluster"))
	}
	if r.Run.Redacted {
		add("Redacted", prose("node names, addresses, hosts and cloud account ids are keyed pseudonyms; commands naming them will not run as printed"))
	}
	add("Started", prose(stamp(r.Run.StartedAt)))
	finished := stamp(r.Run.FinishedAt)
	if !r.Run.StartedAt.IsZero() && !r.Run.FinishedAt.IsZero() {
		finished += fmt.Sprintf(" (took %s)", r.Run.FinishedAt.Sub(r.Run.StartedAt).Round(time.Millisecond))
	}
	add("Finished", prose(finished))
	if r.Digest != "" {
		add("Digest", mono(r.Digest), prose(" (SHA-256 of the report's compact JSON with the digest field empty)"))
	} else {
		add("Digest", prose("none (the report was not sealed)"))
	}
	return f
}

// recordingParts names where a recording came from and when it was made,
// as recording does for report.md.
func recordingParts(source string, at time.Time) []part {
	parts := []part{prose("a recording")}
	if source != "" {
		parts = []part{prose("fixture "), mono(source)}
	}
	if at.IsZero() {
		return append(parts, prose(" recorded at an unknown time"))
	}
	return append(parts, prose(" recorded at "+stamp(at)))
}

// operatorParts is an operator's title with its profile name, which is what
// --operator and the JSON use.
func operatorParts(r *Report, name string) []part {
	for _, op := range r.Operators {
		if op.Name == name && op.Title != "" && op.Title != name {
			return []part{prose(op.Title + " ("), mono(name), prose(")")}
		}
	}
	return []part{mono(name)}
}

func newSection(r *Report, req Requirement, ids anchors) section {
	s := section{
		ID: req.ID, Anchor: ids.unique(anchor(req.ID)), Title: req.Title,
		Category: orUnknown(req.Category), Level: orUnknown(req.Level), Program: orUnknown(req.Program),
		Status: req.Status, Result: req.Result, Class: statusClass(req.Result), Symbol: statusSymbol(req.Result),
		Conclusion: orUnknown(req.Conclusion),
	}
	if req.Operator != "" {
		s.CarriedBy = operatorParts(r, req.Operator)
	}
	for _, ov := range req.Operators {
		if !r.installed(ov.Operator) {
			if len(s.NotInstalled) > 0 {
				s.NotInstalled = append(s.NotInstalled, prose(", "))
			}
			s.NotInstalled = append(s.NotInstalled, operatorParts(r, ov.Operator)...)
			continue
		}
		s.Verdicts = append(s.Verdicts, verdictRow{
			Operator: operatorParts(r, ov.Operator), Result: ov.Result,
			Class: statusClass(ov.Result), Symbol: statusSymbol(ov.Result), Reason: ov.Reason,
		})
	}
	// Numbering runs across the requirement, as in report.md, so that
	// "evidence 4" means the same block in both.
	n := 0
	for _, c := range req.Checks {
		if !r.shown(c) {
			continue
		}
		s.Checks = append(s.Checks, newCheck(r, c, s.Anchor, ids, n+1))
		n += len(c.Evidence)
	}
	return s
}

// newCheck is one check; first is the number of its first evidence block.
func newCheck(r *Report, c Check, reqAnchor string, ids anchors, first int) checkView {
	a := reqAnchor + "--" + anchor(c.ID)
	if c.Operator != "" {
		a += "--" + anchor(c.Operator)
	}
	v := checkView{
		Anchor: ids.unique(a), ID: c.ID, Operator: c.Operator, Title: c.Title,
		Status: c.Status, Class: statusClass(c.Status), Symbol: statusSymbol(c.Status), Reason: c.Reason,
		Remediation: codeSpans(c.Remediation), Table: paddedTable(c.Table), Timeline: drawTimeline(probeSteps(r, c, first)),
	}
	if took := c.FinishedAt.Sub(c.StartedAt).Round(time.Millisecond); !c.StartedAt.IsZero() && took > 0 {
		v.Took = took.String()
	}
	for _, d := range c.Details {
		v.Details = append(v.Details, detail{Text: d, Block: strings.ContainsAny(d, "\r\n")})
	}
	for i, e := range c.Evidence {
		command, output, captured := evidenceLines(e)
		v.Evidence = append(v.Evidence, evidenceView{
			N: first + i, Anchor: ids.unique(fmt.Sprintf("%s--evidence-%d", reqAnchor, first+i)), Command: command, Output: output, Captured: captured, Note: e.Note})
	}
	return v
}

// paddedTable gives every row the header's width, as report.md does, since
// a ragged table misaligns its columns.
func paddedTable(t *Table) *Table {
	if t == nil {
		return nil
	}
	width := len(t.Header)
	for _, row := range t.Rows {
		width = max(width, len(row))
	}
	pad := func(cells []string) []string {
		out := make([]string, width)
		copy(out, cells)
		return out
	}
	out := &Table{Header: pad(t.Header)}
	for _, row := range t.Rows {
		out.Rows = append(out.Rows, pad(row))
	}
	return out
}

// matrix lays the shown checks out as requirement × check rows and one
// column per target: the cluster as a whole for checks of no operator, then
// each operator in report order. A per-operator check thus reads across
// one row, operator by operator.
func matrix(r *Report, sections []section) ([]matrixColumn, []matrixGroup) {
	var targets []matrixColumn
	index := map[string]int{}
	addTarget := func(name string) {
		if _, ok := index[name]; ok {
			return
		}
		index[name] = len(targets)
		t := matrixColumn{Name: name, Title: "checks of the cluster as a whole"}
		if name != "" {
			t.Title = name
			for _, op := range r.Operators {
				if op.Name == name && op.Title != "" {
					t.Title = op.Title
				}
			}
		}
		targets = append(targets, t)
	}
	// Cluster first, then operators in report order; a check naming an
	// operator the report does not list still gets a column, last.
	for _, s := range sections {
		for _, c := range s.Checks {
			if c.Operator == "" {
				addTarget("")
			}
		}
	}
	for _, op := range r.Operators {
		for _, s := range sections {
			for _, c := range s.Checks {
				if c.Operator == op.Name {
					addTarget(op.Name)
				}
			}
		}
	}
	for _, s := range sections {
		for _, c := range s.Checks {
			addTarget(c.Operator)
		}
	}

	groups := make([]matrixGroup, len(sections))
	for i := range sections {
		s := &sections[i]
		g := matrixGroup{Req: s}
		row := map[string]int{}
		for _, c := range s.Checks {
			j, ok := row[c.ID]
			if !ok {
				j = len(g.Rows)
				row[c.ID] = j
				g.Rows = append(g.Rows, matrixRow{Check: c.ID, Cells: make([][]mark, len(targets))})
			}
			cell := &g.Rows[j].Cells[index[c.Operator]]
			*cell = append(*cell, mark{Status: c.Status, Class: c.Class, Symbol: c.Symbol, Href: "#" + c.Anchor})
		}
		groups[i] = g
	}
	return targets, groups
}

// statusClass is the CSS class that colours a check status or result. The
// page never relies on colour alone: each coloured cell says its status.
func statusClass(status string) string {
	switch status {
	case "pass", "warn", "fail", "error", "skip":
		return "st-" + status
	}
	return "st-unknown"
}

// statusSymbol repeats a status as a shape, for a reader who cannot tell
// the colours apart.
func statusSymbol(status string) string {
	switch status {
	case "pass":
		return "✓"
	case "warn":
		return "!"
	case "fail":
		return "✗"
	case "error":
		return "⚠"
	case "skip":
		return "–"
	}
	return "?"
}

// anchors hands out element ids once each: two checks with the same id and
// operator, or a requirement named like a fixed section, must still each
// have a target of their own.
type anchors map[string]bool

func newAnchors(fixed ...string) anchors {
	a := anchors{}
	for _, id := range fixed {
		a[id] = true
	}
	return a
}

func (a anchors) unique(id string) string {
	if id == "" {
		id = "section"
	}
	out := id
	for n := 2; a[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	a[out] = true
	return out
}
