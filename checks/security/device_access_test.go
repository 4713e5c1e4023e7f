package security_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/security"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// onGPUNode is a running pod on the world's GPU node, of a DaemonSet when
// ds is set, with one container changed by edit.
func onGPUNode(ns, name string, ds bool, edit func(p *corev1.Pod)) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		p := checkstest.ReadyPod(ns, name, nil, "gpu-node-1")
		p.Spec.Containers = []corev1.Container{{Name: "main"}}
		if ds {
			p.OwnerReferences = checkstest.Owner("DaemonSet", name, types.UID("uid-"+name))
		}
		edit(p)
		w.Pods = append(w.Pods, p)
	}
}

func privileged(p *corev1.Pod) {
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: checkstest.Ptr(true)}
}

func hostPath(path string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host"})
	}
}

func visible(value string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: value}, {Name: "API_TOKEN", Value: "not kept"}}
	}
}

func TestDeviceAccessMediated(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(w *checkstest.World)
		status  checks.Status
		reason  string
		details []string
	}{
		{name: "only requests", status: checks.Pass,
			reason: "on 1 accelerator node, no pod outside the accelerator stack reaches a device around a request; 1 pod with accelerators by request"},
		{name: "a privileged workload", edit: onGPUNode("ml", "debug", false, privileged), status: checks.Fail,
			reason: "1 workload container reaches devices around a request: pod ml/debug container main: privileged, with every device of the node"},
		{name: "a workload mounting the host's /dev", edit: onGPUNode("ml", "debug", false, hostPath("/dev")), status: checks.Fail,
			reason: "pod ml/debug container main: mounts the host's /dev (hostPath volume host)"},
		{name: "a workload mounting one GPU's node", edit: onGPUNode("ml", "debug", false, hostPath("/dev/nvidia0")), status: checks.Fail,
			reason: "mounts the host's /dev/nvidia0"},
		{name: "a privileged workload holding a GPU still sees them all", edit: onGPUNode("ml", "debug", false, func(p *corev1.Pod) {
			privileged(p)
			p.Spec.Containers[0].Resources.Limits = checkstest.GPUs("1")
		}), status: checks.Fail, reason: "pod ml/debug container main: privileged"},
		{name: "a variable naming every GPU", edit: onGPUNode("ml", "cuda", false, visible("all")), status: checks.Warn,
			reason: "1 container names or mounts devices outside a request: pod ml/cuda container main: requests no accelerator but sets NVIDIA_VISIBLE_DEVICES=all"},
		{name: "a variable naming none", edit: onGPUNode("ml", "cuda", false, visible("void")), status: checks.Pass},
		{name: "a variable beside a request", edit: onGPUNode("ml", "cuda", false, func(p *corev1.Pod) {
			visible("all")(p)
			p.Spec.Containers[0].Resources.Limits = checkstest.GPUs("1")
		}), status: checks.Pass, reason: "2 pods with accelerators by request"},
		{name: "a DRA claim is a request", edit: onGPUNode("ml", "dra", false, func(p *corev1.Pod) {
			visible("all")(p)
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: checkstest.Ptr("dra-gpu")}}
		}), status: checks.Pass, reason: "2 pods with accelerators by request"},
		{name: "a CDI annotation", edit: onGPUNode("ml", "cdi", false, func(p *corev1.Pod) {
			p.Annotations = map[string]string{"cdi.k8s.io/gpus": "nvidia.com/gpu=all", "other": "x"}
		}), status: checks.Warn, reason: "pod ml/cdi container *: names CDI devices by annotation cdi.k8s.io/gpus: nvidia.com/gpu=all"},
		{name: "a privileged node agent", edit: onGPUNode("calico-system", "calico-node", true, privileged), status: checks.Pass,
			details: []string{"privileged node agents (DaemonSet or static pods) outside the accelerator stack, with every device of their node: calico-system/calico-node"}},
		{name: "a node agent mounting the host's /dev", edit: onGPUNode("monitoring", "exporter", true, hostPath("/dev")), status: checks.Warn,
			reason: "pod monitoring/exporter container main: mounts the host's /dev"},
		{name: "the accelerator stack", edit: func(w *checkstest.World) {
			onGPUNode("gpu-operator", "nvidia-device-plugin", true, func(p *corev1.Pod) {
				privileged(p)
				hostPath("/var/lib/kubelet/device-plugins")(p)
			})(w)
			// Beside the plugin, the driver: privileged, with the host's /dev.
			onGPUNode("gpu-operator", "nvidia-driver", true, func(p *corev1.Pod) {
				privileged(p)
				hostPath("/dev")(p)
			})(w)
		}, status: checks.Pass,
			details: []string{"accelerator stack (pods that register with the kubelet as device plugins or DRA drivers, and their namespaces' other pods, exempt): namespaces gpu-operator"}},
		{name: "a finished privileged pod", edit: onGPUNode("ml", "debug", false, func(p *corev1.Pod) {
			privileged(p)
			p.Status.Phase = corev1.PodSucceeded
		}), status: checks.Pass},
		{name: "a node only DRA gives accelerators", edit: func(w *checkstest.World) {
			w.Nodes[1].Status.Capacity, w.Nodes[1].Status.Allocatable = nil, nil
			onGPUNode("ml", "debug", false, privileged)(w)
		}, status: checks.Fail, reason: "pod ml/debug container main: privileged"},
		{name: "no accelerator", edit: func(w *checkstest.World) {
			w.Nodes = w.Nodes[:1]
		}, status: checks.Skip, reason: "none of 1 nodes has an accelerator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			if tc.edit != nil {
				tc.edit(w)
			}
			r := checkstest.Result(t, w.Serve().Run([]checks.Check{security.DeviceAccessMediated{}}, nil), "device-access-mediated", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			for _, d := range tc.details {
				assert.Contains(t, r.Details, d)
			}
			if tc.status == checks.Skip {
				return
			}
			require.NotEmpty(t, r.Evidence)
			// The node's accelerator resources get a column each; a node
			// only DRA gives accelerators has none.
			assert.Regexp(t, `^kubectl get pods -A --field-selector spec.nodeName=gpu-node-1 -o 'custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,OWNER:.metadata.ownerReferences\[\*\].kind,PRIVILEGED:.spec.containers\[\*\].securityContext.privileged,HOSTPATH:.spec.volumes\[\*\].hostPath.path,NVIDIA_VISIBLE_DEVICES:.spec.containers\[\*\].env\[\?\(@.name=="NVIDIA_VISIBLE_DEVICES"\)\].value,(GPU:.spec.containers\[\*\].resources.limits.nvidia\\.com/gpu,)?CLAIMS:.spec.resourceClaims\[\*\].name'$`, r.Evidence[0].Command)
			assert.NotContains(t, r.Evidence[0].Output, "not kept", "only the device variables of a pod are kept")
		})
	}
}
