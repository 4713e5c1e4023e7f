package bench

import (
	"context"
	"io"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
)

// Run is one `aiconform check all`: what was found, the verdicts and the
// sealed report.
type Run struct {
	Outcome  checks.Outcome
	Verdicts []checks.Verdict
	Report   *report.Report
}

// CheckAll does what `aiconform check all` does once its flags are read
// (cmd/aiconform/check.go): every requirement, every built-in profile,
// four checks at a time, judged at the recording's time for a recording;
// the report built, sealed and rendered as Markdown and JSON (into
// io.Discard: writing files is not what is measured).
func CheckAll(ctx context.Context, src cluster.Source) (Run, error) {
	registry := builtin.Registry()
	catalog, err := checks.Catalog(registry)
	if err != nil {
		return Run{}, err
	}
	sel, err := checks.Select([]string{"all"}, catalog, registry)
	if err != nil {
		return Run{}, err
	}
	profiles, err := checks.BuiltinProfiles()
	if err != nil {
		return Run{}, err
	}
	cache := cluster.NewCache(src)
	started := time.Now()
	info, err := cache.Info(ctx)
	if err != nil {
		return Run{}, err
	}
	opts := checks.RunOptions{Concurrency: 4, Timeout: time.Minute}
	if !info.Live && !info.RecordedAt.IsZero() {
		opts.JudgeAt = func() time.Time { return info.RecordedAt }
	}
	out := checks.Run(ctx, cache, profiles, sel.Checks, opts, time.Now)
	verdicts := checks.Evaluate(sel.Requirements, out)
	rep := report.Build(report.Tool{Name: "aiconform", Version: "bench"}, info, started, time.Now(), out, verdicts)
	if err := rep.Seal(checks.Must); err != nil {
		return Run{}, err
	}
	if err := report.Markdown(io.Discard, rep); err != nil {
		return Run{}, err
	}
	if err := report.JSON(io.Discard, rep); err != nil {
		return Run{}, err
	}
	return Run{Outcome: out, Verdicts: verdicts, Report: rep}, nil
}
