package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// workloadsSource answers a list of Deployments or StatefulSets with its
// objects of the kind, packed by the cache as a cluster's reader would.
type workloadsSource struct {
	countingSource
	readerless
	objs []runtime.Object
}

func (s *workloadsSource) List(ctx context.Context, q Query) ([]runtime.Object, time.Time, error) {
	if _, _, err := s.countingSource.List(ctx, q); err != nil {
		return nil, t0, err
	}
	var out []runtime.Object
	for _, o := range s.objs {
		_, dep := o.(*appsv1.Deployment)
		if dep == (q.Resource.GVR == Deployments.GVR) {
			out = append(out, o)
		}
	}
	return out, t0, nil
}

// The workloads of a kind are made once from its list across the cluster,
// which is read once, and keep what the checks read: replicas unset are
// the one the API server defaults.
func TestWorkloads(t *testing.T) {
	owner := metav1.OwnerReference{Kind: "InferenceService", Name: "llm", UID: "u1"}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	src := &workloadsSource{objs: []runtime.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", Labels: map[string]string{"team": "x"}, OwnerReferences: []metav1.OwnerReference{owner}},
			Spec:       appsv1.DeploymentSpec{Selector: sel, Template: templateLabelled(map[string]string{"app": "a"})},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: 1, AvailableReplicas: 1},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: 2},
		},
		&appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "s"},
			Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0), Template: templateLabelled(map[string]string{"role": "decode"})},
		},
	}}
	c := NewCache(src)
	ctx := context.Background()

	deps, at, err := c.Workloads(ctx, Deployments)
	require.NoError(t, err)
	assert.Equal(t, t0, at)
	assert.Equal(t, []*Workload{
		{Resource: Deployments, Namespace: "ns", Name: "a", Labels: map[string]string{"team": "x"}, Owners: []metav1.OwnerReference{owner},
			Selector: sel, TemplateLabels: map[string]string{"app": "a"}, Replicas: 1, Ready: 1, Available: 1},
		{Resource: Deployments, Namespace: "ns", Name: "b", Replicas: 3, Ready: 2},
	}, deps)
	again, _, err := c.Workloads(ctx, Deployments)
	require.NoError(t, err)
	assert.Same(t, deps[0], again[0], "the workloads were made again")
	assert.NotNil(t, keptBy(c, Query{Resource: Deployments}).packed, "the list is kept packed beside them")

	sets, _, err := c.Workloads(ctx, StatefulSets)
	require.NoError(t, err)
	assert.Equal(t, []*Workload{{Resource: StatefulSets, Namespace: "db", Name: "s", TemplateLabels: map[string]string{"role": "decode"}}}, sets)
	assert.EqualValues(t, 2, src.lists.Load(), "one list of each kind")

	_, _, err = c.Workloads(ctx, Pods)
	assert.ErrorContains(t, err, "are not workloads")

	refused := NewCache(&workloadsSource{countingSource: countingSource{err: errors.New("deployments.apps is forbidden")}})
	_, _, err = refused.Workloads(ctx, Deployments)
	assert.ErrorContains(t, err, "forbidden")
}

func templateLabelled(l map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}}
}
