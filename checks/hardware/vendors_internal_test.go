package hardware

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestAcceleratorTable(t *testing.T) {
	a, err := AcceleratorTable()
	require.NoError(t, err)
	for res, vendor := range map[corev1.ResourceName]string{
		"nvidia.com/gpu": "NVIDIA", "nvidia.com/gpu.shared": "NVIDIA", "nvidia.com/mig-1g.10gb": "NVIDIA",
		"amd.com/gpu": "AMD", "gpu.intel.com/xe": "Intel GPU", "habana.ai/gaudi": "Intel Gaudi",
		"google.com/tpu":        "Google TPU",
		"aws.amazon.com/neuron": "AWS Neuron", "aws.amazon.com/neuroncore": "AWS Neuron", "aws.amazon.com/neurondevice": "AWS Neuron",
		"huawei.com/Ascend910": "Huawei Ascend", "huawei.com/Ascend310P": "Huawei Ascend", "huawei.com/Ascend910-4c": "Huawei Ascend",
	} {
		require.NotNil(t, a.Vendor(res), res)
		assert.Equal(t, vendor, a.Vendor(res).Name, res)
		assert.True(t, IsAccelerator(res), res)
	}
	for _, res := range []corev1.ResourceName{"cpu", "nvidia.com/gpu.count", "amd.com/gpux", "rdma/hca_shared_devices_a", "aws.amazon.com/neuronx", "huawei.com/npu", "google.com/tpus", "vpc.amazonaws.com/efa"} {
		assert.False(t, IsAccelerator(res), res)
	}

	for path, want := range map[string]string{
		"/dev/nvidia3": "per", "/dev/nvidiactl": "control", "/dev/nvidia-caps/nvidia-cap1": "control", "/dev/nvidia": "",
		"/dev/dri/renderD128": "per", "/dev/dri/card0": "control", "/dev/kfd": "control",
		"/dev/hl0": "per", "/dev/hl_controlD0": "control", "/dev/accel/accel0": "per",
		"/dev/accel0": "per", "/dev/vfio/3": "per", "/dev/vfio/vfio": "control",
		"/dev/neuron11": "per", "/dev/neuron": "",
		"/dev/davinci7": "per", "/dev/davinci_manager": "control", "/dev/devmm_svm": "control", "/dev/hisi_hdc": "control",
		"/dev/null": "", "/dev/davinci": "",
	} {
		got := ""
		switch {
		case a.IsPerDevice(path):
			got = "per"
		case a.IsControl(path):
			got = "control"
		}
		assert.Equal(t, want, got, path)
	}

	assert.Equal(t, []string{"/dev/dri", "/dev/accel", "/dev/vfio"}, a.DeviceFolders())
	assert.Equal(t, "/dev/nvidia*, /dev/dri, /dev/kfd, /dev/hl*, /dev/accel, /dev/vfio, /dev/neuron*, /dev/davinci*, /dev/devmm_svm, /dev/hisi_hdc", a.HostPaths())
	assert.Equal(t, []string{"NVIDIA_VISIBLE_DEVICES", "AMD_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES", "AWS_NEURON_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES"}, a.VisibleDevices())
	for path, want := range map[string]bool{
		"": true, "/": true, "/dev": true, "/dev/": true, "/dev/nvidia0": true, "/dev/dri": true, "/dev/dri/by-path": true,
		"/dev/accel": true, "/dev/accel2": true, "/dev/vfio/0": true, "/dev/neuron4": true, "/dev/davinci_manager": true,
		"/dev/hisi_hdc": true, "/dev/shm": false, "/dev/net/tun": false, "/run/nvidia": false, "/var/lib/kubelet": false,
	} {
		assert.Equal(t, want, a.IsDevicePath(path), path)
	}
	for driver, want := range map[string]string{"gpu.nvidia.com": "NVIDIA", "tpu.google.com": "Google TPU", "gpu.amd.com": "AMD", "dra.net": "", "notnvidia.com": ""} {
		got := ""
		if v := a.DriverVendor(driver); v != nil {
			got = v.Name
		}
		assert.Equal(t, want, got, driver)
	}
}

// TestAcceleratorTableRefusesBadEntries shows that a malformed vendor is
// an error naming the file, the entry and what is wrong, not a vendor
// silently matching nothing.
func TestAcceleratorTableRefusesBadEntries(t *testing.T) {
	good := "- name: Good\n  resources: [good.example.com/npu]\n  devices: {perDevice: [/dev/good<N>]}\n"
	_, err := loadAccelerators("test.yaml", []byte(good))
	require.NoError(t, err)
	for _, tc := range []struct{ name, entry, want string }{
		{"no name", "- resources: [x.example.com/npu]\n  devices: {perDevice: [/dev/x<N>]}\n", "entry 2 (): needs a name"},
		{"twice", good, "entry 2 (Good): a second vendor of that name"},
		{"no resources", "- name: Bad\n  devices: {perDevice: [/dev/x<N>]}\n", "entry 2 (Bad): needs resources"},
		{"no device nodes", "- name: Bad\n  resources: [x.example.com/npu]\n", "entry 2 (Bad): needs devices.perDevice"},
		{"a resource without a domain", "- name: Bad\n  resources: [npu]\n  devices: {perDevice: [/dev/x<N>]}\n", `entry 2 (Bad): resource "npu": not an extended resource name`},
		{"a star inside", "- name: Bad\n  resources: [x.example.com/n*pu]\n  devices: {perDevice: [/dev/x<N>]}\n", `resource "x.example.com/n*pu"`},
		{"a device outside /dev", "- name: Bad\n  resources: [x.example.com/npu]\n  devices: {perDevice: [/sys/x<N>]}\n", `entry 2 (Bad): device "/sys/x<N>": not a path under /dev/`},
		{"a device with a pattern", "- name: Bad\n  resources: [x.example.com/npu]\n  devices: {perDevice: ['/dev/x[0-9]']}\n", `device "/dev/x[0-9]": only letters`},
		{"a device climbing out", "- name: Bad\n  resources: [x.example.com/npu]\n  devices: {control: [/dev/../x]}\n", "needs devices.perDevice"},
		{"a control node climbing out", "- name: Bad\n  resources: [x.example.com/npu]\n  devices: {perDevice: [/dev/x<N>], control: [/dev/../etc]}\n", `device "/dev/../etc": only letters`},
		{"a variable the cluster drops", "- name: Bad\n  resources: [x.example.com/npu]\n  devices: {perDevice: [/dev/x<N>]}\n  visibleDevices: [TPU_VISIBLE_CHIPS]\n", `visibleDevices "TPU_VISIBLE_CHIPS": must end in _VISIBLE_DEVICES`},
		{"a key the type does not know", "- name: Bad\n  resource: [x.example.com/npu]\n  devices: {perDevice: [/dev/x<N>]}\n", `line 5: unknown key "resource"; did you mean "resources"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadAccelerators("test.yaml", []byte(good+tc.entry))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "test.yaml")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = loadAccelerators("empty.yaml", []byte("[]\n"))
	assert.ErrorContains(t, err, "empty.yaml: no vendor")
}
