package builtin_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/operator"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The runner's tests that need the real checks; the others are in checks.

// canaryWidget is what a probe of the widget operator would create: a
// Widget its controller has not reconciled yet.
func canaryWidget(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(checkstest.WidgetGroup + "/v1")
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
	profiles := []*checks.Profile{checkstest.WidgetProfile(t)}
	for i := range runs {
		f := checkstest.NewWorld(t).Serve()
		var mu sync.Mutex
		var readsDone []time.Time
		var firstWrite time.Time
		tick := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now() }
		reads := []checks.Check{operator.CRsReconciled{}, operator.CRsEvents{}, operator.CRDsEstablished{}, operator.WebhooksServed{}}
		var selected []checks.Check
		for _, c := range reads {
			selected = append(selected, timed{c, func() { at := tick(); mu.Lock(); readsDone = append(readsDone, at); mu.Unlock() }})
		}
		canary := checkstest.StubCheck{
			Spec: checks.Meta{ID: "writes", Title: "writes", Requirement: "robust_controller", PerOperator: true, Probe: true},
			Do: func(ctx context.Context, env *checks.Env) (checks.Result, error) {
				at := tick()
				mu.Lock()
				if firstWrite.IsZero() {
					firstWrite = at
				}
				mu.Unlock()
				_, err := f.Dyn.Resource(checkstest.WidgetsGVR).Namespace("apps").Create(ctx, canaryWidget("apps", "canary", nil), metav1.CreateOptions{})
				return checks.Result{Status: checks.Pass, Reason: "created"}, err
			},
		}
		// The probe first, so that a runner starting checks in order would
		// write before the reads.
		selected = append([]checks.Check{canary}, selected...)
		out := checks.Run(context.Background(), f.Cache(), profiles, checks.Selection{Checks: selected},
			checks.RunOptions{Concurrency: 8, Timeout: time.Minute, JudgeAt: func() time.Time { return checkstest.JudgeAt },
				Probe: probe.NewSession(nil, nil, "test", time.Minute)}, checkstest.FixedNow)
		require.Len(t, readsDone, len(reads))
		for _, at := range readsDone {
			require.False(t, at.After(firstWrite), "run %d: a read-only check finished after the probe wrote", i)
		}
		r := checkstest.Result(t, out, "crs-reconciled", "widgets")
		require.Equal(t, checks.Pass, r.Status, "run %d: %s", i, r.Reason)
		require.Equal(t, "1 custom resource reconciled and Ready: Widget apps/w1", r.Reason, "run %d", i)
		require.Equal(t, checks.Pass, checkstest.Result(t, out, "writes", "widgets").Status)
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
	w := checkstest.NewWorld(t)
	w.Widgets = append(w.Widgets,
		canaryWidget("aiconform-probe-20270102-030000-beef", "canary", map[string]string{probe.RunLabel: "20270102-030000-beef"}),
		canaryWidget("apps", "labelled", map[string]string{probe.RunLabel: "20270102-030000-cafe"}))
	w.Events = append(w.Events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "aiconform-probe-20270102-030000-beef", Name: "canary.1"},
		InvolvedObject: corev1.ObjectReference{APIVersion: checkstest.WidgetGroup + "/v1", Kind: "Widget", Namespace: "aiconform-probe-20270102-030000-beef", Name: "canary"},
		Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Message: "no room", LastTimestamp: metav1.NewTime(checkstest.JudgeAt.Add(-time.Minute)),
	})
	out := w.Serve().Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
	r := checkstest.Result(t, out, "crs-reconciled", "widgets")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, "1 custom resource reconciled and Ready: Widget apps/w1", r.Reason)
	assert.Equal(t, []string{"not judged, made by an aiconform probe: Widget aiconform-probe-20270102-030000-beef/canary (probe run 20270102-030000-beef), Widget apps/labelled (probe run 20270102-030000-cafe)"}, r.Details)
	e := checkstest.Result(t, out, "crs-events", "widgets")
	assert.Equal(t, checks.Pass, e.Status, e.Reason)
}
