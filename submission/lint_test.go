package submission

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var placeholderValueRE = regexp.MustCompile(`"\[[^\]]*\]"`)

// filledProduct turns the real template of version into a submission that
// should lint clean: metadata filled, every requirement Implemented with a
// file of evidence, and the k8sConformanceUrl the program wants from 1.35.
func filledProduct(t *testing.T, version string) string {
	t.Helper()
	data, err := os.ReadFile(templatePath(t, version))
	require.NoError(t, err)
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "k8sConformanceUrl:") {
			continue
		}
		line = placeholderValueRE.ReplaceAllString(line, `"Acme"`)
		line = strings.Replace(line, `status: ""`, `status: "Implemented"`, 1)
		line = strings.Replace(line, `evidence: []`, `evidence: ["evidence/proof.md"]`, 1)
		lines = append(lines, line)
		if strings.HasPrefix(line, "  kubernetesVersion:") && versionAtLeast(version, "1.35") {
			lines = append(lines, `  k8sConformanceUrl: "https://github.com/cncf/k8s-conformance/tree/master/v`+version+`/acme"`)
		}
	}
	return strings.Join(lines, "\n")
}

// editItem rewrites the entry of one requirement id with edit.
func editItem(t *testing.T, product, id string, edit func(block string) string) string {
	t.Helper()
	lines := strings.Split(product, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "- id: "+id {
			start = i
			break
		}
	}
	require.NotEqual(t, -1, start, "no entry %s", id)
	end := start + 1
	for end < len(lines) && !strings.Contains(lines[end], "- id:") && !regexp.MustCompile(`^  \S`).MatchString(lines[end]) {
		end++
	}
	block := edit(strings.Join(lines[start:end], "\n"))
	return strings.Join(append(append(append([]string{}, lines[:start]...), block), lines[end:]...), "\n")
}

// writeDir lays out a submission: PRODUCT.yaml plus the given files.
func writeDir(t *testing.T, product string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	files["PRODUCT.yaml"] = product
	if _, ok := files["evidence/proof.md"]; !ok {
		files["evidence/proof.md"] = "# proof\n"
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

type found struct{ file, requirement, rule string }

func lintFound(t *testing.T, dir string, opts LintOptions) []found {
	t.Helper()
	problems, err := Lint(dir, opts)
	require.NoError(t, err)
	var out []found
	for _, p := range problems {
		out = append(out, found{p.File, p.Requirement, p.Rule})
		assert.NotEmpty(t, p.Message)
	}
	return out
}

func TestLintFilledTemplatesAreClean(t *testing.T) {
	for _, v := range []string{"1.33", "1.34", "1.35", "1.36", "1.37"} {
		t.Run(v, func(t *testing.T) {
			dir := writeDir(t, filledProduct(t, v), map[string]string{})
			// Against the template itself, and against the built-in facts.
			assert.Empty(t, lintFound(t, dir, LintOptions{Template: templatePath(t, v)}))
			assert.Empty(t, lintFound(t, dir, LintOptions{Template: sharedCNCF}))
			assert.Empty(t, lintFound(t, dir, LintOptions{}))
		})
	}
}

const junitMixed = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="aiconform" tests="4">
    <testcase name="TestRobustController" classname="aiconform"></testcase>
    <testcase name="TestBroken" classname="aiconform"><failure message="boom">boom</failure></testcase>
    <testcase name="TestErrored" classname="aiconform"><error message="x"/></testcase>
    <testcase name="TestLater" classname="aiconform"><skipped/></testcase>
  </testsuite>
</testsuites>
`

const junitGreen = `<testsuite name="aiconform"><testcase name="TestRobustController"/><testcase name="TestLater"><skipped/></testcase></testsuite>`

func TestLintFlags(t *testing.T) {
	setEvidence := func(e string) func(string) string {
		return func(b string) string {
			return strings.Replace(b, `evidence: ["evidence/proof.md"]`, `evidence: [`+e+`]`, 1)
		}
	}
	for _, tc := range []struct {
		name    string
		version string
		edit    func(t *testing.T, product string) string
		files   map[string]string
		want    []found
	}{{
		name: "changed level", version: "1.37",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "gang_scheduling", func(b string) string { return strings.Replace(b, "level: MUST", "level: SHOULD", 1) })
		},
		want: []found{{"PRODUCT.yaml", "gang_scheduling", RuleLevelChanged}},
	}, {
		name: "missing id", version: "1.36",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "pod_autoscaling", func(string) string { return "" })
		},
		want: []found{{"PRODUCT.yaml", "pod_autoscaling", RuleRequirementMissing}},
	}, {
		name: "changed description", version: "1.37",
		edit: func(t *testing.T, p string) string {
			// The program wants the template's grammar slip kept.
			return editItem(t, p, "accelerator_metrics", func(b string) string { return strings.Replace(b, "makes they available", "makes them available", 1) })
		},
		want: []found{{"PRODUCT.yaml", "accelerator_metrics", RuleDescriptionChanged}},
	}, {
		name: "N/A without notes", version: "1.35",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "gpu_sharing", func(b string) string { return strings.Replace(b, `"Implemented"`, `"N/A"`, 1) })
		},
		want: []found{{"PRODUCT.yaml", "gpu_sharing", RuleNANotes}},
	}, {
		name: "MUST not implemented, unknown status", version: "1.34",
		edit: func(t *testing.T, p string) string {
			p = editItem(t, p, "ai_inference", func(b string) string { return strings.Replace(b, `"Implemented"`, `"Partially Implemented"`, 1) })
			return editItem(t, p, "dra_support", func(b string) string { return strings.Replace(b, `"Implemented"`, `"Done"`, 1) })
		},
		want: []found{
			{"PRODUCT.yaml", "ai_inference", RuleMustImplemented},
			{"PRODUCT.yaml", "dra_support", RuleMustImplemented},
			{"PRODUCT.yaml", "dra_support", RuleStatusInvalid},
		},
	}, {
		name: "SHOULD left as the template has it is skipped", version: "1.37",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "workload_sandboxing", func(b string) string {
				return strings.NewReplacer(`"Implemented"`, `""`, `["evidence/proof.md"]`, `[]`).Replace(b)
			})
		},
	}, {
		name: "../ and absolute evidence paths", version: "1.37",
		edit: func(t *testing.T, p string) string {
			p = editItem(t, p, "robust_controller", setEvidence(`"../outside.md"`))
			return editItem(t, p, "gang_scheduling", setEvidence(`"/etc/passwd", "evidence/none.md"`))
		},
		want: []found{
			{"PRODUCT.yaml", "gang_scheduling", RuleEvidenceMissing},
			{"PRODUCT.yaml", "gang_scheduling", RuleEvidenceOutside},
			{"PRODUCT.yaml", "robust_controller", RuleEvidenceOutside},
		},
	}, {
		name: "failing #TestName in junit.xml", version: "1.37",
		edit: func(t *testing.T, p string) string {
			p = editItem(t, p, "robust_controller", setEvidence(`"file://results/junit.xml#TestBroken"`))
			return editItem(t, p, "gang_scheduling", setEvidence(`"file://results/junit.xml#TestLater", "file://results/junit.xml#TestMissing"`))
		},
		files: map[string]string{"results/junit.xml": junitMixed},
		want: []found{
			{"results/junit.xml", "gang_scheduling", RuleEvidenceFailing},
			{"results/junit.xml", "gang_scheduling", RuleEvidenceFailing},
			{"results/junit.xml", "gang_scheduling", RuleEvidenceTestcase},
			{"results/junit.xml", "gang_scheduling", RuleEvidenceTestcase},
			{"results/junit.xml", "robust_controller", RuleEvidenceFailing},
			{"results/junit.xml", "robust_controller", RuleEvidenceTestcase},
		},
	}, {
		name: "passing #TestName in a green junit.xml", version: "1.37",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "robust_controller", setEvidence(`"file://results/junit.xml#TestRobustController", "file://results/e2e.log"`))
		},
		files: map[string]string{"results/junit.xml": junitGreen, "results/e2e.log": "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\n"},
	}, {
		name: "failing tests in e2e.log and results.json", version: "1.37",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "robust_controller", setEvidence(`"results/e2e.log", "file://results/results.json#TestB"`))
		},
		files: map[string]string{
			"results/e2e.log":      "--- PASS: TestA (0.00s)\n    --- FAIL: TestA/sub (0.00s)\n",
			"results/results.json": `{"Action":"run","Test":"TestB"}` + "\n" + `{"Action":"fail","Test":"TestB"}` + "\n",
		},
		want: []found{
			{"results/e2e.log", "robust_controller", RuleEvidenceFailing},
			{"results/results.json", "robust_controller", RuleEvidenceFailing},
			{"results/results.json", "robust_controller", RuleEvidenceTestcase},
		},
	}, {
		name: "file:// before 1.37", version: "1.36",
		edit: func(t *testing.T, p string) string {
			return editItem(t, p, "robust_controller", setEvidence(`"file://evidence/proof.md"`))
		},
		want: []found{{"PRODUCT.yaml", "robust_controller", RuleEvidenceScheme}},
	}, {
		name: "placeholder in metadata", version: "1.37",
		edit: func(t *testing.T, p string) string {
			p = strings.Replace(p, `vendorName: "Acme"`, `vendorName: "[Vendor Name]"`, 1)
			return strings.Replace(p, `platformName: "Acme"`, `platformName: "Acme [Platform Name]"`, 1)
		},
		want: []found{
			{"PRODUCT.yaml", "", RuleMetadataPlaceholder},
			{"PRODUCT.yaml", "", RuleMetadataPlaceholder},
		},
	}, {
		name: "bad k8sConformanceUrl", version: "1.37",
		edit: func(t *testing.T, p string) string {
			return strings.Replace(p, "k8s-conformance/tree/master/v1.37/acme", "k8s-conformance/blob/master/v1.37/acme", 1)
		},
		want: []found{{"PRODUCT.yaml", "", RuleConformanceURL}},
	}, {
		name: "k8sConformanceUrl missing from 1.36, though the template lacks it", version: "1.36",
		edit: func(t *testing.T, p string) string {
			return regexp.MustCompile(`(?m)^  k8sConformanceUrl:.*\n`).ReplaceAllString(p, "")
		},
		want: []found{{"PRODUCT.yaml", "", RuleConformanceURL}},
	}, {
		name: "k8sConformanceUrl not needed in 1.34", version: "1.34",
		edit: func(t *testing.T, p string) string { return p },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := writeDir(t, tc.edit(t, filledProduct(t, tc.version)), files)
			assert.Equal(t, tc.want, lintFound(t, dir, LintOptions{Template: templatePath(t, tc.version)}))
		})
	}
}

func TestLintPathVersion(t *testing.T) {
	product := filledProduct(t, "1.36")
	dir := filepath.Join(t.TempDir(), "v1.35", "acme")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "evidence"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "PRODUCT.yaml"), []byte(product), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "proof.md"), []byte("x"), 0o644))
	assert.Equal(t, []found{{"PRODUCT.yaml", "", RulePathVersion}}, lintFound(t, dir, LintOptions{}))
}

func TestLintUnjudgeable(t *testing.T) {
	_, err := Lint(t.TempDir(), LintOptions{})
	assert.Error(t, err, "no PRODUCT.yaml")
	dir := writeDir(t, "metadata:\n  kubernetesVersion: v1.99\nspec: {}\n", map[string]string{})
	_, err = Lint(dir, LintOptions{})
	assert.ErrorContains(t, err, "--template")
	dir = writeDir(t, "metadata: [\n", map[string]string{})
	_, err = Lint(dir, LintOptions{})
	assert.Error(t, err)
}

// ORKESTRIX's real 1.36 submission gives only URLs as evidence and leaves
// unused SHOULDs as the template has them; the program accepted it, so lint
// must find nothing, and must hand every URL to the online check.
func TestLintRealSubmissionOrkestrix(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedCNCF, "examples", "v1.36-orkestrix-PRODUCT.yaml"))
	if err != nil {
		missingShared(t, "the real submissions are not in %s/examples: %v", sharedCNCF, err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "PRODUCT.yaml"), data, 0o644))
	r, err := LintDir(dir, LintOptions{Template: sharedCNCF})
	require.NoError(t, err)
	assert.Empty(t, r.Problems)
	assert.Equal(t, "1.36", r.Version)
	var reqs []string
	for _, u := range r.URLs {
		reqs = append(reqs, u.Requirement)
		assert.True(t, strings.HasPrefix(u.URL, "https://docs.quantumcns.ai/en/k8s-ai-conformance/evidence/"), u.URL)
	}
	assert.Equal(t, []string{"gpu_sharing", "ai_inference", "gang_scheduling", "cluster_autoscaling", "pod_autoscaling",
		"accelerator_metrics", "ai_service_metrics", "secure_accelerator_access", "robust_controller"}, reqs)
	require.Len(t, r.Unchecked, 1)
	assert.Contains(t, r.Unchecked[0], `vendorName "QUANTUM C&S"`)
}

// kOps's real 1.35 submission points at Markdown files that were not copied:
// lint must report those, one per requirement, and nothing else.
func TestLintRealSubmissionKOps(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedCNCF, "examples", "v1.35-kops-PRODUCT.yaml"))
	if err != nil {
		missingShared(t, "the real submissions are not in %s/examples: %v", sharedCNCF, err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "PRODUCT.yaml"), data, 0o644))
	problems, err := Lint(dir, LintOptions{Template: sharedCNCF})
	require.NoError(t, err)
	require.Len(t, problems, 10)
	for _, p := range problems {
		assert.Equal(t, RuleEvidenceMissing, p.Rule, p.String())
		assert.Contains(t, p.Message, "tests/Test", p.String())
	}
}
