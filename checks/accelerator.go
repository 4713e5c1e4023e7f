package checks

import (
	"strings"

	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// PodsOnNode reads the pods bound to a node, as `kubectl describe node`
// does: one LIST with a spec.nodeName field selector, never a cluster-wide
// pod LIST.
func PodsOnNode(node string) cluster.Get {
	return cluster.Get{Resources: []cluster.Resource{cluster.Pods}, AllNamespaces: true,
		FieldSelector: cluster.NodeFieldSelector + node}
}

// PodRequest is a pod's effective request of a resource: the larger of the
// sum over its containers and the largest init container, as the scheduler
// counts it.
func PodRequest(p *corev1.Pod, res corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[res]; ok {
			sum.Add(q)
		} else if q, ok := c.Resources.Limits[res]; ok {
			// Extended resources are often given as limits only; the
			// request then defaults to the limit.
			sum.Add(q)
		}
	}
	for _, c := range p.Spec.InitContainers {
		q, ok := c.Resources.Requests[res]
		if !ok {
			q, ok = c.Resources.Limits[res]
		}
		if ok && q.Cmp(sum) > 0 {
			sum = q.DeepCopy()
		}
	}
	return sum
}
