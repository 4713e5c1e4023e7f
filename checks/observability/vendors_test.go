package observability_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/observability"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// vendorExporter is another vendor's accelerator node and the exporter of
// its metrics, as the vendor's manifests run it.
type vendorExporter struct {
	name      string
	node      *corev1.Node
	namespace string
	ds        string
	image     string
	port      int
	// series are the metric names the body serves, each with one series
	// per device of the label, devices 0 to devices-1.
	label   string
	devices int
	series  []string
}

func (v vendorExporter) pod() string { return v.ds + "-m4x9q" }

// body is what the exporter serves, in the Prometheus text format.
func (v vendorExporter) body(devices int) string {
	var b strings.Builder
	for _, name := range v.series {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for d := range devices {
			fmt.Fprintf(&b, "%s{%s=\"%d\",instance_type=\"x\"} %d\n", name, v.label, d, 10+d)
		}
	}
	return b.String()
}

// world makes the vendor's node the world's only accelerator node, with
// its exporter on it in place of NVIDIA's DCGM Exporter.
func (v vendorExporter) world(w *checkstest.World) {
	w.Nodes[1] = v.node
	w.ResourceSlices, w.ResourceClaims = nil, nil
	labels := map[string]string{"app": v.ds}
	ds := &appsv1.DaemonSet{}
	ds.Namespace, ds.Name, ds.UID = v.namespace, v.ds, types.UID("uid-"+v.ds)
	ds.Spec.Template.Labels = labels
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: v.ds, Image: v.image}}
	pod := checkstest.ReadyPod(v.namespace, v.pod(), labels, v.node.Name)
	pod.OwnerReferences = checkstest.Owner("DaemonSet", ds.Name, ds.UID)
	var pods []*corev1.Pod
	for _, p := range w.Pods {
		if !strings.HasPrefix(p.Name, "nvidia-dcgm-exporter-") {
			pods = append(pods, p)
		}
	}
	w.Pods, w.ExtraDaemonSets, w.Targets = append(pods, pod), []*appsv1.DaemonSet{ds}, nil
	w.Raw = map[string]string{v.path(): v.body(v.devices)}
}

func (v vendorExporter) path() string {
	return fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy/metrics", v.namespace, v.pod(), v.port)
}

// The metrics of a cluster of TPUs, of Neuron devices or of Ascend NPUs
// alone are judged, where accelerator_metrics was not applicable before:
// the exporter of each is found by its image, read through the pod proxy,
// and each accelerator (for Neuron, each NeuronCore its series are of)
// must have utilization and memory.
func TestAcceleratorMetricsOtherVendors(t *testing.T) {
	none := " (its exporters have no temperature, power or interconnect metrics)"
	for _, tc := range []struct {
		v    vendorExporter
		want string
	}{
		{vendorExporter{name: "TPU", node: checkstest.Node("tpu-node-1", corev1.ConditionTrue, resources("google.com/tpu", "4")),
			namespace: "kube-system", ds: "tpu-device-plugin", image: "gke.gcr.io/tpu-device-plugin:v1.35.0-gke.1", port: 2112,
			label: "accelerator_id", devices: 4, series: []string{"duty_cycle", "memory_used", "memory_total"}},
			"GKE TPU device plugin metrics serves utilization and memory for each of 4 accelerators on 1 accelerator node" + none},
		// inf2.xlarge: one Neuron device of two NeuronCores.
		{vendorExporter{name: "Neuron", node: checkstest.Node("inf-node-1", corev1.ConditionTrue,
			resources("aws.amazon.com/neuron", "1", "aws.amazon.com/neurondevice", "1", "aws.amazon.com/neuroncore", "2")),
			namespace: "neuron-monitor", ds: "neuron-monitor", image: "public.ecr.aws/neuron/neuron-monitor:1.3.0", port: 8000,
			label: "neuroncore", devices: 2, series: []string{"neuroncore_utilization_ratio", "neuroncore_memory_usage_tensors"}},
			"AWS Neuron Monitor serves utilization and memory for each of 2 accelerators on 1 accelerator node" + none},
		{vendorExporter{name: "Ascend", node: checkstest.Node("npu-node-1", corev1.ConditionTrue, resources("huawei.com/Ascend910", "8")),
			namespace: "npu-exporter", ds: "npu-exporter", image: "swr.cn-south-1.myhuaweicloud.com/ascendhub/npu-exporter:v6.0.0", port: 8082,
			label: "id", devices: 8, series: []string{"npu_chip_info_utilization", "npu_chip_info_hbm_used_memory", "npu_chip_info_temperature", "npu_chip_info_power"}},
			"Huawei NPU Exporter serves utilization and memory for each of 8 accelerators on 1 accelerator node, with temperature and power"},
	} {
		t.Run(tc.v.name, func(t *testing.T) {
			v := tc.v
			with := func(edit func(w *checkstest.World)) func(w *checkstest.World) {
				return func(w *checkstest.World) {
					v.world(w)
					if edit != nil {
						edit(w)
					}
				}
			}
			checkstest.RunCases(t, observability.AcceleratorMetrics{}, []checkstest.Case{
				{Name: "every accelerator", Edit: with(nil), Status: checks.Pass, Reason: tc.want},
				{Name: "one without series", Edit: with(func(w *checkstest.World) { w.Raw[v.path()] = v.body(v.devices - 1) }), Status: checks.Fail,
					Reason: fmt.Sprintf("node %s: %s (%s) serves utilization series for %d of %d accelerators", v.node.Name, exporterName(tc.want), v.pod(), v.devices-1, v.devices)},
				{Name: "no exporter", Edit: with(func(w *checkstest.World) { w.ExtraDaemonSets = nil }), Status: checks.Fail,
					Reason: "no accelerator metrics exporter runs"},
			}, nil)
		})
	}
}

// exporterName is the exporter a passing reason names first.
func exporterName(reason string) string {
	name, _, _ := strings.Cut(reason, " serves ")
	return name
}

// resources are name, quantity pairs.
func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}
