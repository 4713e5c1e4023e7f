package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
)

// step is one timed moment of a probe: an event of its timeline table, or
// an evidence block at the time it was captured.
type step struct {
	at       time.Time
	label    string
	evidence bool
}

// timelineHeader is how a probe's computed table starts when it is the
// probe's timeline (checks.TimelineTable): what happened, and when, in UTC.
var timelineHeader = checks.TimelineHeader[:2]

// writeVerbs are the kubectl verbs of evidence that wrote to the cluster.
// Read-only checks only get and list, so a check whose evidence holds one
// of these was a probe, even one that kept no timeline table.
var writeVerbs = []string{"create", "apply", "delete", "patch", "replace"}

// probeSteps are a probe's timed steps in time order: the events of its
// timeline table and its evidence blocks, both placed by the clock. A check
// that did not probe, or whose report carries fewer than two timed steps,
// has none: the page draws only what the report holds.
func probeSteps(r *Report, c Check, firstEvidence int) []step {
	events := timelineRows(c.Table)
	if events == nil && (r.Run.Probe == nil || !wrote(c)) {
		return nil
	}
	// The table's times are times of day; the check's start gives them
	// their date, so that they line up with the evidence's full times.
	day := c.StartedAt
	for _, e := range c.Evidence {
		if !day.IsZero() {
			break
		}
		day = e.CapturedAt
	}
	var steps []step
	for _, row := range events {
		tod, err := time.Parse("15:04:05.000", row[1])
		if err != nil {
			// Not a time this renderer knows: left out, not guessed.
			continue
		}
		steps = append(steps, step{at: onDay(day, tod), label: row[0]})
	}
	for i, e := range c.Evidence {
		if e.CapturedAt.IsZero() {
			continue
		}
		steps = append(steps, step{
			at:       e.CapturedAt,
			label:    fmt.Sprintf("evidence %d: %s", firstEvidence+i, firstLine(e.Command)),
			evidence: true,
		})
	}
	if len(steps) < 2 {
		return nil
	}
	slices.SortStableFunc(steps, func(a, b step) int { return a.at.Compare(b.at) })
	return steps
}

// timelineRows are the rows of t when it is a probe's timeline table.
func timelineRows(t *Table) [][]string {
	if t == nil || len(t.Header) < len(timelineHeader) || !slices.Equal(t.Header[:len(timelineHeader)], timelineHeader) {
		return nil
	}
	var rows [][]string
	for _, row := range t.Rows {
		if len(row) >= len(timelineHeader) {
			rows = append(rows, row)
		}
	}
	return rows
}

// wrote is true when one of c's evidence commands writes to the cluster.
func wrote(c Check) bool {
	for _, e := range c.Evidence {
		fields := strings.Fields(firstLine(e.Command))
		if len(fields) >= 2 && fields[0] == "kubectl" && slices.Contains(writeVerbs, fields[1]) {
			return true
		}
	}
	return false
}

// onDay is the time of day tod on the day of ref, or on the day before or
// after when that is nearer: a probe that ran over midnight UTC.
func onDay(ref, tod time.Time) time.Time {
	ref = ref.UTC()
	t := time.Date(ref.Year(), ref.Month(), ref.Day(), tod.Hour(), tod.Minute(), tod.Second(), tod.Nanosecond(), time.UTC)
	switch {
	case t.Sub(ref) > 12*time.Hour:
		t = t.Add(-24 * time.Hour)
	case ref.Sub(t) > 12*time.Hour:
		t = t.Add(24 * time.Hour)
	}
	return t
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// timeline is a probe's steps drawn as an SVG: a time axis, and under it one
// line per step, its marker placed by time since the first step.
type timeline struct {
	Width, Height int
	Left, Right   int
	// AxisY is where the axis runs; ticks reach from TickTop to
	// TickBottom, their labels sit on TickTextY.
	AxisY, TickTop, TickBottom, TickTextY int
	Label                                 string
	Ticks                                 []tick
	Points                                []point
	// Events and Evidence say which markers the legend explains.
	Events, Evidence bool
}

type tick struct {
	X, Anchor, Text string
}

// point is one step: a marker at (X, Y), a square (MarkX, MarkY its corner)
// for an evidence block, and its label on TextY.
type point struct {
	X, Y, MarkX, MarkY, TextX, TextY, Anchor string
	Text, Full                               string
	Evidence                                 bool
}

// The drawing's size in user units. It scales to the page's width; the
// labels are monospace, so their length in characters bounds their width.
const (
	tlWidth    = 900
	tlMargin   = 12
	tlAxisY    = 28
	tlFirstRow = 52
	tlRowStep  = 18
	tlLabelMax = 60
)

// drawTimeline places steps on a horizontal axis from the first step to the
// last. Each step has a row of its own, so that steps a few milliseconds
// apart never print over each other.
func drawTimeline(steps []step) *timeline {
	if len(steps) < 2 {
		return nil
	}
	t0 := steps[0].at
	span := steps[len(steps)-1].at.Sub(t0)
	tl := &timeline{
		Width: tlWidth, Left: tlMargin, Right: tlWidth - tlMargin,
		AxisY: tlAxisY, TickTop: tlAxisY - 4, TickBottom: tlAxisY + 4, TickTextY: tlAxisY - 9,
		Height: tlFirstRow + (len(steps)-1)*tlRowStep + 12,
		Label:  fmt.Sprintf("Probe timeline: %d steps over %s", len(steps), offset(span)),
	}
	x := func(d time.Duration) float64 {
		if span <= 0 {
			return tlMargin
		}
		return tlMargin + float64(tlWidth-2*tlMargin)*float64(d)/float64(span)
	}
	tl.Ticks = ticks(span, x)
	for i, s := range steps {
		d := s.at.Sub(t0)
		px, py := x(d), float64(tlFirstRow+i*tlRowStep)
		p := point{
			X: coord(px), Y: coord(py), MarkX: coord(px - 4), MarkY: coord(py - 4),
			TextX: coord(px + 8), TextY: coord(py + 4), Anchor: "start",
			Full: offset(d) + " " + s.label, Evidence: s.evidence,
		}
		if px > tlWidth/2 {
			// Past the middle the label goes left of its marker, so that
			// it stays inside the drawing.
			p.TextX, p.Anchor = coord(px-8), "end"
		}
		p.Text = shorten(p.Full, tlLabelMax)
		tl.Points = append(tl.Points, p)
		tl.Events = tl.Events || !s.evidence
		tl.Evidence = tl.Evidence || s.evidence
	}
	return tl
}

// ticks mark the axis at its start, quarters and end; a probe whose steps
// share one instant has only the start.
func ticks(span time.Duration, x func(time.Duration) float64) []tick {
	if span <= 0 {
		return []tick{{X: coord(x(0)), Anchor: "start", Text: offset(0)}}
	}
	var out []tick
	for q := range 5 {
		d := span * time.Duration(q) / 4
		t := tick{X: coord(x(d)), Anchor: "middle", Text: offset(d)}
		switch q {
		case 0:
			t.Anchor = "start"
		case 4:
			t.Anchor = "end"
		}
		out = append(out, t)
	}
	return out
}

// offset is a time since the probe's first step, to the millisecond the
// timeline tables keep.
func offset(d time.Duration) string {
	return "+" + d.Round(time.Millisecond).String()
}

func coord(f float64) string { return fmt.Sprintf("%.1f", f) }
