package accelerators_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func runLabels(t *testing.T, c checks.Check, cases []checkstest.Case) {
	t.Helper()
	checkstest.RunCases(t, c, cases, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		if tc.Status != checks.Skip {
			require.NotEmpty(t, r.Evidence)
			assert.Contains(t, r.Evidence[0].Command, "kubectl get nodes gpu-node-1")
		}
	})
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
	runLabels(t, accelerators.AcceleratorDrivers{}, []checkstest.Case{
		{Name: "GFD labels", Status: checks.Pass, Reason: "every accelerator node reports its driver: NVIDIA driver 570.124.06 on 1 node"},
		{Name: "the DRA driver's attribute comes first", Edit: func(w *checkstest.World) {
			label("nvidia.com/cuda.driver-version.full", "")(w)
			attribute("driverVersion", resourcev1.DeviceAttribute{VersionValue: ptr.To("580.65.6")})(w)
		}, Status: checks.Pass, Reason: "NVIDIA driver 580.65.6 on 1 node"},
		{Name: "the DRA driver and the labels disagree", Edit: attribute("driverVersion", resourcev1.DeviceAttribute{VersionValue: ptr.To("580.65.6")}),
			Status: checks.Warn, Reason: "node gpu-node-1: its DRA driver publishes driver 580.65.6, its GPU Feature Discovery labels say 570.124.06"},
		{Name: "older GFD, in parts", Edit: label("nvidia.com/cuda.driver-version.full", "", "nvidia.com/cuda.driver.major", "550", "nvidia.com/cuda.driver.minor", "107", "nvidia.com/cuda.driver.rev", "02"),
			Status: checks.Pass, Reason: "NVIDIA driver 550.107.02 on 1 node"},
		{Name: "no labeller", Edit: label("nvidia.com/cuda.driver-version.full", ""), Status: checks.Fail,
			Reason: "no driver version reported by 1 accelerator node: gpu-node-1 (NVIDIA)"},
		{Name: "two versions", Edit: secondGPUNode("nvidia.com/cuda.driver-version.full", "550.107.02"), Status: checks.Warn,
			Reason: "NVIDIA drivers differ: 550.107.02 on gpu-node-2; 570.124.06 on gpu-node-1"},
		{Name: "no accelerator", Edit: func(w *checkstest.World) { w.Nodes = w.Nodes[:1]; w.ResourceSlices = nil }, Status: checks.Skip,
			Reason: "none of 1 nodes has an accelerator"},
	})
}

// The RuntimeClasses of NVIDIA's runtime are named, or their absence
// said; neither changes the verdict.
func TestAcceleratorDriversRuntimeClasses(t *testing.T) {
	classes := func(cs ...*nodev1.RuntimeClass) func(w *checkstest.World) {
		return func(w *checkstest.World) { w.RuntimeClasses = cs }
	}
	nvidia := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"}
	gvisor := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	checkstest.RunCases(t, accelerators.AcceleratorDrivers{}, []checkstest.Case{
		{Name: "the GPU Operator's", Edit: classes(nvidia, gvisor), Status: checks.Pass,
			Details: []string{"NVIDIA's container runtime is named by RuntimeClass nvidia (handler nvidia)"}},
		{Name: "none", Edit: classes(gvisor), Status: checks.Pass,
			Details: []string{"no RuntimeClass names NVIDIA's container runtime (handler nvidia, nvidia-cdi, nvidia-legacy): its devices reach containers only where the nodes' default runtime is NVIDIA's, or by CDI"}},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		shown := false
		for _, e := range r.Evidence {
			shown = shown || strings.Contains(e.Command, "kubectl get runtimeclasses")
		}
		assert.Equal(t, tc.Name != "none", shown, "the RuntimeClasses shown when one names the runtime")
	})
}

func TestGPUSharing(t *testing.T) {
	notShared := label("nvidia.com/gpu.sharing-strategy", "none", "nvidia.com/gpu.replicas", "1")
	runLabels(t, accelerators.GPUSharing{}, []checkstest.Case{
		{Name: "time-slicing", Status: checks.Pass, Reason: "time-slicing, 2 replicas per GPU on gpu-node-1"},
		{Name: "none", Edit: notShared, Status: checks.Fail,
			Reason: "none of 1 accelerator node exposes a sharing strategy: no MIG partition, no time-slicing or MPS replicas, no partitionable DRA device"},
		{Name: "none, on a MIG-capable GPU", Edit: func(w *checkstest.World) {
			notShared(w)
			label("nvidia.com/mig.capable", "true")(w)
		}, Status: checks.Fail, Reason: "(MIG-capable, not partitioned: gpu-node-1)"},
		{Name: "oversubscribed without labels", Edit: func(w *checkstest.World) {
			label("nvidia.com/gpu.sharing-strategy", "", "nvidia.com/gpu.replicas", "")(w)
			w.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("32")
		}, Status: checks.Pass, Reason: "oversubscribed (nvidia.com/gpu allocatable 32 of 8 physical) on gpu-node-1"},
		{Name: "MIG, single strategy", Edit: func(w *checkstest.World) {
			notShared(w)
			label("nvidia.com/mig.strategy", "single", "nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")(w)
		}, Status: checks.Pass, Reason: "MIG partitions as whole GPUs (strategy single) on gpu-node-1"},
		{Name: "partitionable DRA devices", Edit: func(w *checkstest.World) {
			notShared(w)
			w.ResourceSlices[0].Spec.SharedCounters = []resourcev1.CounterSet{{Name: "gpu-0-counters"}}
		}, Status: checks.Pass, Reason: "partitionable DRA devices (gpu.nvidia.com) on gpu-node-1"},
		{Name: "MIG devices of a DRA driver", Edit: func(w *checkstest.World) {
			notShared(w)
			attribute("type", resourcev1.DeviceAttribute{StringValue: ptr.To("mig")})(w)
		}, Status: checks.Pass, Reason: "MIG partitions as DRA devices on gpu-node-1"},
	})
}

func TestVirtualizedAccelerators(t *testing.T) {
	notVirtual := label("nvidia.com/vgpu.present", "false")
	runLabels(t, accelerators.VirtualizedAccelerators{}, []checkstest.Case{
		{Name: "a vGPU guest", Status: checks.Pass, Reason: "NVIDIA vGPU guest on gpu-node-1"},
		{Name: "none", Edit: notVirtual, Status: checks.Fail, Reason: "none of 1 accelerator node exposes a virtualized accelerator"},
		{Name: "vGPUs for virtual machines", Edit: func(w *checkstest.World) {
			notVirtual(w)
			label("nvidia.com/gpu.workload.config", "vm-vgpu")(w)
		}, Status: checks.Pass, Reason: "NVIDIA vGPUs for virtual machines on gpu-node-1"},
		{Name: "AMD virtual functions", Edit: func(w *checkstest.World) {
			w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"amd.com/gpu": resource.MustParse("8")})
			w.Nodes[1].Labels = map[string]string{"amd.com/gpu.mode": "vf-passthrough"}
			w.ResourceSlices = nil
		}, Status: checks.Pass, Reason: "AMD virtual functions for virtual machines on gpu-node-1"},
	})
}
