package accelerators_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// gfd labels gpu-node-1 as GPU Feature Discovery does for its 8 GPUs.
func gfd(w *checkstest.World) {
	w.Nodes[1].Labels = map[string]string{
		"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
	}
}

// gpuOperator installs the GPU Operator's ClusterPolicy CRD and a
// ClusterPolicy in state: none for "", one without a status for "-".
func gpuOperator(state string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "clusterpolicies.nvidia.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "nvidia.com", Scope: apiextensionsv1.ClusterScoped,
				Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusterpolicies", Kind: "ClusterPolicy", ListKind: "ClusterPolicyList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
			},
		}
		w.CRDs = append(w.CRDs, crd)
		if state == "" {
			return
		}
		cp := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
			"metadata": map[string]any{"name": "cluster-policy"},
			"status":   map[string]any{"state": state},
		}}
		if state == "-" {
			delete(cp.Object, "status")
		}
		w.ClusterPolicies = append(w.ClusterPolicies, cp)
	}
}

func TestGPUDevicePlugin(t *testing.T) {
	both := func(fs ...func(w *checkstest.World)) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			for _, f := range fs {
				f(w)
			}
		}
	}
	tests := []struct {
		name   string
		tweak  func(w *checkstest.World)
		status checks.Status
		reason string
	}{
		{"healthy", nil, checks.Pass, "a Ready device plugin pod on each of 1 GPU node (DaemonSet kube-system/nvidia-device-plugin-daemonset)"},
		{"with consistent GPU Feature Discovery labels", gfd, checks.Pass, "on each of 1 GPU node"},
		{"plugin pod not Ready", func(w *checkstest.World) { w.PluginPod.Status.Conditions[1].Status = corev1.ConditionFalse }, checks.Fail,
			"node gpu-node-1: device plugin pod kube-system/nvidia-device-plugin-daemonset-k7x2p for nvidia.com/gpu is not Running and Ready (pod nvidia-device-plugin-daemonset-k7x2p is not Ready)"},
		{"plugin pod crash-looping", func(w *checkstest.World) {
			w.PluginPod.Status.Conditions[1].Status = corev1.ConditionFalse
			w.PluginPod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}}
		}, checks.Fail, "container manager is waiting: CrashLoopBackOff back-off 5m0s"},
		{"no device plugin DaemonSet", func(w *checkstest.World) { w.DevicePlugin, w.PluginPod = nil, nil }, checks.Fail,
			"node gpu-node-1 advertises nvidia.com/gpu, but no device plugin DaemonSet for nvidia.com/gpu exists"},
		{"a DaemonSet with other labels is no device plugin", func(w *checkstest.World) {
			w.DevicePlugin.Spec.Template.Labels = map[string]string{"name": "something-else"}
		}, checks.Fail, "no device plugin DaemonSet for nvidia.com/gpu exists"},
		{"its pod runs on another node", func(w *checkstest.World) { w.PluginPod.Spec.NodeName = "cpu-node-1" }, checks.Fail,
			"node gpu-node-1 advertises nvidia.com/gpu, but no pod of device plugin DaemonSet kube-system/nvidia-device-plugin-daemonset runs on it"},
		{"a pod with the labels that the DaemonSet does not own does not count", func(w *checkstest.World) { w.PluginPod.OwnerReferences = nil }, checks.Fail,
			"no pod of device plugin DaemonSet kube-system/nvidia-device-plugin-daemonset runs on it"},
		{"the GPU Operator's plugin", func(w *checkstest.World) {
			labels := map[string]string{"app": "nvidia-device-plugin-daemonset"}
			w.DevicePlugin.Namespace, w.PluginPod.Namespace = "gpu-operator", "gpu-operator"
			w.DevicePlugin.Spec.Selector.MatchLabels, w.DevicePlugin.Spec.Template.Labels, w.PluginPod.Labels = labels, labels, labels
		}, checks.Pass, "(DaemonSet gpu-operator/nvidia-device-plugin-daemonset)"},
		{"the Helm chart's plugin", func(w *checkstest.World) {
			labels := map[string]string{"app.kubernetes.io/name": "nvidia-device-plugin", "app.kubernetes.io/instance": "nvdp"}
			w.DevicePlugin.Name = "nvdp-nvidia-device-plugin"
			w.PluginPod.OwnerReferences[0].Name = w.DevicePlugin.Name
			w.DevicePlugin.Spec.Selector.MatchLabels, w.DevicePlugin.Spec.Template.Labels, w.PluginPod.Labels = labels, labels, labels
		}, checks.Pass, "(DaemonSet kube-system/nvdp-nvidia-device-plugin)"},
		{"a node labelled as having GPUs needs a plugin too", func(w *checkstest.World) {
			w.Nodes[0].Labels = map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4"}
		}, checks.Fail, "node cpu-node-1 is labelled nvidia.com/gpu.present=true, but no pod of device plugin DaemonSet kube-system/nvidia-device-plugin-daemonset runs on it"},
		{"labelled with GPUs, plugin there, none advertised: warns", func(w *checkstest.World) {
			w.Nodes[0].Labels = map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4"}
			second := w.PluginPod.DeepCopy()
			second.Name, second.Spec.NodeName = "nvidia-device-plugin-daemonset-q9w8e", "cpu-node-1"
			w.Pods = append(w.Pods, second)
		}, checks.Warn, "node cpu-node-1 is labelled nvidia.com/gpu.present=true but advertises no nvidia.com/gpu"},
		{"GPU count label disagrees with capacity", both(gfd, func(w *checkstest.World) { w.Nodes[1].Labels["nvidia.com/gpu.count"] = "4" }), checks.Warn,
			"a Ready device plugin pod on each judged GPU node (DaemonSet kube-system/nvidia-device-plugin-daemonset), but node gpu-node-1 is labelled nvidia.com/gpu.count=4 but its nvidia.com/gpu capacity is 8"},
		{"with MIG the count label counts GPUs, not slices", both(gfd, func(w *checkstest.World) {
			w.Nodes[1].Labels["nvidia.com/gpu.count"] = "1"
			w.Nodes[1].Labels["nvidia.com/mig.strategy"] = "single"
		}), checks.Pass, "on each of 1 GPU node"},
		{"present=false on a node advertising GPUs", both(gfd, func(w *checkstest.World) { w.Nodes[1].Labels["nvidia.com/gpu.present"] = "false" }), checks.Warn,
			`node gpu-node-1 advertises 8 nvidia.com/gpu but is labelled nvidia.com/gpu.present="false"`},
		{"present without product", both(gfd, func(w *checkstest.World) { delete(w.Nodes[1].Labels, "nvidia.com/gpu.product") }), checks.Warn,
			"node gpu-node-1 is labelled nvidia.com/gpu.present=true without nvidia.com/gpu.product"},
		{"ClusterPolicy ready", gpuOperator("ready"), checks.Pass, "(DaemonSet kube-system/nvidia-device-plugin-daemonset); ClusterPolicy cluster-policy ready"},
		{"ClusterPolicy notReady warns", gpuOperator("notReady"), checks.Warn,
			"but ClusterPolicy cluster-policy is notReady: the GPU Operator does not report its stack ready"},
		{"ClusterPolicy without a state", gpuOperator("-"), checks.Warn, "ClusterPolicy cluster-policy reports no state"},
		{"an ignored ClusterPolicy beside the ready one", func(w *checkstest.World) {
			gpuOperator("ready")(w)
			ignored := w.ClusterPolicies[0].DeepCopy()
			ignored.SetName("old-policy")
			ignored.Object["status"] = map[string]any{"state": "ignored"}
			w.ClusterPolicies = append(w.ClusterPolicies, ignored)
		}, checks.Pass, "; ClusterPolicy cluster-policy ready"},
		{"GPU Operator CRD without a ClusterPolicy", gpuOperator(""), checks.Warn, "no ClusterPolicy exists: the operator manages nothing"},
		{"an accelerator no known plugin serves, beside one judged", func(w *checkstest.World) {
			w.Nodes[1].Status.Capacity["habana.ai/gaudi"] = resource.MustParse("8")
		}, checks.Warn, "node gpu-node-1 advertises habana.ai/gaudi, for which aiconform knows no device plugin: not judged"},
		{"only accelerators no known plugin serves", func(w *checkstest.World) {
			w.Nodes[1] = checkstest.Node("gaudi-node-1", corev1.ConditionTrue, corev1.ResourceList{"habana.ai/gaudi": resource.MustParse("8")})
		}, checks.Skip, "aiconform knows no device plugin for the accelerators of 1 GPU node: node gaudi-node-1 advertises habana.ai/gaudi"},
		{"AMD and Intel plugins", func(w *checkstest.World) {
			w.Nodes = append(w.Nodes,
				checkstest.Node("amd-node-1", corev1.ConditionTrue, corev1.ResourceList{"amd.com/gpu": resource.MustParse("4")}),
				checkstest.Node("intel-node-1", corev1.ConditionTrue, corev1.ResourceList{"gpu.intel.com/i915": resource.MustParse("1")}))
			for _, p := range []struct{ name, node string }{{"amdgpu-device-plugin-daemonset", "amd-node-1"}, {"intel-gpu-plugin", "intel-node-1"}} {
				labels := map[string]string{"name": "amdgpu-dp-ds"}
				if p.node == "intel-node-1" {
					labels = map[string]string{"app": "intel-gpu-plugin"}
				}
				uid := types.UID("uid-" + p.name)
				w.ExtraDaemonSets = append(w.ExtraDaemonSets, &appsv1.DaemonSet{
					ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: p.name, UID: uid},
					Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}},
				})
				pod := checkstest.ReadyPod("kube-system", p.name+"-x1y2z", labels, p.node)
				pod.OwnerReferences = checkstest.Owner("DaemonSet", p.name, uid)
				w.Pods = append(w.Pods, pod)
			}
		}, checks.Pass, "a Ready device plugin pod on each of 3 GPU nodes (DaemonSet kube-system/amdgpu-device-plugin-daemonset, DaemonSet kube-system/intel-gpu-plugin, DaemonSet kube-system/nvidia-device-plugin-daemonset)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), tc.tweak), "gpu-device-plugin", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.status == checks.Fail || tc.status == checks.Warn {
				assert.NotEmpty(t, r.Details)
			}
		})
	}
}

func TestGPUDevicePluginEvidence(t *testing.T) {
	r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) { gfd(w); gpuOperator("ready")(w) }), "gpu-device-plugin", "")
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	var commands []string
	for _, s := range r.Evidence {
		commands = append(commands, s.Command)
	}
	assert.Equal(t, []string{
		"kubectl get ds nvidia-device-plugin-daemonset -n kube-system -o wide",
		"kubectl get pods -n kube-system -l name=nvidia-device-plugin-ds -o wide",
		`kubectl get nodes gpu-node-1 -o 'custom-columns=NAME:.metadata.name,GPU_CAPACITY:.status.capacity.nvidia\.com/gpu,GPU_PRESENT:.metadata.labels.nvidia\.com/gpu\.present,GPU_PRODUCT:.metadata.labels.nvidia\.com/gpu\.product,GPU_COUNT:.metadata.labels.nvidia\.com/gpu\.count'`,
		"kubectl get clusterpolicies.nvidia.com",
	}, commands)
	assert.Equal(t, ""+
		"NAME         GPU_CAPACITY   GPU_PRESENT   GPU_PRODUCT             GPU_COUNT\n"+
		"gpu-node-1   8              true          NVIDIA-H100-80GB-HBM3   8\n", r.Evidence[2].Output)
	require.NotNil(t, r.Table)
	assert.Equal(t, []string{"NODE", "RESOURCES", "DEVICE PLUGIN POD", "READY"}, r.Table.Header)
	assert.Equal(t, [][]string{{"gpu-node-1", "nvidia.com/gpu", "kube-system/nvidia-device-plugin-daemonset-k7x2p", "True"}}, r.Table.Rows)

	// With no plugin at all, the evidence is every DaemonSet of the
	// cluster, which shows there is none.
	r = checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) { w.DevicePlugin, w.PluginPod = nil, nil }), "gpu-device-plugin", "")
	require.Equal(t, checks.Fail, r.Status, r.Reason)
	assert.Equal(t, "kubectl get ds -A -o wide", r.Evidence[0].Command)
	assert.Equal(t, "no DaemonSet carries the pod labels of a known device plugin", r.Evidence[0].Note)
	assert.Equal(t, [][]string{{"gpu-node-1", "nvidia.com/gpu", "<none>", "False"}}, r.Table.Rows)
}

// Reading the ClusterPolicy is refused: the check says so and warns, since
// a ClusterPolicy can only ever make it warn; the device plugin pods, read,
// are judged.
func TestGPUDevicePluginClusterPolicyForbidden(t *testing.T) {
	w := checkstest.NewWorld(t)
	gpuOperator("ready")(w)
	f := w.Serve()
	f.Dyn.PrependReactor("list", "clusterpolicies", checkstest.Forbidden("nvidia.com", "clusterpolicies"))
	r := checkstest.Result(t, f.Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)}), "gpu-device-plugin", "")
	assert.Equal(t, checks.Warn, r.Status, r.Reason)
	assert.Contains(t, r.Reason, "the NVIDIA GPU Operator's ClusterPolicy cannot be read: list clusterpolicies.v1.nvidia.com: clusterpolicies.nvidia.com is forbidden")
}

func TestGPUDevicePluginReasonNamesAFew(t *testing.T) {
	r := checkstest.Result(t, checkstest.RunWorld(t, builtin.Registry(), func(w *checkstest.World) {
		w.DevicePlugin, w.PluginPod = nil, nil
		for _, n := range []string{"gpu-node-2", "gpu-node-3", "gpu-node-4", "gpu-node-5", "gpu-node-6", "gpu-node-7"} {
			w.Nodes = append(w.Nodes, checkstest.Node(n, corev1.ConditionTrue, checkstest.GPUs("8")))
		}
	}), "gpu-device-plugin", "")
	assert.Equal(t, checks.Fail, r.Status)
	assert.Len(t, r.Details, 7)
	assert.True(t, strings.HasSuffix(r.Reason, "; and 2 more"), r.Reason)
	// Evidence names a few nodes; the table covers all.
	assert.Len(t, r.Table.Rows, 7)
	nodes := r.Evidence[len(r.Evidence)-1]
	assert.Contains(t, nodes.Note, "5 of 7 GPU nodes shown")
}

// The recorded fault: the plugin is gone, the node still advertises its
// GPUs, so gpu-allocatable passes and only this check sees it.
func TestGPUDevicePluginMissingRecorded(t *testing.T) {
	out, _ := checkstest.RunFixture(t, builtin.Registry(), "device-plugin-missing")
	assert.Equal(t, checks.Pass, checkstest.Result(t, out, "gpu-allocatable", "").Status)
	r := checkstest.Result(t, out, "gpu-device-plugin", "")
	require.Equal(t, checks.Fail, r.Status, r.Reason)
	assert.Contains(t, r.Details, "ClusterPolicy cluster-policy is notReady: the GPU Operator does not report its stack ready")
	require.NotEmpty(t, r.Evidence)
	assert.Equal(t, "kubectl get ds -A -o wide", r.Evidence[0].Command)
	assert.NotContains(t, r.Evidence[0].Output, "nvidia-device-plugin")
	var policy string
	for _, s := range r.Evidence {
		if s.Command == "kubectl get clusterpolicies.nvidia.com" {
			policy = s.Output
		}
	}
	assert.Contains(t, policy, "cluster-policy   notReady")
}
