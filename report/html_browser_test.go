//go:build e2e

package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browsers are the names Debian and Ubuntu give Chromium's binary.
var browsers = []string{"chromium", "chromium-browser"}

// TestHTMLInBrowser opens report.html in headless Chromium from a file://
// URL, as an auditor opens an attachment: the page must load with no
// console error, no exception and no request besides itself, show every
// requirement id, and each <details> must open on a click and reveal its
// evidence.
func TestHTMLInBrowser(t *testing.T) {
	bin := browser(t)
	demo, err := ReadFile(filepath.Join("..", "cmd", "aiconform", "testdata", "demo.json"))
	require.NoError(t, err, "the demo report, as check --fixture demo writes it")
	pages := []struct {
		name string
		r    *Report
	}{
		{"probed", sealed(t, probed())},
		{"hostile", sealed(t, hostile())},
		// Read back from report.json, which is how a page is made from an
		// earlier run.
		{"demo", demo},
	}

	// The whole test's bound, browser included; it takes a few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		// Chromium's sandbox refuses to start as root; anyone else keeps it.
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	require.NoError(t, chromedp.Do(browserCtx), "start %s", bin)

	dir := t.TempDir()
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			path := filepath.Join(dir, p.name+".html")
			var buf strings.Builder
			require.NoError(t, HTML(&buf, p.r))
			require.NoError(t, os.WriteFile(path, []byte(buf.String()), 0o644))
			openInBrowser(t, browserCtx, "file://"+path, p.r)
		})
	}
}

// browser finds Chromium or fails: CI installs it (tools/host-packages), so
// a missing browser is a broken machine, not a reason to skip.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range browsers {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatalf("no browser in PATH (looked for %s): run `make tools`, whose tools/host-packages installs Debian's chromium, or `apt-get install chromium`",
		strings.Join(browsers, ", "))
	return ""
}

// pageState is what the test reads from the page, before and after opening
// every <details>.
type pageState struct {
	Text     string `json:"text"`
	Details  int    `json:"details"`
	Open     int    `json:"open"`
	Timeline int    `json:"timeline"`
}

// readState is evaluated in the page: its visible text (innerText leaves
// out what a closed <details> hides) and its counts.
const readState = `({
	text: document.body.innerText,
	details: document.querySelectorAll("details").length,
	open: document.querySelectorAll("details[open]").length,
	timeline: Array.from(document.querySelectorAll("svg.timeline")).filter(s => s.getBoundingClientRect().width > 0).length,
})`

// openAll clicks the summary of every details still closed, as a reader
// would one by one.
const openAll = `document.querySelectorAll("details:not([open]) > summary").forEach(s => s.click())`

func openInBrowser(t *testing.T, browserCtx context.Context, url string, r *Report) {
	var mu sync.Mutex
	var problems, requests []string
	// A listener from the tab's first event on, so that nothing the page
	// logs while it loads is missed. It runs in the tab's read loop: it
	// only records.
	tab, cancel := chromedp.NewContext(browserCtx, chromedp.WithListener(func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			switch ev.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeAssert, runtime.ConsoleAPICalledTypeWarning:
				var args []string
				for _, a := range ev.Args {
					args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
		case *cdplog.EventEntryAdded:
			// Where the browser itself complains: a blocked fetch, a
			// violated Content-Security-Policy, a resource not found.
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, fmt.Sprintf("%s %s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	}))
	defer cancel()

	start := time.Now()
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body"))))
	before, err := chromedp.Run(tab, chromedp.Evaluate[pageState](readState))
	require.NoError(t, err)
	// One real mouse click first, then the rest as a reader would, one by
	// one, by script.
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS("details.check > summary"))))
	firstOpen, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector("details.check").open`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab, chromedp.Evaluate[chromedp.Void](openAll)))
	after, err := chromedp.Run(tab, chromedp.Evaluate[pageState](readState))
	require.NoError(t, err)
	t.Logf("loaded, read and opened %d details in %s", after.Details, time.Since(start).Round(time.Millisecond))

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, problems, "the page logged errors")
	assert.Equal(t, []string{url}, requests, "the page fetched nothing but itself")

	for _, req := range r.Requirements {
		assert.Contains(t, before.Text, req.ID, "requirement %s is visible without opening anything", req.ID)
	}
	require.NotZero(t, before.Details)
	assert.Zero(t, before.Open, "checks start folded")
	assert.True(t, firstOpen, "a click on a summary opens its details")
	assert.Equal(t, after.Details, after.Open, "every details opens")

	blocks := 0
	for _, req := range r.Requirements {
		for _, c := range req.Checks {
			if r.shown(c) {
				blocks += len(c.Evidence)
			}
		}
	}
	assert.Zero(t, strings.Count(before.Text, "# captured: "), "evidence is folded away at first")
	assert.Equal(t, blocks, strings.Count(after.Text, "# captured: "), "every evidence block shows once opened")

	if r.Run.Probe != nil {
		assert.Positive(t, after.Timeline, "the probe timelines are drawn")
	}
}
