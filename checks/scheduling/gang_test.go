package scheduling_test

import (
	"context"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/aiconform/aiconform/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// A made-up gang scheduler, so that the tests depend on no shipped
// profile: cluster-scoped queues, namespaced workload records owned by
// their Jobs.
const queueGroup = "queue.example.com"

const gangProfileYAML = `name: queues
title: Queue Scheduler
groups: [queue.example.com]
controller:
  namespace: queue-system
  selector: app=queue-controller
carries: [gang_scheduling]
gang:
  queues:
    - crd: clusterqueues.queue.example.com
      readyConditions: [Active]
  workloads:
    crd: workloads.queue.example.com
    admittedCondition: Admitted
    podCounts: spec.podSets[].count
`

var (
	queuesGVR    = schema.GroupVersionResource{Group: queueGroup, Version: "v1", Resource: "clusterqueues"}
	workloadsGVR = schema.GroupVersionResource{Group: queueGroup, Version: "v1", Resource: "workloads"}
)

func gangProfile(t *testing.T) *checks.Profile {
	t.Helper()
	ps, err := checks.ParseProfiles("queues.yaml", []byte(gangProfileYAML))
	require.NoError(t, err)
	return ps[0]
}

func crd(plural, kind string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	c := checkstest.EstablishedCRD(plural, kind)
	c.Name = plural + "." + queueGroup
	c.Spec.Group = queueGroup
	c.Spec.Scope = scope
	return c
}

func queue(name, active string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(queueGroup + "/v1")
	u.SetKind("ClusterQueue")
	u.SetName(name)
	u.SetLabels(labels)
	u.Object["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": "Active", "status": active, "reason": "FlavorNotFound", "message": "Can't admit new workloads: references missing ResourceFlavor(s): gpu."},
	}}
	return u
}

// workload is a gang of count pods owned by Job job (uid "uid-"+job).
func workload(ns, name, job string, count int64, admitted bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(queueGroup + "/v1")
	u.SetKind("Workload")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: k8stypes.UID("uid-" + job)}})
	u.Object["spec"] = map[string]any{"podSets": []any{map[string]any{"name": "main", "count": count}}}
	st := "False"
	if admitted {
		st = "True"
	}
	u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Admitted", "status": st}}}
	return u
}

// jobPod is pod i of Job job, bound to node (or pending when node is "").
func jobPod(ns, job string, i int, node string) *corev1.Pod {
	p := checkstest.ReadyPod(ns, job+"-"+string(rune('a'+i)), map[string]string{"batch.kubernetes.io/controller-uid": "uid-" + job}, node)
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	}
	return p
}

type gangWorld struct {
	queues, workloads []*unstructured.Unstructured
	pods              []*corev1.Pod
}

func (w gangWorld) env(t *testing.T) *checks.Env {
	t.Helper()
	var kube, dyn []runtime.Object
	for _, p := range w.pods {
		kube = append(kube, p)
	}
	for _, o := range append(append([]*unstructured.Unstructured{}, w.queues...), w.workloads...) {
		dyn = append(dyn, o)
	}
	live := &cluster.Live{
		Kube: kubefake.NewClientset(kube...),
		APIExtensions: apiextensionsfake.NewClientset(
			crd("clusterqueues", "ClusterQueue", apiextensionsv1.ClusterScoped),
			crd("workloads", "Workload", apiextensionsv1.NamespaceScoped)),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{queuesGVR: "ClusterQueueList", workloadsGVR: "WorkloadList"}, dyn...),
		Now: checkstest.FixedNow,
	}
	return &checks.Env{Cluster: cluster.NewCache(live), Profile: gangProfile(t), Now: checkstest.FixedNow}
}

func TestGangQueues(t *testing.T) {
	probeRun := map[string]string{"aiconform.io/run": "20270102-030405-abcd"}
	tests := []struct {
		name   string
		queues []*unstructured.Unstructured
		status checks.Status
		reason string
	}{
		{"an Active queue", []*unstructured.Unstructured{queue("team-a", "True", nil)}, checks.Pass, "1 queue Active (ClusterQueue team-a)"},
		{"an inactive queue names why", []*unstructured.Unstructured{queue("team-a", "True", nil), queue("team-b", "False", nil)}, checks.Fail,
			"1 of 2 queues not Active: ClusterQueue team-b: Active=False (FlavorNotFound: Can't admit new workloads: references missing ResourceFlavor(s): gpu.)"},
		{"no queue at all", nil, checks.Warn, "no ClusterQueue: Queue Scheduler admits no workload of the cluster's own until one is created"},
		{"a probe's queue is not the cluster's", []*unstructured.Unstructured{queue("aiconform-gang-x", "True", probeRun)}, checks.Warn, "no ClusterQueue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := scheduling.GangQueues{}.Run(context.Background(), gangWorld{queues: tc.queues}.env(t))
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			require.NotEmpty(t, r.Evidence)
			assert.Equal(t, "kubectl get clusterqueues.queue.example.com", r.Evidence[0].Command)
		})
	}
}

func TestGangsAdmitted(t *testing.T) {
	tests := []struct {
		name   string
		world  gangWorld
		status checks.Status
		reason string
	}{
		{
			name: "an admitted gang with every pod bound",
			world: gangWorld{
				workloads: []*unstructured.Unstructured{workload("ml", "job-train", "train", 2, true)},
				pods:      []*corev1.Pod{jobPod("ml", "train", 0, "gpu-1"), jobPod("ml", "train", 1, "gpu-2")},
			},
			status: checks.Pass, reason: "1 admitted gang with every pod bound, and no waiting gang with any (1 workload: 1 admitted, 0 finished)",
		},
		{
			name: "a waiting gang with a pod bound runs partially",
			world: gangWorld{
				workloads: []*unstructured.Unstructured{workload("ml", "job-train", "train", 2, true), workload("ml", "job-big", "big", 4, false)},
				pods: []*corev1.Pod{jobPod("ml", "train", 0, "gpu-1"), jobPod("ml", "train", 1, "gpu-2"),
					jobPod("ml", "big", 0, "gpu-1"), jobPod("ml", "big", 1, "")},
			},
			status: checks.Fail, reason: "a gang runs partially: ml/job-big is not admitted, yet 1 of its 4 pods are bound (Job big)",
		},
		{
			name: "an admitted gang still starting is not yet shown",
			world: gangWorld{
				workloads: []*unstructured.Unstructured{workload("ml", "job-train", "train", 2, true)},
				pods:      []*corev1.Pod{jobPod("ml", "train", 0, "gpu-1"), jobPod("ml", "train", 1, "")},
			},
			status: checks.Skip, reason: "ml/job-train is admitted, but 1 of its 2 pods are bound",
		},
		{
			name:   "no workload",
			status: checks.Skip, reason: "no workloads.queue.example.com of the cluster's own",
		},
		{
			name: "a probe's gang is not the cluster's",
			world: gangWorld{
				workloads: []*unstructured.Unstructured{workload("aiconform-probe-20270102-030405-abcd", "job-fits", "fits", 3, true)},
			},
			status: checks.Skip, reason: "no workloads.queue.example.com of the cluster's own",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := scheduling.GangsAdmitted{}.Run(context.Background(), tc.world.env(t))
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}

func TestGangProbeSkipsWithoutProbes(t *testing.T) {
	env := gangWorld{}.env(t)
	r, err := scheduling.GangProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Equal(t, "the queues profile has no gang probe: for Queue Scheduler, gang_scheduling rests on the read-only evidence (gangs-admitted)", r.Reason)

	ps, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	for _, p := range ps {
		if p.Name == "kueue" {
			env.Profile = p
		}
	}
	r, err = scheduling.GangProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Equal(t, "probes are off: --probe runs a gang of 3 pods that fits the quota and one of 4, more than the quota", r.Reason)
}
