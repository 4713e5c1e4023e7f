//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// accelerator_metrics through the real API server's pod proxy: a DCGM
// Exporter DaemonSet whose pod kwok runs on the GPU node, at an address of
// the rig's virtual range, behind which the rig serves what the exporter
// would. The read-only auditor's check reads it as `kubectl get --raw`
// does, through the egress guard; and fails by name once the exporter
// fails.
func TestAcceleratorMetricsOnRig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir := framework.RigBin(t)
	c := startRig(ctx, t, "metrics", binDir)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	const ns = "gpu-operator"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	labels := map[string]string{"app": "nvidia-dcgm-exporter"}
	_, err = cs.AppsV1().DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nvidia-dcgm-exporter"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				// Annotated for the kubernetes-pods job of the Prometheus
				// installed below.
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: scrapeOn(simulate.DCGMExporterPort)},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"nvidia.com/gpu.present": "true"},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "nvidia-dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: simulate.DCGMExporterPort}}}},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var pod corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=nvidia-dcgm-exporter"})
		if err != nil || len(pods.Items) != 1 {
			return false, nil
		}
		pod = pods.Items[0]
		return runningReady(pod) && pod.Status.PodIP != "", nil
	}))
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	require.NoError(t, err)
	require.True(t, rig.VirtualRange.Contains(ip), "kwok gave the exporter pod %s, outside the virtual range", ip)
	metrics := simulate.MetricsHandler(simulate.DCGMMetrics(rig.GPUNodeName, rig.GPUCount, rig.GPUDriverVersion))
	var broken, mapping atomic.Bool
	require.NoError(t, c.ServeVirtual(netip.AddrPortFrom(ip, simulate.DCGMExporterPort), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "DCGM: failed to connect to the host engine", http.StatusInternalServerError)
			return
		}
		// With its Kubernetes mapping, the exporter names the pod
		// running on the node that holds a GPU, here GPU 0 busy.
		if mapping.Load() {
			held, err := cs.CoreV1().Pods("").List(r.Context(), metav1.ListOptions{LabelSelector: "aiconform.io/load", FieldSelector: "spec.nodeName=" + rig.GPUNodeName})
			if err == nil && len(held.Items) == 1 && held.Items[0].Status.Phase == corev1.PodRunning {
				p := held.Items[0]
				simulate.MetricsHandler(simulate.DCGMMetrics(rig.GPUNodeName, rig.GPUCount, rig.GPUDriverVersion,
					simulate.DCGMHolder{GPU: 0, Namespace: p.Namespace, Pod: p.Name, Container: p.Spec.Containers[0].Name, Util: 100})).ServeHTTP(w, r)
				return
			}
		}
		metrics.ServeHTTP(w, r)
	})))

	const as = "system:serviceaccount:metrics-auditors:metrics-reader"
	bindRoles(ctx, t, cs, "metrics-auditors", "metrics-reader", "aiconform-reader.yaml")
	var out checks.Outcome
	var verdicts []checks.Verdict
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, verdicts = runChecks(ctx, t, c.Kubeconfig(), as)
		// RBAC takes a moment to see a new binding.
		return result(t, out, "accelerator-metrics", "").Status != checks.Error, nil
	}))
	v := verdictOf(t, verdicts, "accelerator_metrics")
	assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	r := result(t, out, "accelerator-metrics", "")
	assert.Equal(t, "NVIDIA DCGM Exporter serves utilization and memory for each of 8 accelerators on 1 accelerator node, with temperature, power and interconnect", r.Reason)
	framework.AssertEvidenceReRuns(t, binDir, c.Kubeconfig(), as, out)

	acceleratorLoadOnRig(ctx, t, c, cs, &mapping)

	// The exporter loses its host engine and answers 500: the node is
	// named.
	broken.Store(true)
	out, verdicts = runChecks(ctx, t, c.Kubeconfig(), as)
	v = verdictOf(t, verdicts, "accelerator_metrics")
	assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
	r = result(t, out, "accelerator-metrics", "")
	assert.Equal(t, checks.Fail, r.Status, r.Reason)
	assert.Contains(t, r.Reason, "node kwok-gpu-node: NVIDIA DCGM Exporter's metrics do not answer")
	t.Logf("with the exporter failing: %s", r.Reason)
	broken.Store(false)

	serviceMetricsOnRig(ctx, t, c, cs, binDir, as)
}

// accelerator-load-probe on the same rig, as the published reader and
// prober roles: the real scheduler binds the probe's pod holding a GPU to
// the GPU node, kwok runs it, and the probe reads the exporter through
// the API server's pod proxy while it runs. kwok runs no load: the
// exporter stands in for DCGM's with its pod mapping, busy on the GPU it
// gives the pod (mapping), or does not move at all.
func acceleratorLoadOnRig(ctx context.Context, t *testing.T, c *rig.Cluster, cs kubernetes.Interface, mapping *atomic.Bool) {
	aiconform := buildAiconform(t)
	kubeconfig := c.Kubeconfig()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	const as = "system:serviceaccount:metrics-auditors:metrics-prober"
	bindRoles(ctx, t, cs, "metrics-auditors", "metrics-prober", "aiconform-reader.yaml")
	bindRoles(ctx, t, cs, "metrics-auditors", "metrics-prober", "aiconform-prober.yaml")
	probe := func(t *testing.T) report.Check {
		var rep *report.Report
		// RBAC takes a moment to see a new binding.
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, _, _ = runCheck(ctx, t, aiconform, kubeconfig, "accelerator_metrics", "--as", as, "--probe", "--probe-timeout", "20s")
			return !strings.Contains(reportCheck(t, rep, "accelerator-load-probe", "").Reason, "forbidden"), nil
		}))
		r := reportCheck(t, rep, "accelerator-load-probe", "")
		t.Logf("%s: %s\ntimeline:\n%s", r.Status, r.Reason, timeline(r.Table))
		assertNoLeftovers(ctx, t, cs, dyn)
		return r
	}
	t.Run("LoadSeen", func(t *testing.T) {
		mapping.Store(true)
		defer mapping.Store(false)
		r := probe(t)
		require.Equal(t, "pass", r.Status, r.Reason)
		assert.Regexp(t, `^on node kwok-gpu-node, the accelerator NVIDIA DCGM Exporter ties to the probe's pod aiconform-probe-[0-9a-z-]+/aiconform-load: DCGM_FI_DEV_GPU_UTIL of gpu=0 went from 0 to 100 [0-9.]+ s after the load started, read through the API server$`, r.Reason)
	})
	t.Run("LoadNotSeen", func(t *testing.T) {
		r := probe(t)
		require.Equal(t, "fail", r.Status, r.Reason)
		assert.Contains(t, r.Reason, "on node kwok-gpu-node, no accelerator's DCGM_FI_DEV_GPU_UTIL rose by 10 over ")
	})
}

// ai_service_metrics on the same rig, with a real Prometheus: its
// Kubernetes discovery finds the exporter and a KServe model's predictor,
// both annotated for scraping on the GPU node, and scrapes them through
// the rig's virtual range. The read-only auditor's check reads its targets
// through the service proxy; a model that stops answering is named; a
// Prometheus that is gone fails the requirement.
func serviceMetricsOnRig(ctx context.Context, t *testing.T, c *rig.Cluster, cs kubernetes.Interface, binDir, as string) {
	prom, err := c.InstallPrometheus(ctx, rig.OperatorOptions{BinDir: binDir})
	require.NoError(t, err)
	const ns = "models"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	model, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sklearn-iris-predictor-6f9c7b8d4-99bjs", Annotations: scrapeOn(8080),
			Labels: map[string]string{"serving.kserve.io/inferenceservice": "sklearn-iris", "component": "predictor"}},
		Spec: corev1.PodSpec{NodeName: rig.GPUNodeName, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "kserve-container", Image: "kserve/sklearnserver:v0.15.0"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		model, err = cs.CoreV1().Pods(ns).Get(ctx, model.Name, metav1.GetOptions{})
		return err == nil && runningReady(*model) && model.Status.PodIP != "", nil
	}))
	ip, err := netip.ParseAddr(model.Status.PodIP)
	require.NoError(t, err)
	metrics := simulate.MetricsHandler([]byte("# HELP request_predict_seconds_count Predictions served.\n# TYPE request_predict_seconds_count counter\nrequest_predict_seconds_count{model_name=\"sklearn-iris\"} 42\n"))
	var broken atomic.Bool
	require.NoError(t, c.ServeVirtual(netip.AddrPortFrom(ip, 8080), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "model server restarting", http.StatusInternalServerError)
			return
		}
		metrics.ServeHTTP(w, r)
	})))

	// Prometheus discovers the pods and scrapes them within seconds; until
	// it has scraped both, it reports fewer targets up.
	var out checks.Outcome
	targets := func(want checks.Status, reason string) checks.Result {
		var r checks.Result
		var verdicts []checks.Verdict
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			out, verdicts = runChecks(ctx, t, c.Kubeconfig(), as)
			r = result(t, out, "monitoring-targets", "")
			return r.Status == want && strings.Contains(r.Reason, reason), nil
		})
		require.NoError(t, err, "monitoring-targets stayed %s: %s", r.Status, r.Reason)
		v := verdictOf(t, verdicts, "ai_service_metrics")
		t.Logf("ai_service_metrics %s: %s", v.Status, r.Reason)
		if want == checks.Pass {
			assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
			framework.AssertEvidenceReRuns(t, binDir, c.Kubeconfig(), as, out)
		}
		return r
	}
	r := targets(checks.Pass, "scrapes 2 of 2")
	assert.Equal(t, "monitoring/prometheus-server scrapes 2 of 2 active targets, 2 discovered in the cluster; AI workloads: KServe 1", r.Reason)
	assert.Equal(t, "Prometheus (Prometheus API at monitoring/prometheus-server)", result(t, out, "monitoring-system", "").Reason)
	// accelerator_metrics now reads what Prometheus collected of the
	// exporter, in one query, in place of a read of the exporter. The
	// checks of one run read side by side: the run that first saw both
	// targets up may have queried the series a moment before Prometheus
	// stored the exporter's first scrape, and then rightly read the
	// exporter itself. A later run reads them from Prometheus.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		r = result(t, out, "accelerator-metrics", "")
		if strings.Contains(r.Reason, "as a Prometheus server collected them") {
			return true, nil
		}
		out, _ = runChecks(ctx, t, c.Kubeconfig(), as)
		return false, nil
	}), "accelerator-metrics never read Prometheus: %s", r.Reason)
	assert.Equal(t, "NVIDIA DCGM Exporter serves utilization and memory for each of 8 accelerators on 1 accelerator node (1 of them as a Prometheus server collected them), with temperature, power and interconnect", r.Reason)
	assert.Equal(t, "prometheus", r.Table.Rows[0][len(r.Table.Rows[0])-1])

	// The model server fails its scrapes: Prometheus reports it down, and
	// the check names it.
	broken.Store(true)
	r = targets(checks.Warn, "")
	assert.Contains(t, r.Reason, "but KServe target kubernetes-pods http://"+ip.String()+":8080/metrics is down: server returned HTTP status 500 Internal Server Error")

	// Prometheus is gone: the service proxy finds no one behind it.
	require.NoError(t, prom.Stop())
	r = targets(checks.Fail, "")
	assert.Contains(t, r.Reason, "no Prometheus server collects from the cluster: Prometheus monitoring/prometheus-server: its API does not answer")
	// accelerator_metrics reads the exporter itself again.
	r = result(t, out, "accelerator-metrics", "")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, "exporter", r.Table.Rows[0][len(r.Table.Rows[0])-1])
}

// scrapeOn are the annotations the kubernetes-pods job scrapes a pod by.
func scrapeOn(port int) map[string]string {
	return map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(port)}
}
