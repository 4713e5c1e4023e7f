package rig

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The manifest's Service becomes an ExternalName of loopback, and its
// APIServices verify the adapter against the rig's CA on its own port.
func TestMetricsAdapterEdit(t *testing.T) {
	m := &MetricsAdapter{port: 41234, ca: []byte("-----BEGIN CERTIFICATE-----\n")}
	read := func(doc string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		require.NoError(t, m.edit(u, "stand-in"))
		return u
	}

	svc := read(`apiVersion: v1
kind: Service
metadata: {name: custom-metrics-apiserver, namespace: custom-metrics}
spec:
  ports: [{name: https, port: 443, targetPort: 6443}]
  selector: {app: custom-metrics-apiserver}
`)
	typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	ext, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName")
	_, hasSelector, _ := unstructured.NestedFieldNoCopy(svc.Object, "spec", "selector")
	assert.Equal(t, "ExternalName", typ)
	assert.Equal(t, "127.0.0.1", ext)
	assert.False(t, hasSelector)

	api := read(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.external.metrics.k8s.io}
spec:
  service: {name: custom-metrics-apiserver, namespace: custom-metrics}
  group: external.metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
`)
	_, skips, _ := unstructured.NestedFieldNoCopy(api.Object, "spec", "insecureSkipTLSVerify")
	port, _, _ := unstructured.NestedInt64(api.Object, "spec", "service", "port")
	bundle, _, _ := unstructured.NestedString(api.Object, "spec", "caBundle")
	assert.False(t, skips)
	assert.EqualValues(t, 41234, port)
	assert.Equal(t, base64.StdEncoding.EncodeToString(m.ca), bundle)

	dep := read(`apiVersion: apps/v1
kind: Deployment
metadata: {name: custom-metrics-apiserver, namespace: custom-metrics}
spec:
  template:
    spec:
      containers: [{name: custom-metrics-apiserver, image: REGISTRY/k8s-test-metrics-adapter-amd64:latest}]
`)
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	assert.Equal(t, "registry.k8s.io/custom-metrics-apiserver/k8s-test-metrics-adapter-amd64:latest", containers[0].(map[string]any)["image"])
	assert.Equal(t, "stand-in", dep.GetAnnotations()[standInAnnotation])
}

// With CustomOnly, the manifest's APIService of the external metrics API
// is left out; everything else, the custom metrics API's included, is
// applied.
func TestMetricsAdapterKeep(t *testing.T) {
	api := func(group string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"spec": map[string]any{"group": group}}}
	}
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service"}}
	all := &MetricsAdapter{}
	custom := &MetricsAdapter{opts: MetricsAdapterOptions{CustomOnly: true}}
	for _, u := range []*unstructured.Unstructured{api("custom.metrics.k8s.io"), api("external.metrics.k8s.io"), svc} {
		assert.True(t, all.keep(u))
	}
	assert.True(t, custom.keep(api("custom.metrics.k8s.io")))
	assert.True(t, custom.keep(svc))
	assert.False(t, custom.keep(api("external.metrics.k8s.io")))
}

// The custom metric of pods tests expect is the one the adapter's program
// serves, with the same value.
func TestMetricsAdapterPodMetricMatchesTool(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "tools", "metrics-adapter", "gpu.go"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^const gpuUtilMetric = "`+regexp.QuoteMeta(MetricsAdapterPodMetric)+`"$`, string(src))
	assert.Regexp(t, fmt.Sprintf(`(?m)^const gpuUtilValue = %d$`, MetricsAdapterPodValue), string(src))
}
