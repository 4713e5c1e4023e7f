package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// Leases, Events and DaemonSets are recorded and replayed typed, with the
// fields the liveness checks judge intact: a Lease's microsecond renew
// time, an Event's timestamps and count, a DaemonSet's pod selector.
func TestLivenessKindsRoundTrip(t *testing.T) {
	renewed := metav1.NewMicroTime(t0.Add(-3*time.Second - 123456*time.Microsecond))
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kserve", Name: "kserve-controller-manager-leader-lock"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptrTo("kserve-controller-manager-7d9f8b6c5d-x2k4p_0b6f7c1e-3f0a-4c59-9d38-2b1a8f4f6c11"),
			LeaseDurationSeconds: ptrTo[int32](15),
			AcquireTime:          &renewed,
			RenewTime:            &renewed,
		},
	}
	event := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ray", Name: "raycluster-mini.17f3c2a1b0e9d8c7"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "ray.io/v1", Kind: "RayCluster", Namespace: "ray", Name: "raycluster-mini", UID: types.UID("uid-rc")},
		Type:           corev1.EventTypeWarning,
		Reason:         "FailedToCreateWorkerPod",
		Message:        "Failed to create worker Pod",
		Count:          3,
		FirstTimestamp: metav1.NewTime(t0.Add(-10 * time.Minute)),
		LastTimestamp:  metav1.NewTime(t0.Add(-4 * time.Minute)),
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset", UID: "uid-ds"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "nvidia-device-plugin-ds"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"name": "nvidia-device-plugin-ds"}}},
		},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberReady: 1},
	}
	live := &Live{Kube: kubefake.NewClientset(lease, event, ds), Now: func() time.Time { return t0 }}
	ctx := context.Background()
	queries := []Query{
		{Resource: Leases, Namespace: "kserve"},
		{Resource: Events, FieldSelector: "type=Warning"},
		{Resource: DaemonSets},
	}
	c := NewCache(live)
	for _, q := range queries {
		objs, _, err := c.List(ctx, q)
		require.NoError(t, err, q.String())
		require.Len(t, objs, 1, q.String())
	}
	rec, err := c.Recording(Info{RecordedAt: t0})
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	replayed, err := LoadRecording("liveness", data)
	require.NoError(t, err)

	for i, want := range []runtime.Object{lease, event, ds} {
		got, at, err := replayed.List(ctx, queries[i])
		require.NoError(t, err)
		assert.Equal(t, t0, at)
		require.Len(t, got, 1)
		assert.IsType(t, want, got[0])
		assert.True(t, equality.Semantic.DeepEqual(want, got[0]), "%s:\nwant %+v\ngot  %+v", queries[i], want, got[0])
	}

	// The lease's custom columns print the renew time as kubectl does:
	// RFC 3339 with microseconds, from the recorded object.
	out, _, err := NewCache(replayed).Print(ctx, Get{Resources: []Resource{Leases}, Namespace: "kserve",
		Names: []string{"kserve-controller-manager-leader-lock"}, Columns: "HOLDER:.spec.holderIdentity,RENEWED:.spec.renewTime,DURATION:.spec.leaseDurationSeconds"})
	require.NoError(t, err)
	assert.Equal(t, ""+
		"HOLDER                                                                            RENEWED                       DURATION\n"+
		"kserve-controller-manager-7d9f8b6c5d-x2k4p_0b6f7c1e-3f0a-4c59-9d38-2b1a8f4f6c11   2026-11-29T22:03:35.876544Z   15\n", out)
}

func TestLivenessKindsCommands(t *testing.T) {
	assert.Equal(t, "kubectl get lease kserve-controller-manager-leader-lock -n kserve",
		Get{Resources: []Resource{Leases}, Namespace: "kserve", Names: []string{"kserve-controller-manager-leader-lock"}}.Command())
	assert.Equal(t, "kubectl get events -A --field-selector type=Warning,involvedObject.kind=RayCluster",
		Get{Resources: []Resource{Events}, FieldSelector: "type=Warning,involvedObject.kind=RayCluster"}.Command())
	assert.Equal(t, "kubectl get ds -A -o wide", Get{Resources: []Resource{DaemonSets}, Wide: true}.Command())
}

func ptrTo[T any](v T) *T { return &v }
