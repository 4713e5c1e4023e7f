package checkstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// JudgeAt is when verdicts on a fake cluster are judged (certificate expiry,
// recent restarts).
var JudgeAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// A made-up operator, so that the tests depend on no shipped profile.
const (
	WidgetGroup = "demo.example.com"
	WidgetLabel = "demo.example.com/widget"
	WidgetCRD   = "widgets.demo.example.com"
)

// WidgetsGVR is the widget operator's custom resource.
var WidgetsGVR = schema.GroupVersionResource{Group: WidgetGroup, Version: "v1", Resource: "widgets"}

// ClusterPoliciesGVR is the NVIDIA GPU Operator's ClusterPolicy.
var ClusterPoliciesGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

// WidgetProfileYAML is the widget operator's profile.
const WidgetProfileYAML = `name: widgets
title: Widget Operator
groups: [demo.example.com]
crds: [widgets.demo.example.com]
controller:
  namespace: demo-system
  deployment: widget-controller
  selector: app=widget-controller
  lease: widget-controller-leader
webhooks: [widget-webhook]
requiredWebhooks: [validate.widgets.demo.example.com]
resources:
  - crd: widgets.demo.example.com
    readyConditions: [Ready]
    childLabel: demo.example.com/widget
    children: [Deployment, Service]
`

// WidgetProfile is WidgetProfileYAML parsed.
func WidgetProfile(t testing.TB) *checks.Profile {
	t.Helper()
	ps, err := checks.ParseProfiles("widgets.yaml", []byte(WidgetProfileYAML))
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

// World is a small healthy cluster running the widget operator, one
// reconciled Widget and one GPU node. Tests break one thing and look.
type World struct {
	CRDs          []*apiextensionsv1.CustomResourceDefinition
	Controller    *appsv1.Deployment
	ControllerPod *corev1.Pod
	VWCs          []*admissionregistrationv1.ValidatingWebhookConfiguration
	MWCs          []*admissionregistrationv1.MutatingWebhookConfiguration
	Slice         *discoveryv1.EndpointSlice
	Widgets       []*unstructured.Unstructured
	ChildDeploy   *appsv1.Deployment
	ChildRS       *appsv1.ReplicaSet
	ChildPod      *corev1.Pod
	ChildService  *corev1.Service
	Nodes         []*corev1.Node
	// pods are other pods: workloads on the GPU node.
	Pods []*corev1.Pod
	// lease is the controller's leader-election Lease, held by its pod.
	Lease *coordinationv1.Lease
	// devicePlugin runs pluginPod on the GPU node.
	DevicePlugin *appsv1.DaemonSet
	PluginPod    *corev1.Pod
	// extraDaemonSets are other DaemonSets (their pods go in pods).
	ExtraDaemonSets []*appsv1.DaemonSet
	Events          []*corev1.Event
	// clusterPolicies are the GPU Operator's, served when its CRD is in
	// crds.
	ClusterPolicies []*unstructured.Unstructured
	// APIServices are the aggregator's registrations (metrics APIs).
	APIServices []*unstructured.Unstructured
	// HPAs and the workloads they scale.
	HPAs         []*autoscalingv2.HorizontalPodAutoscaler
	Deployments  []*appsv1.Deployment
	StatefulSets []*appsv1.StatefulSet
	// ConfigMaps: cluster-autoscaler's status.
	ConfigMaps []*corev1.ConfigMap
	// Karpenter's objects, served when its CRDs are in CRDs.
	NodePools, NodeClaims []*unstructured.Unstructured
	// DRA: device classes, the devices drivers publish, and claims.
	DeviceClasses  []*resourcev1.DeviceClass
	ResourceSlices []*resourcev1.ResourceSlice
	RuntimeClasses []*nodev1.RuntimeClass
	ResourceClaims []*resourcev1.ResourceClaim
	// Gateway API objects (classes, gateways, routes), served when its
	// CRDs are in CRDs.
	Gateways []*unstructured.Unstructured
	// Monitoring: the Prometheus Operator's Prometheus objects (served
	// when its CRDs are in CRDs), Services, and the active targets the
	// Prometheus behind PrometheusTargetsPath reports.
	Prometheuses []*unstructured.Unstructured
	Services     []*corev1.Service
	Targets      []Target
	// Raw are the bodies of GETs of API server paths (an exporter's
	// metrics through the pod proxy); other paths are not found.
	Raw map[string]string
	// Custom are further custom resources, by the resource that serves
	// them. Every version a CRD in CRDs serves can be listed, empty or not.
	Custom map[schema.GroupVersionResource][]*unstructured.Unstructured
	// EndpointSlices are further EndpointSlices beside Slice (an
	// inference endpoint picker's).
	EndpointSlices []*discoveryv1.EndpointSlice
}

// NewWorld is the healthy world, which tests then change.
func NewWorld(t testing.TB) *World {
	t.Helper()
	w := &World{
		CRDs:          []*apiextensionsv1.CustomResourceDefinition{EstablishedCRD("widgets", "Widget")},
		Controller:    AvailableDeployment("demo-system", "widget-controller", map[string]string{"app": "widget-controller"}, "demo/widget-controller:v1.2.3"),
		ControllerPod: ReadyPod("demo-system", "widget-controller-7c9d-abcde", map[string]string{"app": "widget-controller"}, "cpu-node-1"),
		VWCs: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook"},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{ServiceWebhook("validate.widgets.demo.example.com", CAPEM(t, "widget-ca", JudgeAt.AddDate(1, 0, 0)))},
		}},
		Slice: &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "demo-system", Name: "widget-webhook-x7k2p", Labels: map[string]string{discoveryv1.LabelServiceName: "widget-webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: Ptr(true)}}},
		},
		Nodes: []*corev1.Node{
			Node("cpu-node-1", corev1.ConditionTrue, nil),
			Node("gpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}),
		},
	}

	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion(WidgetGroup + "/v1")
	widget.SetKind("Widget")
	widget.SetNamespace("apps")
	widget.SetName("w1")
	widget.SetUID("uid-w1")
	widget.SetGeneration(2)
	require.NoError(t, unstructured.SetNestedField(widget.Object, int64(2), "status", "observedGeneration"))
	require.NoError(t, unstructured.SetNestedSlice(widget.Object, []any{
		map[string]any{"type": "Ready", "status": "True"},
	}, "status", "conditions"))
	w.Widgets = []*unstructured.Unstructured{widget}

	children := map[string]string{WidgetLabel: "w1"}
	w.ChildDeploy = AvailableDeployment("apps", "w1-server", children, "demo/server:v1")
	w.ChildDeploy.UID = "uid-w1-deploy"
	w.ChildDeploy.OwnerReferences = Owner("Widget", "w1", "uid-w1")
	w.ChildRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "w1-server-5f6", UID: "uid-w1-rs",
		Labels: children, OwnerReferences: Owner("Deployment", "w1-server", "uid-w1-deploy")}}
	w.ChildPod = ReadyPod("apps", "w1-server-5f6-xyz12", children, "cpu-node-1")
	w.ChildPod.OwnerReferences = Owner("ReplicaSet", "w1-server-5f6", "uid-w1-rs")
	w.ChildService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "w1", Labels: children,
		OwnerReferences: Owner("Widget", "w1", "uid-w1")}}

	// On the GPU node: a pod asking 1 GPU and limiting another container to
	// 2 (so requesting 2), with an init container asking 4: 4 count. A
	// finished pod's 8 do not.
	train := ReadyPod("ml", "train-0", nil, "gpu-node-1")
	train.Spec.Containers = []corev1.Container{
		{Name: "a", Resources: corev1.ResourceRequirements{Requests: GPUs("1")}},
		{Name: "b", Resources: corev1.ResourceRequirements{Limits: GPUs("2")}},
	}
	train.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: GPUs("4")}}}
	done := ReadyPod("ml", "done-0", nil, "gpu-node-1")
	done.Status.Phase = corev1.PodSucceeded
	done.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: GPUs("8")}}}
	elsewhere := ReadyPod("ml", "cpu-0", nil, "cpu-node-1")
	elsewhere.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: GPUs("3")}}}
	w.Pods = []*corev1.Pod{train, done, elsewhere}

	w.Lease = &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo-system", Name: "widget-controller-leader"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       Ptr("widget-controller-7c9d-abcde_6c1f0a9e-2b4d-4e8f-9a7c-5d3e1b2f4a60"),
			LeaseDurationSeconds: Ptr[int32](15),
			RenewTime:            Ptr(metav1.NewMicroTime(JudgeAt.Add(-4 * time.Second))),
		},
	}
	pluginLabels := map[string]string{"name": "nvidia-device-plugin-ds"}
	w.DevicePlugin = &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset", UID: "uid-nvdp"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: pluginLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pluginLabels}},
		},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1},
	}
	w.PluginPod = ReadyPod("kube-system", "nvidia-device-plugin-daemonset-k7x2p", pluginLabels, "gpu-node-1")
	w.PluginPod.OwnerReferences = Owner("DaemonSet", "nvidia-device-plugin-daemonset", "uid-nvdp")

	// metrics-server and KEDA serve the metrics APIs; an HPA scales a
	// GPU Deployment on one of KEDA's external metrics.
	w.APIServices = []*unstructured.Unstructured{
		APIService("v1beta1.metrics.k8s.io", "kube-system", "metrics-server", "True"),
		APIService("v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver", "True"),
	}
	server := AvailableDeployment("ml", "llm-server", map[string]string{"app": "llm-server"}, "demo/llm:v1")
	server.Spec.Template.Spec.Containers[0].Resources.Limits = GPUs("1")
	w.Deployments = []*appsv1.Deployment{server}
	w.HPAs = []*autoscalingv2.HorizontalPodAutoscaler{GPUHPA("ml", "llm-server", "s0-queue-depth", corev1.ConditionTrue)}

	// NVIDIA's DRA driver publishes the GPU node's GPUs; a claim of the
	// cluster's own has one.
	w.APIServices = append(w.APIServices, APIService("v1.resource.k8s.io", "", "", "True"))
	w.DeviceClasses = []*resourcev1.DeviceClass{DeviceClass("gpu.nvidia.com", "gpu.nvidia.com")}
	w.ResourceSlices = []*resourcev1.ResourceSlice{ResourceSlice("gpu-node-1", "gpu.nvidia.com", 8)}
	w.ResourceClaims = []*resourcev1.ResourceClaim{AllocatedClaim("ml", "infer-0-gpu", "gpu.nvidia.com", "gpu-node-1", "gpu-0", "infer-0")}

	// An implementation of the Gateway API programs a gateway and splits
	// a model's traffic 80/20, matching requests on the model header.
	w.CRDs = append(w.CRDs, GatewayCRDs("v1.6.3")...)
	w.Gateways = []*unstructured.Unstructured{
		GatewayClass("example", "example.com/gateway-controller", "True"),
		Gateway("inference", "gw", "example", "True", "192.0.2.10"),
		HTTPRoute("ml", "llm", "inference/gw", "example.com/gateway-controller", "True", "True", []int64{80, 20}, "x-model"),
	}

	// NVIDIA's DCGM Exporter runs on the GPU node and serves each GPU's
	// metrics.
	dcgmLabels := map[string]string{"app": "nvidia-dcgm-exporter"}
	dcgm := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gpu-operator", Name: "nvidia-dcgm-exporter", UID: "uid-dcgm"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: dcgmLabels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: dcgmLabels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nvidia-dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"}}},
		}},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1},
	}
	dcgmPod := ReadyPod("gpu-operator", "nvidia-dcgm-exporter-x7k2p", dcgmLabels, "gpu-node-1")
	dcgmPod.OwnerReferences = Owner("DaemonSet", dcgm.Name, dcgm.UID)
	w.ExtraDaemonSets = append(w.ExtraDaemonSets, dcgm)
	w.Pods = append(w.Pods, dcgmPod)
	w.Raw = map[string]string{DCGMPath: string(simulate.DCGMMetrics("gpu-node-1", 8, "570.124.06"))}

	// The Prometheus Operator runs a Prometheus that discovers the DCGM
	// Exporter and a KServe model's predictor.
	w.CRDs = append(w.CRDs, MonitoringCRDs()...)
	w.Prometheuses = []*unstructured.Unstructured{Prometheus("monitoring", "k8s", "True")}
	w.Services = []*corev1.Service{PrometheusService("monitoring")}
	w.Targets = []Target{
		PodTarget("podMonitor/gpu-operator/nvidia-dcgm-exporter/0", "gpu-operator", dcgmPod.Name, "10.244.2.9:9400", dcgmLabels),
		PodTarget("podMonitor/ml/sklearn-iris/0", "ml", "sklearn-iris-predictor-6d8f-q2x7z", "10.244.2.14:8080",
			map[string]string{"serving.kserve.io/inferenceservice": "sklearn-iris", "component": "predictor"}),
	}

	// gVisor runs pods in a sandbox on any node.
	w.RuntimeClasses = []*nodev1.RuntimeClass{{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}}

	// cluster-autoscaler grows a GPU node group; it added the GPU node for
	// the training pod.
	w.Nodes[0].Labels = map[string]string{"eks.amazonaws.com/nodegroup": "cpu-pool"}
	w.Nodes[1].Labels = map[string]string{"eks.amazonaws.com/nodegroup": "gpu-pool"}
	// GPU Feature Discovery's word on the GPU node: its driver, GPUs
	// time-sliced two ways, and vGPUs of a hypervisor.
	for k, v := range map[string]string{"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/cuda.driver-version.full": "570.124.06", "nvidia.com/cuda.runtime-version.full": "12.8",
		"nvidia.com/gpu.count": "8", "nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "2", "nvidia.com/vgpu.present": "true"} {
		w.Nodes[1].Labels[k] = v
	}
	w.ConfigMaps = []*corev1.ConfigMap{CAStatus(JudgeAt.Add(-10*time.Second), "Healthy", 4)}
	w.Events = append(w.Events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "ml", Name: "train-0.scaleup"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ml", Name: "train-0"},
		Type:           corev1.EventTypeNormal, Reason: "TriggeredScaleUp", Source: corev1.EventSource{Component: "cluster-autoscaler"},
		Message: "pod triggered scale-up: [{gpu-pool 0->1 (max: 4)}]",
	})

	// The Inference Extension routes a model's requests through the pool
	// llama, whose endpoint picker runs; llm-d serves the model with its
	// prefill and decode phases in Deployments of their own.
	WithInferenceExtension(w)
	w.Deployments = append(w.Deployments,
		RoleDeployment("ml", "llama-prefill", map[string]string{"app": InferencePoolName, "llm-d.ai/role": "prefill"}, 1, 1),
		RoleDeployment("ml", "llama-decode", map[string]string{"app": InferencePoolName, "llm-d.ai/role": "decode"}, 2, 2))
	// DRANET publishes the GPU node's RDMA NICs, which a DeviceClass
	// selects; Multus defines a secondary network of them.
	w.ResourceSlices = append(w.ResourceSlices, NetworkSlice("gpu-node-1", "dra.net", 2, map[string]string{
		"dra.net/rdma": "true", "dra.net/ifName": "eth1", "dra.net/pciAddress": "0000:8a:00.0", "dra.net/numaNode": "1"}))
	w.DeviceClasses = append(w.DeviceClasses, DeviceClass("dranet", "dra.net"))
	w.CRDs = append(w.CRDs, AttachmentsCRD())
	w.Custom[AttachmentsGVR] = []*unstructured.Unstructured{Attachment("ml", "rdma-net", `{"cniVersion":"1.0.0","type":"host-device","device":"eth1"}`)}
	return w
}

// DCGMPath is where the world's DCGM Exporter pod serves its metrics,
// through the API server's pod proxy.
const DCGMPath = "/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-x7k2p:9400/proxy/metrics"

// NodePoolsGVR and NodeClaimsGVR are Karpenter's.
var (
	NodePoolsGVR  = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaimsGVR = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// CAStatus is cluster-autoscaler's status ConfigMap, written at, with the
// cluster-wide health and a GPU node group of one node and maximum max.
func CAStatus(at time.Time, health string, max int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-autoscaler-status",
			Annotations: map[string]string{"cluster-autoscaler.kubernetes.io/last-updated": at.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST")}},
		Data: map[string]string{"status": fmt.Sprintf(`time: %s
autoscalerStatus: Running
clusterWide:
  health:
    status: %s
  scaleUp:
    status: NoActivity
nodeGroups:
- name: cpu-pool
  health:
    status: Healthy
    nodeCounts:
      registered: {total: 1, ready: 1}
    cloudProviderTarget: 1
    minSize: 1
    maxSize: 10
  scaleUp:
    status: NoActivity
- name: gpu-pool
  health:
    status: Healthy
    nodeCounts:
      registered: {total: 1, ready: 1}
    cloudProviderTarget: 1
    minSize: 0
    maxSize: %d
  scaleUp:
    status: NoActivity
`, at.UTC().Format("2006-01-02 15:04:05.999999999 -0700 MST"), health, max)},
	}
}

// APIService is an APIService of group.version name, served by the
// Service namespace/service, whose Available condition has status.
func APIService(name, namespace, service, status string) *unstructured.Unstructured {
	group, version := "", ""
	if v, g, ok := strings.Cut(name, "."); ok {
		version, group = v, g
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": group, "version": version,
			"service": map[string]any{"namespace": namespace, "name": service, "port": int64(443)}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status,
			"reason":  map[string]string{"True": "Passed", "False": "FailedDiscoveryCheck"}[status],
			"message": map[string]string{"True": "all checks passed", "False": "failing or missing response"}[status]}}},
	}}
	return u
}

// DeviceClass selects the devices of one driver, as drivers' own classes
// do.
func DeviceClass(name, driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == '" + driver + "'"}}}}}
}

// ResourceSlice is the pool a driver publishes for one node, of n devices
// gpu-0, gpu-1...
func ResourceSlice(node, driver string, n int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return s
}

// AllocatedClaim is a claim the scheduler allocated one device of a node's
// pool to, reserved for a pod.
func AllocatedClaim(namespace, name, driver, node, device, pod string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Status: resourcev1.ResourceClaimStatus{
			Allocation: &resourcev1.AllocationResult{
				Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: node, Device: device}}},
				NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
			},
			ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID("uid-" + pod)}},
		}}
}

// GPUHPA is an HPA scaling the Deployment namespace/name on an external
// metric, whose ScalingActive condition has status (AbleToScale True).
func GPUHPA(namespace, name, metric string, active corev1.ConditionStatus) *autoscalingv2.HorizontalPodAutoscaler {
	reason := map[corev1.ConditionStatus]string{corev1.ConditionTrue: "ValidMetricFound", corev1.ConditionFalse: "FailedGetExternalMetric"}[active]
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    Ptr[int32](1), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: metric},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: Ptr(resource.MustParse("10"))},
			}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"},
			{Type: autoscalingv2.ScalingActive, Status: active, Reason: reason},
		}},
	}
}

// FakeCluster is a world served by client-go's fakes, and the fakes
// themselves, to add reactors to.
type FakeCluster struct {
	Kube *kubefake.Clientset
	Ext  *apiextensionsfake.Clientset
	Dyn  *dynamicfake.FakeDynamicClient
	// Get, when set, answers GETs of paths instead of the world's Raw.
	Get     func(path string) ([]byte, error)
	raw     map[string]string
	targets []Target
}

// Serve serves the world with client-go's fakes.
func (w *World) Serve() *FakeCluster {
	var kube []runtime.Object
	add := func(o runtime.Object, ok bool) {
		if ok {
			kube = append(kube, o)
		}
	}
	add(w.Controller, w.Controller != nil)
	add(w.ControllerPod, w.ControllerPod != nil)
	add(w.Slice, w.Slice != nil)
	add(w.ChildDeploy, w.ChildDeploy != nil)
	add(w.ChildRS, w.ChildRS != nil)
	add(w.ChildPod, w.ChildPod != nil)
	add(w.ChildService, w.ChildService != nil)
	add(w.Lease, w.Lease != nil)
	add(w.DevicePlugin, w.DevicePlugin != nil)
	add(w.PluginPod, w.PluginPod != nil)
	for _, o := range w.Events {
		kube = append(kube, o)
	}
	for _, o := range w.ExtraDaemonSets {
		kube = append(kube, o)
	}
	for _, o := range w.VWCs {
		kube = append(kube, o)
	}
	for _, o := range w.MWCs {
		kube = append(kube, o)
	}
	for _, o := range w.Nodes {
		kube = append(kube, o)
	}
	for _, o := range w.Pods {
		kube = append(kube, o)
	}
	for _, o := range w.HPAs {
		kube = append(kube, o)
	}
	for _, o := range w.Deployments {
		kube = append(kube, o)
	}
	for _, o := range w.StatefulSets {
		kube = append(kube, o)
	}
	for _, o := range w.ConfigMaps {
		kube = append(kube, o)
	}
	for _, o := range w.DeviceClasses {
		kube = append(kube, o)
	}
	for _, o := range w.ResourceSlices {
		kube = append(kube, o)
	}
	for _, o := range w.ResourceClaims {
		kube = append(kube, o)
	}
	for _, o := range w.RuntimeClasses {
		kube = append(kube, o)
	}
	for _, o := range w.Services {
		kube = append(kube, o)
	}
	for _, o := range w.EndpointSlices {
		kube = append(kube, o)
	}
	var ext []runtime.Object
	for _, o := range w.CRDs {
		ext = append(ext, o)
	}
	var dyn []runtime.Object
	for _, o := range w.Widgets {
		dyn = append(dyn, o)
	}
	for _, o := range w.ClusterPolicies {
		dyn = append(dyn, o)
	}
	for _, o := range w.APIServices {
		dyn = append(dyn, o)
	}
	for _, o := range append(slices.Clone(w.NodePools), w.NodeClaims...) {
		dyn = append(dyn, o)
	}
	for _, o := range w.Prometheuses {
		dyn = append(dyn, o)
	}
	listKinds := map[schema.GroupVersionResource]string{WidgetsGVR: "WidgetList", ClusterPoliciesGVR: "ClusterPolicyList", cluster.APIServices.GVR: "APIServiceList",
		NodePoolsGVR: "NodePoolList", NodeClaimsGVR: "NodeClaimList",
		GatewayClassesGVR: "GatewayClassList", GatewaysGVR: "GatewayList", HTTPRoutesGVR: "HTTPRouteList",
		PrometheusesGVR: "PrometheusList"}
	for _, c := range w.CRDs {
		for _, v := range c.Spec.Versions {
			gvr := schema.GroupVersionResource{Group: c.Spec.Group, Version: v.Name, Resource: c.Spec.Names.Plural}
			if _, ok := listKinds[gvr]; !ok {
				listKinds[gvr] = c.Spec.Names.Kind + "List"
			}
		}
	}
	f := &FakeCluster{
		raw:     w.Raw,
		targets: w.Targets,
		Kube:    kubefake.NewClientset(kube...),
		Ext:     apiextensionsfake.NewClientset(ext...),
		Dyn:     dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dyn...),
	}
	// Custom resources go in by the resource named, not by a guess from
	// their kind.
	for _, gvr := range slices.SortedFunc(maps.Keys(w.Custom), func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) }) {
		for _, o := range w.Custom[gvr] {
			if err := f.Dyn.Tracker().Create(gvr, o.DeepCopy(), o.GetNamespace()); err != nil {
				panic(err)
			}
		}
	}
	// The fake guesses a kind's resource from its name, and "Gateway"
	// is not "gatewaies": place Gateway API objects by their resource.
	for _, o := range w.Gateways {
		gvr := map[string]schema.GroupVersionResource{"GatewayClass": GatewayClassesGVR, "Gateway": GatewaysGVR, "HTTPRoute": HTTPRoutesGVR}[o.GetKind()]
		if err := f.Dyn.Tracker().Create(gvr, o.DeepCopy(), o.GetNamespace()); err != nil {
			panic(err)
		}
	}
	// The fake clientset ignores field selectors; the API server does
	// not, and the GPU check reads pods per node with one.
	f.Kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := f.Kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.PodList)
		var kept []corev1.Pod
		for _, p := range list.Items {
			if sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.namespace": p.Namespace, "metadata.name": p.Name}) {
				kept = append(kept, p)
			}
		}
		list.Items = kept
		return true, list, nil
	})
	// Events are read by type (crs-events) and by reason (scale-ups).
	f.Kube.PrependReactor("list", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := f.Kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.EventList)
		var kept []corev1.Event
		for _, e := range list.Items {
			if sel.Matches(fields.Set{"type": e.Type, "reason": e.Reason, "metadata.namespace": e.Namespace, "metadata.name": e.Name}) {
				kept = append(kept, e)
			}
		}
		list.Items = kept
		return true, list, nil
	})
	return f
}

// Cache is a run's view of the fake cluster. The fakes cannot render
// Tables, so evidence steps say so; verdicts do not depend on them.
func (f *FakeCluster) Cache() *cluster.Cache {
	return cluster.NewCache(&cluster.Live{Kube: f.Kube, APIExtensions: f.Ext, Dynamic: f.Dyn, Now: FixedNow, Get: f.get})
}

// get answers a GET of a path from the world's Raw bodies.
func (f *FakeCluster) get(_ context.Context, path string) ([]byte, error) {
	if f.Get != nil {
		return f.Get(path)
	}
	if base, query, _ := strings.Cut(path, "?"); base == PrometheusTargetsPath && f.targets != nil {
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return simulate.PrometheusTargets(f.targets, q), nil
	}
	body, ok := f.raw[path]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods/proxy"}, path)
	}
	return []byte(body), nil
}

// Run runs every check of registry against the fake cluster.
func (f *FakeCluster) Run(registry []checks.Check, profiles []*checks.Profile) checks.Outcome {
	return f.RunOn(f.Cache(), registry, profiles)
}

// RunOn runs every check of registry on a cache of the fake cluster (its
// Cache, or that cache's WholeObjects).
func (f *FakeCluster) RunOn(c *cluster.Cache, registry []checks.Check, profiles []*checks.Profile) checks.Outcome {
	return checks.Run(context.Background(), c, profiles, Everything(registry),
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return JudgeAt }}, FixedNow)
}

// EstablishedCRD is a CRD of the widget group the API server serves.
func EstablishedCRD(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + WidgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: WidgetGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true},
				{Name: "v1", Served: true, Storage: true},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
		}},
	}
}

// AvailableDeployment is a Deployment whose one replica is available.
func AvailableDeployment(ns, name string, labels map[string]string, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		// Its pods carry its labels, as installers' manifests have it.
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "manager", Image: image}},
			}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		}},
	}
}

// ReadyPod is a Running and Ready pod of one container on nodeName.
func ReadyPod(ns, name string, labels map[string]string, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "manager", Image: "registry.example/" + name + ":1.0"}},
			// Dropped of a node's pods by the cache: set, for the same
			// test.
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

// Node is a node of 16 CPUs with the given Ready status and extended
// resources (accelerators), all of them allocatable.
func Node(name string, ready corev1.ConditionStatus, accelerators corev1.ResourceList) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}
	for k, v := range accelerators {
		capacity[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"}},
			// What the cache drops of a node, set as a kubelet sets it: a
			// check that read it would judge otherwise on whole objects
			// (TestChecksReadWhatTheCacheKeeps).
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", KubeletVersion: "v1.37.2",
				ContainerRuntimeVersion: "containerd://2.1.4", OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-79-generic"},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320368}},
		},
	}
}

// ServiceWebhook is a validating webhook on widgets served by the
// widget-webhook Service.
func ServiceWebhook(name string, caBundle []byte) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "demo-system", Name: "widget-webhook", Path: Ptr("/validate")},
			CABundle: caBundle,
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{WidgetGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
		}},
	}
}

// Owner is a controller owner reference.
func Owner(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: Ptr(true)}}
}

// GPUs is n NVIDIA GPUs, for requests, limits and capacity.
func GPUs(n string) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

// Ptr points to a copy of v.
func Ptr[T any](v T) *T { return &v }

// CAPEM is a self-signed CA certificate valid until notAfter.
func CAPEM(t testing.TB, cn string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             notAfter.AddDate(-2, 0, 0),
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// RunWorld runs every check of registry on the healthy world after tweak,
// with the widget profile.
func RunWorld(t testing.TB, registry []checks.Check, tweak func(w *World)) checks.Outcome {
	t.Helper()
	w := NewWorld(t)
	if tweak != nil {
		tweak(w)
	}
	return w.Serve().Run(registry, []*checks.Profile{WidgetProfile(t)})
}

// AbsentProfile is an operator the fake cluster does not run.
func AbsentProfile(t testing.TB) *checks.Profile {
	t.Helper()
	ps, err := checks.ParseProfiles("absent.yaml", []byte(`name: absent
title: Absent Operator
groups: [absent.example.com]
controller: {namespace: absent, selector: app=absent}
`))
	require.NoError(t, err)
	return ps[0]
}

// Forbidden makes the fake refuse a verb on a resource, as RBAC does.
func Forbidden(group, res string) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: res}, "",
			errors.New(`User "auditor" cannot `+a.GetVerb()+` resource "`+res+`"`))
	}
}

// Case is the healthy World changed by Edit, and what one check says of
// it: its status, a part of its reason, and lines among its details.
type Case struct {
	Name    string
	Edit    func(w *World)
	Status  checks.Status
	Reason  string
	Details []string
}

// RunCases runs c on each case's world and asserts what the case expects;
// more, when given, asserts further of each result.
func RunCases(t *testing.T, c checks.Check, cases []Case, more func(t *testing.T, tc Case, r checks.Result)) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			w := NewWorld(t)
			if tc.Edit != nil {
				tc.Edit(w)
			}
			r := Result(t, w.Serve().Run([]checks.Check{c}, nil), c.Meta().ID, "")
			assert.Equal(t, tc.Status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.Reason)
			for _, d := range tc.Details {
				assert.Contains(t, r.Details, d)
			}
			if more != nil {
				more(t, tc, r)
			}
		})
	}
}
