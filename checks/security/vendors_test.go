package security_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/security"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// onlyAccelerator makes the healthy world's GPU node one of res alone:
// nothing of NVIDIA's, no DRA devices, its pods asking for res.
func onlyAccelerator(node string, res corev1.ResourceName) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.Nodes[1] = checkstest.Node(node, corev1.ConditionTrue, corev1.ResourceList{res: resource.MustParse("4")})
		w.ResourceSlices, w.ResourceClaims = nil, nil
		for _, p := range append(w.Pods, w.PluginPod) {
			if p.Spec.NodeName == "gpu-node-1" {
				p.Spec.NodeName = node
			}
			for i := range p.Spec.Containers {
				if q, ok := p.Spec.Containers[i].Resources.Requests["nvidia.com/gpu"]; ok {
					p.Spec.Containers[i].Resources.Requests = corev1.ResourceList{res: q}
				}
			}
		}
	}
}

// workload adds a running pod of no DaemonSet on node, its one container
// asking for no accelerator, changed by edit.
func workload(node string, edit func(p *corev1.Pod)) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		p := checkstest.ReadyPod("ml", "debug", nil, node)
		p.Spec.Containers = []corev1.Container{{Name: "main"}}
		edit(p)
		w.Pods = append(w.Pods, p)
	}
}

func setEnv(name, value string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: name, Value: value}} }
}

// A node of TPUs, Neuron devices or Ascend NPUs alone is an accelerator
// node for secure_accelerator_access (it was none before, and the
// requirement not applicable): a pod asking for its resource is by
// request, and a workload mounting its device nodes, or naming them in the
// variable its vendor's runtime hook reads, is found.
func TestDeviceAccessOtherVendors(t *testing.T) {
	byRequest := "on 1 accelerator node, no pod outside the accelerator stack reaches a device around a request; 1 pod with accelerators by request"
	for _, tc := range []struct {
		vendor, node string
		res          corev1.ResourceName
		// column is the device variable the evidence shows, "" for none.
		column string
		cases  []checkstest.Case
	}{
		{"TPU", "tpu-node-1", "google.com/tpu", "", []checkstest.Case{
			{Name: "a VFIO group mounted", Edit: workload("tpu-node-1", hostPath("/dev/vfio/0")), Status: checks.Fail, Reason: "pod ml/debug container main: mounts the host's /dev/vfio/0"},
			{Name: "an accel node mounted", Edit: workload("tpu-node-1", hostPath("/dev/accel0")), Status: checks.Fail, Reason: "mounts the host's /dev/accel0"},
			// libtpu's variable picks among the chips a container has; it
			// gives none.
			{Name: "TPU_VISIBLE_CHIPS alone", Edit: workload("tpu-node-1", setEnv("TPU_VISIBLE_CHIPS", "0")), Status: checks.Pass, Reason: byRequest},
		}},
		{"Neuron", "trn-node-1", "aws.amazon.com/neuron", "AWS_NEURON_VISIBLE_DEVICES", []checkstest.Case{
			{Name: "a Neuron device mounted", Edit: workload("trn-node-1", hostPath("/dev/neuron0")), Status: checks.Fail, Reason: "mounts the host's /dev/neuron0"},
			{Name: "the OCI hook's variable", Edit: workload("trn-node-1", setEnv("AWS_NEURON_VISIBLE_DEVICES", "ALL")), Status: checks.Warn,
				Reason: "pod ml/debug container main: requests no accelerator but sets AWS_NEURON_VISIBLE_DEVICES=ALL"},
			{Name: "NEURON_RT_VISIBLE_CORES alone", Edit: workload("trn-node-1", setEnv("NEURON_RT_VISIBLE_CORES", "0-1")), Status: checks.Pass, Reason: byRequest},
		}},
		{"Ascend", "npu-node-1", "huawei.com/Ascend910", "ASCEND_VISIBLE_DEVICES", []checkstest.Case{
			{Name: "an NPU mounted", Edit: workload("npu-node-1", hostPath("/dev/davinci3")), Status: checks.Fail, Reason: "mounts the host's /dev/davinci3"},
			{Name: "the NPU manager mounted", Edit: workload("npu-node-1", hostPath("/dev/davinci_manager")), Status: checks.Fail, Reason: "mounts the host's /dev/davinci_manager"},
			{Name: "Ascend Docker Runtime's variable", Edit: workload("npu-node-1", setEnv("ASCEND_VISIBLE_DEVICES", "0-7")), Status: checks.Warn,
				Reason: "requests no accelerator but sets ASCEND_VISIBLE_DEVICES=0-7"},
		}},
	} {
		t.Run(tc.vendor, func(t *testing.T) {
			cases := append([]checkstest.Case{{Name: "only requests", Status: checks.Pass, Reason: byRequest}}, tc.cases...)
			for i := range cases {
				edit := cases[i].Edit
				cases[i].Edit = func(w *checkstest.World) {
					onlyAccelerator(tc.node, tc.res)(w)
					if edit != nil {
						edit(w)
					}
				}
			}
			checkstest.RunCases(t, security.DeviceAccessMediated{}, cases, func(t *testing.T, _ checkstest.Case, r checks.Result) {
				// The pods are shown with the vendor's variable, not
				// NVIDIA's, and with what they ask of its resource.
				require.NotEmpty(t, r.Evidence)
				cmd := r.Evidence[0].Command
				assert.Contains(t, cmd, "resources.limits."+strings.ReplaceAll(string(tc.res), ".", `\.`))
				assert.NotContains(t, cmd, "NVIDIA_VISIBLE_DEVICES")
				if tc.column != "" {
					assert.Contains(t, cmd, tc.column+":")
				} else {
					assert.NotContains(t, cmd, "_VISIBLE_DEVICES")
				}
			})
		})
	}
}
