package accelerators

import (
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The probe asks from a class whose driver publishes on a Ready node, an
// accelerator driver's before another, and tolerates the GPU taint there.
func TestDRAProbeClass(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.ResourceSlices = append(w.ResourceSlices, checkstest.ResourceSlice("cpu-node-1", "dra.net", 2))
	w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("nic", "dra.net"), checkstest.DeviceClass("gpu", "gpu.nvidia.com")}
	w.Nodes[1].Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
	class, driver, tolerate, err := draProbeClass(t.Context(), env)
	require.NoError(t, err)
	assert.Equal(t, "gpu", class)
	assert.Equal(t, "gpu.nvidia.com", driver)
	assert.Equal(t, []string{"nvidia.com/gpu"}, tolerate)

	// Its node NotReady: only the NIC class is left.
	w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionUnknown, nil)
	env = &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
	class, _, _, err = draProbeClass(t.Context(), env)
	require.NoError(t, err)
	assert.Equal(t, "nic", class)
}

func TestDRAProbeSkipsWithoutProbes(t *testing.T) {
	r, err := DRAProbe{}.Run(t.Context(), &checks.Env{Now: checkstest.FixedNow})
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off")
}

// The template asks for one device of the class; the pod uses it, within
// limits and a deadline.
func TestDRAProbeObjects(t *testing.T) {
	typed := func(u *unstructured.Unstructured, err error, into any) {
		t.Helper()
		require.NoError(t, err)
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into))
	}
	var tmpl resourcev1.ResourceClaimTemplate
	u, err := draTemplate("gpu.nvidia.com")
	typed(u, err, &tmpl)
	assert.Equal(t, "ResourceClaimTemplate", u.GetKind())
	req := tmpl.Spec.Spec.Devices.Requests[0]
	assert.Equal(t, "gpu.nvidia.com", req.Exactly.DeviceClassName)
	assert.Equal(t, int64(1), req.Exactly.Count)

	var pod corev1.Pod
	u, err = draPod("registry.example/pause:3.10", []string{"nvidia.com/gpu"}, time.Minute)
	typed(u, err, &pod)
	assert.Equal(t, "v1", u.GetAPIVersion())
	assert.Equal(t, "registry.example/pause:3.10", pod.Spec.Containers[0].Image)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, draProbeName, *pod.Spec.ResourceClaims[0].ResourceClaimTemplateName)
	assert.Equal(t, "device", pod.Spec.Containers[0].Resources.Claims[0].Name)
	assert.Equal(t, "nvidia.com/gpu", pod.Spec.Tolerations[0].Key)
	assert.Equal(t, int64(180), *pod.Spec.ActiveDeadlineSeconds)
	pod = corev1.Pod{}
	u, err = draPod("p", nil, time.Minute)
	typed(u, err, &pod)
	assert.Empty(t, pod.Spec.Tolerations)
}

func TestDRAWatchApply(t *testing.T) {
	w := &draWatch{now: checkstest.FixedNow, timeline: &probe.Timeline{}, claims: map[string]*resourcev1.ResourceClaim{}, said: map[string]bool{}}
	ev := func(tag string, typ watch.EventType, obj runtime.Object) probe.Event {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, err)
		return probe.Event{Tag: tag, Event: watch.Event{Type: typ, Object: &unstructured.Unstructured{Object: m}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: draProbeName}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available: 2 cannot allocate all claims."}}}}
	w.apply(ev(draPodsTag, watch.Modified, pod))
	assert.Equal(t, "Unschedulable: 0/2 nodes are available: 2 cannot allocate all claims.", w.pendingWhy())
	claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "aiconform-dra-device-x7k2p"}}
	w.apply(ev(draClaimsTag, watch.Added, claim))
	assert.Nil(t, w.allocated())
	alloc := checkstest.AllocatedClaim("ns", claim.Name, "gpu.nvidia.com", "gpu-node-1", "gpu-3", draProbeName)
	w.apply(ev(draClaimsTag, watch.Modified, alloc))
	require.NotNil(t, w.allocated())
	assert.Equal(t, "device gpu-3 of pool gpu-node-1 (driver gpu.nvidia.com)", allocationText(w.allocated()))
	bound := pod.DeepCopy()
	bound.Spec.NodeName, bound.Status.Conditions = "gpu-node-1", nil
	w.apply(ev(draPodsTag, watch.Modified, bound))
	w.apply(ev(draClaimsTag, watch.Deleted, alloc))
	assert.Empty(t, w.claims)
	var said []string
	for _, row := range w.timeline.Rows {
		said = append(said, row[0])
	}
	assert.Equal(t, []string{
		"pod aiconform-dra pending: Unschedulable: 0/2 nodes are available: 2 cannot allocate all claims.",
		"claim aiconform-dra-device-x7k2p created",
		"claim aiconform-dra-device-x7k2p allocated device gpu-3 of pool gpu-node-1 (driver gpu.nvidia.com)",
		"pod aiconform-dra bound to gpu-node-1",
		"claim aiconform-dra-device-x7k2p deleted",
	}, said)
}
