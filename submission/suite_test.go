package submission

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readSuite(t *testing.T, name string) *Suite {
	t.Helper()
	s, err := ReadSuite(filepath.Join("testdata", name))
	require.NoError(t, err)
	return s
}

// buildWithSuites builds checklist 1.37 from the demo report and suites.
func buildWithSuites(t *testing.T, mapFile string, suites ...*Suite) (*Package, *Product) {
	t.Helper()
	path := templatePath(t, "1.37")
	tpl, err := ReadTemplate(path)
	require.NoError(t, err)
	md, err := tpl.ParseMetadata("metadata.yaml", []byte(metadataFor("1.37")))
	require.NoError(t, err)
	var m *JUnitMap
	if mapFile != "" {
		m, err = tpl.ReadJUnitMap(filepath.Join("testdata", mapFile))
		require.NoError(t, err)
	}
	p, err := Build(BuildInput{Template: tpl, Metadata: md, Report: makeReport(t, demo), Suites: suites, JUnitMap: m})
	require.NoError(t, err)
	tplData := mustRead(t, path)
	assertOnlyValuesChanged(t, tplData, fileOf(t, p, ProductName))
	prod, err := ParseProduct(fileOf(t, p, ProductName))
	require.NoError(t, err)
	return p, prod
}

func builtItem(t *testing.T, p *Package, id string) BuiltItem {
	t.Helper()
	for _, it := range p.Items {
		if it.ID == id {
			return it
		}
	}
	t.Fatalf("no built item %s", id)
	return BuiltItem{}
}

func suiteEvidence(p *Package, id string) *SuiteEvidence {
	for _, ev := range p.SuiteEvidence {
		if ev.Requirement == id {
			return ev
		}
	}
	return nil
}

func TestBuildWithJUnitByName(t *testing.T) {
	p, prod := buildWithSuites(t, "", readSuite(t, "e2e-pass.xml"), readSuite(t, "e2e-mixed.xml"))
	assert.Equal(t, []string{"evidence/robust_controller.md", "report.md", "report.json", "junit.xml",
		"evidence/e2e-pass/junit.xml", "evidence/e2e-mixed/junit.xml", "PRODUCT.yaml"}, p.FileNames())
	assert.Equal(t, mustRead(t, "testdata/e2e-mixed.xml"), fileOf(t, p, "evidence/e2e-mixed/junit.xml"), "copied byte for byte")

	// aiconform judged it: its status, its evidence, and the suite's link beside.
	rc := itemOf(t, prod, "robust_controller")
	assert.Equal(t, "Implemented", rc.Status)
	assert.Equal(t, []string{"evidence/robust_controller.md", "file://junit.xml#robust_controller",
		"file://evidence/e2e-pass/junit.xml#[sig-ai] robust_controller reconciles a fresh CR"}, rc.Evidence)
	assert.Equal(t, ActionSet, builtItem(t, p, "robust_controller").Action)
	assert.Contains(t, rc.Notes, "Another suite's testcases, all passed: file://evidence/e2e-pass/junit.xml#[sig-ai] robust_controller reconciles a fresh CR.")

	// aiconform left it to the vendor; the classname holds the id.
	drm := itemOf(t, prod, "driver_runtime_management")
	assert.Equal(t, "Implemented", drm.Status)
	assert.Equal(t, []string{"file://evidence/e2e-pass/junit.xml#TestClaimAllocated"}, drm.Evidence)
	assert.True(t, strings.HasPrefix(drm.Notes, suiteNotePrefix), drm.Notes)
	assert.Equal(t, ActionSuite, builtItem(t, p, "driver_runtime_management").Action)

	// Failed, errored or skipped: left as it was, and said.
	for id, want := range map[string]string{
		"pod_autoscaling":     "[sig-ai] pod_autoscaling scales down (failed) in testdata/e2e-mixed.xml",
		"accelerator_metrics": "accelerator_metrics are scraped (skipped) in testdata/e2e-mixed.xml",
		"ai_service_metrics":  "ai_service_metrics are exported (error) in testdata/e2e-mixed.xml",
	} {
		it := itemOf(t, prod, id)
		assert.Empty(t, it.Status, id)
		assert.Empty(t, it.Evidence, id)
		assert.Equal(t, ActionVendor, builtItem(t, p, id).Action, id)
		ev := suiteEvidence(p, id)
		require.NotNil(t, ev, id)
		assert.False(t, ev.Passed, id)
		assert.Equal(t, []string{want}, ev.NotPassed, id)
	}
	// Not a whole word, and no id at all: not mapped.
	assert.Nil(t, suiteEvidence(p, "workload_sandboxing"))
	assert.Nil(t, suiteEvidence(p, "gang_scheduling"))
	assert.Empty(t, itemOf(t, prod, "gang_scheduling").Status)

	var summary strings.Builder
	require.NoError(t, p.WriteSuiteSummary(&summary))
	assert.Contains(t, summary.String(), "--with-junit: pod_autoscaling: not all its testcases passed, [sig-ai] pod_autoscaling scales down (failed) in testdata/e2e-mixed.xml; not cited; left for the vendor\n")
	assert.Contains(t, summary.String(), "warning: evidence/e2e-mixed/junit.xml (copied from testdata/e2e-mixed.xml) holds 2 failing testcase(s)")
	var table strings.Builder
	require.NoError(t, p.WriteSummary(&table))
	assert.Contains(t, table.String(), "1 set by aiconform, 1 set from another suite, ")
}

func TestBuildWithJUnitMap(t *testing.T) {
	p, prod := buildWithSuites(t, "junit-map.yaml", readSuite(t, "e2e-pass.xml"), readSuite(t, "e2e-mixed.xml"))
	gang := itemOf(t, prod, "gang_scheduling")
	assert.Equal(t, "Implemented", gang.Status)
	assert.Equal(t, []string{"file://evidence/e2e-pass/junit.xml#TestGangAllOrNothing"}, gang.Evidence)
	// The map names driver_runtime_management, so only its entries count:
	// the classname match of TestClaimAllocated no longer does.
	drm := itemOf(t, prod, "driver_runtime_management")
	assert.Equal(t, []string{"file://evidence/e2e-mixed/junit.xml#TestDriverVersions"}, drm.Evidence)
	assert.Equal(t, []string{`--junit-map: gang_scheduling: "TestGang.*Preemption" matches no testcase of the suites given`}, p.SuiteWarnings[:1])
}

// A failing testcase of another suite never changes what aiconform
// decided, and is not cited.
func TestBuildWithJUnitFailureKeepsAiconformStatus(t *testing.T) {
	s, err := ParseSuite("vendor.xml", []byte(`<testsuite><testcase name="robust_controller survives a restart"><failure message="x"/></testcase></testsuite>`))
	require.NoError(t, err)
	p, prod := buildWithSuites(t, "", s)
	rc := itemOf(t, prod, "robust_controller")
	assert.Equal(t, "Implemented", rc.Status)
	assert.Equal(t, []string{"evidence/robust_controller.md", "file://junit.xml#robust_controller"}, rc.Evidence)
	assert.Equal(t, []string{"robust_controller survives a restart (failed) in vendor.xml"}, suiteEvidence(p, "robust_controller").NotPassed)
}

// Built again without the suite, an entry the suite set is build's own
// and goes back to the vendor, status and evidence emptied.
func TestBuildAgainWithoutTheSuite(t *testing.T) {
	p, _ := buildWithSuites(t, "", readSuite(t, "e2e-pass.xml"))
	again := buildFrom(t, "PRODUCT.yaml", fileOf(t, p, ProductName), metadataFor("1.37"), makeReport(t, demo))
	prod, err := ParseProduct(fileOf(t, again, ProductName))
	require.NoError(t, err)
	drm := itemOf(t, prod, "driver_runtime_management")
	assert.Empty(t, drm.Status)
	assert.Empty(t, drm.Evidence)
	assert.True(t, strings.HasPrefix(drm.Notes, VendorNotePrefix), drm.Notes)
}

func TestBuildWithJUnitBefore137(t *testing.T) {
	tpl, err := ReadTemplate(templatePath(t, "1.36"))
	require.NoError(t, err)
	md, err := tpl.ParseMetadata("metadata.yaml", []byte(metadataFor("1.36")))
	require.NoError(t, err)
	_, err = Build(BuildInput{Template: tpl, Metadata: md, Report: makeReport(t, demo), Suites: []*Suite{readSuite(t, "e2e-pass.xml")}})
	assert.ErrorContains(t, err, "checklist 1.36 does not accept test reports as evidence")
}

func TestParseJUnitMapRefuses(t *testing.T) {
	tpl, err := ReadTemplate(templatePath(t, "1.37"))
	require.NoError(t, err)
	_, err = tpl.ParseJUnitMap("m.yaml", []byte("gang_schedulng: [TestGang]\n"))
	var unknown *UnknownRequirementError
	require.True(t, errors.As(err, &unknown), "%v", err)
	assert.Equal(t, "gang_schedulng", unknown.ID)
	assert.Equal(t, "gang_scheduling", unknown.Nearest)
	assert.EqualError(t, err, `m.yaml: "gang_schedulng" is not a requirement of checklist 1.37 (did you mean "gang_scheduling"?)`)
	for _, bad := range []string{"gang_scheduling: TestGang\n", "gang_scheduling: []\n", "- a\n", "gang_scheduling: [a]\ngang_scheduling: [b]\n"} {
		_, err := tpl.ParseJUnitMap("m.yaml", []byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestParseSuiteRefuses(t *testing.T) {
	_, err := ParseSuite("empty.xml", []byte(`<testsuites></testsuites>`))
	assert.ErrorContains(t, err, "no <testcase>")
	_, err = ParseSuite("bad.xml", []byte(`<testsuite><testcase`))
	assert.ErrorContains(t, err, "not JUnit XML")
}

func TestContainsWord(t *testing.T) {
	for s, want := range map[string]bool{
		"[sig-ai] gang_scheduling works":       true,
		"TestX/gang_scheduling":                true,
		"gang_scheduling":                      true,
		"gang_scheduling_v2":                   false,
		"xgang_scheduling":                     false,
		"gang_scheduling_v2 gang_scheduling.x": true,
		"Gang_Scheduling":                      false,
	} {
		assert.Equal(t, want, containsWord(s, "gang_scheduling"), s)
	}
}

func TestMatchPattern(t *testing.T) {
	assert.True(t, matchPattern("[sig-ai] a (b", "[sig-ai] a (b"), "exact, though not a valid regular expression")
	assert.True(t, matchPattern("TestGang.*", "TestGangAll"))
	assert.False(t, matchPattern("Gang", "TestGangAll"), "a regular expression matches the whole name")
}

// The three ways a suite's link is wrong, each a lint error.
func TestLintSuiteEvidence(t *testing.T) {
	mixed := string(mustRead(t, "testdata/e2e-mixed.xml"))
	passing := string(mustRead(t, "testdata/e2e-pass.xml"))
	// t is the subtest's: a skip for missing templates must be its own.
	withEvidence := func(t *testing.T, link string) string {
		return editItem(t, filledProduct(t, "1.37"), "gang_scheduling", func(b string) string {
			return strings.Replace(b, `evidence: ["evidence/proof.md"]`, `evidence: ["`+link+`"]`, 1)
		})
	}
	tests := []struct {
		name  string
		link  string
		files map[string]string
		want  []found
	}{
		{"passing", "file://evidence/e2e/junit.xml#TestGangAllOrNothing", map[string]string{"evidence/e2e/junit.xml": passing}, nil},
		{"file missing", "file://evidence/e2e/junit.xml#TestGangAllOrNothing", map[string]string{},
			[]found{{"PRODUCT.yaml", "gang_scheduling", RuleEvidenceMissing}}},
		{"no such testcase", "file://evidence/e2e/junit.xml#TestGangPreemption", map[string]string{"evidence/e2e/junit.xml": passing},
			[]found{{"evidence/e2e/junit.xml", "gang_scheduling", RuleEvidenceTestcase}}},
		{"skipped testcase", "file://evidence/e2e/junit.xml#accelerator_metrics are scraped", map[string]string{"evidence/e2e/junit.xml": mixed},
			[]found{{"evidence/e2e/junit.xml", "gang_scheduling", RuleEvidenceFailing}, {"evidence/e2e/junit.xml", "gang_scheduling", RuleEvidenceTestcase}}},
		{"failed testcase", "file://evidence/e2e/junit.xml#[sig-ai] pod_autoscaling scales down", map[string]string{"evidence/e2e/junit.xml": mixed},
			[]found{{"evidence/e2e/junit.xml", "gang_scheduling", RuleEvidenceFailing}, {"evidence/e2e/junit.xml", "gang_scheduling", RuleEvidenceTestcase}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, withEvidence(t, tt.link), tt.files)
			assert.Equal(t, tt.want, lintFound(t, dir, LintOptions{Template: templatePath(t, "1.37")}))
		})
	}
}

// What build writes from suites lints clean where it cites them.
func TestBuildWithJUnitLints(t *testing.T) {
	p, _ := buildWithSuites(t, "junit-map.yaml", readSuite(t, "e2e-pass.xml"))
	dir := filepath.Join(t.TempDir(), "acme")
	require.NoError(t, p.Write(dir, false))
	res, err := LintDir(dir, LintOptions{Template: templatePath(t, "1.37")})
	require.NoError(t, err)
	for _, pr := range res.Problems {
		assert.NotContains(t, []string{RuleEvidenceMissing, RuleEvidenceTestcase, RuleEvidenceFailing, RuleEvidenceOutside}, pr.Rule, pr.String())
	}
	_, err = os.Stat(filepath.Join(dir, "evidence", "e2e-pass", "junit.xml"))
	assert.NoError(t, err)
}
