package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aiconform/aiconform/checks"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// reasonWidth is how many runes of a reason the terminal summary shows; the
// whole reason is in report.md and report.json.
const reasonWidth = 80

// Summary writes the terminal summary: one row per check result, one line
// per requirement, and the run's verdict as the last line so that CI logs
// end on it. It has no colours: the output is read in CI logs as often as
// in a terminal.
func Summary(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("summary: no report")
	}
	// Borderless columns, like `kubectl get`, so the summary reads like the
	// evidence it summarises and greps cleanly in CI logs.
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Lines:      tw.LinesNone,
				Separators: tw.SeparatorsNone,
			},
		})),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		// Reasons are already cut to one short line; wrapping would split a
		// row over several lines and break grep.
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	t.Header("REQUIREMENT", "LEVEL", "CHECK", "OPERATOR", "STATUS", "REASON")
	for _, req := range r.Requirements {
		for _, c := range req.Checks {
			if !r.shown(c) {
				continue
			}
			if err := t.Append([]string{
				req.ID, req.Level, c.ID, orDash(c.Operator), c.Status, shorten(c.Reason, reasonWidth),
			}); err != nil {
				return fmt.Errorf("summary table: %w", err)
			}
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("summary table: %w", err)
	}
	// Cells are padded to their column's width, the last one too; the
	// trailing blanks only make diffs and CI logs noisy.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}

	if absent := r.absent(); len(absent) > 0 {
		if _, err := fmt.Fprintf(w, "not installed, their checks skipped: %s\n", strings.Join(absent, ", ")); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tabs := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, req := range r.Requirements {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", req.ID, req.Level, req.Status, req.Result)
		switch {
		case req.Operator != "":
			line += "\tcarried by " + req.Operator
		case req.Status == string(checks.Skipped):
			// The user's reason, which no check result carries.
			line += "\t" + req.Conclusion
		}
		if _, err := fmt.Fprintln(tabs, line); err != nil {
			return err
		}
	}
	if err := tabs.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, verdict(r))
	return err
}

// verdict is the run's one-line outcome. It trusts Summary.Passed, which
// Seal decided under the run's --fail-on, and only explains a failure by
// naming the requirements that were not met.
func verdict(r *Report) string {
	if r.Summary.Passed {
		return "PASSED: every MUST requirement met"
	}
	var must, should []string
	for _, req := range r.Requirements {
		if met(req.Result) {
			continue
		}
		entry := fmt.Sprintf("%s (%s)", req.ID, req.Result)
		if strings.HasPrefix(req.Conclusion, "not shown at work") && strings.Contains(req.Conclusion, "probes are off") {
			// What to do next, since nothing else in the run can show it.
			entry = fmt.Sprintf("%s (%s: not shown without --probe)", req.ID, req.Result)
		}
		if req.Level == string(checks.Must) {
			must = append(must, entry)
		} else {
			should = append(should, entry)
		}
	}
	switch {
	case len(must) > 0:
		return "FAILED: MUST requirement not met: " + strings.Join(must, ", ")
	case len(should) > 0:
		// Only --fail-on should fails a run on a SHOULD.
		return "FAILED: SHOULD requirement not met (--fail-on should): " + strings.Join(should, ", ")
	}
	// A report that was never sealed has Passed false and nothing unmet.
	return "FAILED: the run did not pass"
}

// met mirrors Seal: a warning or a requirement that does not apply does
// not stop a run.
func met(result string) bool {
	return result == string(checks.Pass) || result == string(checks.Warn) || result == string(checks.Skip)
}

// shorten puts s on one line and cuts it to at most n runes, marking the
// cut with an ellipsis.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	return strings.TrimRight(string(runes[:n-1]), " ") + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
