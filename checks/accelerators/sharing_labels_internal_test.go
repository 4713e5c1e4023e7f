package accelerators

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSharingLabels(t *testing.T) {
	ps, err := sharingLabels()
	require.NoError(t, err)
	require.Len(t, ps, 1)
	gke := ps[0]
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	assert.Equal(t, []string{"time-sharing, 4 clients per GPU (GKE's cloud.google.com/gke-gpu-sharing-strategy)"},
		gke.of(node(map[string]string{"cloud.google.com/gke-gpu-sharing-strategy": "time-sharing", "cloud.google.com/gke-max-shared-clients-per-gpu": "4"})))
	assert.Equal(t, []string{"MIG partitions of 1g.5gb (GKE's cloud.google.com/gke-gpu-partition-size)", "mps (GKE's cloud.google.com/gke-gpu-sharing-strategy)"},
		gke.of(node(map[string]string{"cloud.google.com/gke-gpu-partition-size": "1g.5gb", "cloud.google.com/gke-gpu-sharing-strategy": "mps"})))
	assert.Empty(t, gke.of(node(map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"})))
	assert.Empty(t, gke.of(node(map[string]string{"cloud.google.com/gke-gpu-sharing-strategy": "none"})))

	_, err = parseSharingLabels("test.yaml", []byte("- platform: Bad\n  clients: example.com/clients\n"))
	assert.ErrorContains(t, err, "test.yaml: entry 1 (Bad) needs a platform and a strategy or partition label")
	_, err = parseSharingLabels("test.yaml", []byte("- platform: Bad\n  strategy: a\n  replicas: b\n"))
	assert.ErrorContains(t, err, `line 3: unknown key "replicas"; known keys: clients, partition, platform, strategy`)
}
