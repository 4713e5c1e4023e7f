package rig

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The GPU node's device plugin, as NVIDIA's static manifest
// (k8s-device-plugin's deployments/static/nvidia-device-plugin.yml) names
// and labels it. On a real node it is what advertises nvidia.com/gpu; on
// the rig the node's GPUs are written by hand and kwok runs the pod, which
// stands in for it like the controller Deployments stand in for the
// operators' processes.
const (
	DevicePluginNamespace = "kube-system"
	DevicePluginDaemonSet = "nvidia-device-plugin-daemonset"
)

// devicePluginLabels are the static manifest's pod labels.
var devicePluginLabels = map[string]string{"name": "nvidia-device-plugin-ds"}

// DevicePlugin returns the device plugin DaemonSet as the rig creates it:
// on nodes labelled nvidia.com/gpu.present=true, tolerating the GPU taint.
func DevicePlugin() *appsv1.DaemonSet {
	note := map[string]string{standInAnnotation: "kwok runs this pod; the GPU node's nvidia.com/gpu is written by the rig"}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: DevicePluginNamespace, Name: DevicePluginDaemonSet, Annotations: note},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: devicePluginLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: devicePluginLabels, Annotations: note},
				Spec: corev1.PodSpec{
					NodeSelector:      map[string]string{"nvidia.com/gpu.present": "true"},
					Tolerations:       []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					PriorityClassName: "system-node-critical",
					Containers:        []corev1.Container{{Name: "nvidia-device-plugin-ctr", Image: "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"}},
				},
			},
		},
	}
}

// createDevicePlugin creates the device plugin DaemonSet (an existing one
// is left as it is) and waits until its pod on the GPU node is Ready.
func createDevicePlugin(ctx context.Context, cs kubernetes.Interface, watched []*process) error {
	ds := DevicePlugin()
	if _, err := cs.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	for {
		d, err := cs.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.DesiredNumberScheduled == 1 && d.Status.NumberReady == 1 {
			return nil
		}
		if err := pause(ctx, 200*time.Millisecond, watched...); err != nil {
			return fmt.Errorf("DaemonSet %s/%s ready on %s: %w", ds.Namespace, ds.Name, GPUNodeName, err)
		}
	}
}
