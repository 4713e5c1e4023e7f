package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sharedCNCFExamples = "../../../shared/cncf"

// orkestrixDir copies the real ORKESTRIX 1.36 submission into a temp dir.
func orkestrixDir(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedCNCFExamples, "examples", "v1.36-orkestrix-PRODUCT.yaml"))
	if err != nil {
		t.Skipf("the real submissions are not in %s/examples: %v", sharedCNCFExamples, err)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "PRODUCT.yaml"), data, 0o644))
	return dir
}

func TestSubmissionLintCommand(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		dir := orkestrixDir(t)
		code, out, stderr := runSubmission(t, "submission", "lint", dir, "--template", sharedCNCFExamples)
		assert.Equal(t, exitOK, code, stderr)
		assert.Contains(t, out, "checked online by the program (not here): 9 URL(s)")
		assert.Contains(t, out, "  robust_controller: https://docs.quantumcns.ai/en/k8s-ai-conformance/evidence/robust-controller/\n")
		assert.Contains(t, out, `vendorName "QUANTUM C&S": must be a CNCF member's exact name; checked online by the program only`)
		assert.Contains(t, out, dir+": no problems against "+filepath.Join(sharedCNCFExamples, "AIConformance-1.36.yaml"))
	})
	t.Run("problems exit 1", func(t *testing.T) {
		dir := orkestrixDir(t)
		p := filepath.Join(dir, "PRODUCT.yaml")
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		// robust_controller is the last entry, and a MUST.
		i := strings.LastIndex(string(data), `status: "Implemented"`)
		data = []byte(string(data[:i]) + `status: "N/A"` + string(data[i+len(`status: "Implemented"`):]))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		code, out, stderr := runSubmission(t, "submission", "lint", dir)
		assert.Equal(t, exitNotMet, code)
		assert.Contains(t, out, "PRODUCT.yaml: robust_controller: must-implemented: a MUST must be Implemented; status is \"N/A\" (line ")
		assert.Contains(t, stderr, "1 problem(s)")
	})
	t.Run("unreadable exit 2", func(t *testing.T) {
		code, _, stderr := runSubmission(t, "submission", "lint", t.TempDir())
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, "PRODUCT.yaml")
		code, _, _ = runSubmission(t, "submission", "lint")
		assert.Equal(t, exitUsage, code)
		code, _, stderr = runSubmission(t, "submission", "lint", orkestrixDir(t), "--template", "/nonexistent.yaml")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, stderr, "template")
	})
}
