package checkstest

import (
	"net"
	"strconv"
	"time"

	"github.com/aiconform/aiconform/simulate"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PrometheusesGVR is the Prometheus Operator's Prometheus kind.
var PrometheusesGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}

// MonitoringCRDs are the Prometheus Operator's Prometheus, ServiceMonitor
// and PodMonitor CRDs.
func MonitoringCRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range [][2]string{{"prometheuses", "Prometheus"}, {"servicemonitors", "ServiceMonitor"}, {"podmonitors", "PodMonitor"}} {
		plural, kind := k[0], k[1]
		crd := EstablishedCRD(plural, kind)
		crd.Name, crd.Spec.Group = plural+".monitoring.coreos.com", "monitoring.coreos.com"
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}
		out = append(out, crd)
	}
	return out
}

// Prometheus is a Prometheus object whose Available condition is
// available ("" for none).
func Prometheus(namespace, name, available string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)}}}
	u.SetAPIVersion(PrometheusesGVR.GroupVersion().String())
	u.SetKind("Prometheus")
	u.SetNamespace(namespace)
	u.SetName(name)
	if available != "" {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": available, "reason": "", "message": ""}}}
	}
	return u
}

// PrometheusService is the operator's governing Service of its
// Prometheus servers in namespace: prometheus-operated, port web.
func PrometheusService(namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "prometheus-operated", Labels: map[string]string{"operated-prometheus": "true"}},
		Spec:       corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Name: "web", Port: 9090}}},
	}
}

// PrometheusTargetsPath is where the world's Prometheus answers
// /api/v1/targets through the service proxy.
const PrometheusTargetsPath = "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/targets"

// Target is an active target of the world's Prometheus.
type Target = simulate.PrometheusTarget

// PodTarget is a target a PodMonitor's Kubernetes discovery found in pool:
// the pod at addr with labels, up and last scraped a moment before JudgeAt.
func PodTarget(pool, namespace, pod, addr string, labels map[string]string) Target {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		panic(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod, Labels: labels},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host}}
	return simulate.PodTarget(pool, n, p, JudgeAt.Add(-5*time.Second))
}
