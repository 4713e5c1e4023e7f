package rig

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The instance type Karpenter offers has the GPUs of the rig's own GPU
// node, and its NodePool makes only that type, within its GPU limit, with
// the labels the GPU node carries.
func TestKarpenterNodePool(t *testing.T) {
	data, err := instanceTypes()
	require.NoError(t, err)
	var types []struct {
		Name      string            `json:"name"`
		Resources map[string]string `json:"resources"`
		Offerings []struct {
			Available bool
		} `json:"offerings"`
	}
	require.NoError(t, json.Unmarshal(data, &types))
	require.Len(t, types, 1)
	assert.Equal(t, KarpenterInstanceType, types[0].Name)
	assert.Equal(t, "8", types[0].Resources[string(GPUResource)])
	require.Len(t, types[0].Offerings, 1)
	assert.True(t, types[0].Offerings[0].Available)

	pool := &unstructured.Unstructured{Object: nodePool()}
	limit, _, _ := unstructured.NestedString(pool.Object, "spec", "limits", string(GPUResource))
	assert.Equal(t, "16", limit)
	labels, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "template", "metadata", "labels")
	assert.Equal(t, "NVIDIA-H100-80GB-HBM3", labels["nvidia.com/gpu.product"])
	assert.NotContains(t, labels, "kubernetes.io/hostname")
	reqs, _, _ := unstructured.NestedSlice(pool.Object, "spec", "template", "spec", "requirements")
	require.Len(t, reqs, 1)
	assert.Equal(t, []any{KarpenterInstanceType}, reqs[0].(map[string]any)["values"])
}
