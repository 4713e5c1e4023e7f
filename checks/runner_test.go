package checks_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func passes(ctx context.Context, env *checks.Env) (checks.Result, error) {
	return checks.Result{Status: checks.Pass, Reason: "fine"}, nil
}

func runStubs(t *testing.T, opts checks.RunOptions, cs ...checks.Check) checks.Outcome {
	t.Helper()
	c := checkstest.NewWorld(t).Serve().Cache()
	return checks.Run(context.Background(), c, []*checks.Profile{checkstest.WidgetProfile(t), checkstest.AbsentProfile(t)}, checks.Selection{Checks: cs}, opts, checkstest.FixedNow)
}

func TestRunTurnsFailuresIntoError(t *testing.T) {
	partial := checks.Step{Command: "kubectl get pods", Output: "half of it\n", CapturedAt: checkstest.Clock}
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
			out := runStubs(t, checks.RunOptions{Timeout: tc.timeout}, checkstest.Stub("broken", tc.perOperator, tc.run))
			op := ""
			if tc.perOperator {
				op = "widgets"
			}
			r := checkstest.Result(t, out, "broken", op)
			assert.Equal(t, checks.Error, r.Status)
			assert.Contains(t, r.Reason, tc.reason)
			assert.Equal(t, "broken", r.Check.ID, "the result names its check")
			assert.Equal(t, checkstest.Clock, r.Started)
			assert.Equal(t, checkstest.Clock, r.Finished)
			assert.Equal(t, tc.evidence, r.Evidence)
		})
	}
}

func TestRunPerOperator(t *testing.T) {
	var mu sync.Mutex
	ran := map[string]int{}
	var seen []*checks.Env
	check := checkstest.Stub("per-op", true, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		mu.Lock()
		defer mu.Unlock()
		ran[env.Profile.Name]++
		seen = append(seen, env)
		return checks.Result{Status: checks.Pass, Reason: "ok"}, nil
	})
	out := runStubs(t, checks.RunOptions{JudgeAt: func() time.Time { return checkstest.JudgeAt }}, check)

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
	assert.Equal(t, checkstest.JudgeAt, seen[0].Now(), "checks judge at JudgeAt, not the run's clock")

	require.Len(t, out.Detections, 2)
	assert.True(t, out.Detections[0].Found)
	assert.Equal(t, []string{checkstest.WidgetCRD}, out.Detections[0].CRDs)
	assert.False(t, out.Detections[1].Found)
	assert.Empty(t, out.Detections[1].CRDs)
}

func TestRunWithoutJudgeAtUsesTheClock(t *testing.T) {
	var got time.Time
	out := runStubs(t, checks.RunOptions{}, checkstest.Stub("clock", false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		got = env.Now()
		return checks.Result{Status: checks.Pass, Reason: "ok"}, nil
	}))
	require.Len(t, out.Results, 1)
	assert.Equal(t, checkstest.Clock, got)
	assert.Equal(t, "clock", out.Results[0].Check.ID)
}

// Results come back in registry order whatever order the checks finish in.
func TestRunKeepsRegistryOrder(t *testing.T) {
	secondReported := make(chan struct{})
	first := checkstest.Stub("first", false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
		<-secondReported // finishes after second
		return checks.Result{Status: checks.Fail, Reason: "first"}, nil
	})
	second := checkstest.Stub("second", false, passes)
	third := checkstest.Stub("third", true, passes)

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

// The checks that read every accelerator node's pods start first, side by
// side, each phase in the order selected otherwise; results keep that
// order.
func TestRunStartsNodePodReadersFirst(t *testing.T) {
	var cs []checks.Check
	for _, id := range []string{"a", "pods-1", "b", "probe", "pods-2", "c"} {
		s := checkstest.Stub(id, false, passes)
		s.Spec.ReadsNodePods = strings.HasPrefix(id, "pods-")
		s.Spec.Probe = id == "probe"
		cs = append(cs, s)
	}
	var started []string
	out := runStubs(t, checks.RunOptions{Concurrency: 1, Started: func(m checks.Meta, _ string, _ int) {
		started = append(started, m.ID)
	}}, cs...)
	assert.Equal(t, []string{"pods-1", "pods-2", "a", "b", "c", "probe"}, started)
	var order []string
	for _, r := range out.Results {
		order = append(order, r.Check.ID)
	}
	assert.Equal(t, []string{"a", "pods-1", "b", "probe", "pods-2", "c"}, order)
}

func TestRunBoundsConcurrency(t *testing.T) {
	const limit = 2
	var running, most atomic.Int32
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	var cs []checks.Check
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		cs = append(cs, checkstest.Stub(id, false, func(ctx context.Context, env *checks.Env) (checks.Result, error) {
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
	out := checks.Run(context.Background(), cluster.NewCache(src), []*checks.Profile{checkstest.WidgetProfile(t)},
		checks.Selection{Checks: []checks.Check{checkstest.Stub("per-op", true, passes), checkstest.Stub("cluster-wide", false, passes)}}, checks.RunOptions{}, checkstest.FixedNow)
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

func (s *failingSource) Raw(context.Context, string) ([]byte, time.Time, error) {
	return nil, time.Time{}, s.err
}

func (s *failingSource) Table(context.Context, cluster.Query) (*metav1.Table, time.Time, error) {
	return nil, time.Time{}, s.err
}

func (s *failingSource) Info(context.Context) (cluster.Info, error) { return cluster.Info{}, s.err }

// A per-operator check runs for an operator that may carry a selected
// requirement listing it, not only its own: a gang scheduler's controller
// health is judged for gang_scheduling, and a gang check never runs for an
// operator that carries only robust_controller.
func TestRunPerOperatorForEveryRequirementListingIt(t *testing.T) {
	c := checkstest.NewWorld(t).Serve().Cache()
	gangs := *checkstest.WidgetProfile(t)
	gangs.Name, gangs.Carries = "gangs", []string{"gang_scheduling"}
	profiles := []*checks.Profile{checkstest.WidgetProfile(t), &gangs}
	health := checkstest.Stub("health", true, passes)
	gangCheck := checkstest.Stub("gang", true, passes)
	gangCheck.Spec.Requirement = "gang_scheduling"
	ran := func(sel checks.Selection) []string {
		var got []string
		for _, r := range checks.Run(context.Background(), c, profiles, sel, checks.RunOptions{Concurrency: 1}, checkstest.FixedNow).Results {
			got = append(got, r.Check.ID+"/"+r.Operator)
		}
		slices.Sort(got)
		return got
	}
	cs := []checks.Check{health, gangCheck}
	gang := checks.Requirement{ID: "gang_scheduling", PerOperator: true, Checks: []string{"health", "gang"}}
	robust := checks.Requirement{ID: "robust_controller", PerOperator: true, Checks: []string{"health"}}
	assert.Equal(t, []string{"gang/gangs", "health/gangs", "health/widgets"}, ran(checks.Selection{Requirements: []checks.Requirement{robust, gang}, Checks: cs}))
	// robust_controller alone: the gang scheduler's health says nothing of it.
	assert.Equal(t, []string{"gang/gangs", "health/widgets"}, ran(checks.Selection{Requirements: []checks.Requirement{robust}, Checks: cs}))
}
