package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aiconform/aiconform/checks"
)

// JUnit writes junit.xml: one testsuite per requirement, one testcase per
// check result, and one more testcase per requirement, named after it, that
// carries the requirement's verdict.
//
// CI systems and the CNCF validator read nothing but testcase outcomes, so
// the verdict testcase is what makes a requirement that is not met fail the
// file even when every check of it was skipped (no operator installed), and
// it gives a PRODUCT.yaml a stable name to cite as
// file://junit.xml#robust_controller. Check testcases are named CHECKID, or
// CHECKID/OPERATOR for per-operator checks, so that
// file://junit.xml#crs-reconciled/kserve can be cited too.
//
// Check statuses map to testcase outcomes: pass is passed; warn is passed
// with the warning in system-out; fail is a failure and error an error, each
// with the reason as message and the details as body; skip is skipped. The
// evidence (the command, its output, the capture time) goes in system-out.
// Every time comes from r, so the output is a function of the report alone.
func JUnit(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("junit: no report")
	}
	doc := junitSuites{
		Name: "aiconform",
		Time: junitSeconds(r.Run.StartedAt, r.Run.FinishedAt),
	}
	run := runProperties(r)
	for _, req := range r.Requirements {
		s := suiteOf(req, run, r.Run.StartedAt)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	buf.WriteString("\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// The XML model. Field order is element order; attributes are explicit so
// that the file reads the same whatever the consumer.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut *junitText    `xml:"system-out"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",cdata"`
}

// junitText is written as CDATA rather than escaped text: encoding/xml
// escapes every newline of escaped text as &#xA;, which would put a whole
// kubectl table on one line for anyone reading the file. It splits "]]>"
// itself; the characters XML 1.0 forbids are removed by xmlSafe first,
// since CDATA cannot hold them either.
type junitText struct {
	Text string `xml:",cdata"`
}

// runProperties say which run a suite belongs to, repeated in every suite
// because most consumers read properties only there. A recording says so,
// as report.md does, so that replayed evidence is never taken for live.
func runProperties(r *Report) []junitProperty {
	info := r.Run.Cluster
	props := []junitProperty{
		{"tool", strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version)},
		{"live", strconv.FormatBool(info.Live)},
	}
	if !info.Live {
		props = append(props, junitProperty{"source", recordingText(info.Source, info.RecordedAt)})
	}
	props = append(props, junitProperty{"clusterID", info.ClusterID})
	if r.Digest != "" {
		props = append(props, junitProperty{"digest", r.Digest})
	}
	return props
}

func recordingText(source string, at time.Time) string {
	s := "a recording"
	if source != "" {
		s = "fixture " + source
	}
	return s + " recorded at " + stamp(at)
}

func suiteOf(req Requirement, run []junitProperty, runStart time.Time) junitSuite {
	s := junitSuite{Name: req.ID}
	props := []junitProperty{
		{"title", req.Title},
		{"category", req.Category},
		{"level", req.Level},
		{"program", req.Program},
		{"status", req.Status},
		{"result", req.Result},
	}
	if req.Operator != "" {
		props = append(props, junitProperty{"operator", req.Operator})
	}
	props = append(props, junitProperty{"conclusion", req.Conclusion})
	props = append(props, run...)
	for i := range props {
		props[i].Value = xmlSafe(props[i].Value)
	}
	s.Properties = props

	// Checks run concurrently, so the suite's time is the span from the
	// first start to the last finish, not the sum of its testcases.
	var first, last time.Time
	for _, c := range req.Checks {
		s.Cases = append(s.Cases, caseOf(req.ID, c))
		if !c.StartedAt.IsZero() && (first.IsZero() || c.StartedAt.Before(first)) {
			first = c.StartedAt
		}
		if c.FinishedAt.After(last) {
			last = c.FinishedAt
		}
	}
	s.Cases = append(s.Cases, verdictCase(req))
	if first.IsZero() {
		first = runStart
	}
	if !first.IsZero() {
		s.Timestamp = stamp(first)
	}
	s.Time = junitSeconds(first, last)
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	return s
}

// caseOf is one check result as a testcase.
func caseOf(reqID string, c Check) junitCase {
	name := c.ID
	if c.Operator != "" {
		name += "/" + c.Operator
	}
	tc := junitCase{Name: xmlSafe(name), Classname: xmlSafe(reqID), Time: junitSeconds(c.StartedAt, c.FinishedAt)}
	reason := xmlSafe(c.Reason)
	var out strings.Builder
	switch c.Status {
	case string(checks.Pass):
		fmt.Fprintf(&out, "pass: %s\n", c.Reason)
		junitDetails(&out, c.Details)
	case string(checks.Warn):
		fmt.Fprintf(&out, "warning: %s\n", c.Reason)
		junitDetails(&out, c.Details)
		if c.Remediation != "" {
			fmt.Fprintf(&out, "To fix: %s\n", c.Remediation)
		}
	case string(checks.Skip):
		tc.Skipped = &junitSkipped{Message: reason}
	case string(checks.Error):
		tc.Error = &junitProblem{Message: reason, Type: "error", Body: xmlSafe(problemBody(c))}
	default:
		// fail, and any status this code does not know: never a pass.
		tc.Failure = &junitProblem{Message: reason, Type: "fail", Body: xmlSafe(problemBody(c))}
	}
	if c.Table != nil || len(c.Evidence) > 0 {
		if out.Len() == 0 {
			fmt.Fprintf(&out, "%s: %s\n", c.Status, c.Reason)
		}
		junitTable(&out, c.Table)
		for _, e := range c.Evidence {
			evidenceText(&out, e)
		}
	}
	if out.Len() > 0 {
		tc.SystemOut = &junitText{Text: xmlSafe(out.String())}
	}
	return tc
}

// verdictCase is the requirement's own testcase. It passes only when the
// requirement is Implemented; N/A, and a run that judged only some of its
// checks and found nothing wrong (Partially Implemented with result pass),
// are skipped, since neither shows it met nor shows it broken; anything
// else fails, as an error when the requirement could not be evaluated.
func verdictCase(req Requirement) junitCase {
	// A verdict takes no time of its own: its checks' times are theirs,
	// and counting them twice would double the suite's total in a CI view.
	tc := junitCase{Name: xmlSafe(req.ID), Classname: xmlSafe(req.ID), Time: "0.000"}
	msg, body := xmlSafe(req.Conclusion), xmlSafe(verdictText(req))
	met := req.Result == string(checks.Pass) || req.Result == string(checks.Warn)
	switch {
	case met && req.Status == string(checks.Implemented):
		tc.SystemOut = &junitText{Text: body}
	case met || req.Result == string(checks.Skip):
		tc.Skipped = &junitSkipped{Message: msg}
		tc.SystemOut = &junitText{Text: body}
	case req.Result == string(checks.Error):
		tc.Error = &junitProblem{Message: msg, Type: req.Status, Body: body}
	default:
		tc.Failure = &junitProblem{Message: msg, Type: req.Status, Body: body}
	}
	return tc
}

// verdictText is a requirement's verdict and each operator's standing.
func verdictText(req Requirement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (result: %s)\n", req.Status, req.Result)
	if req.Result == string(checks.Warn) {
		fmt.Fprintf(&b, "warning: %s\n", req.Conclusion)
	} else {
		fmt.Fprintf(&b, "%s\n", req.Conclusion)
	}
	if req.Operator != "" {
		fmt.Fprintf(&b, "carried by: %s\n", req.Operator)
	}
	for _, ov := range req.Operators {
		fmt.Fprintf(&b, "%s: %s: %s\n", ov.Operator, ov.Result, ov.Reason)
	}
	return b.String()
}

// problemBody is what a failure or error element holds: the details, or the
// reason when there are none, so that consumers showing only the body
// still say why.
func problemBody(c Check) string {
	body := c.Reason
	if len(c.Details) > 0 {
		body = strings.Join(c.Details, "\n")
	}
	if c.Remediation != "" {
		body += "\nTo fix: " + c.Remediation
	}
	return body
}

func junitDetails(b *strings.Builder, ds []string) {
	for _, d := range ds {
		fmt.Fprintf(b, "- %s\n", d)
	}
}

// junitTable writes a check's computed table, labelled, as report.md does, as
// aiconform's summary rather than kubectl output.
func junitTable(b *strings.Builder, t *Table) {
	if t == nil {
		return
	}
	b.WriteString("\n# computed by aiconform from the objects it read (a summary, not kubectl output):\n")
	tw := tabwriter.NewWriter(b, 0, 0, 3, ' ', 0)
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush() // a strings.Builder never fails a write
}

// evidenceText writes one evidence block as report.md does inside its
// fence: the command with a prompt, the output unchanged, the capture time.
func evidenceText(b *strings.Builder, e Evidence) {
	b.WriteString("\n$ " + e.Command + "\n" + e.Output)
	if !strings.HasSuffix(e.Output, "\n") {
		b.WriteString("\n")
	}
	b.WriteString("# captured: " + stamp(e.CapturedAt) + "\n")
	if e.Note != "" {
		b.WriteString("# note: " + e.Note + "\n")
	}
}

// junitSeconds is a duration as JUnit writes it, in seconds with milliseconds;
// an unknown or negative span is 0.
func junitSeconds(from, to time.Time) string {
	d := to.Sub(from)
	if from.IsZero() || to.IsZero() || d < 0 {
		d = 0
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// xmlSafe replaces what XML 1.0 cannot hold at all, even escaped: control
// characters other than tab, newline and carriage return (a colour code in
// a command's output), U+FFFE, U+FFFF and bytes that are not UTF-8. Each
// becomes a visible \xNN or \uNNNN escape, so that the file parses and a
// reader still sees that something was there; report.json keeps the
// original bytes.
func xmlSafe(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !xmlChar(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !xmlChar(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case !xmlChar(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// xmlChar is the Char production of XML 1.0. It allows U+FFFD, which is
// also what ranging over bytes that are not UTF-8 yields, so xmlSafe checks
// the encoding apart.
func xmlChar(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	default:
		return r >= 0x10000 && r <= utf8.MaxRune
	}
}
