package rig

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The rig's fake nodes. kwok manages nodes carrying NodeAnnotation and
// reports them Ready; nothing runs on them.
const (
	GPUNodeName = "kwok-gpu-node"
	CPUNodeName = "kwok-cpu-node"

	NodeAnnotation      = "kwok.x-k8s.io/node"
	NodeAnnotationValue = "fake"

	// GPUResource is the extended resource the NVIDIA device plugin
	// advertises; GPUCount of it is allocatable on the GPU node.
	GPUResource corev1.ResourceName = "nvidia.com/gpu"
	GPUCount                        = 8
)

// GPUNodePodCIDR is the GPU node's pods' range, in VirtualRange.
const GPUNodePodCIDR = "10.250.1.0/24"

// GPUDriverVersion is the NVIDIA driver the GPU node's labels report.
const GPUDriverVersion = "570.133.20"

// GPUNode returns the GPU node as the rig creates it: 8 nvidia.com/gpu in
// capacity and allocatable, and the labels GPU Feature Discovery puts on
// a node with eight H100s.
func GPUNode() *corev1.Node {
	n := fakeNode(GPUNodeName, "127.0.10.1")
	for k, v := range map[string]string{
		"nvidia.com/gpu.present": "true",
		"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.count":   fmt.Sprint(GPUCount),
		"nvidia.com/gpu.memory":  "81559",
		"nvidia.com/gpu.family":  "hopper",
		// Its driver and CUDA runtime; whole GPUs, not shared, not
		// virtualized.
		"nvidia.com/cuda.driver-version.full":  GPUDriverVersion,
		"nvidia.com/cuda.runtime-version.full": "12.8",
		"nvidia.com/mig.capable":               "true",
		"nvidia.com/gpu.sharing-strategy":      "none",
		"nvidia.com/gpu.replicas":              "1",
		"nvidia.com/vgpu.present":              "false",
	} {
		n.Labels[k] = v
	}
	// kwok gives the node's pods addresses of this range: the rig's
	// virtual range, where a listener registered with ServeVirtual (an
	// exporter's metrics) answers the API server's pod proxy.
	n.Spec.PodCIDR = GPUNodePodCIDR
	gpus := *resource.NewQuantity(GPUCount, resource.DecimalSI)
	n.Status.Capacity[GPUResource] = gpus
	n.Status.Allocatable[GPUResource] = gpus
	return n
}

// CPUNode returns the CPU-only node as the rig creates it.
func CPUNode() *corev1.Node { return fakeNode(CPUNodeName, "127.0.10.2") }

func fakeNode(name, ip string) *corev1.Node {
	res := func() corev1.ResourceList {
		return corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{NodeAnnotation: NodeAnnotationValue},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    res(),
			Allocatable: res(),
			// A fixed address per node; kwok keeps an InternalIP it finds.
			// 127.0.10.0/24 is loopback, so even a stray dial stays local.
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: ip},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// CreateNodes creates the GPU and the CPU node; existing ones are left as
// they are. On a ControlPlaneOnly rig they stay without conditions, since
// no kwok runs to report them Ready.
func CreateNodes(ctx context.Context, cs kubernetes.Interface) error {
	for _, n := range []*corev1.Node{GPUNode(), CPUNode()} {
		_, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
	}
	return nil
}

// waitNodesReady waits until every named node reports Ready=True.
func waitNodesReady(ctx context.Context, cs kubernetes.Interface, watched []*process, names ...string) error {
	for {
		pending := ""
		for _, name := range names {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(n) {
				pending = name
				break
			}
		}
		if pending == "" {
			return nil
		}
		if err := pause(ctx, 200*time.Millisecond, watched...); err != nil {
			return fmt.Errorf("node %s Ready: %w", pending, err)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitDefaultServiceAccount waits for kcm to create the "default"
// ServiceAccount in "default": until then the ServiceAccount admission
// plugin rejects every Pod there, and a test's first Deployment would
// flake.
func waitDefaultServiceAccount(ctx context.Context, cs kubernetes.Interface, watched []*process) error {
	for {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if err := pause(ctx, 200*time.Millisecond, watched...); err != nil {
			return fmt.Errorf("default ServiceAccount: %w", err)
		}
	}
}
