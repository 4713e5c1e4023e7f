package operator_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// widgetEvent is an event about Widget apps/w1, last seen ago before
// judging, as the core API's event recorder writes them.
func widgetEvent(name, typ, reason string, count int32, ago time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "apps", Name: "w1." + name},
		InvolvedObject: corev1.ObjectReference{APIVersion: checkstest.WidgetGroup + "/v1", Kind: "Widget", Namespace: "apps", Name: "w1", UID: "uid-w1"},
		Type:           typ,
		Reason:         reason,
		Message:        "reconcile " + reason + ": the webhook refused the child Deployment",
		Count:          count,
		Source:         corev1.EventSource{Component: "widget-controller"},
		FirstTimestamp: metav1.NewTime(checkstest.JudgeAt.Add(-ago - time.Minute)),
		LastTimestamp:  metav1.NewTime(checkstest.JudgeAt.Add(-ago)),
	}
}

func TestCRsEvents(t *testing.T) {
	events := func(es ...*corev1.Event) func(w *checkstest.World) {
		return func(w *checkstest.World) { w.Events = append(w.Events, es...) }
	}
	tests := []struct {
		name    string
		tweak   func(w *checkstest.World)
		status  checks.Status
		reason  string
		details []string
	}{
		{name: "no events", status: checks.Pass, reason: "no Warning event on Widget in the last hour"},
		{
			name:   "a recent warning warns",
			tweak:  events(widgetEvent("a", corev1.EventTypeWarning, "ReconcileFailed", 3, 5*time.Minute)),
			status: checks.Warn,
			reason: "3 Warning events on 1 custom resource in the last hour: Widget apps/w1: ReconcileFailed ×3, last seen 5m0s before judging: reconcile ReconcileFailed: the webhook refused the child Deployment",
		},
		{
			name:   "an hour-old warning is history",
			tweak:  events(widgetEvent("a", corev1.EventTypeWarning, "ReconcileFailed", 3, 61*time.Minute)),
			status: checks.Pass,
			reason: "no Warning event on Widget in the last hour (1 Warning event older than an hour, not counted)",
		},
		{
			// KServe records a status update the API server refused as
			// stale; it retries at once.
			name: "an update conflict the controller retried is not counted",
			tweak: func(w *checkstest.World) {
				e := widgetEvent("a", corev1.EventTypeWarning, "InternalError", 1, 2*time.Minute)
				e.Message = `fails to update Widget status: Operation cannot be fulfilled on widgets.example.com "w1": the object has been modified; please apply your changes to the latest version and try again`
				w.Events = append(w.Events, e, widgetEvent("b", corev1.EventTypeWarning, "ReconcileFailed", 1, 61*time.Minute))
			},
			status: checks.Pass,
			reason: "no Warning event on Widget in the last hour (1 Warning event older than an hour, 1 update conflict the controller retried, not counted)",
		},
		{
			// The fake ignores field selectors, so this shows the check's own
			// filter, which keeps the verdict right whatever served the list.
			name:   "Normal events do not count",
			tweak:  events(widgetEvent("a", corev1.EventTypeNormal, "Reconciled", 1, time.Minute)),
			status: checks.Pass,
			reason: "no Warning event on Widget in the last hour",
		},
		{
			name: "the same kind of another group does not count",
			tweak: func(w *checkstest.World) {
				e := widgetEvent("a", corev1.EventTypeWarning, "Failed", 1, time.Minute)
				e.InvolvedObject.APIVersion = "other.example.com/v1"
				w.Events = append(w.Events, e)
			},
			status: checks.Pass,
		},
		{
			name: "events on children are not the resource's",
			tweak: func(w *checkstest.World) {
				e := widgetEvent("a", corev1.EventTypeWarning, "FailedCreate", 1, time.Minute)
				e.InvolvedObject = corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "apps", Name: "w1-server-5f6"}
				w.Events = append(w.Events, e)
			},
			status: checks.Pass,
		},
		{
			name: "events.k8s.io events: series and eventTime",
			tweak: func(w *checkstest.World) {
				e := widgetEvent("a", corev1.EventTypeWarning, "BackOff", 0, 0)
				e.FirstTimestamp, e.LastTimestamp = metav1.Time{}, metav1.Time{}
				e.EventTime = metav1.NewMicroTime(checkstest.JudgeAt.Add(-3 * time.Hour))
				e.Series = &corev1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(checkstest.JudgeAt.Add(-2 * time.Minute))}
				w.Events = append(w.Events, e)
			},
			status: checks.Warn,
			reason: "12 Warning events on 1 custom resource in the last hour: Widget apps/w1: BackOff ×12, last seen 2m0s before judging",
		},
		{
			name: "grouped by resource and reason, newest first, the reason naming three",
			tweak: func(w *checkstest.World) {
				for i, r := range []string{"A", "B", "C", "D"} {
					w.Events = append(w.Events, widgetEvent(r, corev1.EventTypeWarning, "Reason"+r, 1, time.Duration(i+1)*time.Minute))
				}
				w.Events = append(w.Events, widgetEvent("A2", corev1.EventTypeWarning, "ReasonA", 2, 30*time.Minute))
				other := widgetEvent("x", corev1.EventTypeWarning, "ReasonA", 1, 40*time.Minute)
				other.InvolvedObject.Name, other.Message = "w2", "a long message "+strings.Repeat("x", 300)
				w.Events = append(w.Events, other)
			},
			status: checks.Warn,
			reason: "7 Warning events on 2 custom resources in the last hour: Widget apps/w1: ReasonA ×3, last seen 1m0s before judging",
			details: []string{
				"Widget apps/w1: ReasonA ×3, last seen 1m0s before judging: reconcile ReasonA: the webhook refused the child Deployment",
				"Widget apps/w1: ReasonB ×1, last seen 2m0s before judging: reconcile ReasonB: the webhook refused the child Deployment",
				"Widget apps/w1: ReasonC ×1, last seen 3m0s before judging: reconcile ReasonC: the webhook refused the child Deployment",
				"Widget apps/w1: ReasonD ×1, last seen 4m0s before judging: reconcile ReasonD: the webhook refused the child Deployment",
				"Widget apps/w2: ReasonA ×1, last seen 40m0s before judging: a long message " + strings.Repeat("x", 184) + "…",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), tc.tweak), "crs-events", "widgets")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.details != nil {
				assert.Equal(t, tc.details, r.Details)
				assert.True(t, strings.HasSuffix(r.Reason, "; and 2 more"), r.Reason)
			}
			if tc.status == checks.Pass {
				assert.Empty(t, r.Details)
			}
			require.Len(t, r.Evidence, 1)
			assert.Equal(t, "kubectl get events -A --field-selector type=Warning,involvedObject.kind=Widget", r.Evidence[0].Command)
		})
	}
}

// The check never fails: however many warnings, it warns.
func TestCRsEventsNeverFail(t *testing.T) {
	r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) {
		for i := range 50 {
			w.Events = append(w.Events, widgetEvent(fmt.Sprint(i), corev1.EventTypeWarning, fmt.Sprintf("R%02d", i), 100, time.Minute))
		}
	}), "crs-events", "widgets")
	assert.Equal(t, checks.Warn, r.Status)
	assert.Len(t, r.Details, 50)
	assert.Contains(t, r.Reason, "5000 Warning events on 1 custom resource")
}

// The recorded stuck InferenceService: KServe's warnings about it are in
// the evidence as kubectl prints them, and the RayCluster's two-hour-old
// warning is history.
func TestCRsEventsRecorded(t *testing.T) {
	out, _ := checkstest.RunFixture(t, builtin.Registry(), "cr-unknown")
	r := checkstest.Result(t, out, "crs-events", "kserve")
	require.Equal(t, checks.Warn, r.Status, r.Reason)
	require.Len(t, r.Evidence, 1)
	assert.Equal(t, "kubectl get events -A --field-selector type=Warning,involvedObject.kind=InferenceService", r.Evidence[0].Command)
	assert.True(t, strings.HasPrefix(r.Evidence[0].Output, "NAMESPACE   LAST SEEN   TYPE      REASON          OBJECT                          MESSAGE\nmodels      3m"), r.Evidence[0].Output)
	assert.Contains(t, r.Evidence[0].Output, "Warning   InternalError   inferenceservice/sklearn-iris   fails to reconcile predictor")

	r = checkstest.Result(t, out, "crs-events", "kuberay")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Contains(t, r.Evidence[0].Output, "FailedToCreateWorkerPod")
}
