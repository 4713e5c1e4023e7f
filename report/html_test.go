package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

// probed is the passing fixture run with --probe: KServe's canary kept a
// timeline table, and its webhook probe only evidence, both timed.
func probed() *Report {
	r := passing()
	r.Run.Probe = &ProbeRun{RunID: "20261129-120000-abcd", Namespace: "aiconform-probe-20261129-120000-abcd"}
	ns := r.Run.Probe.Namespace
	req := &r.Requirements[0]
	req.Checks = append(req.Checks,
		Check{
			ID: "webhooks-answer", Title: "The operator's webhooks answer: an invalid resource is denied, a valid one admitted", Operator: "kserve",
			Status: "pass", Reason: "the validating webhook denied the invalid InferenceService and admitted the canary",
			StartedAt: at(3000), FinishedAt: at(3400),
			Evidence: []Evidence{
				{
					Command:    "kubectl create --dry-run=server -n " + ns + " -f - <<'EOF'\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: aiconform-invalid\nEOF",
					Output:     "Error from server (Forbidden): admission webhook \"inferenceservice.kserve-webhook-server.validator\" denied the request: exactly one predictor is required\n",
					CapturedAt: at(3120),
				},
				{
					Command:    "kubectl create --dry-run=server -n " + ns + " -f - <<'EOF'\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: aiconform-canary\nEOF",
					Output:     "inferenceservice.serving.kserve.io/aiconform-canary created (server dry run)\n",
					CapturedAt: at(3390),
				},
			},
		},
		Check{
			ID: "canary-reconciled", Title: "A fresh custom resource is reconciled: Ready, owning its children, and collected once deleted", Operator: "kserve",
			Status: "pass", Reason: "the canary InferenceService was Ready after 41.2 s, owning 1 Deployment and 1 Pod; its children were collected 3.1 s after it was deleted",
			StartedAt: at(3500), FinishedAt: at(49800),
			Table: &Table{
				Header: []string{"EVENT", "AT (UTC)", "SINCE START"},
				Rows: [][]string{
					{"created inferenceservices/aiconform-canary", "12:00:03.600", "+0.0 s"},
					{"status first written", "12:00:04.150", "+0.6 s"},
					{"first child: Deployment aiconform-canary-predictor", "12:00:05.900", "+2.3 s"},
					{"Ready", "12:00:44.800", "+41.2 s"},
					{"deleted", "12:00:46.500", "+42.9 s"},
					{"children collected", "12:00:49.600", "+46.0 s"},
				},
			},
			Evidence: []Evidence{
				{
					Command:    "kubectl create -n " + ns + " -f - <<'EOF'\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: aiconform-canary\nEOF",
					Output:     "inferenceservice.serving.kserve.io/aiconform-canary created\n",
					CapturedAt: at(3600),
					Note:       "a canary InferenceService, created in the run's own namespace",
				},
				{
					Command: "kubectl get inferenceservices.serving.kserve.io,deploy,pods -n " + ns,
					Output: "NAME                                                  URL   READY   AGE\n" +
						"inferenceservice.serving.kserve.io/aiconform-canary         True    41s\n",
					CapturedAt: at(44900),
				},
			},
		},
	)
	r.Summary.Checks["pass"] += 2
	return r
}

// hostile is the fixture with markup wherever the cluster or a check puts
// text: all of it must arrive as text, none as an element.
func hostile() *Report {
	r := fixture()
	r.Requirements[0].Title = `"><link rel="stylesheet" href="https://evil.example/s.css">`
	r.Requirements[0].Checks[0].Reason = `<img src="http://evil.example/i.png" onerror="alert(1)">`
	r.Requirements[1].Checks[0].Evidence[0].Output = `<script src="https://evil.example/x.js"></script><a href="//evil.example/">x</a>` + "\n"
	r.Requirements[1].Checks[0].Details = []string{"<iframe src=https://evil.example/>", "</pre><script>alert(1)</script>\nsecond line"}
	r.Operators[0].Versions = []string{`kserve/"><base href="https://evil.example/">`}
	return r
}

// TestHTMLGolden pins the page of a run with probes, whose timelines the
// other reports (in TestRenderersGolden) have none of.
func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, HTML(&buf, sealed(t, probed())))
	golden(t, "probed.html", buf.Bytes())
}

// TestHTMLSelfContained holds the page to one file: nothing in it may make
// a browser fetch from elsewhere, whatever text the report carries.
func TestHTMLSelfContained(t *testing.T) {
	for name, r := range map[string]*Report{"failing": fixture(), "probed": probed(), "recorded": recorded(), "hostile": hostile()} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, HTML(&buf, sealed(t, r)))
			doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			for n := range doc.Descendants() {
				if n.Type != html.ElementNode {
					continue
				}
				for _, a := range n.Attr {
					v := strings.ToLower(strings.TrimSpace(a.Val))
					assert.False(t, strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "//"),
						"<%s %s=%q> points off the page", n.Data, a.Key, a.Val)
				}
				switch n.Data {
				case "script", "link", "iframe", "object", "embed", "img", "base":
					// The page needs none of them, and the CSP would block
					// a script anyway: their presence is an injection or a
					// mistake.
					assert.Fail(t, "element not allowed in report.html", "<%s %v>", n.Data, n.Attr)
				case "style":
					css := textOf(n)
					assert.NotContains(t, css, "@import")
					assert.NotContains(t, css, "url(")
				}
			}
			if name == "hostile" {
				body := textOf(doc)
				assert.Contains(t, body, `<script src="https://evil.example/x.js"></script>`, "markup in evidence is shown as text")
				assert.Contains(t, body, `<img src="http://evil.example/i.png" onerror="alert(1)">`)
				assert.Contains(t, body, "</pre><script>alert(1)</script>\nsecond line")
			}
		})
	}
}

// TestHTMLEvidenceAsMarkdown holds each evidence block to report.md's: the
// same blocks, in the same order, numbered alike, with the same text.
func TestHTMLEvidenceAsMarkdown(t *testing.T) {
	for name, r := range map[string]*Report{"failing": fixture(), "probed": probed()} {
		t.Run(name, func(t *testing.T) {
			sealed(t, r)
			var md, page bytes.Buffer
			require.NoError(t, Markdown(&md, r))
			require.NoError(t, HTML(&page, r))

			// The fixtures hold no backticks, so every fence is three long.
			var want []string
			for _, m := range regexp.MustCompile("(?s)\\*\\*(Evidence \\d+)\\*\\*\n\n```text\n(.*?)```\n").FindAllStringSubmatch(md.String(), -1) {
				want = append(want, m[1]+"\n"+m[2])
			}
			require.NotEmpty(t, want)

			doc, err := html.Parse(&page)
			require.NoError(t, err)
			var got []string
			for n := range doc.Descendants() {
				if n.Type == html.ElementNode && n.Data == "p" && hasClass(n, "evidence-n") {
					pre := n.NextSibling
					for pre != nil && pre.Type != html.ElementNode {
						pre = pre.NextSibling
					}
					require.NotNil(t, pre)
					require.Equal(t, "pre", pre.Data)
					got = append(got, textOf(n)+"\n"+textOf(pre))
				}
			}
			assert.Equal(t, want, got)
		})
	}
}

// TestHTMLFromJSON renders a report read back from report.json, as `report`
// commands would: the page must be the one the run itself rendered.
func TestHTMLFromJSON(t *testing.T) {
	r := sealed(t, probed())
	var direct, data, again bytes.Buffer
	require.NoError(t, HTML(&direct, r))
	require.NoError(t, JSON(&data, r))
	back, err := Read(&data)
	require.NoError(t, err)
	require.NoError(t, HTML(&again, back))
	assert.Equal(t, direct.String(), again.String())
}

func TestHTML(t *testing.T) {
	tests := []struct {
		name    string
		report  func() *Report
		want    []string
		notWant []string
	}{
		{
			name:   "a failed run says so first, and why",
			report: fixture,
			want: []string{
				`<div id="verdict" class="verdict fail">`,
				"FAILED</p>\n<p>MUST requirement not met: gpu_nodes_allocatable (fail)</p>",
				`<dt>Source</dt><dd>live cluster</dd>`,
				`<dt>Probes</dt><dd>off: the run only read the cluster</dd>`,
				`<section class="requirement" id="robust_controller">`,
				`<td class="cell st-fail"><a href="#robust_controller--controller-ready--kuberay">`,
				"Not installed, their checks skipped: <code>kueue</code>.",
				`<p class="evidence-n" id="gpu_nodes_allocatable--evidence-3">Evidence 3</p>`,
				"<li>pod kuberay-operator-7d9f8b6c5-x2v4q: container kuberay-operator waiting: CrashLoopBackOff (restarted 14 times)</li>",
				"<td>gpu-2</td><td>Unknown</td>",
				`<p class="note">Note: pods on gpu-1, whose requests count against its allocatable</p>`,
			},
			notWant: []string{"Recorded, not live", "<svg", "--kueue"},
		},
		{
			name:   "a passing run",
			report: passing,
			want:   []string{`<div id="verdict" class="verdict pass">`, "PASSED</p>\n<p>every MUST requirement met</p>"},
		},
		{
			name:   "a recording says so before anything else",
			report: recorded,
			want: []string{
				`<p class="notice" role="note"><strong>Recorded, not live.</strong> This report was produced from fixture <code>gpu-kserve-kuberay</code> recorded at 2026-11-28T09:30:00Z, not from a live cluster.`,
				`<dt>Source</dt><dd>fixture <code>gpu-kserve-kuberay</code> recorded at 2026-11-28T09:30:00Z (a recording, not a live cluster)</dd>`,
			},
		},
		{
			name:   "probes: the run id, and a timeline per timed probe",
			report: probed,
			want: []string{
				`<dt>Probes</dt><dd>on: run <code>20261129-120000-abcd</code> wrote in namespace <code>aiconform-probe-20261129-120000-abcd</code>`,
				// html/template writes + as &#43;.
				`<svg class="timeline" viewBox="0 0 900 190" role="img" aria-label="Probe timeline: 8 steps over &#43;46s">`,
				`<title>&#43;46s children collected</title>`,
				`<title>&#43;41.3s evidence 9: kubectl get inferenceservices.serving.kserve.io,deploy,pods -n aiconform-probe-20261129-120000-abcd</title>`,
				`aria-label="Probe timeline: 2 steps over &#43;270ms"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, HTML(&buf, sealed(t, tt.report())))
			for _, w := range tt.want {
				assert.Contains(t, buf.String(), w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, buf.String(), w)
			}
		})
	}
	t.Run("no report", func(t *testing.T) {
		assert.EqualError(t, HTML(&bytes.Buffer{}, nil), "html: no report")
	})
}

func TestProbeSteps(t *testing.T) {
	probing := func() *Report { return &Report{Run: Run{Probe: &ProbeRun{RunID: "x"}}} }
	create := Evidence{Command: "kubectl create -n p -f - <<'EOF'\nkind: X\nEOF", Output: "x created\n", CapturedAt: at(100)}
	get := Evidence{Command: "kubectl get x -n p", Output: "NAME\n", CapturedAt: at(2100)}
	table := func(rows ...[]string) *Table {
		return &Table{Header: []string{"EVENT", "AT (UTC)", "SINCE START"}, Rows: rows}
	}
	tests := []struct {
		name string
		r    *Report
		c    Check
		want []string
	}{
		{
			name: "a read-only check has none, even with timed evidence",
			r:    &Report{}, c: Check{Evidence: []Evidence{get, get}},
		},
		{
			name: "a read-only check of a probing run has none",
			r:    probing(), c: Check{Evidence: []Evidence{get, get}},
		},
		{
			name: "a probe's evidence, by capture time",
			r:    probing(), c: Check{StartedAt: at(0), Evidence: []Evidence{create, get}},
			want: []string{"+0s evidence 1: kubectl create -n p -f - <<'EOF'", "+2s evidence 2: kubectl get x -n p"},
		},
		{
			name: "a timeline table and evidence, on one clock",
			r:    &Report{}, c: Check{StartedAt: at(0), Table: table(
				[]string{"created", "12:00:00.100", "+0.0 s"},
				[]string{"Ready", "12:00:01.600", "+1.5 s"},
			), Evidence: []Evidence{create, get}},
			want: []string{"+0s created", "+0s evidence 1: kubectl create -n p -f - <<'EOF'", "+1.5s Ready", "+2s evidence 2: kubectl get x -n p"},
		},
		{
			name: "a probe over midnight UTC",
			r:    &Report{}, c: Check{StartedAt: time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC), Table: table(
				[]string{"created", "23:59:59.500", "+0.0 s"},
				[]string{"Ready", "00:00:01.250", "+1.8 s"},
			)},
			want: []string{"+0s created", "+1.75s Ready"},
		},
		{
			name: "a time it cannot read is left out, not guessed",
			r:    &Report{}, c: Check{StartedAt: at(0), Table: table(
				[]string{"created", "12:00:00.100", "+0.0 s"},
				[]string{"Ready", "soon", "+1.5 s"},
				[]string{"deleted", "12:00:03.100", "+3.0 s"},
			)},
			want: []string{"+0s created", "+3s deleted"},
		},
		{
			name: "one timed step is no timeline",
			r:    probing(), c: Check{Evidence: []Evidence{create, {Command: "kubectl get x", Output: "NAME\n"}}},
		},
		{
			name: "another computed table is not a timeline",
			r:    &Report{}, c: Check{Table: &Table{Header: []string{"NODE", "READY"}, Rows: [][]string{{"12:00:00.000", "x"}, {"12:00:01.000", "y"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := probeSteps(tt.r, tt.c, 1)
			var got []string
			for _, s := range steps {
				got = append(got, offset(s.at.Sub(steps[0].at))+" "+s.label)
			}
			assert.Equal(t, tt.want, got)
			if tt.want == nil {
				assert.Nil(t, drawTimeline(steps))
			}
		})
	}
}

func TestDrawTimeline(t *testing.T) {
	steps := []step{
		{at: at(0), label: "created"},
		{at: at(250), label: strings.Repeat("long label ", 20), evidence: true},
		{at: at(1000), label: "Ready"},
	}
	tl := drawTimeline(steps)
	require.NotNil(t, tl)
	require.Len(t, tl.Points, 3)
	assert.Equal(t, []string{"12.0", "231.0", "888.0"}, []string{tl.Points[0].X, tl.Points[1].X, tl.Points[2].X}, "placed by time, first at the left, last at the right")
	assert.Equal(t, "start", tl.Points[0].Anchor)
	assert.Equal(t, "end", tl.Points[2].Anchor, "a label past the middle goes left of its marker")
	assert.LessOrEqual(t, len([]rune(tl.Points[1].Text)), tlLabelMax)
	assert.Equal(t, "+250ms "+strings.Repeat("long label ", 20), tl.Points[1].Full, "the whole label stays in the tooltip")
	assert.True(t, tl.Events && tl.Evidence)
	assert.Equal(t, []string{"+0s", "+250ms", "+500ms", "+750ms", "+1s"}, func() []string {
		var out []string
		for _, tk := range tl.Ticks {
			out = append(out, tk.Text)
		}
		return out
	}())

	same := drawTimeline([]step{{at: at(5), label: "a"}, {at: at(5), label: "b"}})
	require.NotNil(t, same)
	assert.Len(t, same.Ticks, 1, "steps at one instant: an axis of one tick")
	assert.Equal(t, same.Points[0].X, same.Points[1].X)
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func hasClass(n *html.Node, class string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && strings.Contains(" "+a.Val+" ", " "+class+" ") {
			return true
		}
	}
	return false
}
