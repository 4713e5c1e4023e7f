package rig

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The rig reads CRDs and webhooks from the module version it names; the
// binary comes from the tools module's pin. Both must be the same release.
func TestOperatorVersionsMatchToolsModules(t *testing.T) {
	for _, tc := range []struct {
		toolsDir, module, version string
	}{
		{"kserve", KServeModule, KServeVersion},
		{"kuberay", KubeRayModule, KubeRayVersion},
		{"trainer", TrainerModule, TrainerVersion},
		{"trainer", JobSetModule, JobSetVersion},
		{"training-operator", TrainingOperatorModule, TrainingOperatorVersion},
		{"kueue", KueueModule, KueueVersion},
		{"metrics-adapter", MetricsAdapterModule, MetricsAdapterVersion},
		{"karpenter", KarpenterModule, KarpenterVersion},
		{"traefik", TraefikModule, TraefikVersion},
		// The CRDs the rig installs are the release Traefik's clients are.
		{"traefik", GatewayAPIModule, GatewayAPIVersion},
		{"prometheus", PrometheusModule, PrometheusVersion},
		{"prometheus-operator", PrometheusOperatorModule, PrometheusOperatorVersion},
	} {
		t.Run(tc.toolsDir, func(t *testing.T) {
			path := filepath.Join("..", "tools", tc.toolsDir, "go.mod")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			// A require line, in a block or not; go.mod has no other form.
			re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(tc.module) + `\s+(v\S+)`)
			m := re.FindSubmatch(data)
			require.NotNil(t, m, "%s not required in %s", tc.module, path)
			assert.Equal(t, tc.version, string(m[1]), "%s in %s", tc.module, path)
		})
	}
}

func TestOperatorSpecsSelectTheirOwnPods(t *testing.T) {
	for _, s := range []operatorSpec{kserveSpec(), kubeRaySpec(), jobSetSpec(), trainerSpec(), trainingOperatorSpec(), kueueSpec()} {
		t.Run(s.name, func(t *testing.T) {
			for k, v := range s.selector {
				assert.Equal(t, v, s.labels[k], "selector label %s must be on the pods", k)
			}
		})
	}
}

// Kueue's configuration is its release's file with the rig's ports and
// namespace: what the release enables (its integrations) stays.
func TestKueueConfigKeepsTheRelease(t *testing.T) {
	mod, dir := t.TempDir(), t.TempDir()
	cfgDir := filepath.Join(mod, "config/components/manager")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	release := `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
integrations:
  frameworks: [batch/job, trainer.kubeflow.org/trainjob]
`
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "controller_manager_config.yaml"), []byte(release), 0o644))
	path, err := kueueConfig(dir, mod, 1001, 1002, 1003)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	assert.Equal(t, "kueue-system", cfg["namespace"])
	assert.Equal(t, map[string]any{"port": float64(1001)}, cfg["webhook"])
	assert.Equal(t, map[string]any{"bindAddress": "127.0.0.1:1002"}, cfg["metrics"])
	assert.Equal(t, map[string]any{"healthProbeBindAddress": "127.0.0.1:1003"}, cfg["health"])
	assert.Equal(t, map[string]any{"leaderElect": true, "resourceName": "c1f6bfd2.kueue.x-k8s.io", "resourceNamespace": "kueue-system"}, cfg["leaderElection"])
	assert.Equal(t, map[string]any{"frameworks": []any{"batch/job", "trainer.kubeflow.org/trainjob"}}, cfg["integrations"])

	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "controller_manager_config.yaml"), []byte("kind: Configuration\n"), 0o644))
	_, err = kueueConfig(dir, mod, 1, 2, 3)
	assert.ErrorContains(t, err, "no leaderElection.resourceName", "a release that names no lease is not one the rig knows")
}
