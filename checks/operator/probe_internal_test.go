package operator

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

func statusErr(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
}

func TestJudgeDenial(t *testing.T) {
	want := checks.WebhookName{Configuration: "widgets.demo.example.com", Webhook: "v.widgets.demo.example.com"}
	tests := []struct {
		name   string
		err    error
		others []string
		status checks.Status
		reason string
	}{
		{"admitted", nil, nil, checks.Fail, "the invalid Widget was admitted: webhook widgets.demo.example.com/v.widgets.demo.example.com did not deny it"},
		{"denied by the webhook", statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
			`admission webhook "v.widgets.demo.example.com" denied the request: size must be positive`), nil,
			checks.Pass, "denied the invalid Widget (size must be positive)"},
		{"denied by a webhook of the same name elsewhere too", statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
			`admission webhook "v.widgets.demo.example.com" denied the request: no`), []string{"copycat"},
			checks.Warn, "configurations widgets.demo.example.com and copycat share that name"},
		{"denied by another webhook", statusErr(http.StatusForbidden, metav1.StatusReasonForbidden,
			`admission webhook "policy.example.com" denied the request: no labels`), nil,
			checks.Error, "another webhook denied the invalid resource before the operator's answer could be seen"},
		{"webhook down", statusErr(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			`Internal error occurred: failed calling webhook "v.widgets.demo.example.com": failed to call webhook: Post "https://127.0.0.1:9443/validate": dial tcp 127.0.0.1:9443: connect: connection refused`), nil,
			checks.Fail, "cannot call the webhook: Internal error occurred: failed calling webhook"},
		{"dry run refused", statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			`admission webhook "v.widgets.demo.example.com" does not support dry run`), nil,
			checks.Error, "cannot be called in a dry run"},
		{"schema refused it first", apierrors.NewInvalid(schema.GroupKind{Group: "demo.example.com", Kind: "Widget"}, "w",
			field.ErrorList{field.Required(field.NewPath("spec"), "")}), nil,
			checks.Error, "before any webhook saw it"},
		{"not allowed to create", apierrors.NewForbidden(schema.GroupResource{Group: "demo.example.com", Resource: "widgets"}, "w",
			errors.New(`User "auditor" cannot create resource "widgets" in API group "demo.example.com" in the namespace "p"`)), nil,
			checks.Error, `cannot create resource "widgets"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, reason := judgeDenial(tc.err, want, tc.others, "", "Widget")
			assert.Equal(t, tc.status, status, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

// TestJudgeDenialOfTwins: when another component holds a webhook of the
// same name on the kinds, the operator's own message decides.
func TestJudgeDenialOfTwins(t *testing.T) {
	want := checks.WebhookName{Configuration: "kuberay-validating-webhook-configuration", Webhook: "vraycluster.kb.io"}
	twins := []string{"kueue-validating-webhook-configuration"}
	own := statusErr(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		`admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "x" is invalid: spec.workerGroupSpecs[1]: Invalid value: "workers": worker group names must be unique`)
	theirs := statusErr(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
		`admission webhook "vraycluster.kb.io" denied the request: metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": must not be empty`)
	tests := []struct {
		name       string
		err        error
		deniedWith string
		status     checks.Status
		reason     string
	}{
		{"the operator's message", own, "worker group names must be unique", checks.Pass, "the message is its own, not that of the webhook of the same name in kueue-validating-webhook-configuration"},
		{"the twin's message", theirs, "worker group names must be unique", checks.Error, "the operator's answer is unseen"},
		{"no message to tell them apart", own, "", checks.Warn, "share that name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, reason := judgeDenial(tc.err, want, twins, tc.deniedWith, "RayCluster")
			assert.Equal(t, tc.status, status, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

func TestObjectDiff(t *testing.T) {
	sent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "labels": map[string]any{"a": "1"}},
		"spec":     map[string]any{"short": map[string]any{"uri": "s3://m"}, "list": []any{"x"}},
	}}
	got := sent.DeepCopy()
	got.Object["metadata"].(map[string]any)["uid"] = "123"
	got.Object["metadata"].(map[string]any)["creationTimestamp"] = "2027-01-02T03:04:05Z"
	got.Object["metadata"].(map[string]any)["annotations"] = map[string]any{"mode": "raw"}
	got.Object["status"] = map[string]any{"phase": "x"}
	delete(got.Object["spec"].(map[string]any), "short")
	got.Object["spec"].(map[string]any)["model"] = map[string]any{"uri": "s3://m", "format": "sklearn"}
	assert.Equal(t, [][]string{
		{"metadata.annotations.mode", "(absent)", `"raw"`},
		{"spec.model.format", "(absent)", `"sklearn"`},
		{"spec.model.uri", "(absent)", `"s3://m"`},
		{"spec.short.uri", `"s3://m"`, "(absent)"},
	}, objectDiff(sent, got), "server-set metadata and status are not changes")
	assert.Empty(t, objectDiff(sent, sent.DeepCopy()))
}

func TestPodCauses(t *testing.T) {
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 Insufficient memory. preemption: 0/2 nodes are available"}}}}
	assert.Equal(t, []string{"insufficient nvidia.com/gpu, memory: pod p1 is Pending, unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 Insufficient memory. preemption: 0/2 nodes are available"},
		podCauses(pending))

	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p2"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "kserve-container", Image: "kserve/sklearnserver:v0.15.0", RestartCount: 4,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "back-off"}}}}}}
	}
	assert.Equal(t, []string{"pod p2 container kserve-container cannot pull image kserve/sklearnserver:v0.15.0: ImagePullBackOff back-off"}, podCauses(waiting("ImagePullBackOff")))
	assert.Equal(t, []string{"pod p2 container kserve-container is crash-looping (4 restarts)"}, podCauses(waiting("CrashLoopBackOff")))

	oom := waiting("CrashLoopBackOff")
	oom.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
	assert.Contains(t, podCauses(oom), "pod p2 container kserve-container was OOMKilled: its memory limit is too low for the model")

	assert.Empty(t, podCauses(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ok"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}))
}

func TestConditionCauses(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "PredictorReady", "status": "False", "reason": "NoSupportingRuntime", "message": "No runtime found to support predictor with model type: {tensorrt <nil>}"},
		map[string]any{"type": "Ready", "status": "False"},
		map[string]any{"type": "IngressReady", "status": "True"},
	}}}}
	assert.Equal(t, []string{
		"no ServingRuntime supports the model format: condition PredictorReady=False NoSupportingRuntime: No runtime found to support predictor with model type: {tensorrt <nil>}",
		"condition Ready=False :",
	}, conditionCauses(cr, checks.ResourceKind{ReadyConditions: []string{"Ready"}}))
}

// fakeClock advances by a tenth of a second on each reading.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { c.t = c.t.Add(100 * time.Millisecond); return c.t }

func TestCanaryTimeline(t *testing.T) {
	clock := &fakeClock{t: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}
	k := &checks.ResourceKind{CRD: "widgets.demo.example.com", ReadyConditions: []string{"Ready"}, ChildLabel: "demo/widget", Children: []string{"Deployment", "Service"}}
	w := &canaryWatch{env: &checks.Env{Now: clock.now}, k: k, name: "w", timeline: &probe.Timeline{T0: clock.t}, children: map[string]bool{}, kinds: map[string]bool{}, want: k.ReadyConditions}
	obj := func(name string, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName(name)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	ready := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	notReady := map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "Unknown"}}}
	events := []probe.Event{
		{Tag: "", Event: watch.Event{Type: watch.Added, Object: obj("w", nil)}},
		{Tag: "Deployment", Event: watch.Event{Type: watch.Added, Object: obj("w-predictor", nil)}},
		{Tag: "", Event: watch.Event{Type: watch.Modified, Object: obj("w", notReady)}},
		{Tag: "Service", Event: watch.Event{Type: watch.Added, Object: obj("w-predictor", nil)}},
		{Tag: "", Event: watch.Event{Type: watch.Bookmark, Object: obj("w", ready)}}, // bookmarks say nothing
		{Tag: "Pod", Event: watch.Event{Type: watch.Added, Object: obj("w-predictor-1", nil)}},
		{Tag: "", Event: watch.Event{Type: watch.Modified, Object: obj("w", ready)}},
	}
	for _, e := range events {
		w.apply(e)
	}
	require.True(t, w.ready, "Ready=True makes the canary ready; Unknown did not")
	w.deletedAt = clock.now()
	for _, e := range []probe.Event{
		{Tag: "", Event: watch.Event{Type: watch.Deleted, Object: obj("w", ready)}},
		{Tag: "Service", Event: watch.Event{Type: watch.Deleted, Object: obj("w-predictor", nil)}},
		{Tag: "Pod", Event: watch.Event{Type: watch.Deleted, Object: obj("w-predictor-1", nil)}},
	} {
		w.apply(e)
	}
	assert.True(t, w.collectedAt.IsZero(), "the Deployment is still there")
	w.apply(probe.Event{Tag: "Deployment", Event: watch.Event{Type: watch.Deleted, Object: obj("w-predictor", nil)}})
	assert.False(t, w.collectedAt.IsZero())
	var names []string
	for _, row := range w.timeline.Rows {
		names = append(names, row[0])
	}
	assert.Equal(t, []string{
		"first child: Deployment/w-predictor",
		"status first written",
		"every child kind present: Deployment, Service, Pod",
		"Ready (Ready)",
		"w gone",
		"children collected",
	}, names)
	assert.Equal(t, "+0.4 s", w.timeline.Rows[3][2], "time since the probe began, as read when Ready was seen")
}

func TestEventCauses(t *testing.T) {
	ev := func(reason, kind, name, msg string) *corev1.Event {
		return &corev1.Event{Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name}}
	}
	events := []*corev1.Event{
		ev("FailedScheduling", "Pod", "p1", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "),
		ev("FailedScheduling", "Pod", "p1", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
		ev("InternalError", "InferenceService", "sklearn-iris", "fails to reconcile predictor"),
	}
	assert.Equal(t, []string{
		"event FailedScheduling on Pod/p1: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
		"event InternalError on InferenceService/sklearn-iris: fails to reconcile predictor",
	}, eventCauses(events), "one line per reason and object")
	var many []*corev1.Event
	for i := range 9 {
		many = append(many, ev("BackOff", "Pod", fmt.Sprintf("p%d", i), "back-off"))
	}
	assert.Len(t, eventCauses(many), maxEventCauses)
}

// TestCanaryJobTimeline: a TrainJob canary is done when Complete, its
// JobSet counts only when the canary owns it, and a Failed one ends the
// wait with its reason.
func TestCanaryJobTimeline(t *testing.T) {
	clock := &fakeClock{t: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}
	k := &trainJobKind
	jobSets := cluster.Resource{Kind: "JobSet"}
	newWatch := func() *canaryWatch {
		return &canaryWatch{env: &checks.Env{Now: clock.now}, k: k, name: "c", timeline: &probe.Timeline{T0: clock.t}, children: map[string]bool{}, kinds: map[string]bool{},
			want: []string{"Complete"}, custom: map[string]cluster.Resource{"jobsets.jobset.x-k8s.io": jobSets}}
	}
	obj := func(name, owner string, conds ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName(name)
		if owner != "" {
			u.SetOwnerReferences(ownedBy("TrainJob", owner, "uid"))
		}
		if len(conds) > 0 {
			var cs []any
			for _, c := range conds {
				cs = append(cs, c)
			}
			u.Object["status"] = map[string]any{"conditions": cs}
		}
		return u
	}
	w := newWatch()
	for _, e := range []probe.Event{
		{Tag: "", Event: watch.Event{Type: watch.Added, Object: obj("c", "")}},
		{Tag: "jobsets.jobset.x-k8s.io", Event: watch.Event{Type: watch.Added, Object: obj("other", "another-trainjob")}},
		{Tag: "jobsets.jobset.x-k8s.io", Event: watch.Event{Type: watch.Added, Object: obj("c", "c")}},
		{Tag: "Job", Event: watch.Event{Type: watch.Added, Object: obj("c-node-0", "")}},
		{Tag: "Pod", Event: watch.Event{Type: watch.Added, Object: obj("c-node-0-0-x", "")}},
		{Tag: "", Event: watch.Event{Type: watch.Modified, Object: obj("c", "", cond("Complete", "True", "AllJobsCompleted"))}},
	} {
		w.apply(e)
	}
	assert.True(t, w.ready)
	assert.Empty(t, w.failed)
	assert.Equal(t, []string{"JobSet/c", "Job/c-node-0", "Pod/c-node-0-0-x"}, sortedByKind(w.children), "another TrainJob's JobSet is not the canary's")
	var steps []string
	for _, s := range w.timeline.Rows {
		steps = append(steps, s[0])
	}
	assert.Equal(t, []string{"first child: JobSet/c", "every child kind present: JobSet, Job, Pod", "status first written", "Ready (Complete)"}, steps)

	w = newWatch()
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Modified, Object: obj("c", "", cond("Failed", "True", "FailedJobs"))}})
	assert.False(t, w.ready)
	assert.Equal(t, []string{"Failed=True FailedJobs: FailedJobs happened"}, w.failed)
}

// TestCanaryQueueTimeline: a kind that owns nothing (Kueue's ClusterQueue)
// watches no children, is Ready on its condition alone, and is collected
// when it is gone, after the controller released its finalizer.
func TestCanaryQueueTimeline(t *testing.T) {
	clock := &fakeClock{t: time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)}
	k := &checks.ResourceKind{CRD: "clusterqueues.kueue.x-k8s.io", ReadyConditions: []string{"Active"}}
	w := &canaryWatch{env: &checks.Env{Now: clock.now}, k: k, name: "q", timeline: &probe.Timeline{T0: clock.t}, children: map[string]bool{}, kinds: map[string]bool{}, want: k.ReadyConditions}
	assert.Empty(t, w.childKinds(), "no pods are watched for a queue")
	q := func(active string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetName("q")
		u.SetFinalizers([]string{"kueue.x-k8s.io/resource-in-use"})
		if active != "" {
			u.Object["status"] = map[string]any{"conditions": []any{cond("Active", active, "Ready")}}
		}
		if deleting {
			u.SetDeletionTimestamp(&metav1.Time{Time: clock.t})
		}
		return u
	}
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Added, Object: q("", false)}})
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Modified, Object: q("False", false)}})
	assert.False(t, w.ready, "Active=False is not Ready")
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Modified, Object: q("True", false)}})
	require.True(t, w.ready)
	w.deletedAt = clock.now()
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Modified, Object: q("True", true)}})
	assert.True(t, w.collectedAt.IsZero(), "still there: its finalizer holds it")
	assert.Equal(t, []string{"kueue.x-k8s.io/resource-in-use"}, w.heldBy)
	w.apply(probe.Event{Tag: "", Event: watch.Event{Type: watch.Deleted, Object: q("True", true)}})
	assert.False(t, w.collectedAt.IsZero(), "gone once the controller released it")
	var steps []string
	for _, s := range w.timeline.Rows {
		steps = append(steps, s[0])
	}
	assert.Equal(t, []string{"status first written", "Ready (Active)", "deletion waits on finalizers kueue.x-k8s.io/resource-in-use", "q gone"}, steps)
}

// sortedByKind lists a watch's children in the order JobSet, Job, Pod.
func sortedByKind(children map[string]bool) []string {
	var out []string
	for _, prefix := range []string{"JobSet/", "Job/", "Pod/"} {
		for c := range children {
			if strings.HasPrefix(c, prefix) {
				out = append(out, c)
			}
		}
	}
	return out
}
