package rig

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// What the operator generates, in the shape v0.85.0 writes it (variables
// its config-reloader expands, a rule file of the pod's volume, a job of a
// PodMonitor discovering in-cluster), made runnable by the rig's server.
func TestRewriteOperatorConfig(t *testing.T) {
	generated := `global:
  external_labels:
    prometheus: monitoring/k8s
    prometheus_replica: $(POD_NAME)
  scrape_interval: 1s
rule_files:
- /etc/prometheus/rules/prometheus-k8s-rulefiles-0/*.yaml
scrape_configs:
- job_name: podMonitor/ml/model/0
  kubernetes_sd_configs:
  - role: pod
    namespaces:
      names: [ml]
  relabel_configs:
  - action: hashmod
    modulus: 1
    source_labels: [__tmp_hash]
    target_label: __tmp_hash
  - action: keep
    regex: $(SHARD);|.+;.+
    source_labels: [__tmp_hash, __tmp_disable_sharding]
`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write([]byte(generated))
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	p := &Prometheus{component: component{dir: "/rig/operators/prometheus-operated"}, proxy: &http.Server{Addr: "127.0.0.1:4242"}}
	out, err := (&PrometheusOperator{}).rewrite(gz.Bytes(), p, "prometheus-k8s-0")
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(out, &cfg))
	assert.NotContains(t, cfg, "rule_files")
	assert.Equal(t, "prometheus-k8s-0", cfg["global"].(map[string]any)["external_labels"].(map[string]any)["prometheus_replica"])
	job := cfg["scrape_configs"].([]any)[0].(map[string]any)
	assert.Equal(t, "http://127.0.0.1:4242", job["proxy_url"])
	sd := job["kubernetes_sd_configs"].([]any)[0].(map[string]any)
	assert.Equal(t, "/rig/operators/prometheus-operated/kubeconfig", sd["kubeconfig_file"])
	assert.Equal(t, map[string]any{"names": []any{"ml"}}, sd["namespaces"], "the operator's discovery kept")
	assert.Equal(t, "0;|.+;.+", job["relabel_configs"].([]any)[1].(map[string]any)["regex"], "shard 0 of one")

	_, err = (&PrometheusOperator{}).rewrite([]byte("not gzip"), p, "prometheus-k8s-0")
	assert.Error(t, err)
}
