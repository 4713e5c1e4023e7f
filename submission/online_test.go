package submission

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// site is a web server on 127.0.0.1 that answers by path and counts the
// requests it gets, by method and path.
type site struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string]int
}

func newSite(t *testing.T) *site {
	t.Helper()
	// Handlers that block wait for the request to be abandoned or for the
	// test to end, whichever comes first, so that Close never waits on them.
	testCtx, cancel := context.WithCancel(context.Background())
	s := &site{requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	mux.HandleFunc("/get-only", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	mux.HandleFunc("/get-only-missing", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	})
	// /hops/N redirects N times before answering 200 at /ok.
	mux.HandleFunc("/hops/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n <= 0 {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		if n == 1 {
			http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hops/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/moved-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/missing", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-testCtx.Done():
		}
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(cancel) // runs first: unblocks /hang before Close waits
	return s
}

func (s *site) count(methodPath string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[methodPath]
}

func TestCheckURLs(t *testing.T) {
	s := newSite(t)
	u := func(path string) string { return s.URL + path }
	targets := []URLTarget{
		{Requirement: "ai_inference", URL: u("/ok"), Line: 10},
		{Requirement: "ai_inference", URL: u("/missing"), Line: 10},
		{Requirement: "gang_scheduling", URL: u("/broken"), Line: 20},
		{Requirement: "pod_autoscaling", URL: u("/get-only"), Line: 30},
		{Requirement: "pod_autoscaling", URL: u("/get-only-missing"), Line: 30},
		{Requirement: "robust_controller", URL: u("/hops/10"), Line: 40},
		{Requirement: "robust_controller", URL: u("/hops/11"), Line: 40},
		{Requirement: "robust_controller", URL: u("/moved-away"), Line: 40},
		{Requirement: "robust_controller", URL: u("/ok"), Line: 40},
		{MetadataKey: "websiteUrl", URL: u("/missing"), Line: 5},
		{MetadataKey: "repoUrl", URL: "http://127.0.0.1:1/closed", Line: 6},
	}
	problems := CheckURLs(context.Background(), targets, OnlineOptions{Client: s.Client(), Concurrency: 3})
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"PRODUCT.yaml: ai_inference: evidence-url: " + u("/missing") + " answered 404 Not Found (line 10)",
		"PRODUCT.yaml: gang_scheduling: evidence-url: " + u("/broken") + " answered 502 Bad Gateway (line 20)",
		"PRODUCT.yaml: pod_autoscaling: evidence-url: " + u("/get-only-missing") + " answered 404 Not Found (line 30)",
		"PRODUCT.yaml: robust_controller: evidence-url: " + u("/hops/11") + ": more than 10 redirects (line 40)",
		"PRODUCT.yaml: robust_controller: evidence-url: " + u("/moved-away") + " answered 404 Not Found (redirected to " + u("/missing") + ") (line 40)",
		"PRODUCT.yaml: -: metadata-url: metadata.websiteUrl " + u("/missing") + " answered 404 Not Found (line 5)",
	}, got[:6])
	require.Len(t, got, 7)
	assert.Regexp(t, `^PRODUCT\.yaml: -: metadata-url: metadata\.repoUrl http://127\.0\.0\.1:1/closed: .*connection refused \(line 6\)$`, got[6])

	// HEAD first; GET only where HEAD is not allowed.
	assert.Equal(t, 1, s.count("HEAD /get-only"))
	assert.Equal(t, 1, s.count("GET /get-only"))
	assert.Equal(t, 1, s.count("GET /get-only-missing"))
	assert.Equal(t, 0, s.count("GET /missing"))
	// Each URL once, however often it is cited: /ok and /missing are cited
	// twice each, and requested once more at the end of a redirect chain.
	assert.Equal(t, 2, s.count("HEAD /missing"))
	assert.Equal(t, 2, s.count("HEAD /ok"), "/hops/11 is cut at its 11th redirect, before /ok")
	assert.Equal(t, 2, s.count("HEAD /hops/1"))
}

func TestCheckURLsTimeout(t *testing.T) {
	s := newSite(t)
	problems := CheckURLs(context.Background(), []URLTarget{
		{Requirement: "accelerator_metrics", URL: s.URL + "/hang", Line: 7},
	}, OnlineOptions{Client: s.Client(), Timeout: 50 * time.Millisecond})
	require.Len(t, problems, 1)
	assert.Equal(t, "PRODUCT.yaml: accelerator_metrics: evidence-url: "+s.URL+"/hang: no answer within 50ms (line 7)", problems[0].String())
}

func TestLintOnline(t *testing.T) {
	s := newSite(t)
	product := `metadata:
  kubernetesVersion: v1.36
  platformName: "Acme"
  vendorName: "Acme"
  websiteUrl: "` + s.URL + `/ok"
  repoUrl: "` + s.URL + `/missing"
  documentationUrl: "[Documentation URL]"
  productLogoUrl: "logo.png"
  k8sConformanceUrl: "github.com/cncf/k8s-conformance/tree/master/v1.36/acme"
spec:
  operator:
    - id: robust_controller
      level: MUST
      status: "Implemented"
      evidence:
        - "evidence/robust_controller.md"
        - "` + s.URL + `/hops/2"
        - "` + s.URL + `/missing"
  networking:
    - id: ai_inference
      level: MUST
      status: "Implemented"
      evidence: ["` + s.URL + `/get-only"]
`
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ProductName), []byte(product), 0o644))

	targets, problems, err := OnlineTargets(dir)
	require.NoError(t, err)
	var urls []string
	for _, tg := range targets {
		urls = append(urls, strings.TrimPrefix(tg.URL, s.URL)+"@"+tg.MetadataKey+tg.Requirement)
	}
	assert.Equal(t, []string{"/ok@websiteUrl", "/missing@repoUrl", "/hops/2@robust_controller", "/missing@robust_controller", "/get-only@ai_inference"}, urls)
	require.Len(t, problems, 1)
	assert.Equal(t, `PRODUCT.yaml: -: metadata-url: metadata.productLogoUrl "logo.png" is not an http(s) URL, so the program cannot request it (line 8)`, problems[0].String())

	r := &LintResult{Problems: []LintProblem{
		{File: "junit.xml", Requirement: "robust_controller", Rule: RuleEvidenceFailing, Message: "1 failing test(s): x"},
		{File: ProductName, Requirement: "ai_inference", Rule: RuleNANotes, Line: 21, Message: "N/A needs a justification in notes"},
	}}
	checked, err := LintOnline(context.Background(), dir, r, OnlineOptions{Client: s.Client()})
	require.NoError(t, err)
	assert.Len(t, checked, 5)
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"PRODUCT.yaml: -: metadata-url: metadata.repoUrl " + s.URL + "/missing answered 404 Not Found (line 6)",
		"PRODUCT.yaml: -: metadata-url: metadata.productLogoUrl \"logo.png\" is not an http(s) URL, so the program cannot request it (line 8)",
		"PRODUCT.yaml: ai_inference: na-notes: N/A needs a justification in notes (line 21)",
		"PRODUCT.yaml: robust_controller: evidence-url: " + s.URL + "/missing answered 404 Not Found (line 12)",
		"junit.xml: robust_controller: evidence-failing-tests: 1 failing test(s): x",
	}, got)

	_, err = LintOnline(context.Background(), t.TempDir(), &LintResult{}, OnlineOptions{})
	assert.ErrorIs(t, err, os.ErrNotExist)
}
