//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// accelerator_metrics through the real API server's pod proxy: a DCGM
// Exporter DaemonSet whose pod kwok runs on the GPU node, at an address of
// the rig's virtual range, behind which the rig serves what the exporter
// would. The read-only auditor's check reads it as `kubectl get --raw`
// does, through the egress guard; and fails by name once the exporter
// fails.
func TestAcceleratorMetricsOnRig(t *testing.T) {
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
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"nvidia.com/gpu.present": "true"},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "nvidia-dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04",
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: rig.DCGMExporterPort}}}},
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
	metrics := rig.MetricsHandler(rig.DCGMMetrics(rig.GPUNodeName, rig.GPUCount, rig.GPUDriverVersion))
	var broken atomic.Bool
	require.NoError(t, c.ServeVirtual(netip.AddrPortFrom(ip, rig.DCGMExporterPort), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "DCGM: failed to connect to the host engine", http.StatusInternalServerError)
			return
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
}
