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

// draCase is the healthy world changed by edit, and what one DRA check
// says of it.
type draCase struct {
	name   string
	edit   func(w *checkstest.World)
	status checks.Status
	reason string
}

func runDRA(t *testing.T, c checks.Check, cases []draCase) {
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
			require.NotEmpty(t, r.Evidence)
			assert.Equal(t, `kubectl get apiservices | grep -E 'NAME|resource\.k8s\.io'`, r.Evidence[0].Command)
		})
	}
}

// servedAs replaces the DRA APIServices with those given.
func servedAs(services ...*unstructured.Unstructured) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.APIServices = append(w.APIServices[:2:2], services...)
	}
}

func TestDRAAPIs(t *testing.T) {
	runDRA(t, accelerators.DRAAPIs{}, []draCase{
		{name: "v1 served", status: checks.Pass, reason: "resource.k8s.io/v1 is served and Available, with DeviceClass, ResourceClaim, ResourceClaimTemplate and ResourceSlice"},
		{name: "beta only", edit: servedAs(checkstest.APIService("v1beta1.resource.k8s.io", "", "", "True"), checkstest.APIService("v1beta2.resource.k8s.io", "", "", "True")),
			status: checks.Fail, reason: "resource.k8s.io/v1 is not served, only v1beta1, v1beta2: DRA is GA, and on by default, from Kubernetes 1.34"},
		{name: "not at all", edit: servedAs(), status: checks.Fail, reason: "the API server serves no version of resource.k8s.io"},
		{name: "not Available", edit: servedAs(checkstest.APIService("v1.resource.k8s.io", "", "", "False")),
			status: checks.Fail, reason: "resource.k8s.io/v1 is registered but not Available"},
	})
}

func TestDRADevices(t *testing.T) {
	runDRA(t, accelerators.DRADevices{}, []draCase{
		{name: "NVIDIA's driver and class", status: checks.Pass,
			reason: "NVIDIA DRA Driver for GPUs (gpu.nvidia.com) publishes 8 devices on 1 node; DeviceClass gpu.nvidia.com selects them"},
		{name: "no driver publishes", edit: func(w *checkstest.World) { w.ResourceSlices = nil }, status: checks.Fail,
			reason: "no DRA driver publishes devices (no ResourceSlice): no ResourceClaim can be allocated"},
		{name: "no class", edit: func(w *checkstest.World) { w.DeviceClasses = nil }, status: checks.Fail,
			reason: "devices are published (NVIDIA DRA Driver for GPUs (gpu.nvidia.com)), but there is no DeviceClass"},
		{name: "no class selects the driver", edit: func(w *checkstest.World) {
			w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("gpu.amd.com", "gpu.amd.com")}
		}, status: checks.Warn, reason: "no DeviceClass selects the devices of NVIDIA DRA Driver for GPUs (gpu.nvidia.com)"},
		{name: "a class of any driver", edit: func(w *checkstest.World) {
			w.DeviceClasses = []*resourcev1.DeviceClass{{}}
			w.DeviceClasses[0].Name = "anything"
		}, status: checks.Pass, reason: "DeviceClass anything selects them"},
		{name: "a driver the data file does not know", edit: func(w *checkstest.World) {
			w.ResourceSlices = []*resourcev1.ResourceSlice{checkstest.ResourceSlice("gpu-node-1", "fpga.example.org", 2)}
			w.DeviceClasses = []*resourcev1.DeviceClass{checkstest.DeviceClass("fpga", "fpga.example.org")}
		}, status: checks.Pass, reason: "fpga.example.org publishes 2 devices on 1 node; DeviceClass fpga selects them"},
		{name: "DRA off", edit: servedAs(), status: checks.Skip, reason: "resource.k8s.io/v1 is not served (see dra-apis)"},
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
	runDRA(t, accelerators.DRAClaimsAllocated{}, []draCase{
		{name: "a claim allocated", status: checks.Pass,
			reason: "1 claim allocated: ml/infer-0-gpu: gpu.nvidia.com gpu-node-1/gpu-0 on node gpu-node-1, reserved for pods/infer-0"},
		{name: "waiting", edit: func(w *checkstest.World) { w.ResourceClaims[0].Status = resourcev1.ResourceClaimStatus{} }, status: checks.Skip,
			reason: "no ResourceClaim of the cluster's own is allocated a published device (1 waiting, 0 from pools no longer published)"},
		{name: "its driver gone", edit: func(w *checkstest.World) { w.ResourceSlices = nil }, status: checks.Skip,
			reason: "(0 waiting, 1 from pools no longer published): nothing of the cluster's own shows DRA at work"},
		{name: "a probe's claim is not the cluster's own", edit: func(w *checkstest.World) { w.ResourceClaims[0].Namespace = "aiconform-probe-20261129-120000-abcd" },
			status: checks.Skip, reason: "(0 waiting, 0 from pools no longer published): nothing of the cluster's own shows DRA at work"},
		{name: "DRA off", edit: servedAs(), status: checks.Skip, reason: "resource.k8s.io/v1 is not served"},
	})
}
