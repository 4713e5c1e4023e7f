package rig

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
		{"scheduler-plugins", SchedulerPluginsModule, SchedulerPluginsVersion},
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

// operatorSpecs are the specs the installers build for opts, KubeRay's
// Helm chart layout last.
func operatorSpecs(opts OperatorOptions) []operatorSpec {
	trainerNS := opts.namespaceOr(trainerNamespace)
	return []operatorSpec{
		kserveSpec(opts.namespaceOr(kserveNamespace)), kubeRaySpec(opts.namespaceOr(kubeRayNamespace)),
		jobSetSpec(trainerNS), trainerSpec(trainerNS),
		trainingOperatorSpec(opts.namespaceOr(trainingOperatorNamespace)), kueueSpec(opts.namespaceOr(kueueNamespace)),
		kubeRayChartSpec("kuberay-operator", opts.namespaceOr("default")),
	}
}

func TestOperatorSpecsSelectTheirOwnPods(t *testing.T) {
	for _, s := range operatorSpecs(OperatorOptions{}) {
		t.Run(s.name+"@"+s.namespace, func(t *testing.T) {
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
	path, err := kueueConfig(kueueNamespace)(dir, mod, 1001, 1002, 1003)
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
	_, err = kueueConfig(kueueNamespace)(dir, mod, 1, 2, 3)
	assert.ErrorContains(t, err, "no leaderElection.resourceName", "a release that names no lease is not one the rig knows")
}

// Without a namespace, each operator goes where its manifests put it, as
// before OperatorOptions.Namespace existed.
func TestOperatorSpecsKeepTheManifestsNamespace(t *testing.T) {
	got := map[string]string{}
	for _, s := range operatorSpecs(OperatorOptions{})[:6] {
		got[s.name] = s.namespace
	}
	assert.Equal(t, map[string]string{
		"kserve": "kserve", "kuberay": "ray-system", "jobset": "kubeflow-system", "kubeflow-trainer": "kubeflow-system",
		"kubeflow-training": "kubeflow", "kueue": "kueue-system",
	}, got)
	assert.Contains(t, kserveSpec(kserveNamespace).env, "POD_NAMESPACE=kserve")
	assert.Subset(t, kubeRaySpec(kubeRayNamespace).args(0, 1, 2), []string{"--leader-election-namespace", "ray-system"})
}

// Every mention of an operator's namespace in what its process is given
// (flags, environment, configuration file) and in its webhooks' namespace
// selectors follows the namespace it is installed into: a process moved
// into a release's namespace but electing its leader, reading its
// configuration or skipping webhooks in the manifests' would be a broken
// install, not a moved one.
func TestOperatorSpecsFollowTheirNamespace(t *testing.T) {
	mod := t.TempDir()
	cfgDir := filepath.Join(mod, "config/components/manager")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "controller_manager_config.yaml"),
		[]byte("kind: Configuration\nleaderElection:\n  leaderElect: true\n  resourceName: c1f6bfd2.kueue.x-k8s.io\n"), 0o644))
	const elsewhere = "release-ns"
	defaults, moved := operatorSpecs(OperatorOptions{}), operatorSpecs(OperatorOptions{Namespace: elsewhere})
	for i := range defaults {
		d, m := defaults[i], moved[i]
		t.Run(d.name+"@"+d.namespace, func(t *testing.T) {
			assert.Equal(t, elsewhere, m.namespace)
			before, after := mentions(t, d, mod), mentions(t, m, mod)
			assert.Equal(t, before[d.namespace], after[elsewhere], "mentions of %s, then of %s, in:\n%v\n%v", d.namespace, elsewhere, before, after)
			assert.Zero(t, after[d.namespace], "%s is still named when installed into %s", d.namespace, elsewhere)
			assert.Equal(t, d.deployment, m.deployment)
			assert.Equal(t, d.labels, m.labels)
		})
	}
}

// mentions counts the words of what a spec gives its process and sets on
// its webhooks.
func mentions(t *testing.T, s operatorSpec, mod string) map[string]int {
	t.Helper()
	text := append(s.args(1001, 1002, 1003), s.env...)
	if s.configFile != nil {
		path, err := s.configFile(t.TempDir(), mod, 1001, 1002, 1003)
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		text = append(text, string(data))
	}
	for _, sel := range s.namespaceSelectors {
		for _, r := range sel.MatchExpressions {
			text = append(text, r.Values...)
		}
	}
	words := map[string]int{}
	for _, w := range regexp.MustCompile(`[a-z0-9][a-z0-9.-]*`).FindAllString(strings.Join(text, " "), -1) {
		words[w]++
	}
	return words
}

// KubeRay's Helm chart names its Deployment after the release and labels
// its pods with the chart's labels, and registers no webhook.
func TestKubeRayChartLayout(t *testing.T) {
	for release, deployment := range map[string]string{
		"kuberay-operator":    "kuberay-operator",
		"kuberay":             "kuberay-kuberay-operator",
		"my-kuberay-operator": "my-kuberay-operator",
	} {
		s := kubeRayChartSpec(release, "kuberay-system")
		assert.Equal(t, deployment, s.deployment, "release %s", release)
		assert.Equal(t, map[string]string{
			"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": release, "app.kubernetes.io/component": "kuberay-operator",
		}, s.labels)
	}
	s := kubeRayChartSpec("kuberay-operator", "kuberay-system")
	assert.Empty(t, s.webhookManifest, "the chart registers no webhook")
	assert.Empty(t, s.configNames)
	assert.NotContains(t, s.env, "ENABLE_WEBHOOKS=true")
	assert.Zero(t, s.webhookPort, "no webhook server, no fixed port to hold")
	assert.Equal(t, "ray-operator-leader", s.lease)
	assert.Subset(t, s.args(0, 1, 2), []string{"--leader-election-namespace", "kuberay-system"})
	// The manifests' layout is untouched by the chart's.
	assert.Equal(t, "config/webhook/manifests.yaml", kubeRaySpec(kubeRayNamespace).webhookManifest)
	assert.Equal(t, "kuberay-operator", kubeRaySpec(kubeRayNamespace).deployment)
}
