package scheduling

import (
	"context"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

func event(t *testing.T, tag string, typ watch.EventType, obj runtime.Object) probe.Event {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return probe.Event{Tag: tag, Event: watch.Event{Type: typ, Object: &unstructured.Unstructured{Object: m}}}
}

func TestHPAWatchApply(t *testing.T) {
	w := &hpaWatch{now: checkstest.FixedNow, timeline: &probe.Timeline{}, bound: map[string]string{}, conds: map[string]string{}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}}
	w.apply(event(t, podsTag, watch.Added, pod))
	assert.Equal(t, 0, w.boundPods())
	pending := pod.DeepCopy()
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}
	w.apply(event(t, podsTag, watch.Modified, pending))
	assert.Equal(t, "pod p1: Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", w.pendingWhy())
	bound := pod.DeepCopy()
	bound.Spec.NodeName = "gpu-1"
	w.apply(event(t, podsTag, watch.Modified, bound))
	assert.Equal(t, 1, w.boundPods())

	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: hpaName}}
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 1, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale"},
		{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "FailedGetExternalMetric", Message: "unable to get external metric"},
		// Normal, though not True: never what the probe reports.
		{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionFalse, Reason: "DesiredWithinRange"},
		{Type: "ScaledToZero", Status: corev1.ConditionFalse, Reason: "NotScaledToZero"},
	}}
	w.apply(event(t, hpaTag, watch.Modified, hpa))
	assert.Equal(t, "ScalingActive=False (FailedGetExternalMetric: unable to get external metric)", w.why())
	hpa.Status.DesiredReplicas = 2
	hpa.Status.Conditions[1] = autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"}
	w.apply(event(t, hpaTag, watch.Modified, hpa))
	assert.Equal(t, int32(2), w.desired)
	assert.Equal(t, "it reports 1 current and 2 desired replicas", w.why(), "the problem is over once the condition is True")
	// Another HPA of the namespace is not the probe's.
	other := hpa.DeepCopy()
	other.Name, other.Status.DesiredReplicas = "theirs", 9
	w.apply(event(t, hpaTag, watch.Modified, other))
	assert.Equal(t, int32(2), w.desired)

	w.apply(event(t, podsTag, watch.Deleted, bound))
	assert.Equal(t, 0, w.boundPods())
	assert.Empty(t, w.bound)
	var said []string
	for _, row := range w.timeline.Rows {
		said = append(said, row[0])
	}
	assert.Equal(t, []string{
		"pod p1 created", "pod p1 bound to gpu-1",
		"HPA: 1 current, 1 desired replicas",
		"HPA: AbleToScale=True (SucceededGetScale)", "HPA: ScalingActive=False (FailedGetExternalMetric)",
		"HPA: ScalingLimited=False (DesiredWithinRange)", "HPA: ScaledToZero=False (NotScaledToZero)",
		"HPA: 1 current, 2 desired replicas", "HPA: ScalingActive=True (ValidMetricFound)",
		"pod p1 deleted",
	}, said)
}

// The metrics the probe tries: the flag's, the cluster's own HPAs', then
// the adapter's, each once; a probe's HPA and a set-based selector are
// left out.
func TestMetricCandidates(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.APIServices[1] = checkstest.APIService("v1beta1.external.metrics.k8s.io", "custom-metrics", "custom-metrics-apiserver", "True")
	withSelector := checkstest.GPUHPA("ml", "b", "rps", corev1.ConditionTrue)
	withSelector.Spec.Metrics[0].External.Metric.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"model": "llama"}}
	setBased := checkstest.GPUHPA("ml", "c", "lag", corev1.ConditionTrue)
	setBased.Spec.Metrics[0].External.Metric.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}}}
	probes := checkstest.GPUHPA("aiconform-probe-x", "aiconform-hpa", "probe-metric", corev1.ConditionTrue)
	dup := checkstest.GPUHPA("ml", "d", "s0-queue-depth", corev1.ConditionTrue)
	w.HPAs = append(w.HPAs, withSelector, setBased, probes, dup)
	s := probe.NewSession(nil, nil, "r", time.Minute)
	s.Metric = &probe.Metric{Name: "tokens_waiting"}
	env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow, Probe: s}
	got, err := metricCandidates(context.Background(), env)
	require.NoError(t, err)
	var names []string
	for _, m := range got {
		names = append(names, m.String())
	}
	// The HPAs in the order the LIST gives them: by namespace, then name.
	assert.Equal(t, []string{"tokens_waiting", "rps{model=llama}", "s0-queue-depth", "my-external-metric"}, names)
}
