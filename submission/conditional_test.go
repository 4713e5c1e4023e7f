package submission

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureReport is a sealed report of the requirements ids, judged by
// their real checks on a recorded cluster, as `check ID... --fixture`
// makes it.
func fixtureReport(t *testing.T, fixture string, ids ...string) *report.Report {
	t.Helper()
	registry := builtin.Registry()
	catalog, err := checks.Catalog(registry)
	require.NoError(t, err)
	var reqs []checks.Requirement
	names := map[string]bool{}
	for _, r := range catalog {
		if checks.Contains(ids, r.ID) {
			reqs = append(reqs, r)
			for _, c := range r.Checks {
				names[c] = true
			}
		}
	}
	require.Len(t, reqs, len(ids), "the catalog has every requirement asked for")
	var subset []checks.Check
	for _, c := range registry {
		if names[c.Meta().ID] {
			subset = append(subset, c)
		}
	}
	out, info := checkstest.RunFixture(t, subset, fixture)
	r := report.Build(report.Tool{Name: "aiconform", Version: "v0.1.0"}, info, clock, clock.Add(2*time.Second), out, checks.Evaluate(reqs, out))
	require.NoError(t, r.Seal(checks.Must))
	return r
}

// templateItem is the entry id of the real template of version.
func templateItem(t *testing.T, version, id string) Item {
	t.Helper()
	tpl, err := ReadProduct(templatePath(t, version))
	require.NoError(t, err)
	return itemOf(t, tpl, id)
}

// The demo recording has no cluster autoscaler: the report says N/A for
// cluster_autoscaling, a MUST every checklist makes conditional. build
// writes what the program accepts, Implemented, with notes that quote the
// template's condition and say what the run looked for; lint accepts it.
// The same N/A verdict on a MUST that is not conditional (ai_inference in
// every version) stays N/A, and lint rejects it as the program would.
func TestBuildConditionalMustWithoutTheFeature(t *testing.T) {
	rep := fixtureReport(t, "demo", "cluster_autoscaling")
	ca := rep.Requirements[0]
	require.Equal(t, "cluster_autoscaling", ca.ID)
	require.Equal(t, string(checks.NotApplicable), ca.Status, "the demo has no autoscaler: %s", ca.Conclusion)
	lookedFor := strings.TrimPrefix(ca.Conclusion, "not applicable: ")
	require.NotEmpty(t, lookedFor)

	// The same verdict, under a requirement no checklist makes
	// conditional.
	notConditional := ca
	notConditional.ID, notConditional.Title, notConditional.Category = "ai_inference", "Gateway API for inference traffic", "networking"
	withPlain := *rep
	withPlain.Requirements = []report.Requirement{ca, notConditional}
	require.NoError(t, withPlain.Seal(checks.Must))

	tests := []struct {
		version string
		id      string
		rep     *report.Report
		// status is what PRODUCT.yaml must say; lint the rules lint
		// breaks on the entry.
		status string
		lint   []string
	}{
		{"1.33", "cluster_autoscaling", rep, "Implemented", nil},
		{"1.34", "cluster_autoscaling", rep, "Implemented", nil},
		{"1.35", "cluster_autoscaling", rep, "Implemented", nil},
		{"1.36", "cluster_autoscaling", rep, "Implemented", nil},
		{"1.37", "cluster_autoscaling", rep, "Implemented", nil},
		{"1.34", "ai_inference", &withPlain, "N/A", []string{RuleMustImplemented}},
		{"1.37", "ai_inference", &withPlain, "N/A", []string{RuleMustImplemented}},
	}
	for _, tc := range tests {
		t.Run(tc.version+" "+tc.id, func(t *testing.T) {
			path := templatePath(t, tc.version)
			tplData := mustRead(t, path)
			p := buildFrom(t, path, tplData, metadataFor(tc.version), tc.rep)
			built := fileOf(t, p, "PRODUCT.yaml")
			assertOnlyValuesChanged(t, tplData, built)
			prod, err := ParseProduct(built)
			require.NoError(t, err)
			it := itemOf(t, prod, tc.id)

			assert.Equal(t, tc.status, it.Status)
			assert.Equal(t, []string{"evidence/" + tc.id + ".md"}, it.Evidence, "a skipped testcase is never cited")
			assert.True(t, strings.HasPrefix(it.Notes, judgedNotePrefix+"aiconform v0.1.0 (2026-11-29) against a recording (demo)"), it.Notes)
			// Whole, or as much of it as a note of an N/A holds (the
			// evidence file has it whole).
			short := strings.TrimSuffix(shorten(ca.Conclusion, 240), "…")
			assert.True(t, strings.Contains(it.Notes, lookedFor) || strings.Contains(it.Notes, short),
				"the notes say what was looked for and not found: %s", it.Notes)
			var bi BuiltItem
			for _, b := range p.Items {
				if b.ID == tc.id {
					bi = b
				}
			}
			assert.Equal(t, ActionSet, bi.Action)
			assert.Equal(t, tc.status, bi.Status)

			// The condition, quoted from the template the build was given.
			desc := templateItem(t, tc.version, tc.id).Description
			cond, _, hasComma := strings.Cut(desc, ",")
			if tc.status == "Implemented" {
				require.True(t, hasComma && strings.HasPrefix(cond, "If "), "the template words the condition as an opening If clause")
				assert.Contains(t, it.Notes, "“"+cond+"”")
				assert.Contains(t, it.Notes, "aiconform's report says N/A.")
				assert.Contains(t, bi.Detail, "its condition does not hold (N/A in the report)")
			} else {
				assert.NotContains(t, it.Notes, "condition")
				assert.Contains(t, bi.Detail, "result skip")
			}

			// The report the package carries keeps the run's verdict.
			js, err := report.Read(bytes.NewReader(fileOf(t, p, ReportJSON)))
			require.NoError(t, err)
			for _, r := range js.Requirements {
				assert.Equal(t, string(checks.NotApplicable), r.Status, r.ID)
			}

			dir := filepath.Join(t.TempDir(), "v"+tc.version, "acme")
			require.NoError(t, p.Write(dir, false))
			for _, template := range []string{path, ""} {
				res, err := LintDir(dir, LintOptions{Template: template})
				require.NoError(t, err)
				var rules []string
				for _, pr := range res.Problems {
					if pr.Requirement == tc.id {
						rules = append(rules, pr.Rule)
						assert.NotContains(t, pr.Message, "conditional", "no conditional hint on %s", tc.id)
					}
				}
				assert.Equal(t, tc.lint, rules, "template %q", template)
			}
		})
	}
}

// lint holds conditional MUSTs to the validator's rule for every MUST:
// Implemented, whatever the notes say. N/A is refused on them as on any
// MUST, with a hint on how to write one whose condition does not hold; an
// Implemented entry whose notes say the condition does not hold passes.
func TestLintConditionalMust(t *testing.T) {
	setStatus := func(status, notes string) func(string) string {
		return func(b string) string {
			b = strings.Replace(b, `status: "Implemented"`, `status: "`+status+`"`, 1)
			return strings.Replace(b, `notes: ""`, `notes: "`+notes+`"`, 1)
		}
	}
	const absent = "The platform has no such mechanism: aiconform looked and found none."
	tests := []struct {
		name string
		id   string
		edit func(string) string
		want []string
		// hint: the must-implemented message says the MUST is
		// conditional.
		hint bool
	}{
		{"conditional, N/A with notes", "cluster_autoscaling", setStatus("N/A", absent), []string{RuleMustImplemented}, true},
		{"conditional, HPA, N/A with notes", "pod_autoscaling", setStatus("N/A", absent), []string{RuleMustImplemented}, true},
		{"conditional, not implemented", "cluster_autoscaling", setStatus("Not Implemented", absent), []string{RuleMustImplemented}, true},
		{"conditional, N/A without notes", "cluster_autoscaling", setStatus("N/A", ""), []string{RuleMustImplemented, RuleNANotes}, true},
		{"conditional, Implemented as the condition does not hold", "cluster_autoscaling", setStatus("Implemented", absent), nil, false},
		{"not conditional, N/A with notes", "ai_inference", setStatus("N/A", absent), []string{RuleMustImplemented}, false},
		{"not conditional, N/A without notes", "robust_controller", setStatus("N/A", ""), []string{RuleMustImplemented, RuleNANotes}, false},
	}
	for _, v := range []string{"1.33", "1.34", "1.35", "1.36", "1.37"} {
		for _, tc := range tests {
			t.Run(v+" "+tc.name, func(t *testing.T) {
				product := editItem(t, filledProduct(t, v), tc.id, tc.edit)
				dir := writeDir(t, product, map[string]string{})
				for _, opts := range []LintOptions{{Template: templatePath(t, v)}, {}} {
					problems, err := Lint(dir, opts)
					require.NoError(t, err)
					var rules []string
					for _, p := range problems {
						assert.Equal(t, tc.id, p.Requirement, "%s", p)
						rules = append(rules, p.Rule)
						if p.Rule == RuleMustImplemented {
							assert.Equal(t, tc.hint, strings.Contains(p.Message, "this one is conditional"), "%s", p)
						}
					}
					assert.Equal(t, tc.want, rules, "template %q", opts.Template)
				}
			})
		}
	}
}

// Every MUST a checklist makes conditional is one whose template's
// description build can quote a condition from.
func TestConditionFromTemplates(t *testing.T) {
	all, err := Checklists()
	require.NoError(t, err)
	for _, c := range all {
		tpl, err := ReadProduct(templatePath(t, c.Version))
		require.NoError(t, err)
		for _, ck := range c.Items {
			if !ck.Conditional {
				continue
			}
			desc := itemOf(t, tpl, ck.ID).Description
			got := condition(desc)
			assert.True(t, strings.HasPrefix(got, "If "), "%s %s: %q", c.Version, ck.ID, got)
			assert.True(t, strings.HasPrefix(desc, got+", "), "%s %s: the condition is the description's opening clause, %q", c.Version, ck.ID, got)
		}
	}
	for _, tc := range []struct{ desc, want string }{
		{"If the thing exists, it must work. More.", "If the thing exists"},
		{"  if  the thing\nexists,  it must work.", "if the thing exists"},
		{"Where a thing exists it must work. More.", "Where a thing exists it must work."},
		{"No sentence end", "No sentence end"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, condition(tc.desc), "%q", tc.desc)
	}
}
