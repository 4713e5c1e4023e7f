package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runReport runs `aiconform report ARGS...` through the real root.
func runReport(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return run(t, append([]string{"report"}, args...)...)
}

// fixtureJSON writes report.json of `check all --fixture name` and returns
// its path.
func fixtureJSON(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	code, _, errOut := run(t, "check", "all", "--fixture", fixtureArg(name), "--out", dir)
	require.Contains(t, []int{0, 1}, code, errOut)
	return filepath.Join(dir, "report.json")
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestReportDiff(t *testing.T) {
	demo := fixtureJSON(t, "demo")
	crashloop := fixtureJSON(t, "controller-crashloop")
	noOperator := fixtureJSON(t, "no-operator")
	demoData, err := os.ReadFile(demo)
	require.NoError(t, err)
	withField := writeFile(t, "extra.json", strings.Replace(string(demoData), `"schemaVersion": "1",`, `"schemaVersion": "1", "surprise": true,`, 1))
	v2 := writeFile(t, "v2.json", strings.Replace(string(demoData), `"schemaVersion": "1",`, `"schemaVersion": "2", "newThing": {},`, 1))

	tests := []struct {
		name       string
		args       []string
		code       int
		wantOut    string
		wantStderr string
	}{
		{"identical reports", []string{"diff", demo, demo}, 0, "no changes\n\nno regression: no requirement got worse\n", ""},
		{"kserve crash-loops, kuberay still carries robust_controller", []string{"diff", demo, crashloop}, 0,
			"controller-ready (kserve): pass → fail", ""},
		{"no operator left: a regression", []string{"diff", demo, noOperator}, 1,
			"robust_controller: Implemented → Not Implemented  [regression]", "REGRESSION: 9 requirements got worse: robust_controller"},
		{"the way back is no regression", []string{"diff", noOperator, demo}, 0, "kserve: not detected → detected", ""},
		{"json", []string{"diff", demo, noOperator, "-o", "json"}, 1, `"regressed": true`, "REGRESSION"},
		{"one argument", []string{"diff", demo}, 2, "", "two report.json files, OLD and NEW; got 1"},
		{"three arguments", []string{"diff", demo, demo, demo}, 2, "", "; got 3"},
		{"bad output", []string{"diff", demo, demo, "-o", "yaml"}, 2, "", `--output "yaml"`},
		{"missing file", []string{"diff", demo, "nope.json"}, 2, "", "nope.json: no such file"},
		{"not JSON", []string{"diff", writeFile(t, "bad.json", "{\n\"schemaVersion\": \"1\",\n}"), demo}, 2, "", "bad.json: not a report.json: line 3: invalid character '}'"},
		{"not a report", []string{"diff", demo, writeFile(t, "other.json", `{"kind": "List"}`)}, 2, "", "other.json: no schemaVersion"},
		{"an unknown field", []string{"diff", demo, withField}, 2, "", `extra.json: json: unknown field "surprise"`},
		{"a newer schema", []string{"diff", v2, demo}, 2, "", `v2.json: schemaVersion "2" is not one this aiconform reads`},
		{"two documents", []string{"diff", demo, writeFile(t, "two.json", "{\"schemaVersion\": \"1\"}\n{}\n")}, 2, "", "two.json: not a report.json: line 2: invalid character '{' after top-level value"},
		{"unknown subcommand", []string{"dif", demo, demo}, 2, "", `unknown command "dif"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runReport(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantOut)
			assert.Contains(t, errOut, tt.wantStderr)
		})
	}

	t.Run("json is the Changes of report.Diff", func(t *testing.T) {
		_, out, _ := runReport(t, "diff", demo, crashloop, "-o", "json")
		var got report.Changes
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&got))
		assert.Equal(t, report.DiffSchemaVersion, got.SchemaVersion)
		assert.False(t, got.Regressed)
		assert.True(t, got.DifferentClusters)
		assert.Contains(t, got.Requirements, report.RequirementChange{ID: "robust_controller", Level: "MUST", Kind: "operator", Old: "kserve", New: "kubeflow-trainer"})
	})

	t.Run("text ends on the verdict", func(t *testing.T) {
		_, out, _ := runReport(t, "diff", demo, noOperator)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		assert.True(t, strings.HasPrefix(lines[len(lines)-1], "REGRESSION: "), out)
	})
}

// TestReportDiffFlags is the argv -> options layer.
func TestReportDiffFlags(t *testing.T) {
	var got *ReportDiffOptions
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	cmd := NewCmdReportDiff(streams, func(o *ReportDiffOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a.json", "b.json", "-o", "json"})
	require.NoError(t, cmd.Execute())
	require.NotNil(t, got)
	assert.Equal(t, "a.json", got.OldPath)
	assert.Equal(t, "b.json", got.NewPath)
	assert.Equal(t, "json", got.Output)
}
