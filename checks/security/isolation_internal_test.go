package security

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// view parses one of testdata's outputs, written in the formats BusyBox's
// and GNU's `ls -l` and `nvidia-smi -L` print.
func view(t *testing.T, name string) deviceView {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	require.NoError(t, err)
	return parseDevices(table(t), string(b))
}

// table is the embedded accelerators.yaml.
func table(t *testing.T) *hardware.Accelerators {
	t.Helper()
	a, err := hardware.AcceleratorTable()
	require.NoError(t, err)
	return a
}

func TestParseDevices(t *testing.T) {
	a := view(t, "holder-a")
	assert.True(t, a.listed)
	assert.Equal(t, []device{{path: "/dev/nvidia3", major: "195", minor: "3"}}, a.devices)
	assert.Equal(t, []string{"/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"}, a.control)
	assert.Equal(t, []string{"GPU-9d4b1f0e-3c2a-4e7b-8f61-0a2d5c7e9b13"}, a.gpus)

	none := view(t, "bystander")
	assert.True(t, none.listed)
	assert.Zero(t, none.count())
	assert.Equal(t, "no accelerator", none.seen())

	leaky := view(t, "leaky")
	assert.Len(t, leaky.devices, 8)
	assert.Len(t, leaky.gpus, 8)

	amd := view(t, "amd-holder")
	assert.Equal(t, []device{{path: "/dev/dri/renderD129", major: "226", minor: "129"}}, amd.devices)
	assert.Equal(t, []string{"/dev/kfd", "/dev/dri/card1"}, amd.control)

	// The other vendors' nodes: a TPU's VFIO group (v5e on) or accel
	// node (v4), a Neuron device, an Ascend NPU beside its control nodes.
	for name, want := range map[string]device{
		"tpu-holder":    {path: "/dev/vfio/2", major: "244", minor: "2"},
		"tpu-v4-holder": {path: "/dev/accel1", major: "121", minor: "1"},
		"neuron-holder": {path: "/dev/neuron1", major: "239", minor: "1"},
		"ascend-holder": {path: "/dev/davinci3", major: "236", minor: "3"},
	} {
		v := view(t, name)
		assert.True(t, v.listed, name)
		assert.Equal(t, []device{want}, v.devices, name)
		assert.Equal(t, 1, v.count(), name)
	}
	assert.Equal(t, []string{"/dev/vfio/vfio"}, view(t, "tpu-holder").control)
	assert.Equal(t, []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, view(t, "ascend-holder").control)

	assert.False(t, parseDevices(table(t), "exec /bin/sh: no such file or directory\n").listed)
	assert.Empty(t, shares(a, view(t, "holder-b")))
	assert.Equal(t, []string{"/dev/nvidia3 (195:3)", "GPU-9d4b1f0e-3c2a-4e7b-8f61-0a2d5c7e9b13"}, shares(a, leaky))
}

func TestJudgeIsolation(t *testing.T) {
	plan := devicePlan{node: "gpu-node-1", res: "nvidia.com/gpu", free: 8}
	healthy := func() map[string]deviceView {
		return map[string]deviceView{
			podA + "/" + holder: view(t, "holder-a"), podA + "/" + bystander: view(t, "bystander"),
			podB + "/" + holder: view(t, "holder-b"), podNone + "/" + bystander: view(t, "bystander"),
		}
	}
	for _, tc := range []struct {
		name   string
		edit   func(v map[string]deviceView)
		status checks.Status
		reason string
	}{
		{name: "isolated", status: checks.Pass, reason: "on node gpu-node-1, each container holding one nvidia.com/gpu saw exactly one (aiconform-devices-a/holder /dev/nvidia3 (195:3), GPU-9d4b1f0e-3c2a-4e7b-8f61-0a2d5c7e9b13; aiconform-devices-b/holder /dev/nvidia5 (195:5), GPU-2e7f5a91-6b0c-4d3e-a8f2-71c9e04b5d68); aiconform-devices-a/bystander and aiconform-devices-none/bystander, asking for none, saw none; the two holders saw different devices"},
		{name: "one free", edit: func(v map[string]deviceView) { delete(v, podB+"/"+holder) }, status: checks.Warn,
			reason: "only one was free, so two holders could not be compared"},
		{name: "a variable hands out every GPU", edit: func(v map[string]deviceView) { v[podNone+"/"+bystander] = view(t, "leaky") }, status: checks.Fail,
			reason: "container aiconform-devices-none/bystander asks for no accelerator but sees /dev/nvidia0 (195:0)"},
		{name: "the second container sees its neighbour's", edit: func(v map[string]deviceView) { v[podA+"/"+bystander] = view(t, "holder-a") }, status: checks.Fail,
			reason: "container aiconform-devices-a/bystander asks for no accelerator but sees /dev/nvidia3 (195:3)"},
		{name: "a holder sees them all", edit: func(v map[string]deviceView) { v[podB+"/"+holder] = view(t, "leaky") }, status: checks.Fail,
			reason: "container aiconform-devices-b/holder holds one nvidia.com/gpu but sees /dev/nvidia0 (195:0)"},
		{name: "two holders share one", edit: func(v map[string]deviceView) { v[podB+"/"+holder] = view(t, "holder-a") }, status: checks.Fail,
			reason: "containers aiconform-devices-a/holder and aiconform-devices-b/holder both see /dev/nvidia3 (195:3), GPU-9d4b1f0e-3c2a-4e7b-8f61-0a2d5c7e9b13"},
		{name: "a holder given none", edit: func(v map[string]deviceView) { v[podA+"/"+holder] = view(t, "bystander") }, status: checks.Fail,
			reason: "container aiconform-devices-a/holder holds one nvidia.com/gpu but sees no accelerator"},
		{name: "an image without a shell", edit: func(v map[string]deviceView) { v[podA+"/"+holder] = parseDevices(table(t), "") }, status: checks.Fail,
			reason: "container aiconform-devices-a/holder printed no listing of /dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := healthy()
			if tc.edit != nil {
				tc.edit(v)
			}
			st, why := judgeIsolation(v, plan)
			assert.Equal(t, tc.status, st, why)
			assert.Contains(t, why, tc.reason)
		})
	}
}

// On a TPU node the holders' VFIO groups are their TPUs: two holders of a
// chip each, and a container asking for none that sees no group, pass; a
// bystander that sees a holder's group fails, as it would on a GPU node.
func TestJudgeIsolationTPU(t *testing.T) {
	plan := devicePlan{node: "tpu-node-1", res: "google.com/tpu", free: 4}
	views := func() map[string]deviceView {
		return map[string]deviceView{
			podA + "/" + holder: view(t, "tpu-holder"), podA + "/" + bystander: view(t, "tpu-bystander"),
			podB + "/" + holder: view(t, "tpu-holder-b"), podNone + "/" + bystander: view(t, "tpu-bystander"),
		}
	}
	st, why := judgeIsolation(views(), plan)
	assert.Equal(t, checks.Pass, st, why)
	assert.Contains(t, why, "each container holding one google.com/tpu saw exactly one (aiconform-devices-a/holder /dev/vfio/2 (244:2); aiconform-devices-b/holder /dev/vfio/3 (244:3))")

	leaky := views()
	leaky[podA+"/"+bystander] = view(t, "tpu-holder")
	st, why = judgeIsolation(leaky, plan)
	assert.Equal(t, checks.Fail, st, why)
	assert.Contains(t, why, "container aiconform-devices-a/bystander asks for no accelerator but sees /dev/vfio/2 (244:2)")

	shared := views()
	shared[podB+"/"+holder] = view(t, "tpu-holder")
	st, why = judgeIsolation(shared, plan)
	assert.Equal(t, checks.Fail, st, why)
	assert.Contains(t, why, "both see /dev/vfio/2 (244:2)")
}

func TestIsDevicePath(t *testing.T) {
	for path, want := range map[string]bool{
		"/": true, "/dev": true, "/dev/": true, "/dev/nvidia0": true, "/dev/nvidiactl": true, "/dev/dri": true,
		"/dev/kfd": true, "/dev/vfio/12": true, "/dev/shm": false, "/var/lib/kubelet/device-plugins": false, "/run/nvidia": false,
		"/dev/neuron0": true, "/dev/davinci2": true, "/dev/davinci_manager": true, "/dev/devmm_svm": true, "/dev/hisi_hdc": true,
		"/dev/accel0": true, "/dev/accel/accel0": true, "/dev/vfio": true, "/dev/hl0": true, "/dev/nvidia-caps": true,
		"/dev/net/tun": false, "/dev/fuse": false, "/dev/disk/by-id": false,
	} {
		assert.Equal(t, want, table(t).IsDevicePath(path), path)
	}
}

func kernel(t *testing.T, name string) kernelView {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	require.NoError(t, err)
	return parseKernel(string(b))
}

func TestJudgeKernels(t *testing.T) {
	host := kernel(t, "host-kernel")
	assert.Equal(t, kernelView{release: "6.8.0-1015-gke", bootID: "a91f04d2-3c6b-48e7-b5d0-9e2f7c13a8b4"}, host)
	for _, tc := range []struct {
		name   string
		in     kernelView
		status checks.Status
		reason string
	}{
		{"gVisor", kernel(t, "gvisor-kernel"), checks.Pass, "the sandboxed pod sees a kernel of its own (release 4.4.0, boot id 5e3b9c1a-7d24-4f6e-9b08-2c71d4a6f935), the pod beside it the node's (release 6.8.0-1015-gke"},
		{"Kata", kernel(t, "kata-kernel"), checks.Pass, "a kernel of its own (release 6.12.28"},
		{"the node's own", host, checks.Fail, "the sandboxed pod sees the node's own kernel (release 6.8.0-1015-gke, boot id a91f04d2-3c6b-48e7-b5d0-9e2f7c13a8b4)"},
		{"no shell", parseKernel("exec: \"sh\": executable file not found in $PATH\n"), checks.Fail, "the sandboxed pod printed no kernel release and boot id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, why := judgeKernels(tc.in, host)
			assert.Equal(t, tc.status, st, why)
			assert.Contains(t, why, tc.reason)
		})
	}
}
