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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The shipped Volcano and coscheduling profiles, judged on objects written
// to each project's published API: Volcano's scheduling.volcano.sh/v1beta1
// PodGroup (spec.minMember, status.phase) and cluster-scoped Queue
// (status.state), with pods annotated scheduling.k8s.io/group-name;
// scheduler-plugins' scheduling.x-k8s.io/v1alpha1 PodGroup (spec.minMember,
// status.phase), with pods labelled scheduling.x-k8s.io/pod-group.
var (
	volcanoGroupsGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	volcanoQueuesGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
	coschedGroupsGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
)

const (
	volcanoAnnotation = "scheduling.k8s.io/group-name"
	coschedLabel      = "scheduling.x-k8s.io/pod-group"
)

func builtinProfile(t *testing.T, name string) *checks.Profile {
	t.Helper()
	for _, p := range checkstest.BuiltinProfiles(t) {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no built-in profile %s", name)
	return nil
}

// podGroup is a PodGroup of gvr's API with minMember and a phase ("" for
// none yet).
func podGroup(gvr schema.GroupVersionResource, ns, name string, minMember int64, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind("PodGroup")
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"minMember": minMember}
	if phase != "" {
		u.Object["status"] = map[string]any{"phase": phase}
	}
	return u
}

// volcanoQueue is a Volcano Queue in state.
func volcanoQueue(name, state string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(volcanoQueuesGVR.GroupVersion().String())
	u.SetKind("Queue")
	u.SetName(name)
	u.Object["spec"] = map[string]any{"weight": int64(1), "reclaimable": true}
	u.Object["status"] = map[string]any{"state": state}
	return u
}

// memberPod is pod i of group, named by an annotation or a label with key,
// bound to node (pending when node is "").
func memberPod(ns, group string, i int, node, annotation, label string) *corev1.Pod {
	p := checkstest.ReadyPod(ns, group+"-"+string(rune('a'+i)), nil, node)
	if annotation != "" {
		p.Annotations = map[string]string{annotation: group}
	}
	if label != "" {
		p.Labels = map[string]string{label: group}
	}
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	}
	return p
}

func volcanoPod(ns, group string, i int, node string) *corev1.Pod {
	return memberPod(ns, group, i, node, volcanoAnnotation, "")
}

func coschedPod(ns, group string, i int, node string) *corev1.Pod {
	return memberPod(ns, group, i, node, "", coschedLabel)
}

// podGroupWorld is a fake cluster serving one solution's CRDs.
type podGroupWorld struct {
	profile string
	objs    []*unstructured.Unstructured
	pods    []*corev1.Pod
}

func (w podGroupWorld) env(t *testing.T) (*checks.Env, *kubefake.Clientset) {
	t.Helper()
	var kube, dyn []runtime.Object
	for _, p := range w.pods {
		kube = append(kube, p)
	}
	for _, o := range w.objs {
		dyn = append(dyn, o)
	}
	var crds []runtime.Object
	lists := map[schema.GroupVersionResource]string{}
	switch w.profile {
	case "volcano":
		queues := checkstest.ServedCRD(volcanoQueuesGVR, "Queue")
		queues.Spec.Scope = apiextensionsv1.ClusterScoped
		crds = append(crds, checkstest.ServedCRD(volcanoGroupsGVR, "PodGroup"), queues)
		lists[volcanoGroupsGVR], lists[volcanoQueuesGVR] = "PodGroupList", "QueueList"
	case "coscheduling":
		crds = append(crds, checkstest.ServedCRD(coschedGroupsGVR, "PodGroup"))
		lists[coschedGroupsGVR] = "PodGroupList"
	}
	kubeClient := kubefake.NewClientset(kube...)
	live := &cluster.Live{
		Kube:          kubeClient,
		APIExtensions: apiextensionsfake.NewClientset(crds...),
		Dynamic:       dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, dyn...),
		Now:           checkstest.FixedNow,
	}
	return &checks.Env{Cluster: cluster.NewCache(live), Profile: builtinProfile(t, w.profile), Now: checkstest.FixedNow}, kubeClient
}

// podLists are the namespaces of the pod LISTs the fake was sent ("" for
// one across the cluster).
func podLists(c *kubefake.Clientset) []string {
	var out []string
	for _, a := range c.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, l.GetNamespace())
		}
	}
	return out
}

// The shipped profiles of PodGroups say what the projects' APIs hold.
func TestBuiltinGangsOfPhases(t *testing.T) {
	want := map[string]checks.GangWorkloads{
		"volcano": {CRD: "podgroups.scheduling.volcano.sh", PodCounts: "spec.minMember",
			Phase: &checks.GangPhase{Field: "status.phase", Admitted: []string{"Running"}, Waiting: []string{"Pending", "Inqueue"}, Finished: []string{"Completed"}},
			Pods:  checks.GangPods{Annotation: "scheduling.k8s.io/group-name"}},
		"coscheduling": {CRD: "podgroups.scheduling.x-k8s.io", PodCounts: "spec.minMember",
			Phase: &checks.GangPhase{Field: "status.phase", Admitted: []string{"Running"}, Waiting: []string{"Pending"}, Finished: []string{"Finished", "Failed"}},
			Pods:  checks.GangPods{Label: "scheduling.x-k8s.io/pod-group"}},
	}
	found := 0
	for _, p := range checkstest.BuiltinProfiles(t) {
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		found++
		require.NotNil(t, p.Gang, p.Name)
		assert.Equal(t, w, p.Gang.Workloads, p.Name)
		assert.Equal(t, []string{"gang_scheduling"}, p.Carries, p.Name)
		if p.Name == "coscheduling" {
			// Its probe goes through its own scheduler, by name.
			require.NotNil(t, p.Gang.Probe)
			assert.Equal(t, "scheduler-plugins-scheduler", p.Gang.Probe.Scheduler)
			_, fits, exceeds, err := p.Gang.Probe.Objects("RUN1", "aiconform-probe-RUN1", "IMAGE")
			require.NoError(t, err)
			for _, gang := range []*unstructured.Unstructured{fits, exceeds} {
				name, _, _ := unstructured.NestedString(gang.Object, "spec", "template", "spec", "schedulerName")
				assert.Equal(t, "scheduler-plugins-scheduler", name)
			}
		} else {
			assert.Nil(t, p.Gang.Probe, p.Name)
		}
		assert.Contains(t, p.CRDs, w.CRD, p.Name)
	}
	assert.Equal(t, len(want), found)
}

func TestGangsAdmittedVolcano(t *testing.T) {
	tests := []struct {
		name   string
		world  podGroupWorld
		status checks.Status
		reason string
	}{
		{
			name: "a Running PodGroup with every pod bound is admitted whole",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "train", 2, "Running"),
					podGroup(volcanoGroupsGVR, "ml", "wait", 3, "Pending")},
				pods: []*corev1.Pod{volcanoPod("ml", "train", 0, "gpu-1"), volcanoPod("ml", "train", 1, "gpu-2"),
					volcanoPod("ml", "wait", 0, ""),
					// Neither the same name in another namespace nor a pod
					// of no group counts.
					volcanoPod("other", "wait", 0, "gpu-3"), checkstest.ReadyPod("ml", "loner", nil, "gpu-3")},
			},
			status: checks.Pass,
			reason: "1 admitted gang with every pod bound, and no waiting gang with any (2 podgroups: 1 admitted, 0 finished)",
		},
		{
			name: "a Pending PodGroup with a bound pod runs partially",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "train", 2, "Running"),
					podGroup(volcanoGroupsGVR, "ml", "big", 4, "Pending")},
				pods: []*corev1.Pod{volcanoPod("ml", "train", 0, "gpu-1"), volcanoPod("ml", "train", 1, "gpu-2"),
					volcanoPod("ml", "big", 0, "gpu-1"), volcanoPod("ml", "big", 1, "")},
			},
			status: checks.Fail,
			reason: "a gang runs partially: ml/big is not admitted, yet 1 of its 4 pods are bound (status.phase=Pending)",
		},
		{
			name: "an Inqueue PodGroup with some pods bound runs partially",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "big", 3, "Inqueue")},
				pods: []*corev1.Pod{volcanoPod("ml", "big", 0, "gpu-1"), volcanoPod("ml", "big", 1, "gpu-2"), volcanoPod("ml", "big", 2, "")},
			},
			status: checks.Fail,
			reason: "ml/big is not admitted, yet 2 of its 3 pods are bound (status.phase=Inqueue)",
		},
		{
			name: "an Inqueue PodGroup with every pod bound was read before its phase was written",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "train", 1, "Running"),
					podGroup(volcanoGroupsGVR, "ml", "late", 2, "Inqueue")},
				pods: []*corev1.Pod{volcanoPod("ml", "train", 0, "gpu-1"), volcanoPod("ml", "late", 0, "gpu-1"), volcanoPod("ml", "late", 1, "gpu-2")},
			},
			status: checks.Pass,
			reason: "2 podgroups: 1 admitted, 0 finished, 1 waiting with every pod bound (status.phase not yet updated)",
		},
		{
			name: "Completed is finished, Unknown is not judged",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "done", 2, "Completed"),
					podGroup(volcanoGroupsGVR, "ml", "lost", 2, "Unknown")},
				pods: []*corev1.Pod{volcanoPod("ml", "lost", 0, "gpu-1")},
			},
			status: checks.Skip,
			reason: "no running admitted gang to judge (2 podgroups: 0 admitted, 1 finished, 1 in a phase not judged (status.phase=Unknown)): " +
				"the volcano profile has no probe, so the requirement rests on this read-only evidence once a gang runs",
		},
		{
			name:   "no PodGroup",
			world:  podGroupWorld{},
			status: checks.Skip,
			reason: "no podgroups.scheduling.volcano.sh of the cluster's own: nothing shows Volcano admitting a gang (the profile has no probe",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.world.profile = "volcano"
			env, kube := tc.world.env(t)
			r, err := scheduling.GangsAdmitted{}.Run(context.Background(), env)
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			// Pods are read in the gangs' namespace, once for all its gangs,
			// and not at all with no gang to judge.
			want := []string{"ml"}
			if tc.status == checks.Skip {
				want = nil
			}
			assert.Equal(t, want, podLists(kube))
		})
	}
}

func TestGangsAdmittedVolcanoShowsTheGangsPods(t *testing.T) {
	env, _ := podGroupWorld{profile: "volcano",
		objs: []*unstructured.Unstructured{podGroup(volcanoGroupsGVR, "ml", "train", 2, "Running")},
		pods: []*corev1.Pod{volcanoPod("ml", "train", 1, "gpu-2"), volcanoPod("ml", "train", 0, "gpu-1"), checkstest.ReadyPod("ml", "loner", nil, "gpu-3")},
	}.env(t)
	r, err := scheduling.GangsAdmitted{}.Run(context.Background(), env)
	require.NoError(t, err)
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	require.Len(t, r.Evidence, 2)
	assert.Equal(t, "kubectl get podgroups.scheduling.volcano.sh -A", r.Evidence[0].Command)
	// kubectl selects by no annotation: the evidence names the pods.
	assert.Equal(t, "kubectl get pods train-a train-b -n ml -o wide", r.Evidence[1].Command)
}

func TestGangsAdmittedCoscheduling(t *testing.T) {
	tests := []struct {
		name    string
		world   podGroupWorld
		status  checks.Status
		reason  string
		command string
		lists   int
	}{
		{
			name: "a Running PodGroup with every pod bound is admitted whole",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(coschedGroupsGVR, "ml", "train", 2, "Running"),
					podGroup(coschedGroupsGVR, "ml", "next", 2, "Scheduling")},
				pods: []*corev1.Pod{coschedPod("ml", "train", 0, "gpu-1"), coschedPod("ml", "train", 1, "gpu-2"), coschedPod("ml", "next", 0, "")},
			},
			status:  checks.Pass,
			reason:  "1 admitted gang with every pod bound, and no waiting gang with any (2 podgroups: 1 admitted, 0 finished, 1 in a phase not judged (status.phase=Scheduling))",
			command: "kubectl get pods -n ml -l scheduling.x-k8s.io/pod-group=train -o wide",
			lists:   1,
		},
		{
			name: "a Pending PodGroup with a bound pod runs partially",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(coschedGroupsGVR, "ml", "train", 2, "Running"),
					podGroup(coschedGroupsGVR, "ml", "big", 3, "Pending")},
				pods: []*corev1.Pod{coschedPod("ml", "train", 0, "gpu-1"), coschedPod("ml", "train", 1, "gpu-2"),
					coschedPod("ml", "big", 0, "gpu-1"), coschedPod("ml", "big", 1, "")},
			},
			status: checks.Fail,
			reason: "a gang runs partially: ml/big is not admitted, yet 1 of its 3 pods are bound (status.phase=Pending)",
			lists:  2,
		},
		{
			name: "Finished and Failed are the end",
			world: podGroupWorld{
				objs: []*unstructured.Unstructured{podGroup(coschedGroupsGVR, "ml", "a", 2, "Finished"), podGroup(coschedGroupsGVR, "ml", "b", 2, "Failed")},
			},
			status: checks.Skip,
			reason: "no running admitted gang to judge (2 podgroups: 0 admitted, 2 finished)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.world.profile = "coscheduling"
			env, kube := tc.world.env(t)
			r, err := scheduling.GangsAdmitted{}.Run(context.Background(), env)
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			// One LIST a gang judged, each by its label, in its namespace.
			for _, ns := range podLists(kube) {
				assert.Equal(t, "ml", ns, "a pod LIST across the cluster")
			}
			assert.Len(t, podLists(kube), tc.lists)
			if tc.command != "" {
				require.Len(t, r.Evidence, 2)
				assert.Equal(t, tc.command, r.Evidence[1].Command)
			}
		})
	}
}

func TestGangQueuesVolcano(t *testing.T) {
	tests := []struct {
		name   string
		queues []*unstructured.Unstructured
		status checks.Status
		reason string
	}{
		{"Open queues", []*unstructured.Unstructured{volcanoQueue("default", "Open"), volcanoQueue("root", "Open")}, checks.Pass, "2 queues Active (Queue default, Queue root)"},
		{"a Closed queue names its state", []*unstructured.Unstructured{volcanoQueue("default", "Open"), volcanoQueue("team-b", "Closed")}, checks.Fail,
			"1 of 2 queues not Active: Queue team-b: status.state=Closed, not Open"},
		{"a queue whose state is not written yet", []*unstructured.Unstructured{volcanoQueue("default", "")}, checks.Fail,
			"Queue default: status.state not reported"},
		{"no queue", nil, checks.Warn, "no Queue: Volcano admits no workload of the cluster's own until one is created"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := podGroupWorld{profile: "volcano", objs: tc.queues}.env(t)
			r, err := scheduling.GangQueues{}.Run(context.Background(), env)
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			require.NotEmpty(t, r.Evidence)
			assert.Equal(t, "kubectl get queues.scheduling.volcano.sh", r.Evidence[0].Command)
		})
	}
}

// Coscheduling has no queue kind, and Volcano's profile no probe: each
// check says so, and where the requirement then rests.
func TestGangChecksWithoutQueuesOrProbe(t *testing.T) {
	env, _ := podGroupWorld{profile: "coscheduling"}.env(t)
	r, err := scheduling.GangQueues{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Equal(t, "Coscheduling (scheduler-plugins) has no queue kind: it admits a gang when all of its pods can be placed, not through a queue", r.Reason)
	assert.Empty(t, r.Evidence)

	env, _ = podGroupWorld{profile: "volcano"}.env(t)
	r, err = scheduling.GangProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "the volcano profile has no gang probe: for ")
	assert.Contains(t, r.Reason, "gang_scheduling rests on the read-only evidence (gangs-admitted)")

	// Coscheduling's probe runs under --probe only.
	env, _ = podGroupWorld{profile: "coscheduling"}.env(t)
	r, err = scheduling.GangProbe{}.Run(context.Background(), env)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Equal(t, "probes are off: --probe runs a gang of 3 pods whose Coscheduling PodGroup needs 3 members and one of 4, whose Coscheduling PodGroup needs 5 members", r.Reason)
}
