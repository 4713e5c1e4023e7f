package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/report"
)

// clustersAtOnce bounds how many clusters a run of several contexts reads
// at a time: each run is already concurrent within its cluster, and a
// laptop auditing a fleet should not open a hundred at once.
const clustersAtOnce = 4

// contexts says which kubeconfig contexts a run covers when it covers
// several: the names --context lists (a,b) or, with --all-contexts, every
// context of the kubeconfig, in name order. Nil for a run of one cluster.
func (o *CheckOptions) contexts() ([]string, error) {
	named := o.ConfigFlags.Overrides.CurrentContext
	if o.AllContexts {
		if named != "" {
			return nil, usageErrorf("--all-contexts and --context both say which clusters; give one")
		}
		raw, err := o.ConfigFlags.RawConfig()
		if err != nil {
			return nil, usageErrorf("--all-contexts: %v", err)
		}
		names := make([]string, 0, len(raw.Contexts))
		for name := range raw.Contexts {
			names = append(names, name)
		}
		if len(names) == 0 {
			return nil, usageErrorf("--all-contexts: the kubeconfig has no context")
		}
		slices.Sort(names)
		return names, nil
	}
	if !strings.Contains(named, ",") {
		return nil, nil
	}
	var names []string
	for _, n := range strings.Split(named, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, usageErrorf("--context %q: an empty context name", named)
		}
		if slices.Contains(names, n) {
			return nil, usageErrorf("--context %q: %s is named twice", named, n)
		}
		names = append(names, n)
	}
	return names, nil
}

// unsafeInPath is what a context name may hold that a directory name
// should not (an EKS context is an ARN: arn:aws:eks:REGION:ACCOUNT:cluster/NAME).
var unsafeInPath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// contextDir is the report directory of one context under --out.
func contextDir(out, name string) string {
	d := strings.Trim(unsafeInPath.ReplaceAllString(name, "_"), ".")
	if d == "" {
		// "." or "..": never DIR itself or its parent.
		d = "_"
	}
	return filepath.Join(out, d)
}

// clusterRun is what one context's run gave.
type clusterRun struct {
	context string
	dir     string
	rep     *report.Report
	err     error
}

// runContexts runs the checks against each context, a few clusters at a
// time, writes each report into its own directory under --out, and prints
// a matrix of requirement by cluster. A cluster that cannot be reached or
// read is an error of that cluster, shown in its column; the run goes on.
// The exit code is the worst of the clusters': 1 when one is not met or
// could not be judged, 3 only when none could be reached.
func (o *CheckOptions) runContexts(ctx context.Context, names []string, failOn checks.Level) error {
	if o.Fixture != "" {
		return usageErrorf("--fixture is a recording of one cluster; it takes no contexts (%s)", strings.Join(names, ", "))
	}
	if o.OutDir == "" {
		return usageErrorf("%d contexts make %d reports: name their directory with --out DIR (one DIR/CONTEXT each)", len(names), len(names))
	}
	if o.Output != "table" {
		return usageErrorf("-o %s prints one report; with several contexts stdout shows the matrix of clusters, and each report is in --out DIR/CONTEXT", o.Output)
	}
	dirs := map[string]string{}
	for _, n := range names {
		d := contextDir(o.OutDir, n)
		if other, ok := dirs[d]; ok {
			return usageErrorf("contexts %s and %s would share the report directory %s", other, n, d)
		}
		dirs[d] = n
	}
	runs := make([]clusterRun, len(names))
	sem := make(chan struct{}, clustersAtOnce)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := clusterRun{context: name, dir: contextDir(o.OutDir, name)}
			flags := o.RunFlags
			flags.ConfigFlags = o.ConfigFlags.ForContext(name)
			// One progress line per cluster would overwrite each
			// other's; a line per finished cluster says enough.
			flags.Progress, flags.Quiet = false, true
			var errOut strings.Builder
			r.rep, r.err = flags.Report(ctx, o.IDs, failOn, &errOut, o.now)
			if r.err == nil {
				r.err = writeReports(r.dir, r.rep)
			}
			runs[i] = r
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprint(o.streams.ErrOut, prefixLines(name+": ", errOut.String()))
			switch {
			case r.err != nil:
				fmt.Fprintf(o.streams.ErrOut, "%s: error: %v\n", name, r.err)
			case r.rep.Summary.Passed:
				fmt.Fprintf(o.streams.ErrOut, "%s: PASSED, report in %s\n", name, r.dir)
			default:
				fmt.Fprintf(o.streams.ErrOut, "%s: FAILED, report in %s\n", name, r.dir)
			}
		}()
	}
	wg.Wait()
	for _, r := range runs {
		var ie *interruptedError
		if errors.As(r.err, &ie) {
			return r.err
		}
	}
	cols := make([]report.Cluster, len(runs))
	for i, r := range runs {
		cols[i] = report.Cluster{Name: r.context, Report: r.rep, Err: r.err}
	}
	if err := report.Matrix(o.streams.Out, cols); err != nil {
		return err
	}
	var unreachable, failed []string
	for _, r := range runs {
		var ce *clusterError
		switch {
		case errors.As(r.err, &ce):
			unreachable = append(unreachable, r.context)
		case r.err != nil, !r.rep.Summary.Passed:
			failed = append(failed, r.context)
		}
	}
	switch {
	case len(unreachable) == len(runs):
		return &clusterError{fmt.Errorf("no cluster could be reached: %s", strings.Join(unreachable, ", "))}
	case len(failed)+len(unreachable) > 0:
		return &notMetError{msg: fmt.Sprintf("a %s requirement is not met, or could not be judged, on %s", o.FailOn, strings.Join(append(failed, unreachable...), ", "))}
	}
	return nil
}

// prefixLines puts prefix before each line of s.
func prefixLines(prefix, s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}
