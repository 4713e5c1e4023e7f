package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
		missingShared(t, "the real submissions are not in %s/examples: %v", sharedCNCFExamples, err)
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

func TestSubmissionLintOnline(t *testing.T) {
	// A site on 127.0.0.1 stands in for the vendor's: its logo is missing.
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if strings.HasSuffix(r.URL.Path, ".svg") {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := orkestrixDir(t)
	p := filepath.Join(dir, "PRODUCT.yaml")
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	// Every URL points at the local site, the github.com one included: no
	// test may reach the internet. k8sConformanceUrl no longer has the
	// program's form, which lint reports offline.
	product := strings.NewReplacer(
		"https://docs.quantumcns.ai", srv.URL+"/docs",
		"https://quantumcns.ai", srv.URL,
		"https://github.com", srv.URL+"/github",
	).Replace(string(data))
	require.NotContains(t, product, "https://")
	require.NoError(t, os.WriteFile(p, []byte(product), 0o644))

	code, out, _ := runSubmission(t, "submission", "lint", dir)
	assert.Equal(t, exitNotMet, code)
	assert.Equal(t, int32(0), requests.Load(), "without --online nothing is requested")
	assert.Contains(t, out, "checked online by the program (not here): 9 URL(s)")

	code, out, stderr := runSubmission(t, "submission", "lint", dir, "--online", "--online-timeout", "5s")
	assert.Equal(t, exitNotMet, code, stderr)
	assert.Positive(t, requests.Load())
	assert.Contains(t, out, "PRODUCT.yaml: -: metadata-url: metadata.productLogoUrl "+srv.URL+"/docs/img/ORKESTRIX.svg answered 404 Not Found (line 12)\n")
	assert.Contains(t, out, "PRODUCT.yaml: -: k8s-conformance-url: ")
	assert.NotContains(t, out, "evidence-url")
	assert.Contains(t, out, "checked online: 13 URL(s) of evidence and metadata, each must answer below 400\n")
	assert.NotContains(t, out, "(not here)")
	assert.Contains(t, out, `not checked: vendorName "QUANTUM C&S": must be a CNCF member's exact name`)
	assert.Contains(t, out, dir+": 2 problem(s)")

	code, _, stderr = runSubmission(t, "submission", "lint", dir, "--online", "--online-timeout", "0s")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--online-timeout must be positive")
}
