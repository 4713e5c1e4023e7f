package accelerators_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// vendor is a cluster whose only accelerators are another vendor's than
// NVIDIA: the resources its device plugin advertises, and the labels its
// own manifests give the plugin's pods.
type vendor struct {
	name      string
	node      string
	resources corev1.ResourceList
	// request is the resource the world's pods ask for instead of
	// nvidia.com/gpu.
	request      corev1.ResourceName
	plugin       string
	pluginLabels map[string]string
}

var vendors = []vendor{
	{name: "TPU", node: "tpu-node-1", resources: corev1.ResourceList{"google.com/tpu": resource.MustParse("4")}, request: "google.com/tpu",
		plugin: "tpu-device-plugin", pluginLabels: map[string]string{"k8s-app": "tpu-device-plugin"}},
	{name: "Neuron", node: "trn-node-1", resources: corev1.ResourceList{
		"aws.amazon.com/neuron": resource.MustParse("16"), "aws.amazon.com/neurondevice": resource.MustParse("16"), "aws.amazon.com/neuroncore": resource.MustParse("32"),
	}, request: "aws.amazon.com/neuron", plugin: "neuron-device-plugin-daemonset", pluginLabels: map[string]string{"name": "neuron-device-plugin-ds"}},
	{name: "Ascend", node: "npu-node-1", resources: corev1.ResourceList{"huawei.com/Ascend910": resource.MustParse("8")}, request: "huawei.com/Ascend910",
		plugin: "ascend-device-plugin-daemonset", pluginLabels: map[string]string{"name": "ascend-device-plugin-ds"}},
}

// world makes the healthy world's GPU node the vendor's only accelerator
// node: it advertises the vendor's resources and nothing of NVIDIA's, no
// DRA driver publishes devices for it, its pods ask for the vendor's
// resource, and the vendor's device plugin runs on it.
func (v vendor) world(w *checkstest.World) {
	w.Nodes[1] = checkstest.Node(v.node, corev1.ConditionTrue, v.resources)
	w.ResourceSlices, w.ResourceClaims = nil, nil
	for _, p := range append(w.Pods, w.PluginPod) {
		if p.Spec.NodeName == "gpu-node-1" {
			p.Spec.NodeName = v.node
		}
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				for _, l := range []corev1.ResourceList{cs[i].Resources.Requests, cs[i].Resources.Limits} {
					if q, ok := l["nvidia.com/gpu"]; ok {
						delete(l, "nvidia.com/gpu")
						l[v.request] = q
					}
				}
			}
		}
	}
	w.DevicePlugin.Name = v.plugin
	w.DevicePlugin.Spec.Selector.MatchLabels = v.pluginLabels
	w.DevicePlugin.Spec.Template.Labels = v.pluginLabels
	w.PluginPod.Name, w.PluginPod.Labels = v.plugin+"-k7x2p", v.pluginLabels
	w.PluginPod.OwnerReferences = checkstest.Owner("DaemonSet", v.plugin, w.DevicePlugin.UID)
}

// A cluster of TPUs, of Neuron devices or of Ascend NPUs alone is judged
// on gpu_nodes_allocatable as one of GPUs is, where it was not applicable
// before (none of their resources was an accelerator's): its nodes are
// found, and its device plugin is recognised by its own pod labels.
func TestOtherVendorsNodesAndDevicePlugins(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.name, func(t *testing.T) {
			with := func(edit func(w *checkstest.World)) func(w *checkstest.World) {
				return func(w *checkstest.World) {
					v.world(w)
					if edit != nil {
						edit(w)
					}
				}
			}
			checkstest.RunCases(t, accelerators.GPUAllocatable{}, []checkstest.Case{
				{Name: "allocatable", Edit: with(nil), Status: checks.Pass, Reason: "1 GPU node Ready with accelerators allocatable"},
				{Name: "not Ready", Edit: with(func(w *checkstest.World) { w.Nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse }),
					Status: checks.Fail, Reason: v.node},
				{Name: "none allocatable", Edit: with(func(w *checkstest.World) {
					for res := range v.resources {
						w.Nodes[1].Status.Allocatable[res] = resource.MustParse("0")
					}
				}), Status: checks.Fail, Reason: v.node},
			}, nil)
			nodeEvidence := func(t *testing.T, _ checkstest.Case, r checks.Result) {
				// The nodes are shown with their own resources, not GPU
				// Feature Discovery's labels of NVIDIA's GPUs.
				var nodes string
				for _, e := range r.Evidence {
					if strings.HasPrefix(e.Command, "kubectl get nodes "+v.node) {
						nodes = e.Command
					}
				}
				res := string(v.request)
				assert.Contains(t, nodes, strings.ToUpper(res[strings.LastIndex(res, "/")+1:])+"_CAPACITY:")
				assert.NotContains(t, nodes, "GPU_PRESENT")
			}
			checkstest.RunCases(t, accelerators.GPUDevicePlugin{}, []checkstest.Case{
				{Name: "its plugin Ready", Edit: with(nil), Status: checks.Pass,
					Reason: "a Ready device plugin pod on each of 1 GPU node (DaemonSet kube-system/" + v.plugin + ")"},
				{Name: "its plugin not Ready", Edit: with(func(w *checkstest.World) { w.PluginPod.Status.Conditions[1].Status = corev1.ConditionFalse }),
					Status: checks.Fail, Reason: "node " + v.node + ": device plugin pod kube-system/" + v.plugin + "-k7x2p for " + string(v.request)},
				{Name: "only NVIDIA's plugin", Edit: with(func(w *checkstest.World) {
					labels := map[string]string{"name": "nvidia-device-plugin-ds"}
					w.DevicePlugin.Spec.Template.Labels, w.PluginPod.Labels = labels, labels
				}), Status: checks.Fail, Reason: "node " + v.node + " advertises " + string(v.request)},
			}, nodeEvidence)
		})
	}
}

// EKS Auto Mode runs the Neuron and NVIDIA device plugins in its nodes'
// image: a node labelled as one of its nodes, its accelerators
// allocatable, needs no plugin pod; one not so labelled still does, and
// one whose accelerators are not allocatable still fails gpu-allocatable.
func TestDevicePluginInTheNodeImage(t *testing.T) {
	neuron := vendors[1]
	autoMode := func(labelled bool) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			neuron.world(w)
			// No plugin of the cluster's own: no DaemonSet, no pod.
			labels := map[string]string{"app": "something-else"}
			w.DevicePlugin.Spec.Template.Labels, w.PluginPod.Labels = labels, labels
			if labelled {
				w.Nodes[1].Labels = map[string]string{"eks.amazonaws.com/compute-type": "auto"}
			}
		}
	}
	checkstest.RunCases(t, accelerators.GPUDevicePlugin{}, []checkstest.Case{
		{Name: "an Auto Mode node", Edit: autoMode(true), Status: checks.Pass,
			Reason: "every GPU node's device plugin runs in its node image; the device plugin of 1 GPU node runs in the node image of a managed platform"},
		{Name: "a node of a group of its own", Edit: autoMode(false), Status: checks.Fail,
			Reason: "node trn-node-1 advertises aws.amazon.com/neuron"},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		if tc.Status == checks.Pass {
			assert.Contains(t, r.Details, "node trn-node-1: aws.amazon.com/neuron, aws.amazon.com/neuroncore, aws.amazon.com/neurondevice served by device plugins of EKS Auto Mode's node image, in the node image, not a pod the cluster shows")
		}
	})
}

// On GKE, where no GPU Feature Discovery labels the nodes, a node pool's
// sharing is said by GKE's own labels: gpu_sharing is judged on those.
func TestGPUSharingGKELabels(t *testing.T) {
	gke := func(kv ...string) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			w.Nodes[1].Labels = map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"}
			for i := 0; i < len(kv); i += 2 {
				w.Nodes[1].Labels[kv[i]] = kv[i+1]
			}
		}
	}
	checkstest.RunCases(t, accelerators.GPUSharing{}, []checkstest.Case{
		{Name: "time-sharing", Edit: gke("cloud.google.com/gke-gpu-sharing-strategy", "time-sharing", "cloud.google.com/gke-max-shared-clients-per-gpu", "4"),
			Status: checks.Pass, Reason: "time-sharing, 4 clients per GPU (GKE's cloud.google.com/gke-gpu-sharing-strategy) on gpu-node-1"},
		{Name: "MPS", Edit: gke("cloud.google.com/gke-gpu-sharing-strategy", "mps", "cloud.google.com/gke-max-shared-clients-per-gpu", "2"),
			Status: checks.Pass, Reason: "mps, 2 clients per GPU"},
		{Name: "MIG partitions", Edit: gke("cloud.google.com/gke-gpu-partition-size", "1g.5gb"),
			Status: checks.Pass, Reason: "MIG partitions of 1g.5gb (GKE's cloud.google.com/gke-gpu-partition-size) on gpu-node-1"},
		{Name: "a GKE node not shared", Edit: gke(), Status: checks.Fail, Reason: "none of 1 accelerator node exposes a sharing strategy"},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		var commands []string
		for _, e := range r.Evidence {
			commands = append(commands, e.Command)
		}
		shown := strings.Contains(strings.Join(commands, "\n"), "kubectl get nodes gpu-node-1 -L cloud.google.com/gke-gpu-sharing-strategy -L cloud.google.com/gke-max-shared-clients-per-gpu -L cloud.google.com/gke-gpu-partition-size")
		assert.Equal(t, tc.Status == checks.Pass, shown, "GKE's labels shown where a node carries one: %v", commands)
	})
}

// gpu_sharing and virtualized_accelerator ask for sharing and
// virtualization only of accelerators that have them. A node of TPUs
// alone (accelerators.yaml: sharing and virtualization unsupported) makes
// them not applicable; the vendors whose devices may be partitioned or
// virtualized still fail, and so does a TPU node beside an NVIDIA one.
func TestSharingNotApplicableToTPUs(t *testing.T) {
	byName := map[string]vendor{}
	for _, v := range vendors {
		byName[v.name] = v
	}
	only := func(name string) func(w *checkstest.World) { return byName[name].world }
	besideNVIDIA := func(w *checkstest.World) {
		// The NVIDIA node neither shared nor virtualized, and no DRA
		// device published.
		for l := range w.Nodes[1].Labels {
			if strings.HasPrefix(l, "nvidia.com/") {
				delete(w.Nodes[1].Labels, l)
			}
		}
		w.ResourceSlices, w.ResourceClaims = nil, nil
		tpu := checkstest.Node("tpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"google.com/tpu": resource.MustParse("4")})
		w.Nodes = append(w.Nodes, tpu)
	}
	checkstest.RunCases(t, accelerators.GPUSharing{}, []checkstest.Case{
		{Name: "TPUs alone", Edit: only("TPU"), Status: checks.Skip,
			Reason: "the accelerators of 1 accelerator node support no static sharing (Google TPU, per accelerators.yaml)"},
		{Name: "Neuron devices alone", Edit: only("Neuron"), Status: checks.Fail, Reason: "none of 1 accelerator node exposes a sharing strategy"},
		{Name: "Ascend NPUs alone", Edit: only("Ascend"), Status: checks.Fail, Reason: "none of 1 accelerator node exposes a sharing strategy"},
		{Name: "TPUs beside unshared NVIDIA GPUs", Edit: besideNVIDIA, Status: checks.Fail, Reason: "none of 2 accelerator nodes exposes a sharing strategy"},
	}, nil)
	checkstest.RunCases(t, accelerators.VirtualizedAccelerators{}, []checkstest.Case{
		{Name: "TPUs alone", Edit: only("TPU"), Status: checks.Skip,
			Reason: "the accelerators of 1 accelerator node have no virtualized form (Google TPU, per accelerators.yaml)"},
		{Name: "Neuron devices alone", Edit: only("Neuron"), Status: checks.Fail, Reason: "none of 1 accelerator node exposes a virtualized accelerator"},
		{Name: "TPUs beside NVIDIA GPUs", Edit: besideNVIDIA, Status: checks.Fail, Reason: "none of 2 accelerator nodes exposes a virtualized accelerator"},
	}, nil)
}
