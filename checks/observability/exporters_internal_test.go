package observability

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestExportersFile(t *testing.T) {
	known, err := exporters()
	require.NoError(t, err)
	byName := map[string]exporter{}
	for _, e := range known {
		byName[e.Name] = e
	}
	neuron := byName["AWS Neuron Monitor"]
	assert.True(t, neuron.counted("aws.amazon.com/neuroncore"))
	assert.False(t, neuron.counted("aws.amazon.com/neuron"), "its series are per core, not per device")
	assert.Empty(t, neuron.optional())
	ascend := byName["Huawei NPU Exporter"]
	assert.True(t, ascend.serves(map[corev1.ResourceName]bool{"huawei.com/Ascend310P": true}))
	assert.True(t, ascend.counted("huawei.com/Ascend910"))
	assert.False(t, ascend.counted("huawei.com/Ascend910-4c"), "a virtual NPU is a share of a chip the exporter counts")
	assert.Equal(t, []string{"temperature", "power"}, ascend.optional())
	assert.True(t, byName["NVIDIA DCGM Exporter"].counted("nvidia.com/gpu"), "without count, the resources count")
	assert.Equal(t, optionalKinds, byName["NVIDIA DCGM Exporter"].optional())
}

// An entry without what the check reads is an error naming it.
func TestExportersFileRefusesBadEntries(t *testing.T) {
	good := "- name: Good\n  resources: [x.example.com/npu]\n  images: [x-exporter]\n  port: 9000\n  path: /metrics\n  deviceLabels: [id]\n  metrics: {utilization: [x_util], memory: [x_mem]}\n"
	_, err := parseExporters("test.yaml", []byte(good))
	require.NoError(t, err)
	for entry, want := range map[string]string{
		"- name: Bad\n  resources: [x.example.com/npu]\n  images: [x-exporter]\n  port: 9000\n  path: /metrics\n  deviceLabels: [id]\n  metrics: {utilization: [x_util]}\n":           "test.yaml: entry 2 (Bad) needs metrics.memory",
		"- name: Bad\n  resources: [x.example.com/npu]\n  port: 9000\n  path: metrics\n  deviceLabels: [id]\n  metrics: {utilization: [x_util], memory: [x_mem]}\n":                   "entry 2 (Bad) needs images, path",
		"- name: Bad\n  resources: [x.example.com/npu]\n  images: [x]\n  port: 9000\n  path: /metrics\n  deviceLabels: [id]\n  metrics: {utilization: [u], memory: [m], temp: [t]}\n": "needs a known kind of metric instead of temp",
	} {
		_, err := parseExporters("test.yaml", []byte(good+entry))
		assert.ErrorContains(t, err, want)
	}
}

// A GPU cut into MIG instances: DCGM Exporter's series of each instance
// (GPU_I_ID) are accelerators apart, the GPU's own series one more; a
// GPU without instances is one, whatever its other labels.
func TestDCGMSeriesPerMIGInstance(t *testing.T) {
	known, err := exporters()
	require.NoError(t, err)
	var dcgm exporter
	for _, e := range known {
		if e.Name == "NVIDIA DCGM Exporter" {
			dcgm = e
		}
	}
	body := "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n" +
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\"} 0.5\n" +
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"0\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"8\"} 0.1\n" +
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"1\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\"} 0\n" +
		"# TYPE DCGM_FI_DEV_FB_USED gauge\n" +
		"DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\"} 100\n" +
		"DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-2\"} 100\n"
	s, err := dcgm.parseScrape([]byte(body))
	require.NoError(t, err)
	assert.Len(t, s.devices["utilization"], 3, "three MIG instances on two GPUs")
	assert.True(t, s.devices["utilization"]["0/GPU_I_ID=8"])
	assert.Len(t, s.devices["memory"], 2, "two whole GPUs")
	assert.Contains(t, seriesQuery([]exporter{dcgm}), "gpu, GPU_I_ID)")
}
