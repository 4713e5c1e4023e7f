package checks

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// IsAccelerator is true for the extended resources of accelerators. Every
// category that asks about accelerator pods (devices, autoscaling,
// security) asks it here.
func IsAccelerator(name corev1.ResourceName) bool {
	n := string(name)
	return n == "nvidia.com/gpu" || strings.HasPrefix(n, "nvidia.com/mig-") || n == "amd.com/gpu" ||
		strings.HasPrefix(n, "gpu.intel.com/") || n == "habana.ai/gaudi"
}

// AcceleratorResources are the accelerator resources a node advertises, in
// capacity or allocatable.
func AcceleratorResources(n *corev1.Node) map[corev1.ResourceName]bool {
	set := map[corev1.ResourceName]bool{}
	for name := range n.Status.Capacity {
		if IsAccelerator(name) {
			set[name] = true
		}
	}
	for name := range n.Status.Allocatable {
		if IsAccelerator(name) {
			set[name] = true
		}
	}
	return set
}

// NodeReady is a node's Ready condition and why: Unknown when it reports
// none, which is not Ready either.
func NodeReady(n *corev1.Node) (corev1.ConditionStatus, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status, strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return corev1.ConditionUnknown, "no Ready condition"
}
