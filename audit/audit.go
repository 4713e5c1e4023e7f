// Package audit runs one audit: a plan of checks on a cluster source,
// judged and built into a sealed report. `aiconform check`, `submission
// build`, the benchmarks and the end-to-end tests all run audits here, so
// that what is measured and tested is what users run.
package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/report"
)

// The defaults of `aiconform check`'s --concurrency and --timeout, which
// the benchmarks run with too.
const (
	DefaultConcurrency = 4
	DefaultTimeout     = time.Minute
)

// Plan is what an audit runs: the requirements and checks of a selection,
// the operator profiles, the user's extensions, and the digest of that
// catalog.
type Plan struct {
	Selection checks.Selection
	Profiles  []*checks.Profile
	// Skips are what the user left out of the run, with why.
	Skips []checks.Exclusion
	// Digest identifies the catalog the verdicts were judged by; a run
	// with extensions says so in it ("+extensions:sha256:...").
	Digest string
	// skippedChecks are the skipped checks the selection had, for the
	// results that say so.
	skippedChecks []checks.Meta
}

// SelectionError is a selection naming no requirement or check, or
// extensions that do not fit the catalog: a usage error, known before the
// cluster is read.
type SelectionError struct{ Err error }

func (e *SelectionError) Error() string { return e.Err.Error() }
func (e *SelectionError) Unwrap() error { return e.Err }

// NewPlan resolves ids ("all", requirement ids, check ids) against the
// built-in checks and the user's extensions; profiles nil means the
// built-in ones.
func NewPlan(ids []string, profiles []*checks.Profile, ext checks.Extensions) (*Plan, error) {
	catalog, registry, err := Catalog(ext)
	if err != nil {
		return nil, err
	}
	if profiles == nil {
		if profiles, err = checks.BuiltinProfiles(); err != nil {
			return nil, err
		}
	}
	digest, err := checks.CatalogDigest(builtin.Registry(), profiles)
	if err != nil {
		return nil, err
	}
	if !ext.Empty() {
		d, err := ext.Digest()
		if err != nil {
			return nil, err
		}
		digest += "+extensions:" + d
	}
	sel, err := checks.Select(ids, catalog, registry)
	if err != nil {
		return nil, &SelectionError{err}
	}
	p := &Plan{Selection: sel.Without(ext.Skips), Profiles: profiles, Skips: ext.Skips, Digest: digest}
	for _, c := range sel.Checks {
		if skip(ext.Skips, c.Meta().ID) != nil {
			p.skippedChecks = append(p.skippedChecks, c.Meta())
		}
	}
	return p, nil
}

// Catalog is the requirements and the checks of a run: the built-in ones
// with the user's extensions. Extensions that do not fit the catalog are
// a SelectionError.
func Catalog(ext checks.Extensions) ([]checks.Requirement, []checks.Check, error) {
	registry := builtin.Registry()
	catalog, err := checks.Catalog(registry)
	if err != nil {
		return nil, nil, err
	}
	if ext.Empty() {
		return catalog, registry, nil
	}
	catalog, registry, err = checks.Extend(catalog, registry, ext)
	if err != nil {
		return nil, nil, &SelectionError{err}
	}
	return catalog, registry, nil
}

// skip is the exclusion of id, nil when it runs.
func skip(skips []checks.Exclusion, id string) *checks.Exclusion {
	for i := range skips {
		if skips[i].ID == id {
			return &skips[i]
		}
	}
	return nil
}

// Audit is a cluster source opened for one audit: every check reads it
// through one cache.
type Audit struct {
	Cache *cluster.Cache
	Info  cluster.Info
	// Started is when the audit began, the report's start.
	Started time.Time
	now     func() time.Time
}

// InfoError is a cluster whose identity could not be read: nothing else
// would be either. Info holds what was known (the server's address).
type InfoError struct {
	Info cluster.Info
	Err  error
}

func (e *InfoError) Error() string { return e.Err.Error() }
func (e *InfoError) Unwrap() error { return e.Err }

// Open reads the source's identity first, so that a cluster that cannot be
// reached fails before any check starts.
func Open(ctx context.Context, src cluster.Source, now func() time.Time) (*Audit, error) {
	a := &Audit{Cache: cluster.NewCache(src), Started: now(), now: now}
	info, err := a.Cache.Info(ctx)
	if err != nil {
		return nil, &InfoError{Info: info, Err: err}
	}
	a.Info = info
	return a, nil
}

// Options bound an audit's run and say what its report carries.
type Options struct {
	// Run bounds the checks (concurrency, time limit, probes, progress).
	// Its JudgeAt is set here: a recording is judged at its own time.
	Run checks.RunOptions
	// Tool is the report's producer.
	Tool report.Tool
	// Redact, when set, rewrites the report's identifying values before
	// it is sealed (--redact).
	Redact func(*report.Report)
	// FailOn is the level whose failures make the report's exit nonzero.
	FailOn checks.Level
}

// Result is what an audit found, its verdicts and its sealed report.
type Result struct {
	Outcome  checks.Outcome
	Verdicts []checks.Verdict
	Report   *report.Report
}

// ErrInterrupted is an audit whose context ended before its checks did:
// it makes no report.
var ErrInterrupted = errors.New("interrupted")

// Run runs the plan's checks and builds the sealed report. Probes are the
// caller's: their session is in o.Run.Probe and its cleanup is the
// caller's, after Run returns.
func (a *Audit) Run(ctx context.Context, p *Plan, o Options) (Result, error) {
	opts := o.Run
	if !a.Info.Live && !a.Info.RecordedAt.IsZero() {
		at := a.Info.RecordedAt
		opts.JudgeAt = func() time.Time { return at }
	}
	out := checks.Run(ctx, a.Cache, p.Profiles, p.Selection, opts, a.now)
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
	}
	for _, m := range p.skippedChecks {
		s := skip(p.Skips, m.ID)
		at := a.now()
		out.Results = append(out.Results, checks.Result{Check: m, Status: checks.Skip,
			Reason: fmt.Sprintf("skipped by %s: %s", s.Source, s.Reason), Started: at, Finished: at})
	}
	verdicts := checks.Evaluate(p.Selection.Requirements, out)
	for i, v := range verdicts {
		if s := skip(p.Skips, v.Requirement.ID); s != nil {
			verdicts[i] = checks.SkippedVerdict(v.Requirement, *s)
		}
	}
	tool := o.Tool
	tool.CatalogDigest = p.Digest
	rep := report.Build(tool, a.Info, a.Started, a.now(), out, verdicts)
	if opts.Probe != nil {
		rep.Run.Probe = &report.ProbeRun{RunID: opts.Probe.RunID, Namespace: opts.Probe.Namespace}
	}
	if o.Redact != nil {
		o.Redact(rep)
	}
	if err := rep.Seal(o.FailOn); err != nil {
		return Result{}, err
	}
	return Result{Outcome: out, Verdicts: verdicts, Report: rep}, nil
}
