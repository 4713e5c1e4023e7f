package checks_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorst(t *testing.T) {
	// From best to worst; Skip says nothing either way.
	order := []checks.Status{checks.Skip, checks.Pass, checks.Warn, checks.Fail, checks.Error}
	for i, a := range order {
		for j, b := range order {
			want := a
			if j > i {
				want = b
			}
			assert.Equal(t, want, checks.Worst(a, b), "Worst(%s, %s)", a, b)
		}
	}
	// An unknown status ranks with Skip and yields to anything.
	assert.Equal(t, checks.Pass, checks.Worst(checks.Status("bogus"), checks.Pass))
	assert.Equal(t, checks.Skip, checks.Worst(checks.Skip, checks.Status("")))
}

func res(id, op string, s checks.Status, reason string) checks.Result {
	return checks.Result{Check: checks.Meta{ID: id, Title: "Check " + id}, Operator: op, Status: s, Reason: reason}
}

var clusterWide = checks.Requirement{ID: "cluster_req", Level: checks.Must, Checks: []string{"a", "b"}}

func TestEvaluateAll(t *testing.T) {
	tests := []struct {
		name       string
		results    []checks.Result
		status     checks.RequirementStatus
		result     checks.Status
		conclusion string
	}{
		{
			name:       "no check ran",
			status:     checks.NotImplemented,
			result:     checks.Error,
			conclusion: "no check of this requirement was run",
		},
		{
			name:       "all skipped is not applicable",
			results:    []checks.Result{res("a", "", checks.Skip, "no GPU node"), res("b", "", checks.Skip, "nothing")},
			status:     checks.NotApplicable,
			result:     checks.Skip,
			conclusion: "not applicable: no GPU node",
		},
		{
			name:       "pass and skip",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine"), res("b", "", checks.Skip, "b n/a")},
			status:     checks.Implemented,
			result:     checks.Pass,
			conclusion: "a fine; b n/a",
		},
		{
			name:       "warn counts as met",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine"), res("b", "", checks.Warn, "b soon expires")},
			status:     checks.Implemented,
			result:     checks.Warn,
			conclusion: "a fine; b soon expires",
		},
		{
			name:       "pass and fail",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine"), res("b", "", checks.Fail, "b broken")},
			status:     checks.PartiallyImplemented,
			result:     checks.Fail,
			conclusion: "b: b broken",
		},
		{
			name:       "all fail",
			results:    []checks.Result{res("a", "", checks.Fail, "a broken"), res("b", "", checks.Fail, "b broken")},
			status:     checks.NotImplemented,
			result:     checks.Fail,
			conclusion: "a: a broken; b: b broken",
		},
		{
			name:       "pass and error",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine"), res("b", "", checks.Error, "forbidden")},
			status:     checks.PartiallyImplemented,
			result:     checks.Error,
			conclusion: "could not be fully evaluated: b: forbidden",
		},
		{
			name:       "error only",
			results:    []checks.Result{res("a", "", checks.Error, "list nodes: forbidden")},
			status:     checks.NotImplemented,
			result:     checks.Error,
			conclusion: "could not be fully evaluated: a: list nodes: forbidden",
		},
		{
			name:       "skip and error",
			results:    []checks.Result{res("a", "", checks.Skip, "n/a"), res("b", "", checks.Error, "timeout")},
			status:     checks.NotImplemented,
			result:     checks.Error,
			conclusion: "could not be fully evaluated: b: timeout",
		},
		{
			name:       "fail and error",
			results:    []checks.Result{res("a", "", checks.Fail, "broken"), res("b", "", checks.Error, "timeout")},
			status:     checks.NotImplemented,
			result:     checks.Error,
			conclusion: "could not be fully evaluated: a: broken; b: timeout",
		},
		{
			name:       "results of other checks are not counted",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine"), res("b", "", checks.Pass, "b fine"), res("z", "", checks.Fail, "other requirement")},
			status:     checks.Implemented,
			result:     checks.Pass,
			conclusion: "a fine; b fine",
		},
		{
			// `aiconform check a` runs one check of the requirement: it can
			// pass the run, but never claim the requirement met.
			name:       "a check of the requirement not run",
			results:    []checks.Result{res("a", "", checks.Pass, "a fine")},
			status:     checks.PartiallyImplemented,
			result:     checks.Pass,
			conclusion: "only some checks ran (not run: b); of those: a fine",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vs := checks.Evaluate([]checks.Requirement{clusterWide}, checks.Outcome{Results: tc.results})
			require.Len(t, vs, 1)
			v := vs[0]
			assert.Equal(t, tc.status, v.Status)
			assert.Equal(t, tc.result, v.Result)
			assert.Equal(t, tc.conclusion, v.Conclusion)
			assert.Empty(t, v.Operator)
			assertErrorNeverImplemented(t, v)
		})
	}
}

// assertErrorNeverImplemented: a requirement one of whose checks could not
// be evaluated is never reported as met.
func assertErrorNeverImplemented(t *testing.T, v checks.Verdict) {
	t.Helper()
	for _, r := range v.Results {
		if r.Status == checks.Error && v.Operator == "" {
			assert.NotEqual(t, checks.Implemented, v.Status, "an Error made %s Implemented", v.Requirement.ID)
			assert.False(t, v.Met())
		}
	}
	if !strings.HasPrefix(v.Conclusion, "only some checks ran") {
		assert.Equal(t, v.Status == checks.Implemented || v.Status == checks.NotApplicable, v.Met(), "Met agrees with %s", v.Status)
	}
}

var perOperator = checks.Requirement{ID: "robust_controller", Level: checks.Must, PerOperator: true, Solution: "AI operator with CRDs", Checks: []string{"x", "y"}}

func detections(found ...bool) []checks.Detection {
	ps := []*checks.Profile{
		{Name: "alpha", Title: "Alpha"},
		{Name: "beta", Title: "Beta"},
		{Name: "gamma", Title: "Gamma"},
	}
	var ds []checks.Detection
	for i, f := range found {
		ds = append(ds, checks.Detection{Profile: ps[i], Found: f})
	}
	return ds
}

func TestEvaluateOperators(t *testing.T) {
	tests := []struct {
		name     string
		dets     []checks.Detection
		results  []checks.Result
		status   checks.RequirementStatus
		result   checks.Status
		operator string
		// conclusion begins the verdict's conclusion, others ends it.
		conclusion string
		others     string
		operators  map[string]checks.Status
		reasons    map[string]string
	}{
		{
			name: "no operator detected",
			dets: detections(false, false, false),
			results: []checks.Result{
				res("x", "alpha", checks.Skip, "not installed"), res("x", "beta", checks.Skip, "not installed"),
				res("x", "gamma", checks.Skip, "not installed"),
			},
			status:     checks.NotImplemented,
			result:     checks.Fail,
			conclusion: "no AI operator with CRDs was found (looked for: Alpha, Beta, Gamma)",
			operators:  map[string]checks.Status{"alpha": checks.Skip, "beta": checks.Skip, "gamma": checks.Skip},
			reasons:    map[string]string{"alpha": "not installed"},
		},
		{
			name: "one operator carries it",
			dets: detections(true, true, false),
			results: []checks.Result{
				res("x", "alpha", checks.Fail, "alpha crashed"), res("y", "alpha", checks.Pass, "ok"),
				res("x", "beta", checks.Pass, "ok"), res("y", "beta", checks.Skip, "no webhooks"),
				res("x", "gamma", checks.Skip, "not installed"),
			},
			status:     checks.Implemented,
			result:     checks.Pass,
			operator:   "beta",
			conclusion: "Beta meets it: ",
			others:     "; not applicable: y: no webhooks (others: Alpha: x: alpha crashed)",
			operators:  map[string]checks.Status{"alpha": checks.Fail, "beta": checks.Pass, "gamma": checks.Skip},
			// A check that does not apply is said, not hidden behind
			// "every check passed".
			reasons: map[string]string{"alpha": "x: alpha crashed", "beta": "every check passed; not applicable: y: no webhooks", "gamma": "not installed"},
		},
		{
			name: "the first that passes carries it",
			dets: detections(true, true),
			results: []checks.Result{
				res("x", "alpha", checks.Pass, "ok"), res("y", "alpha", checks.Pass, "ok"),
				res("x", "beta", checks.Pass, "ok"), res("y", "beta", checks.Pass, "ok"),
			},
			status:     checks.Implemented,
			result:     checks.Pass,
			operator:   "alpha",
			conclusion: "Alpha meets it: ",
			others:     "(others: Beta: every check passed)",
		},
		{
			name: "a warning still carries it",
			dets: detections(true),
			results: []checks.Result{
				res("x", "alpha", checks.Warn, "restarted"), res("y", "alpha", checks.Pass, "ok"),
			},
			status:   checks.Implemented,
			result:   checks.Warn,
			operator: "alpha",
		},
		{
			name: "an Error check never carries it",
			dets: detections(true),
			results: []checks.Result{
				res("x", "alpha", checks.Pass, "ok"), res("y", "alpha", checks.Error, "list pods: forbidden"),
			},
			status:     checks.PartiallyImplemented,
			result:     checks.Error,
			conclusion: "could not be fully evaluated: no operator passed every check: Alpha: y: list pods: forbidden",
			operators:  map[string]checks.Status{"alpha": checks.Error},
		},
		{
			name: "every operator fails",
			dets: detections(true, true),
			results: []checks.Result{
				res("x", "alpha", checks.Fail, "alpha broken"), res("y", "alpha", checks.Fail, "alpha worse"),
				res("x", "beta", checks.Fail, "beta broken"),
			},
			status:     checks.NotImplemented,
			result:     checks.Fail,
			conclusion: "no operator passed every check: Alpha: x: alpha broken; y: alpha worse; Beta: x: beta broken",
		},
		{
			name: "a failure and an error",
			dets: detections(true, true),
			results: []checks.Result{
				res("x", "alpha", checks.Fail, "alpha broken"),
				res("x", "beta", checks.Error, "timeout"),
			},
			status: checks.NotImplemented,
			result: checks.Error,
		},
		{
			name: "some checks of some operator passed",
			dets: detections(true, true),
			results: []checks.Result{
				res("x", "alpha", checks.Pass, "ok"), res("y", "alpha", checks.Fail, "alpha broken"),
				res("x", "beta", checks.Fail, "beta broken"),
			},
			status: checks.PartiallyImplemented,
			result: checks.Fail,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := checks.Outcome{Detections: tc.dets, Results: tc.results}
			vs := checks.Evaluate([]checks.Requirement{perOperator}, out)
			require.Len(t, vs, 1)
			v := vs[0]
			assert.Equal(t, tc.status, v.Status, v.Conclusion)
			assert.Equal(t, tc.result, v.Result, v.Conclusion)
			assert.Equal(t, tc.operator, v.Operator)
			assert.True(t, strings.HasPrefix(v.Conclusion, tc.conclusion), "conclusion %q does not begin with %q", v.Conclusion, tc.conclusion)
			assert.True(t, strings.HasSuffix(v.Conclusion, tc.others), "conclusion %q does not end with %q", v.Conclusion, tc.others)
			require.Len(t, v.Operators, len(tc.dets), "one verdict per profile")
			for op, st := range tc.operators {
				assert.Equal(t, st, checkstest.OperatorVerdict(t, v, op).Verdict, op)
			}
			for op, reason := range tc.reasons {
				assert.Equal(t, reason, checkstest.OperatorVerdict(t, v, op).Reason, op)
			}
			assert.Len(t, v.Results, len(tc.results))
			assertErrorNeverImplemented(t, v)
			if v.Operator != "" {
				carrier := checkstest.OperatorVerdict(t, v, v.Operator)
				assert.Contains(t, []checks.Status{checks.Pass, checks.Warn}, carrier.Verdict)
			}
		})
	}
}

// When nothing could be judged, the verdict must say so rather than claim
// that no operator is installed.
func TestEvaluateOperatorsWhenNothingWasJudged(t *testing.T) {
	t.Run("the CRD list was refused", func(t *testing.T) {
		// What Run gives when Detect fails: nothing Found, every per-operator
		// result Error.
		out := checks.Outcome{Detections: detections(false, false), Results: []checks.Result{
			res("x", "alpha", checks.Error, "cannot tell whether Alpha is installed: forbidden"),
			res("x", "beta", checks.Error, "cannot tell whether Beta is installed: forbidden"),
		}}
		v := checks.Evaluate([]checks.Requirement{perOperator}, out)[0]
		assert.Equal(t, checks.Error, v.Result)
		assert.NotContains(t, v.Conclusion, "no AI operator with CRDs was found")
		assert.NotEqual(t, "not installed", checkstest.OperatorVerdict(t, v, "alpha").Reason)
	})
	t.Run("an operator is detected but every check skipped", func(t *testing.T) {
		out := checks.Outcome{Detections: detections(true), Results: []checks.Result{
			res("x", "alpha", checks.Skip, "Alpha registers no admission webhook"),
		}}
		v := checks.Evaluate([]checks.Requirement{perOperator}, out)[0]
		assert.NotContains(t, v.Conclusion, "no AI operator with CRDs was found")
	})
}

// A requirement with shownBy is carried only by a solution that one of
// those checks showed at work, and only by the profiles that may carry it.
func TestEvaluateShownBy(t *testing.T) {
	gangReq := checks.Requirement{ID: "gang_scheduling", Level: checks.Must, PerOperator: true, Solution: "gang scheduler",
		Checks: []string{"x", "seen", "probe"}, ShownBy: []string{"seen", "probe"}}
	queue := &checks.Profile{Name: "queue", Title: "Queue", Carries: []string{"robust_controller", "gang_scheduling"}}
	serving := &checks.Profile{Name: "serving", Title: "Serving"}
	dets := []checks.Detection{{Profile: queue, Found: true}, {Profile: serving, Found: true}}
	probeRes := func(st checks.Status, reason string) checks.Result {
		r := res("probe", "queue", st, reason)
		r.Check.Probe = true
		return r
	}
	judge := func(results ...checks.Result) checks.Verdict {
		// The serving operator's passing result must not count: it may
		// not carry gang_scheduling.
		results = append(results, res("x", "serving", checks.Pass, "healthy"))
		return checks.Evaluate([]checks.Requirement{gangReq}, checks.Outcome{Detections: dets, Results: results})[0]
	}

	t.Run("healthy, nothing shown", func(t *testing.T) {
		v := judge(res("x", "queue", checks.Pass, "ok"), res("seen", "queue", checks.Skip, "no gang to judge"),
			probeRes(checks.Skip, "probes are off"))
		assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
		assert.Equal(t, checks.Fail, v.Result)
		require.Len(t, v.Operators, 1, "only the profiles that may carry it are judged")
		assert.Equal(t, "queue", v.Operators[0].Operator)
		assert.Equal(t, "not shown: Queue: installed and healthy, but not shown at work: seen: no gang to judge; probe: probes are off", v.Conclusion)
	})
	t.Run("shown by the cluster's own gangs", func(t *testing.T) {
		v := judge(res("x", "queue", checks.Pass, "ok"), res("seen", "queue", checks.Pass, "2 gangs whole"),
			probeRes(checks.Skip, "probes are off"))
		assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
		assert.Equal(t, "queue", v.Operator)
		assert.Contains(t, v.Conclusion, "behaviour not probed")
		assert.Equal(t, "every check passed, shown at work by seen; behaviour not probed (probe: run with --probe)", checkstest.OperatorVerdict(t, v, "queue").Reason,
			"the submission's note says what carried it")
	})
	t.Run("shown by the probe", func(t *testing.T) {
		v := judge(res("x", "queue", checks.Pass, "ok"), res("seen", "queue", checks.Skip, "no gang to judge"),
			probeRes(checks.Pass, "admitted whole"))
		assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	})
	t.Run("nothing found", func(t *testing.T) {
		v := checks.Evaluate([]checks.Requirement{gangReq}, checks.Outcome{Detections: []checks.Detection{{Profile: queue}, {Profile: serving, Found: true}}})[0]
		assert.Equal(t, "no gang scheduler was found (looked for: Queue)", v.Conclusion)
	})
}
