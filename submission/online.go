package submission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Online rules: the program requests these URLs and wants an answer below 400.
const (
	RuleEvidenceURL = "evidence-url"
	RuleMetadataURL = "metadata-url"
)

// MetadataURLKeys are the metadata keys whose URLs the program requests.
var MetadataURLKeys = []string{"websiteUrl", "repoUrl", "documentationUrl", "productLogoUrl", "k8sConformanceUrl"}

const (
	// DefaultOnlineTimeout bounds each URL when OnlineOptions.Timeout is 0.
	DefaultOnlineTimeout = 10 * time.Second
	// DefaultOnlineConcurrency is how many URLs are requested at once when
	// OnlineOptions.Concurrency is 0.
	DefaultOnlineConcurrency = 8
	// MaxRedirects is how many redirects are followed from one URL.
	MaxRedirects = 10
	userAgent    = "aiconform-submission-lint (+https://github.com/aiconform/aiconform)"
)

// OnlineOptions tunes LintOnline and CheckURLs.
type OnlineOptions struct {
	// Client makes the requests; nil is http.DefaultClient's transport.
	// Its redirect policy is replaced by MaxRedirects and its timeout by
	// Timeout, on a copy: the client given is not changed.
	Client *http.Client
	// Timeout bounds each URL: its redirects, and the GET that follows a
	// HEAD the server does not allow. 0 is DefaultOnlineTimeout.
	Timeout time.Duration
	// Concurrency is how many URLs are requested at once; 0 is
	// DefaultOnlineConcurrency.
	Concurrency int
}

// URLTarget is a URL the program requests, and where PRODUCT.yaml names it.
type URLTarget struct {
	// Requirement is the checklist id of an evidence URL, empty for
	// metadata.
	Requirement string
	// MetadataKey is the metadata key of a metadata URL (websiteUrl).
	MetadataKey string
	URL         string
	// Line in PRODUCT.yaml: the requirement's entry, or the metadata key.
	Line int
}

// OnlineTargets lists the URLs the program requests for DIR/PRODUCT.yaml:
// every http(s) evidence entry and the metadata URLs, in file order. A
// metadata value still the template's placeholder is left out (lint reports
// it); one that is not an http(s) URL comes back as a problem, since no
// request can be made of it, except k8sConformanceUrl, whose form lint
// checks offline.
func OnlineTargets(dir string) ([]URLTarget, []LintProblem, error) {
	prod, err := ReadProduct(filepath.Join(dir, ProductName))
	if err != nil {
		return nil, nil, err
	}
	var targets []URLTarget
	var problems []LintProblem
	for _, k := range MetadataURLKeys {
		v := strings.TrimSpace(prod.Metadata[k])
		line := prod.MetadataLine[k]
		switch {
		case v == "" || placeholderRE.MatchString(v) || placeholderWordsRE.MatchString(v):
		case isHTTP(v):
			targets = append(targets, URLTarget{MetadataKey: k, URL: v, Line: line})
		case k != "k8sConformanceUrl":
			problems = append(problems, LintProblem{File: ProductName, Rule: RuleMetadataURL, Line: line,
				Message: fmt.Sprintf("metadata.%s %q is not an http(s) URL, so the program cannot request it", k, v)})
		}
	}
	for _, c := range prod.Categories {
		for _, it := range c.Items {
			for _, e := range it.Evidence {
				if isHTTP(e) {
					targets = append(targets, URLTarget{Requirement: it.ID, URL: e, Line: it.Line})
				}
			}
		}
	}
	return targets, problems, nil
}

func isHTTP(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// LintOnline requests every URL of DIR/PRODUCT.yaml the program requests
// and adds a problem to r for each that does not answer below 400, keeping
// r.Problems in Lint's order. It returns the URLs it checked.
func LintOnline(ctx context.Context, dir string, r *LintResult, opts OnlineOptions) ([]URLTarget, error) {
	targets, problems, err := OnlineTargets(dir)
	if err != nil {
		return nil, err
	}
	r.Problems = append(r.Problems, problems...)
	r.Problems = append(r.Problems, CheckURLs(ctx, targets, opts)...)
	sortProblems(r.Problems)
	return targets, nil
}

// CheckURLs requests each target's URL, once however often it is named, and
// returns a problem per target whose URL answers 400 or above, or not at
// all. A HEAD comes first; a server that answers it 405 or 501 is asked with
// a GET, whose body is not read.
func CheckURLs(ctx context.Context, targets []URLTarget, opts OnlineOptions) []LintProblem {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOnlineTimeout
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultOnlineConcurrency
	}
	client := http.Client{}
	if opts.Client != nil {
		client = *opts.Client
	}
	client.Timeout = 0 // the per-URL context bounds each request
	client.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
		if len(via) > MaxRedirects {
			return fmt.Errorf("more than %d redirects", MaxRedirects)
		}
		return nil
	}

	var urls []string
	answers := map[string]*answer{}
	for _, t := range targets {
		if answers[t.URL] == nil {
			answers[t.URL] = &answer{}
			urls = append(urls, t.URL)
		}
	}
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Add(1)
		sem <- struct{}{}
		go func(a *answer) {
			defer wg.Done()
			defer func() { <-sem }()
			*a = request(ctx, &client, u, opts.Timeout)
		}(answers[u])
	}
	wg.Wait()

	var problems []LintProblem
	for _, t := range targets {
		a := answers[t.URL]
		if a.err == nil && a.status < 400 {
			continue
		}
		p := LintProblem{File: ProductName, Requirement: t.Requirement, Rule: RuleEvidenceURL, Line: t.Line, Message: a.describe(t.URL)}
		if t.MetadataKey != "" {
			p.Rule = RuleMetadataURL
			p.Message = "metadata." + t.MetadataKey + " " + p.Message
		}
		problems = append(problems, p)
	}
	return problems
}

// answer is what one URL gave: a final status, or an error.
type answer struct {
	status     int
	statusText string
	// final is the URL that answered, after redirects.
	final   string
	err     error
	timeout time.Duration
}

func (a answer) describe(u string) string {
	if a.err != nil {
		if errors.Is(a.err, context.DeadlineExceeded) {
			return fmt.Sprintf("%s: no answer within %s", u, a.timeout)
		}
		return fmt.Sprintf("%s: %v", u, a.err)
	}
	msg := fmt.Sprintf("%s answered %s", u, a.statusText)
	if a.final != "" && a.final != u {
		msg += " (redirected to " + a.final + ")"
	}
	return msg
}

// request asks for u within timeout: HEAD, then GET when HEAD is not allowed.
func request(ctx context.Context, client *http.Client, u string, timeout time.Duration) answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a := send(ctx, client, http.MethodHead, u)
	if a.err == nil && (a.status == http.StatusMethodNotAllowed || a.status == http.StatusNotImplemented) {
		a = send(ctx, client, http.MethodGet, u)
	}
	a.timeout = timeout
	return a
}

func send(ctx context.Context, client *http.Client, method, u string) answer {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		// The URL is in the problem already; keep what went wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{err: err}
	}
	// Only the status counts; a GET's body may be large.
	resp.Body.Close()
	return answer{status: resp.StatusCode, statusText: resp.Status, final: resp.Request.URL.String()}
}
