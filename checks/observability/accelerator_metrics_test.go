package observability_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/observability"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withoutLines drops the series of the named metrics from the world's
// exporter.
func withoutLines(names ...string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		var kept []string
		for _, l := range strings.SplitAfter(w.Raw[checkstest.DCGMPath], "\n") {
			drop := false
			for _, n := range names {
				drop = drop || strings.HasPrefix(l, n+"{") || strings.HasPrefix(l, "# HELP "+n+" ") || strings.HasPrefix(l, "# TYPE "+n+" ")
			}
			if !drop {
				kept = append(kept, l)
			}
		}
		w.Raw[checkstest.DCGMPath] = strings.Join(kept, "")
	}
}

func dcgmPod(w *checkstest.World) *corev1.Pod {
	for _, p := range w.Pods {
		if strings.HasPrefix(p.Name, "nvidia-dcgm-exporter-") {
			return p
		}
	}
	panic("no exporter pod")
}

func TestAcceleratorMetrics(t *testing.T) {
	checkstest.RunCases(t, observability.AcceleratorMetrics{}, []checkstest.Case{
		{Name: "every GPU", Status: checks.Pass,
			Reason: "NVIDIA DCGM Exporter serves utilization and memory for each of 8 accelerators on 1 accelerator node, with temperature, power and interconnect"},
		{Name: "no exporter", Edit: func(w *checkstest.World) { w.ExtraDaemonSets = nil }, Status: checks.Fail,
			Reason: "no accelerator metrics exporter runs: no DaemonSet runs the image of NVIDIA DCGM Exporter, AMD Device Metrics Exporter, Intel XPU Manager"},
		{Name: "its pod not on the node", Edit: func(w *checkstest.World) { dcgmPod(w).Spec.NodeName = "cpu-node-1" }, Status: checks.Fail,
			Reason: "1 of 1 accelerator node without per-accelerator utilization and memory: node gpu-node-1: no accelerator metrics exporter pod runs on it"},
		{Name: "its pod not Ready", Edit: func(w *checkstest.World) { dcgmPod(w).Status.Conditions[1].Status = corev1.ConditionUnknown }, Status: checks.Fail,
			Reason: "node gpu-node-1: exporter pod gpu-operator/nvidia-dcgm-exporter-x7k2p is Running, not Ready"},
		{Name: "two GPUs without series", Edit: func(w *checkstest.World) {
			w.Raw[checkstest.DCGMPath] = string(simulate.DCGMMetrics("gpu-node-1", 6, "570.124.06"))
		}, Status: checks.Fail,
			Reason:  "node gpu-node-1: NVIDIA DCGM Exporter (nvidia-dcgm-exporter-x7k2p) serves utilization series for 6 of 8 accelerators, memory series for 6 of 8 accelerators",
			Details: []string{"node gpu-node-1: NVIDIA DCGM Exporter (nvidia-dcgm-exporter-x7k2p) serves utilization series for 6 of 8 accelerators, memory series for 6 of 8 accelerators"}},
		{Name: "no memory", Edit: withoutLines("DCGM_FI_DEV_FB_USED"), Status: checks.Fail, Reason: "serves no memory series"},
		{Name: "no power, no NVLink", Edit: withoutLines("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), Status: checks.Warn,
			Reason: "NVIDIA DCGM Exporter serves utilization and memory for each of 8 accelerators on 1 accelerator node; node gpu-node-1: no power, interconnect series", Details: []string{"node gpu-node-1: no power, interconnect series"}},
		{Name: "not the Prometheus format", Edit: func(w *checkstest.World) { w.Raw[checkstest.DCGMPath] = "<html>login</html>\n" }, Status: checks.Fail,
			Reason: "node gpu-node-1: NVIDIA DCGM Exporter's metrics: not the Prometheus text format"},
		{Name: "metrics do not answer", Edit: func(w *checkstest.World) { delete(w.Raw, checkstest.DCGMPath) }, Status: checks.Fail,
			Reason: "node gpu-node-1: NVIDIA DCGM Exporter's metrics do not answer"},
		{Name: "no accelerator node", Edit: func(w *checkstest.World) { w.Nodes = w.Nodes[:1]; w.ResourceSlices = nil }, Status: checks.Skip,
			Reason: "none of 1 nodes has an accelerator"},
		{Name: "AMD's exporter, its metrics prefixed", Edit: func(w *checkstest.World) {
			amd := checkstest.Node("amd-node-1", corev1.ConditionTrue, corev1.ResourceList{"amd.com/gpu": resource.MustParse("2")})
			ds := w.ExtraDaemonSets[0].DeepCopy()
			ds.Name, ds.UID, ds.Namespace = "amd-device-metrics-exporter", "uid-amd", "kube-amd-gpu"
			ds.Spec.Template.Spec.Containers[0].Image = "docker.io/rocm/device-metrics-exporter:v1.3.0"
			pod := checkstest.ReadyPod("kube-amd-gpu", "amd-device-metrics-exporter-q2w8r", nil, "amd-node-1")
			pod.OwnerReferences = checkstest.Owner("DaemonSet", ds.Name, ds.UID)
			w.Nodes, w.ExtraDaemonSets, w.Pods = append(w.Nodes, amd), append(w.ExtraDaemonSets, ds), append(w.Pods, pod)
			w.Raw["/api/v1/namespaces/kube-amd-gpu/pods/amd-device-metrics-exporter-q2w8r:5000/proxy/metrics"] = strings.Join([]string{
				"# TYPE amd_gpu_gfx_activity gauge",
				`amd_gpu_gfx_activity{gpu_id="0",hostname="amd-node-1"} 12`, `amd_gpu_gfx_activity{gpu_id="1",hostname="amd-node-1"} 0`,
				"# TYPE amd_gpu_used_vram gauge",
				`amd_gpu_used_vram{gpu_id="0",hostname="amd-node-1"} 1024`, `amd_gpu_used_vram{gpu_id="1",hostname="amd-node-1"} 0`,
				"# TYPE amd_gpu_junction_temperature gauge",
				`amd_gpu_junction_temperature{gpu_id="0"} 40`, `amd_gpu_junction_temperature{gpu_id="1"} 41`,
				"# TYPE amd_gpu_package_power gauge",
				`amd_gpu_package_power{gpu_id="0"} 140`, `amd_gpu_package_power{gpu_id="1"} 90`,
				"# TYPE amd_pcie_bandwidth gauge",
				`amd_pcie_bandwidth{gpu_id="0"} 5`, `amd_pcie_bandwidth{gpu_id="1"} 5`, "",
			}, "\n")
		}, Status: checks.Pass, Reason: "AMD Device Metrics Exporter and NVIDIA DCGM Exporter serve utilization and memory for each of 10 accelerators on 2 accelerator nodes, with temperature, power and interconnect"},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		if tc.Status == checks.Skip {
			return
		}
		require.NotEmpty(t, r.Evidence)
		assert.Contains(t, r.Evidence[0].Command, "kubectl get ds -A")
	})
}

// A read of the metrics the cluster refuses (no pods/proxy in the role) is
// an Error: the check could not look.
func TestAcceleratorMetricsForbidden(t *testing.T) {
	f := checkstest.NewWorld(t).Serve()
	f.Get = func(path string) ([]byte, error) {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods/proxy"}, "nvidia-dcgm-exporter-x7k2p:9400", errors.New(`User "auditor" cannot get resource "pods/proxy"`))
	}
	r := checkstest.Result(t, f.Run([]checks.Check{observability.AcceleratorMetrics{}}, nil), "accelerator-metrics", "")
	assert.Equal(t, checks.Error, r.Status, r.Reason)
	assert.Contains(t, r.Reason, "metrics of node gpu-node-1:")
	assert.Contains(t, r.Reason, "forbidden")
}

// collectedVector is a Prometheus server's answer to an instant query: the
// utilization and memory series of gpus GPUs of the exporter at instance.
func collectedVector(instance string, gpus int) string {
	var result []string
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"} {
		for i := range gpus {
			result = append(result, fmt.Sprintf(`{"metric":{"__name__":%q,"gpu":"%d","instance":%q},"value":[1764579600,"1"]}`, name, i, instance))
		}
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(result, ",") + `]}}`
}

// Where a Prometheus server has collected the exporter's series, one query
// of it replaces the read of the exporter; where it holds less than the
// node's accelerators, or does not answer, the exporter itself is read.
func TestAcceleratorMetricsFromPrometheus(t *testing.T) {
	const instance = "10.244.2.9:9400"
	for _, tc := range []struct {
		name      string
		answer    func() ([]byte, error)
		reason    string
		readsPods bool
	}{
		{"every GPU collected", func() ([]byte, error) { return []byte(collectedVector(instance, 8)), nil },
			"for each of 8 accelerators on 1 accelerator node (1 of them as a Prometheus server collected them)", false},
		{"six GPUs collected", func() ([]byte, error) { return []byte(collectedVector(instance, 6)), nil },
			"for each of 8 accelerators on 1 accelerator node, with", true},
		{"the query fails", func() ([]byte, error) {
			return nil, apierrors.NewInternalError(errors.New("query timed out"))
		}, "for each of 8 accelerators on 1 accelerator node, with", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			dcgmPod(w).Status.PodIP = "10.244.2.9"
			f := w.Serve()
			var read []string
			f.Get = func(path string) ([]byte, error) {
				read = append(read, path)
				if strings.Contains(path, "/proxy/api/v1/query?query=") {
					return tc.answer()
				}
				if path == checkstest.DCGMPath {
					return []byte(w.Raw[path]), nil
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services/proxy"}, path)
			}
			r := checkstest.Result(t, f.Run([]checks.Check{observability.AcceleratorMetrics{}}, nil), "accelerator-metrics", "")
			assert.Equal(t, checks.Pass, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			assert.Equal(t, tc.readsPods, slices.Contains(read, checkstest.DCGMPath), "read the exporter: %v", read)
			if !tc.readsPods {
				require.NotEmpty(t, r.Evidence)
				last := r.Evidence[len(r.Evidence)-1]
				assert.Contains(t, last.Command, "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/query?query=")
				assert.Contains(t, last.Command, "instance%3D%2210.244.2.9%3A9400%22")
				assert.Equal(t, "prometheus", r.Table.Rows[0][len(r.Table.Rows[0])-1])
			}
		})
	}
}
