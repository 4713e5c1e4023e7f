package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A real node's accelerators are stand-ins the kubelet really mediates:
// device nodes of the rig's own, advertised by rig/images/gpuplugin (the
// device-plugin API) from a DaemonSet pod on the node. A container that is
// allocated one gets exactly its device node; one that asks for none gets
// none. This is what secure_accelerator_access's probe looks at.

// RealNodeGPUs is how many nvidia.com/gpu each real node has.
const RealNodeGPUs = 4

// gpuMajor is the major number of the stand-in device nodes: NVIDIA's
// (195), which no driver of this machine's kernel answers, so a container
// that has one can list it and do nothing with it.
const gpuMajor = 195

// gpuDevicesDir holds the stand-in device nodes, in the kubelet's folder:
// the same path on every real node.
const gpuDevicesDir = "rig-devices"

// GPUPluginDaemonSet runs the stand-in device plugin on the real nodes.
const GPUPluginDaemonSet = "rig-gpu-device-plugin"

// makeGPUDevices creates the stand-in device nodes nvidia0... in dir.
func makeGPUDevices(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range RealNodeGPUs {
		p := filepath.Join(dir, fmt.Sprintf("nvidia%d", i))
		// Mode 0666 as NVIDIA's own nodes have, so a non-root container
		// given one could open it; nothing answers if it does.
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(gpuMajor, uint32(i)))); err != nil {
			return fmt.Errorf("device node %s: %w", p, err)
		}
		// Past the umask.
		if err := os.Chmod(p, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// GPUPlugin is the DaemonSet of the stand-in device plugin: on the real
// nodes, with the kubelet's device-plugin folder and the node's device
// nodes mounted from the node.
func GPUPlugin(devices string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": GPUPluginDaemonSet}
	hostPath := func(p string) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p}}
	}
	root := int64(0)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: DevicePluginNamespace, Name: GPUPluginDaemonSet, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:      map[string]string{RealNodeLabel: "true"},
					Tolerations:       []corev1.Toleration{{Key: RealNodeTaint.Key, Operator: corev1.TolerationOpExists}},
					PriorityClassName: "system-node-critical",
					Containers: []corev1.Container{{
						Name: "plugin", Image: GPUPluginImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"--resource", string(GPUResource), "--devices", devices},
						// It writes its socket into the kubelet's folder,
						// which root owns.
						SecurityContext: &corev1.SecurityContext{RunAsUser: &root},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "device-plugins", MountPath: "/var/lib/kubelet/device-plugins"},
							{Name: "devices", MountPath: devices, ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "device-plugins", VolumeSource: hostPath("/var/lib/kubelet/device-plugins")},
						{Name: "devices", VolumeSource: hostPath(devices)},
					},
				},
			},
		},
	}
}

// startGPUPlugin creates the DaemonSet (once for all real nodes) and waits
// until node advertises its GPUs and carries no taint but its own. The node
// lifecycle controller lifts its not-ready taint some time after the node
// reports Ready (the plugin's pods tolerate it): until then no pod of a
// test could be scheduled there, and a probe rightly finds no GPU to use.
func startGPUPlugin(ctx context.Context, cs kubernetes.Interface, devices, node string, watched []*process) error {
	ds := GPUPlugin(devices)
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	want := resource.NewQuantity(RealNodeGPUs, resource.DecimalSI)
	for {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil {
			if got, ok := n.Status.Allocatable[GPUResource]; ok && got.Cmp(*want) == 0 && onlyOwnTaint(n) {
				return nil
			}
		}
		if err := pause(ctx, 200*time.Millisecond, watched...); err != nil {
			return fmt.Errorf("%s advertising %d %s: %w", node, RealNodeGPUs, GPUResource, err)
		}
	}
}

// onlyOwnTaint says whether n carries no taint but the one the rig
// registers its real nodes with.
func onlyOwnTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key != RealNodeTaint.Key {
			return false
		}
	}
	return true
}
