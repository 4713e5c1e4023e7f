// Package checkstest is for tests only: the fake cluster, fixtures and
// helpers that the tests of checks and of its check groups share.
package checkstest

import (
	"context"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures"
	"github.com/stretchr/testify/require"
)

// Clock is the run's clock in every test; verdicts are judged at the time a
// test chooses (a recording's, or JudgeAt), never at this one.
var Clock = time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)

// FixedNow is a run's clock that always says Clock.
func FixedNow() time.Time { return Clock }

// BuiltinProfiles loads the shipped profiles or stops the test.
func BuiltinProfiles(t testing.TB) []*checks.Profile {
	t.Helper()
	ps, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	return ps
}

// RunFixture replays a recorded scenario through every check of registry
// with the builtin profiles, judged at the time it was recorded.
func RunFixture(t testing.TB, registry []checks.Check, name string) (checks.Outcome, cluster.Info) {
	t.Helper()
	data, err := fixtures.Recorded(name)
	require.NoError(t, err)
	rec, err := cluster.LoadRecording(name, data)
	require.NoError(t, err)
	info, err := rec.Info(context.Background())
	require.NoError(t, err)
	require.False(t, info.RecordedAt.IsZero(), "fixture %s has no recordedAt", name)
	out := checks.Run(context.Background(), cluster.NewCache(rec), BuiltinProfiles(t), Everything(registry),
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return info.RecordedAt }},
		FixedNow)
	return out, info
}

// Result is the one result of check id for operator op ("" for a
// cluster-wide check).
func Result(t testing.TB, out checks.Outcome, id, op string) checks.Result {
	t.Helper()
	var found []checks.Result
	for _, r := range out.Results {
		if r.Check.ID == id && r.Operator == op {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "results for check %s operator %q", id, op)
	return found[0]
}

// Verdict is the verdict on requirement id.
func Verdict(t testing.TB, vs []checks.Verdict, id string) checks.Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Requirement.ID == id {
			return v
		}
	}
	require.FailNow(t, "no verdict", "requirement %s", id)
	return checks.Verdict{}
}

// OperatorVerdict is how operator op fared in v.
func OperatorVerdict(t testing.TB, v checks.Verdict, op string) checks.OperatorVerdict {
	t.Helper()
	for _, ov := range v.Operators {
		if ov.Operator == op {
			return ov
		}
	}
	require.FailNow(t, "no operator verdict", "operator %s in %s", op, v.Requirement.ID)
	return checks.OperatorVerdict{}
}

// StubCheck is a check whose behaviour a test writes: Spec is its Meta,
// and Do its Run.
type StubCheck struct {
	Spec checks.Meta
	Do   func(ctx context.Context, env *checks.Env) (checks.Result, error)
}

// Meta implements checks.Check.
func (s StubCheck) Meta() checks.Meta { return s.Spec }

// Run implements checks.Check.
func (s StubCheck) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	return s.Do(ctx, env)
}

// Stub is a check of a test requirement called id that runs run.
func Stub(id string, perOperator bool, run func(ctx context.Context, env *checks.Env) (checks.Result, error)) StubCheck {
	req := "test"
	if perOperator {
		// The requirement every profile may carry unless it says otherwise.
		req = "robust_controller"
	}
	return StubCheck{Spec: checks.Meta{ID: id, Title: id, Requirement: req, PerOperator: perOperator}, Do: run}
}

// Everything is registry with the catalog's requirements, as `check all`
// selects them, when registry holds every check the catalog names; a
// test's few checks get no requirement, each then run for the operators
// that may carry its own.
func Everything(registry []checks.Check) checks.Selection {
	reqs, err := checks.Catalog(registry)
	if err != nil {
		return checks.Selection{Checks: registry}
	}
	return checks.Selection{Requirements: reqs, Checks: registry}
}
