package bench

import (
	"context"
	"io"
	"time"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
)

// CheckAll is `aiconform check all` once its flags are read: the audit
// package's plan of every requirement and built-in profile, as many checks
// at a time as its flag's default, the report sealed and rendered as Markdown
// and JSON (into io.Discard: writing files is not what is measured).
func CheckAll(ctx context.Context, src cluster.Source) (audit.Result, error) {
	plan, err := audit.NewPlan([]string{"all"}, nil, checks.Extensions{})
	if err != nil {
		return audit.Result{}, err
	}
	a, err := audit.Open(ctx, src, time.Now)
	if err != nil {
		return audit.Result{}, err
	}
	r, err := a.Run(ctx, plan, audit.Options{
		Run:    checks.RunOptions{Concurrency: audit.DefaultConcurrency, Timeout: audit.DefaultTimeout},
		Tool:   report.Tool{Name: "aiconform", Version: "bench"},
		FailOn: checks.Must,
	})
	if err != nil {
		return audit.Result{}, err
	}
	if err := report.Markdown(io.Discard, r.Report); err != nil {
		return audit.Result{}, err
	}
	if err := report.JSON(io.Discard, r.Report); err != nil {
		return audit.Result{}, err
	}
	return r, nil
}
