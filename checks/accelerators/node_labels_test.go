package accelerators_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// labelCase is the world changed by edit, and what one of the label
// checks says of it.
type labelCase struct {
	name   string
	edit   func(w *checkstest.World)
	status checks.Status
	reason string
}

func runLabels(t *testing.T, c checks.Check, cases []labelCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			if tc.edit != nil {
				tc.edit(w)
			}
			r := checkstest.Result(t, w.Serve().Run([]checks.Check{c}, nil), c.Meta().ID, "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.status != checks.Skip {
				require.NotEmpty(t, r.Evidence)
				assert.Contains(t, r.Evidence[0].Command, "kubectl get nodes gpu-node-1")
			}
		})
	}
}

// label sets labels of the GPU node; "" removes one.
func label(kv ...string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(w.Nodes[1].Labels, kv[i])
				continue
			}
			w.Nodes[1].Labels[kv[i]] = kv[i+1]
		}
	}
}

// attribute gives the devices of the GPU node's slice an attribute.
func attribute(name string, a resourcev1.DeviceAttribute) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		for i := range w.ResourceSlices[0].Spec.Devices {
			w.ResourceSlices[0].Spec.Devices[i].Attributes = map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{resourcev1.QualifiedName(name): a}
		}
	}
}

// secondGPUNode adds a node like the GPU node, its labels changed by kv.
func secondGPUNode(kv ...string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		n := w.Nodes[1].DeepCopy()
		n.Name = "gpu-node-2"
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
		w.Nodes = append(w.Nodes, n)
	}
}

func TestAcceleratorDrivers(t *testing.T) {
	runLabels(t, accelerators.AcceleratorDrivers{}, []labelCase{
		{name: "GFD labels", status: checks.Pass, reason: "every accelerator node reports its driver: NVIDIA driver 570.124.06 on 1 node"},
		{name: "the DRA driver's attribute comes first", edit: func(w *checkstest.World) {
			label("nvidia.com/cuda.driver-version.full", "")(w)
			attribute("driverVersion", resourcev1.DeviceAttribute{VersionValue: ptr.To("580.65.6")})(w)
		}, status: checks.Pass, reason: "NVIDIA driver 580.65.6 on 1 node"},
		{name: "the DRA driver and the labels disagree", edit: attribute("driverVersion", resourcev1.DeviceAttribute{VersionValue: ptr.To("580.65.6")}),
			status: checks.Warn, reason: "node gpu-node-1: its DRA driver publishes driver 580.65.6, its GPU Feature Discovery labels say 570.124.06"},
		{name: "older GFD, in parts", edit: label("nvidia.com/cuda.driver-version.full", "", "nvidia.com/cuda.driver.major", "550", "nvidia.com/cuda.driver.minor", "107", "nvidia.com/cuda.driver.rev", "02"),
			status: checks.Pass, reason: "NVIDIA driver 550.107.02 on 1 node"},
		{name: "no labeller", edit: label("nvidia.com/cuda.driver-version.full", ""), status: checks.Fail,
			reason: "no driver version reported by 1 accelerator node: gpu-node-1 (NVIDIA)"},
		{name: "two versions", edit: secondGPUNode("nvidia.com/cuda.driver-version.full", "550.107.02"), status: checks.Warn,
			reason: "NVIDIA drivers differ: 550.107.02 on gpu-node-2; 570.124.06 on gpu-node-1"},
		{name: "no accelerator", edit: func(w *checkstest.World) { w.Nodes = w.Nodes[:1]; w.ResourceSlices = nil }, status: checks.Skip,
			reason: "none of 1 nodes has an accelerator"},
	})
}

func TestGPUSharing(t *testing.T) {
	notShared := label("nvidia.com/gpu.sharing-strategy", "none", "nvidia.com/gpu.replicas", "1")
	runLabels(t, accelerators.GPUSharing{}, []labelCase{
		{name: "time-slicing", status: checks.Pass, reason: "time-slicing, 2 replicas per GPU on gpu-node-1"},
		{name: "none", edit: notShared, status: checks.Fail,
			reason: "none of 1 accelerator node exposes a sharing strategy: no MIG partition, no time-slicing or MPS replicas, no partitionable DRA device"},
		{name: "none, on a MIG-capable GPU", edit: func(w *checkstest.World) {
			notShared(w)
			label("nvidia.com/mig.capable", "true")(w)
		}, status: checks.Fail, reason: "(MIG-capable, not partitioned: gpu-node-1)"},
		{name: "oversubscribed without labels", edit: func(w *checkstest.World) {
			label("nvidia.com/gpu.sharing-strategy", "", "nvidia.com/gpu.replicas", "")(w)
			w.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("32")
		}, status: checks.Pass, reason: "oversubscribed (nvidia.com/gpu allocatable 32 of 8 physical) on gpu-node-1"},
		{name: "MIG, single strategy", edit: func(w *checkstest.World) {
			notShared(w)
			label("nvidia.com/mig.strategy", "single", "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")(w)
		}, status: checks.Pass, reason: "MIG partitions as whole GPUs (strategy single) on gpu-node-1"},
		{name: "partitionable DRA devices", edit: func(w *checkstest.World) {
			notShared(w)
			w.ResourceSlices[0].Spec.SharedCounters = []resourcev1.CounterSet{{Name: "gpu-0-counters"}}
		}, status: checks.Pass, reason: "partitionable DRA devices (gpu.nvidia.com) on gpu-node-1"},
		{name: "MIG devices of a DRA driver", edit: func(w *checkstest.World) {
			notShared(w)
			attribute("type", resourcev1.DeviceAttribute{StringValue: ptr.To("mig")})(w)
		}, status: checks.Pass, reason: "MIG partitions as DRA devices on gpu-node-1"},
	})
}

func TestVirtualizedAccelerators(t *testing.T) {
	notVirtual := label("nvidia.com/vgpu.present", "false")
	runLabels(t, accelerators.VirtualizedAccelerators{}, []labelCase{
		{name: "a vGPU guest", status: checks.Pass, reason: "NVIDIA vGPU guest on gpu-node-1"},
		{name: "none", edit: notVirtual, status: checks.Fail, reason: "none of 1 accelerator node exposes a virtualized accelerator"},
		{name: "vGPUs for virtual machines", edit: func(w *checkstest.World) {
			notVirtual(w)
			label("nvidia.com/gpu.workload.config", "vm-vgpu")(w)
		}, status: checks.Pass, reason: "NVIDIA vGPUs for virtual machines on gpu-node-1"},
		{name: "AMD virtual functions", edit: func(w *checkstest.World) {
			w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"amd.com/gpu": resource.MustParse("8")})
			w.Nodes[1].Labels = map[string]string{"amd.com/gpu.mode": "vf-passthrough"}
			w.ResourceSlices = nil
		}, status: checks.Pass, reason: "AMD virtual functions for virtual machines on gpu-node-1"},
	})
}
