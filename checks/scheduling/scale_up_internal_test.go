package scheduling

import (
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The probe's last pod fits no node there is, and a new one.
func TestPlanScaleUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nodes     []hardware.FreeNode
		pods      int
		perPod    int64
		why, fail string
	}{
		{name: "no accelerator node", pods: 1, perPod: 1, why: "one pod requesting 1 nvidia.com/gpu: no Ready node has more than 0 free, a new node has 8"},
		{name: "busy nodes", nodes: []hardware.FreeNode{{Name: "a", Free: 0}, {Name: "b", Free: 3}}, pods: 1, perPod: 4, why: "one pod requesting 4 nvidia.com/gpu: no Ready node has more than 3 free, a new node has 8"},
		{name: "an idle node", nodes: []hardware.FreeNode{{Name: "a", Free: 8}, {Name: "b", Free: 2}}, pods: 2, perPod: 8, why: "2 pods requesting 8 nvidia.com/gpu each: 1 Ready node has it free, so the last must wait for a new node"},
		{name: "too many idle nodes", nodes: []hardware.FreeNode{{Name: "a", Free: 8}, {Name: "b", Free: 8}, {Name: "c", Free: 8}, {Name: "d", Free: 8}, {Name: "e", Free: 8}}, fail: "5 Ready nodes have a whole node's 8 nvidia.com/gpu free: the probe fills at most 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planScaleUp("nvidia.com/gpu", 8, tc.nodes)
			if tc.fail != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.fail)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pods, p.pods)
			assert.Equal(t, tc.perPod, p.perPod)
			assert.Equal(t, tc.why, p.why)
		})
	}
}

// A node with a taint the probe's pods do not tolerate cannot take them.
func TestTolerated(t *testing.T) {
	n := checkstest.Node("gpu-1", corev1.ConditionTrue, nil)
	assert.True(t, hardware.ToleratedBy(n, "nvidia.com/gpu"))
	n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	assert.True(t, hardware.ToleratedBy(n, "nvidia.com/gpu"))
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule})
	assert.False(t, hardware.ToleratedBy(n, "nvidia.com/gpu"))
}

// The pod asks for what the plan says, with limits, a deadline, non-root.
func TestScaleUpPod(t *testing.T) {
	var pod corev1.Pod
	u, err := scaleUpPod("aiconform-scale-up-0", "registry.example/pause:3.10", scaleUpPlan{resource: "amd.com/gpu", perPod: 4}, 2*time.Minute)
	require.NoError(t, err)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod))
	_, hasStatus := u.Object["status"]
	assert.False(t, hasStatus, "the server writes the status")
	c := pod.Spec.Containers[0]
	assert.Equal(t, "registry.example/pause:3.10", c.Image)
	assert.Equal(t, resource.MustParse("4"), c.Resources.Limits["amd.com/gpu"])
	assert.Equal(t, resource.MustParse("4"), c.Resources.Requests["amd.com/gpu"])
	assert.Equal(t, int64(360), *pod.Spec.ActiveDeadlineSeconds)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, "amd.com/gpu", pod.Spec.Tolerations[0].Key)
	assert.Equal(t, "probe", pod.Labels[ScaleUpLabel])
}

// The watch tells added nodes from those there before, follows the
// pods onto them, and keeps the autoscaler's word on a pending pod over
// the scheduler's.
func TestScaleUpWatchApply(t *testing.T) {
	t0 := checkstest.FixedNow()
	w := &scaleUpWatch{now: checkstest.FixedNow, timeline: &probe.Timeline{}, known: map[string]bool{"gpu-1": true}, added: map[string]*corev1.Node{}, addedAt: map[string]time.Time{}, removed: map[string]bool{},
		pods: map[string]*corev1.Pod{}, want: 2, claims: map[string]string{}, said: map[string]bool{}, since: t0}
	w.timeline.T0 = t0
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	w.apply(event(t, podsTag, watch.Modified, pod("aiconform-scale-up-0", "gpu-1", corev1.PodRunning)))
	assert.False(t, w.allRunning(), "the second pod is not seen yet")
	w.apply(event(t, podsTag, watch.Added, pod("aiconform-scale-up-1", "", corev1.PodPending)))
	assert.False(t, w.allRunning())
	sched := &corev1.Event{Reason: "FailedScheduling", Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "aiconform-scale-up-1"}, Source: corev1.EventSource{Component: "default-scheduler"}}
	w.apply(event(t, eventsTag, watch.Added, sched))
	assert.Equal(t, "pod aiconform-scale-up-1: FailedScheduling: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.", w.pendingWhy())
	karp := &corev1.Event{Reason: "FailedScheduling", Message: "Failed to schedule pod, all available instance types exceed limits for nodepool: \"gpu\"",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "aiconform-scale-up-1"}, Source: corev1.EventSource{Component: "karpenter"}}
	w.apply(event(t, eventsTag, watch.Added, karp))
	w.apply(event(t, eventsTag, watch.Modified, sched))
	assert.Contains(t, w.pendingWhy(), "exceed limits for nodepool", "the autoscaler's word, not the scheduler's repeated one")

	claim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": "gpu-abcde", "labels": map[string]any{"karpenter.sh/nodepool": "gpu"}, "creationTimestamp": t0.Add(time.Second).Format(time.RFC3339)}}}
	w.apply(event(t, nodeClaimsTag, watch.Added, claim))
	require.NoError(t, unstructured.SetNestedSlice(claim.Object, []any{map[string]any{"type": "Launched", "status": "True"}}, "status", "conditions"))
	w.apply(event(t, nodeClaimsTag, watch.Modified, claim))
	old := claim.DeepCopy()
	old.SetName("before")
	old.SetCreationTimestamp(metav1.NewTime(t0.Add(-time.Hour)))
	w.apply(event(t, nodeClaimsTag, watch.Modified, old))

	// A change to a node of before is not a node added.
	w.apply(event(t, nodesTag, watch.Modified, checkstest.Node("gpu-1", corev1.ConditionTrue, nil)))
	assert.Empty(t, w.added)
	w.apply(event(t, nodesTag, watch.Added, checkstest.Node("gpu-abcde", corev1.ConditionFalse, nil)))
	w.apply(event(t, nodesTag, watch.Modified, checkstest.Node("gpu-abcde", corev1.ConditionTrue, nil)))
	assert.Nil(t, w.onAddedNode())
	w.apply(event(t, podsTag, watch.Modified, pod("aiconform-scale-up-1", "gpu-abcde", corev1.PodRunning)))
	assert.True(t, w.allRunning())
	require.NotNil(t, w.onAddedNode())
	assert.Equal(t, "aiconform-scale-up-1", w.onAddedNode().Name)
	w.apply(event(t, nodesTag, watch.Deleted, checkstest.Node("gpu-abcde", corev1.ConditionTrue, nil)))
	assert.True(t, w.removed["gpu-abcde"])

	var said []string
	for _, row := range w.timeline.Rows {
		said = append(said, row[0])
	}
	assert.Equal(t, []string{
		"pod aiconform-scale-up-0 bound to gpu-1 (a node that was there before)",
		"pod aiconform-scale-up-0 Running",
		"pod aiconform-scale-up-1: FailedScheduling: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
		"pod aiconform-scale-up-1: FailedScheduling: Failed to schedule pod, all available instance types exceed limits for nodepool: \"gpu\"",
		"NodeClaim gpu-abcde created by NodePool gpu",
		"NodeClaim gpu-abcde Launched",
		"node gpu-abcde added",
		"node gpu-abcde Ready",
		"pod aiconform-scale-up-1 bound to gpu-abcde (the added node)",
		"pod aiconform-scale-up-1 Running",
		"node gpu-abcde removed",
	}, said)
}
