package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider/helpers"
)

// gpuUtilMetric is what prometheus-adapter serves of NVIDIA's DCGM
// Exporter on most GPU clusters: the utilization of the GPU a pod holds,
// in percent, as a custom metric of that pod. rig.MetricsAdapterPodMetric
// names the same.
const gpuUtilMetric = "DCGM_FI_DEV_GPU_UTIL"

// gpuUtilValue is the utilization every pod holding a GPU reports. kwok
// runs no workload, so this stands for one, as the sample provider's
// fixed external metrics do.
const gpuUtilValue = 40

// gpuResource is what a pod must request to hold a GPU.
const gpuResource = corev1.ResourceName("nvidia.com/gpu")

var (
	podsResource = schema.GroupResource{Resource: "pods"}
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// gpuPods adds to the sample provider's metrics DCGM_FI_DEV_GPU_UTIL of
// the pods that hold a GPU: bound, Running, and requesting nvidia.com/gpu.
// The sample's own custom metrics are those written to its web service,
// which the rig does not serve, so without this the custom metrics API
// would serve no value at all.
type gpuPods struct {
	provider.MetricsProvider
	client dynamic.Interface
	mapper apimeta.RESTMapper
}

// isGPUUtil tells the metric gpuPods serves from the sample's.
func isGPUUtil(info provider.CustomMetricInfo) bool {
	return info.GroupResource == podsResource && info.Metric == gpuUtilMetric
}

// ListAllMetrics lists the metric with the sample's: the discovery
// document of custom.metrics.k8s.io names it pods/DCGM_FI_DEV_GPU_UTIL.
func (p *gpuPods) ListAllMetrics() []provider.CustomMetricInfo {
	return append(p.MetricsProvider.ListAllMetrics(), provider.CustomMetricInfo{GroupResource: podsResource, Namespaced: true, Metric: gpuUtilMetric})
}

// GetMetricByName serves the metric of one pod.
func (p *gpuPods) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	if !isGPUUtil(info) {
		return p.MetricsProvider.GetMetricByName(ctx, name, info, metricSelector)
	}
	u, err := p.client.Resource(podsGVR).Namespace(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	if err != nil {
		return nil, err
	}
	if !holdsGPU(u) || !metricSelector.Matches(labels.Set{}) {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	return p.value(name, info)
}

// GetMetricBySelector serves the metric of the pods a selector matches,
// as the HPA controller reads a Pods metric: those without a GPU have
// none, as DCGM has no series of them.
func (p *gpuPods) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	if !isGPUUtil(info) {
		return p.MetricsProvider.GetMetricBySelector(ctx, namespace, selector, info, metricSelector)
	}
	list, err := p.client.Resource(podsGVR).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := &custom_metrics.MetricValueList{Items: []custom_metrics.MetricValue{}}
	if !metricSelector.Matches(labels.Set{}) {
		return out, nil
	}
	for i := range list.Items {
		u := &list.Items[i]
		if !holdsGPU(u) {
			continue
		}
		v, err := p.value(types.NamespacedName{Namespace: namespace, Name: u.GetName()}, info)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, *v)
	}
	return out, nil
}

// value is the metric's value of one pod.
func (p *gpuPods) value(name types.NamespacedName, info provider.CustomMetricInfo) (*custom_metrics.MetricValue, error) {
	ref, err := helpers.ReferenceFor(p.mapper, name, info)
	if err != nil {
		return nil, err
	}
	return &custom_metrics.MetricValue{
		DescribedObject: ref,
		Metric:          custom_metrics.MetricIdentifier{Name: gpuUtilMetric},
		Timestamp:       metav1.Now(),
		Value:           *resource.NewQuantity(gpuUtilValue, resource.DecimalSI),
	}, nil
}

// holdsGPU is true of a pod bound to a node, Running, whose containers
// request a GPU.
func holdsGPU(u *unstructured.Unstructured) bool {
	var pod corev1.Pod
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod) != nil {
		return false
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Spec.Containers {
		for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			if q, ok := l[gpuResource]; ok && q.Sign() > 0 {
				return true
			}
		}
	}
	return false
}
