package checks_test

import (
	"context"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures"
	"github.com/stretchr/testify/require"
)

// clock is the run's clock in every test; verdicts are judged at the time a
// test chooses (a recording's, or judgeAt), never at this one.
var clock = time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)

func fixedNow() time.Time { return clock }

// builtinProfiles loads the shipped profiles or stops the test.
func builtinProfiles(t *testing.T) []*checks.Profile {
	t.Helper()
	ps, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	return ps
}

// catalog is the built-in catalog checked against the registry.
func catalog(t *testing.T) []checks.Requirement {
	t.Helper()
	reqs, err := checks.Catalog(checks.Registry())
	require.NoError(t, err)
	return reqs
}

// runFixture replays a recorded scenario through every check with the
// builtin profiles, judged at the time it was recorded.
func runFixture(t *testing.T, name string) (checks.Outcome, cluster.Info) {
	t.Helper()
	data, err := fixtures.Read(name)
	require.NoError(t, err)
	rec, err := cluster.LoadRecording(name, data)
	require.NoError(t, err)
	info, err := rec.Info(context.Background())
	require.NoError(t, err)
	require.False(t, info.RecordedAt.IsZero(), "fixture %s has no recordedAt", name)
	out := checks.Run(context.Background(), cluster.NewCache(rec), builtinProfiles(t), checks.Registry(),
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return info.RecordedAt }},
		fixedNow)
	return out, info
}

// result is the one result of check id for operator op ("" for a
// cluster-wide check).
func result(t *testing.T, out checks.Outcome, id, op string) checks.Result {
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

// verdict is the verdict on requirement id.
func verdict(t *testing.T, vs []checks.Verdict, id string) checks.Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Requirement.ID == id {
			return v
		}
	}
	require.FailNow(t, "no verdict", "requirement %s", id)
	return checks.Verdict{}
}

// operatorVerdict is how operator op fared in v.
func operatorVerdict(t *testing.T, v checks.Verdict, op string) checks.OperatorVerdict {
	t.Helper()
	for _, ov := range v.Operators {
		if ov.Operator == op {
			return ov
		}
	}
	require.FailNow(t, "no operator verdict", "operator %s in %s", op, v.Requirement.ID)
	return checks.OperatorVerdict{}
}
