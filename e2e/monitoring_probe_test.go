//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestMonitoringProbeOnRealNode runs ai_service_metrics' probe where its
// pod really serves: BusyBox's httpd in the rig's shell image on the real
// node, discovered by the rig's Prometheus 3.16 by its prometheus.io
// annotations (the community chart's kubernetes-pods job), then through a
// PodMonitor the real Prometheus Operator turns into configuration,
// scraped through the rig's scrape proxy into the node's network, and its
// series queried back through the API server's service proxy; as the
// published reader and prober roles allow.
func TestMonitoringProbeOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	binDir := framework.RigBin(t)
	c := startRigWith(ctx, t, "monprobe", rig.Options{BinDir: binDir, RealNodes: 1})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	prom, err := c.InstallPrometheus(ctx, rig.OperatorOptions{BinDir: binDir})
	require.NoError(t, err)
	defer func() { assert.NoError(t, prom.Stop()) }()

	// The probe's pod asks for no accelerator and tolerates nothing.
	onlyRealNodeSchedulable(ctx, t, cs, rig.RealNodeName(1))

	// As the published roles allow, no more.
	const as = "system:serviceaccount:metrics-auditors:metrics-prober"
	bindRoles(ctx, t, cs, "metrics-auditors", "metrics-prober", "aiconform-reader.yaml")
	bindRoles(ctx, t, cs, "metrics-auditors", "metrics-prober", "aiconform-prober.yaml")
	probe := func(t *testing.T) (report.Check, string, *report.Report) {
		var rep *report.Report
		var md string
		var probed report.Check
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, _ = runCheck(ctx, t, aiconform, c.Kubeconfig(), "ai_service_metrics",
				"--as", as, "--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
			probed = reportCheck(t, rep, "monitoring-probe", "")
			return !strings.Contains(probed.Reason, "forbidden"), nil
		}))
		t.Logf("monitoring probe: %s: %s\ntimeline:\n%s", probed.Status, probed.Reason, timeline(probed.Table))
		require.Equal(t, "pass", probed.Status, probed.Reason)
		// The evidence: the pod as sent, the targets and the query as read.
		assert.Contains(t, md, "image: "+rig.ShellImage)
		assert.Contains(t, md, `aiconform_probe_up`)
		assert.Contains(t, md, "/proxy/api/v1/targets")
		assert.Contains(t, md, "/proxy/api/v1/query?query=")
		assertNoLeftovers(ctx, t, cs, dyn)
		return probed, md, rep
	}
	t.Run("Annotations", func(t *testing.T) {
		probed, _, _ := probe(t)
		assert.Contains(t, probed.Reason, "Prometheus monitoring/prometheus-server discovered the probe's pod")
		assert.Contains(t, probed.Reason, "by its prometheus.io annotations")
		assert.Contains(t, probed.Reason, "scrape pool kubernetes-pods")
	})

	// The real Prometheus Operator: its Prometheus object selects the
	// PodMonitors of a release label in every namespace, so the probe
	// sends a PodMonitor, the operator regenerates the configuration, and
	// the rig's server behind the operator's pod (kwok runs it on the
	// cordoned GPU node, whose taints it tolerates) reloads it and scrapes
	// the pod on the real node.
	t.Run("PodMonitor", func(t *testing.T) {
		op, err := c.InstallPrometheusOperator(ctx, rig.OperatorOptions{BinDir: binDir})
		require.NoError(t, err)
		defer func() { assert.NoError(t, op.Stop()) }()
		probed, md, rep := probe(t)
		assert.Regexp(t, `^Prometheus monitoring/prometheus-operated discovered the probe's pod aiconform-probe-[0-9a-z-]+/aiconform-metrics by the PodMonitor aiconform-metrics, which Prometheus monitoring/k8s selects as target http://[0-9.]+:8080/metrics/? \(scrape pool podMonitor/aiconform-probe-[0-9a-z-]+/aiconform-metrics/0\)`, probed.Reason)
		// The PodMonitor as sent, labelled for the Prometheus' selector.
		assert.Contains(t, md, "kind: PodMonitor")
		assert.Contains(t, md, "release: "+rig.OperatedRelease)
		// The operator's own status of its Prometheus, read-only.
		system := reportCheck(t, rep, "monitoring-system", "")
		assert.Equal(t, "pass", system.Status, system.Reason)
		assert.Contains(t, system.Reason, "Prometheus Operator (Prometheus API at monitoring/prometheus-operated)")
	})
}
