//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// apiServicesGVR is the aggregator's registrations.
var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// pod_autoscaling under --probe on a rig whose metrics adapter is
// registered for the custom metrics API alone, as on a cluster that runs
// prometheus-adapter and nothing serving external metrics: the HPA probe
// finds in the API's discovery list the adapter's metric of pods holding a
// GPU, reads its value for the probe's pod through the API server, and the
// real HPA controller scales on it, up and down: Implemented. With the
// adapter stopped neither API is served: the probe skips, writing nothing,
// and the verdict is metrics-apis' alone.
func TestHPAProbeCustomMetricsOnlyOnRig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	binDir := framework.RigBin(t)
	if _, err := os.Stat(filepath.Join(binDir, "metrics-adapter")); err != nil {
		t.Fatalf("no metrics-adapter in %s: run `make tools` first", binDir)
	}
	began := time.Now()
	c := startRig(ctx, t, "hpa-custom", binDir)
	t.Logf("rig ready after %.1fs", time.Since(began).Seconds())
	step := time.Now()
	adapter, err := c.InstallMetricsAdapterWith(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}}, rig.MetricsAdapterOptions{CustomOnly: true})
	require.NoError(t, err)
	t.Logf("metrics adapter installed in %.1fs; APIServices %v Available", time.Since(step).Seconds(), adapter.APIServices())
	assert.ElementsMatch(t, []string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}, adapter.APIServices())
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	_, err = dyn.Resource(apiServicesGVR).Get(ctx, "v1beta1.external.metrics.k8s.io", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the external metrics API is registered: %v", err)

	step = time.Now()
	rep, md, code := runCheck(ctx, t, aiconform, c.Kubeconfig(), "pod_autoscaling", "--probe", "--probe-timeout", "2m")
	t.Logf("check pod_autoscaling --probe took %s", time.Since(step).Round(100*time.Millisecond))
	apis := reportCheck(t, rep, "metrics-apis", "")
	assert.Equal(t, "warn", apis.Status, apis.Reason)
	assert.Contains(t, apis.Reason, "custom.metrics.k8s.io served by an adapter of sigs.k8s.io/custom-metrics-apiserver (custom-metrics/custom-metrics-apiserver)")
	assert.NotContains(t, apis.Reason, "external.metrics.k8s.io")
	probed := reportCheck(t, rep, "hpa-probe", "")
	require.Equal(t, "pass", probed.Status, probed.Reason)
	assert.Contains(t, probed.Reason, fmt.Sprintf("an HPA on the custom metric %s of its pods (%d per pod) scaled pods requesting nvidia.com/gpu from 1 to 2", rig.MetricsAdapterPodMetric, rig.MetricsAdapterPodValue))
	require.NotNil(t, probed.Table)
	t.Logf("HPA probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
	v := requirement(t, rep, "pod_autoscaling")
	assert.Equal(t, "Implemented", v.Status, v.Conclusion)
	assert.Equal(t, 0, code, v.Conclusion)
	// What the adapter lists and the value it serves of the probe's pod,
	// as the API server returns them; the HPA on that Pods metric; never
	// a read of the external metrics API.
	ns := rep.Run.Probe.Namespace
	assert.Contains(t, md, "kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2\n")
	assert.Contains(t, md, `"name":"pods/`+rig.MetricsAdapterPodMetric+`"`)
	assert.Contains(t, md, "kubectl get --raw '/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+ns+"/pods/*/"+rig.MetricsAdapterPodMetric+"?labelSelector=aiconform.io%2Fhpa%3Dprobe'")
	assert.NotContains(t, md, "kubectl get --raw /apis/external.metrics.k8s.io")
	assert.Contains(t, md, "horizontalpodautoscaler.autoscaling/aiconform-hpa created")
	assert.Contains(t, md, "horizontalpodautoscaler.autoscaling/aiconform-hpa patched")
	assertNoLeftovers(ctx, t, cs, dyn)

	// The adapter stopped: the aggregator reports its APIServices
	// unavailable. The probe has no metric to scale on and says so; the
	// requirement is not met, by metrics-apis.
	require.NoError(t, adapter.Stop())
	require.NoError(t, adapter.WaitUnavailable(ctx))
	rep, _, code = runCheck(ctx, t, aiconform, c.Kubeconfig(), "pod_autoscaling", "--probe", "--probe-timeout", "30s")
	probed = reportCheck(t, rep, "hpa-probe", "")
	assert.Equal(t, "skip", probed.Status, probed.Reason)
	assert.Contains(t, probed.Reason, "neither custom.metrics.k8s.io nor external.metrics.k8s.io is served and Available (custom.metrics.k8s.io is not served: v1beta1.custom.metrics.k8s.io Available=False")
	assert.Contains(t, probed.Reason, "external.metrics.k8s.io is not registered")
	t.Logf("adapter stopped: %s", probed.Reason)
	apis = reportCheck(t, rep, "metrics-apis", "")
	assert.Equal(t, "fail", apis.Status, apis.Reason)
	v = requirement(t, rep, "pod_autoscaling")
	assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
	assert.Equal(t, 1, code)
	assertNoLeftovers(ctx, t, cs, dyn)
}
