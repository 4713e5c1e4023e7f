package checks_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// stubCheck is a check whose behaviour a test writes.
type stubCheck struct {
	meta checks.Meta
	run  func(ctx context.Context, env *checks.Env) (checks.Result, error)
}

func (s stubCheck) Meta() checks.Meta { return s.meta }

func (s stubCheck) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	return s.run(ctx, env)
}

func stub(id string, perOperator bool, run func(ctx context.Context, env *checks.Env) (checks.Result, error)) stubCheck {
	return stubCheck{meta: checks.Meta{ID: id, Title: id, Requirement: "test", PerOperator: perOperator}, run: run}
}

func passes(ctx context.Context, env *checks.Env) (checks.Result, error) {
	return checks.Result{Status: checks.Pass, Reason: "fine"}, nil
}

// absentProfile is an operator the fake cluster does not run.
func absentProfile(t *testing.T) *checks.Profile {
	t.Helper()
	ps, err := checks.ParseProfiles("absent.yaml", []byte(`name: absent
title: Absent Operator
groups: [absent.example.com]
controller: {namespace: absent, selector: app=absent}
`))
	require.NoError(t, err)
	return ps[0]
}

func runStubs(t *testing.T, opts checks.RunOptions, cs ...checks.Check) checks.Outcome {
	t.Helper()
	c := newWorld(t).serve().cache()
	return checks.Run(context.Background(), c, []*checks.Profile{widgetProfile(t), absentProfile(t)}, cs, opts, fixedNow)
}

func TestRunTurnsFailuresIntoError(t *testing.T) {
	partial := checks.Step{Command: "kubectl get pods", Output: "half of it\n", CapturedAt: clock}
	tests := []struct {
		name        string
		perOperator bool
		timeout     time.Duration
		run         func(ctx context.Context, env *checks.Env) (checks.Result, error)
		reason      string
		evidence    []checks.Step
	}{
		{
			name: "panic",
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				var m map[string]int
				m["boom"]++
				return checks.Result{Status: checks.Pass}, nil
			},
			reason: "check panicked: assignment to entry in nil map",
		},
		{
			name:        "panic in a per-operator check",
			perOperator: true,
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				panic("widgets went wrong")
			},
			reason: "check panicked: widgets went wrong",
		},
		{
			name:    "timeout",
			timeout: time.Millisecond,
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				<-ctx.Done()
				return checks.Result{Evidence: []checks.Step{partial}}, ctx.Err()
			},
			reason:   "not finished within 1ms: context deadline exceeded",
			evidence: []checks.Step{partial},
		},
		{
			name: "error keeps the evidence gathered",
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				return checks.Result{Status: checks.Pass, Reason: "looked fine", Evidence: []checks.Step{partial}}, errors.New("list pods: refused")
			},
			reason:   "list pods: refused",
			evidence: []checks.Step{partial},
		},
		{
			name: "no verdict",
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				return checks.Result{Reason: "forgot to decide"}, nil
			},
			reason: "check returned no verdict",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := runStubs(t, checks.RunOptions{Timeout: tc.timeout}, stub("broken", tc.perOperator, tc.run))
			op := ""
			if tc.perOperator {
				op = "widgets"
			}
			r := result(t, out, "broken", op)
			assert.Equal(t, checks.Error, r.Status)
			assert.Contains(t, r.Reason, tc.reason)
			assert.Equal(t, "broken", r.Check.ID, "the result names its check")
			assert.Equal(t, clock, r.Started)
			assert.Equal(t, clock, r.Finished)
			assert.Equal(t, tc.evidence, r.Evidence)
		})
	}
}

func TestRunPerOperator(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	var seen []*checks.Env
	check := stub("per-op", true, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[env.Profile.Name]++
		seen = append(seen, env)
		return checks.Result{Status: checks.Pass, Reason: "ok"}, nil
	})
	out := runStubs(t, checks.RunOptions{JudgeAt: func() time.Time { return judgeAt }}, check)

	require.Len(t, out.Results, 2)
	assert.Equal(t, "widgets", out.Results[0].Operator)
	assert.Equal(t, checks.Pass, out.Results[0].Status)
	assert.Equal(t, "absent", out.Results[1].Operator)
	assert.Equal(t, checks.Skip, out.Results[1].Status)
	assert.Equal(t, "Absent Operator is not installed: the cluster serves no CRD of absent.example.com", out.Results[1].Reason)

	// An operator that is not installed is never asked about.
	assert.Equal(t, map[string]int{"widgets": 1}, ran)
	require.Len(t, seen, 1)
	assert.Same(t, seen[0].Profile, out.Detections[0].Profile)
	assert.Equal(t, judgeAt, seen[0].Now(), "checks judge at JudgeAt, not the run's clock")

	require.Len(t, out.Detections, 2)
	assert.True(t, out.Detections[0].Found)
	assert.Equal(t, []string{widgetCRD}, out.Detections[0].CRDs)
	assert.False(t, out.Detections[1].Found)
	assert.Empty(t, out.Detections[1].CRDs)
}

func TestRunWithoutJudgeAtUsesTheClock(t *testing.T) {
	var got time.Time
	out := runStubs(t, checks.RunOptions{}, stub("clock", false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		got = env.Now()
		return checks.Result{Status: checks.Pass, Reason: "ok"}, nil
	}))
	require.Len(t, out.Results, 1)
	assert.Equal(t, clock, got)
	assert.Equal(t, "clock", out.Results[0].Check.ID)
}

// Results come back in registry order whatever order the checks finish in.
func TestRunKeepsRegistryOrder(t *testing.T) {
	secondReported := make(chan struct{})
	first := stub("first", false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		<-secondReported // finishes after second
		return checks.Result{Status: checks.Fail, Reason: "first"}, nil
	})
	second := stub("second", false, passes)
	third := stub("third", true, passes)

	var mu sync.Mutex
	var finished []string
	var dones []int
	opts := checks.RunOptions{Concurrency: 4, Progress: func(done, total int, r checks.Result) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 4, total)
		finished = append(finished, r.Check.ID+"/"+r.Operator)
		dones = append(dones, done)
		if r.Check.ID == "second" {
			close(secondReported)
		}
	}}
	out := runStubs(t, opts, first, second, third)

	var order []string
	for _, r := range out.Results {
		order = append(order, r.Check.ID+"/"+r.Operator)
	}
	assert.Equal(t, []string{"first/", "second/", "third/widgets", "third/absent"}, order)
	assert.Equal(t, []int{1, 2, 3, 4}, dones)
	assert.Len(t, finished, 4)
	assert.Less(t, slices.Index(finished, "second/"), slices.Index(finished, "first/"), "first finished after second: %v", finished)
}

func TestRunBoundsConcurrency(t *testing.T) {
	const limit = 2
	var running, most atomic.Int32
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	var cs []checks.Check
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		cs = append(cs, stub(id, false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			entered <- struct{}{}
			<-release
			return checks.Result{Status: checks.Pass, Reason: id}, nil
		}))
	}
	done := make(chan checks.Outcome)
	go func() { done <- runStubs(t, checks.RunOptions{Concurrency: limit}, cs...) }()
	for range limit {
		<-entered
	}
	close(release)
	out := <-done
	require.Len(t, out.Results, 6)
	for _, r := range out.Results {
		assert.Equal(t, checks.Pass, r.Status)
	}
	assert.LessOrEqual(t, most.Load(), int32(limit))
}

// A check that cannot tell whether the operator is installed is Error, not
// Skip: the CRD list was refused, not empty.
func TestRunDetectionError(t *testing.T) {
	src := &failingSource{err: errors.New("connection refused")}
	out := checks.Run(context.Background(), cluster.NewCache(src), []*checks.Profile{widgetProfile(t)},
		[]checks.Check{stub("per-op", true, passes), stub("cluster-wide", false, passes)}, checks.RunOptions{}, fixedNow)
	require.Len(t, out.Results, 2)
	assert.Equal(t, checks.Error, out.Results[0].Status)
	assert.Equal(t, "cannot tell whether Widget Operator is installed: connection refused", out.Results[0].Reason)
	assert.Equal(t, "widgets", out.Results[0].Operator)
	assert.Equal(t, checks.Pass, out.Results[1].Status, "a cluster-wide check does not depend on detection")
}

// failingSource answers every query with one error.
type failingSource struct{ err error }

func (s *failingSource) List(context.Context, cluster.Query) ([]runtime.Object, time.Time, error) {
	return nil, time.Time{}, s.err
}

func (s *failingSource) Table(context.Context, cluster.Query) (*metav1.Table, time.Time, error) {
	return nil, time.Time{}, s.err
}

func (s *failingSource) Info(context.Context) (cluster.Info, error) { return cluster.Info{}, s.err }

// canaryWidget is what a probe of the widget operator would create: a
// Widget its controller has not reconciled yet.
func canaryWidget(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(widgetGroup + "/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// TestReadsNeverSeeTheRunsProbes runs the real read-only checks together
// with a probe that creates a custom resource, many times over: the
// read-only verdicts must be the same every time, and every read-only check
// must have finished before the probe's first write. The canary carries no
// run label here, so only the order of the run keeps it out.
func TestReadsNeverSeeTheRunsProbes(t *testing.T) {
	const runs = 50
	profiles := []*checks.Profile{widgetProfile(t)}
	for i := range runs {
		f := newWorld(t).serve()
		var mu sync.Mutex
		var readsDone []time.Time
		var firstWrite time.Time
		tick := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now() }
		reads := []checks.Check{checks.CRsReconciled{}, checks.CRsEvents{}, checks.CRDsEstablished{}, checks.WebhooksServed{}}
		var selected []checks.Check
		for _, c := range reads {
			selected = append(selected, timed{c, func() { at := tick(); mu.Lock(); readsDone = append(readsDone, at); mu.Unlock() }})
		}
		canary := stubCheck{
			meta: checks.Meta{ID: "writes", Title: "writes", Requirement: "test", PerOperator: true, Probe: true},
			run: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				at := tick()
				mu.Lock()
				if firstWrite.IsZero() {
					firstWrite = at
				}
				mu.Unlock()
				_, err := f.dyn.Resource(widgetsGVR).Namespace("apps").Create(ctx, canaryWidget("apps", "canary", nil), metav1.CreateOptions{})
				return checks.Result{Status: checks.Pass, Reason: "created"}, err
			},
		}
		// The probe first, so that a runner starting checks in order would
		// write before the reads.
		selected = append([]checks.Check{canary}, selected...)
		out := checks.Run(context.Background(), f.cache(), profiles, selected,
			checks.RunOptions{Concurrency: 8, Timeout: time.Minute, JudgeAt: func() time.Time { return judgeAt },
				Probe: probe.NewSession(nil, nil, "test", time.Minute)}, fixedNow)
		require.Len(t, readsDone, len(reads))
		for _, at := range readsDone {
			require.False(t, at.After(firstWrite), "run %d: a read-only check finished after the probe wrote", i)
		}
		r := result(t, out, "crs-reconciled", "widgets")
		require.Equal(t, checks.Pass, r.Status, "run %d: %s", i, r.Reason)
		require.Equal(t, "1 custom resource reconciled and Ready: Widget apps/w1", r.Reason, "run %d", i)
		require.Equal(t, checks.Pass, result(t, out, "writes", "widgets").Status)
	}
}

// timed tells when a check has finished.
type timed struct {
	checks.Check
	done func()
}

func (c timed) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	defer c.done()
	return c.Check.Run(ctx, env)
}

// TestProbeLeftoversAreNotJudged: a canary another run left behind, or one
// of a run going on beside this one, is neither a reconciled resource of
// the cluster's nor a failed one.
func TestProbeLeftoversAreNotJudged(t *testing.T) {
	w := newWorld(t)
	w.widgets = append(w.widgets,
		canaryWidget("aiconform-probe-20270102-030000-beef", "canary", map[string]string{probe.RunLabel: "20270102-030000-beef"}),
		canaryWidget("apps", "labelled", map[string]string{probe.RunLabel: "20270102-030000-cafe"}))
	w.events = append(w.events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "aiconform-probe-20270102-030000-beef", Name: "canary.1"},
		InvolvedObject: corev1.ObjectReference{APIVersion: widgetGroup + "/v1", Kind: "Widget", Namespace: "aiconform-probe-20270102-030000-beef", Name: "canary"},
		Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Message: "no room", LastTimestamp: metav1.NewTime(judgeAt.Add(-time.Minute)),
	})
	out := w.serve().run([]*checks.Profile{widgetProfile(t)})
	r := result(t, out, "crs-reconciled", "widgets")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, "1 custom resource reconciled and Ready: Widget apps/w1", r.Reason)
	assert.Equal(t, []string{"not judged, made by an aiconform probe: Widget aiconform-probe-20270102-030000-beef/canary (probe run 20270102-030000-beef), Widget apps/labelled (probe run 20270102-030000-cafe)"}, r.Details)
	e := result(t, out, "crs-events", "widgets")
	assert.Equal(t, checks.Pass, e.Status, e.Reason)
}
