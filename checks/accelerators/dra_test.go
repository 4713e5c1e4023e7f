package accelerators_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func runDRA(t *testing.T, c checks.Check, cases []checkstest.Case) {
	t.Helper()
	checkstest.RunCases(t, c, cases, func(t *testing.T, _ checkstest.Case, r checks.Result) {
		require.NotEmpty(t, r.Evidence)
		assert.Equal(t, `kubectl get apiservices | grep -E 'NAME|resource\.k8s\.io'`, r.Evidence[0].Command)
	})
}

// servedAs replaces the DRA APIServices with those given.
func servedAs(services ...*unstructured.Unstructured) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.APIServices = append(w.APIServices[:2:2], services...)
	}
}

func TestDRAAPIs(t *testing.T) {
	runDRA(t, accelerators.DRAAPIs{}, []checkstest.Case{
		{Name: "v1 served", Status: checks.Pass, Reason: "resource.k8s.io/v1 is served and Available, with DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice"},
		{Name: "beta only", Edit: servedAs(checkstest.APIService("v1beta1.resource.k8s.io", "", "", "True"), checkstest.APIService("v1beta2.resource.k8s.io", "", "", "True")),
			Status: checks.Fail, Reason: "resource.k8s.io/v1 is not served, only v1beta1, v1beta2: DRA is GA, and on by default, from Kubernetes 1.34"},
		{Name: "not at all", Edit: servedAs(), Status: checks.Fail, Reason: "the API server serves no version of resource.k8s.io"},
		{Name: "not Available", Edit: servedAs(checkstest.APIService("v1.resource.k8s.io", "", "", "False")),
			Status: checks.Fail, Reason: "resource.k8s.io/v1 is registered but not Available"},
	})
}

func TestDRADevices(t *testing.T) {
	runDRA(t, accelerators.DRADevices{}, []checkstest.Case{
		{Name: "NVIDIA's driver and class", Status: checks.Pass,
			Reason: "NVIDIA DRA Driver for GPUs (gpu.nvidia.com) publishes 8 devices on 1 node; DeviceClass gpu.nvidia.com selects them"},
		{Name: "no driver publishes", Edit: func(w *checkstest.World) { w.ResourceSlices = nil }, Status: checks.Fail,
			Reason: "no DRA driver publishes devices (no ResourceSlice): no ResourceClaim can be allocated"},
		{Name: "no class", Edit: func(w *checkstest.World) { w.DeviceClasses = nil }, Status: checks.Fail,
			Reason: "devices are published (DraNet (network interfaces) (dra.net), NVIDIA DRA Driver for GPUs (gpu.nvidia.com)), but there is no DeviceClass"},
		{Name: "no class selects the driver", Edit: func(w *checkstest.World) {
			w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("gpu.amd.com", "gpu.amd.com")}
		}, Status: checks.Warn, Reason: "no DeviceClass selects the devices of DraNet (network interfaces) (dra.net), NVIDIA DRA Driver for GPUs (gpu.nvidia.com)"},
		{Name: "a class of any driver", Edit: func(w *checkstest.World) {
			w.DeviceClasses = []*resourcev1.DeviceClass{{}}
			w.DeviceClasses[0].Name = "anything"
		}, Status: checks.Pass, Reason: "DeviceClass anything selects them"},
		{Name: "a driver the data file does not know", Edit: func(w *checkstest.World) {
			w.ResourceSlices = []*resourcev1.ResourceSlice{checkstest.ResourceSlice("gpu-node-1", "fpga.example.org", 2)}
			w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("fpga", "fpga.example.org")}
		}, Status: checks.Pass, Reason: "fpga.example.org publishes 2 devices on 1 node; DeviceClass fpga selects them"},
		{Name: "DRA off", Edit: servedAs(), Status: checks.Skip, Reason: "resource.k8s.io/v1 is not served (see dra-apis)"},
	})
	// A GPU node no accelerator driver publishes for is named.
	w := checkstest.NewWorld(t)
	w.ResourceSlices = []*resourcev1.ResourceSlice{checkstest.ResourceSlice("cpu-node-1", "dra.net", 2)}
	w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("nic", "dra.net")}
	r := checkstest.Result(t, w.Serve().Run([]checks.Check{accelerators.DRADevices{}}, nil), "dra-devices", "")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Contains(t, r.Details, "1 node with accelerators that no accelerator DRA driver publishes for (requested by count, through the device plugin): gpu-node-1")
}

func TestDRAClaimsAllocated(t *testing.T) {
	runDRA(t, accelerators.DRAClaimsAllocated{}, []checkstest.Case{
		{Name: "a claim allocated", Status: checks.Pass,
			Reason: "1 claim allocated: ml/infer-0-gpu: gpu.nvidia.com gpu-node-1/gpu-0 on node gpu-node-1, reserved for pods/infer-0"},
		{Name: "waiting", Edit: func(w *checkstest.World) { w.ResourceClaims[0].Status = resourcev1.ResourceClaimStatus{} }, Status: checks.Skip,
			Reason: "no ResourceClaim of the cluster's own is allocated a published device (1 waiting, 0 from pools no longer published)"},
		{Name: "its driver gone", Edit: func(w *checkstest.World) { w.ResourceSlices = nil }, Status: checks.Skip,
			Reason: "(0 waiting, 1 from pools no longer published): nothing of the cluster's own shows DRA at work"},
		{Name: "a probe's claim is not the cluster's own", Edit: func(w *checkstest.World) { w.ResourceClaims[0].Namespace = "aiconform-probe-20261129-120000-abcd" },
			Status: checks.Skip, Reason: "(0 waiting, 0 from pools no longer published): nothing of the cluster's own shows DRA at work"},
		{Name: "DRA off", Edit: servedAs(), Status: checks.Skip, Reason: "resource.k8s.io/v1 is not served"},
	})
}
