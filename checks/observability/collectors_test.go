package observability_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/observability"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The objects of these tests are written to each project's published API:
// Google Cloud Managed Service for Prometheus' PodMonitoring and
// ClusterPodMonitoring (monitoring.googleapis.com/v1, the types of
// GoogleCloudPlatform/prometheus-engine pkg/operator/apis/monitoring/v1:
// spec.selector, status.endpointStatuses[] of name, activeTargets,
// unhealthyTargets, lastUpdateTime, sampleGroups[].sampleTargets[]) and its
// collector DaemonSet (manifests/operator.yaml: gmp-system/collector, pods
// labelled app=managed-prometheus-collector); the VictoriaMetrics
// operator's VMPodScrape (operator.victoriametrics.com/v1beta1) and the
// Service it makes of a VMAgent (vmagent-NAME, labels
// app.kubernetes.io/name=vmagent and managed-by=vm-operator, port http),
// whose jobs it names podScrape/NS/NAME/N; the Azure Monitor metrics
// add-on's PodMonitor (azmonitoring.coreos.com/v1) and collectors
// (Azure/prometheus-collector's addon chart: kube-system/ama-metrics, pods
// labelled rsName=ama-metrics; ama-metrics-node, dsName=ama-metrics-node);
// and the grafana/alloy chart's DaemonSet (app.kubernetes.io/name=alloy).

// served is a CRD the API server serves at version, namespaced unless
// clusterScoped.
func served(plural, group, kind, version string, clusterScoped bool) *apiextensionsv1.CustomResourceDefinition {
	crd := checkstest.EstablishedCRD(plural, kind)
	crd.Name, crd.Spec.Group = plural+"."+group, group
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true}}
	if clusterScoped {
		crd.Spec.Scope = apiextensionsv1.ClusterScoped
	}
	return crd
}

var (
	podMonitoringsGVR        = schema.GroupVersionResource{Group: "monitoring.googleapis.com", Version: "v1", Resource: "podmonitorings"}
	clusterPodMonitoringsGVR = schema.GroupVersionResource{Group: "monitoring.googleapis.com", Version: "v1", Resource: "clusterpodmonitorings"}
	vmAgentsGVR              = schema.GroupVersionResource{Group: "operator.victoriametrics.com", Version: "v1beta1", Resource: "vmagents"}
	vmPodScrapesGVR          = schema.GroupVersionResource{Group: "operator.victoriametrics.com", Version: "v1beta1", Resource: "vmpodscrapes"}
	azurePodMonitorsGVR      = schema.GroupVersionResource{Group: "azmonitoring.coreos.com", Version: "v1", Resource: "podmonitors"}
)

// object is a custom resource of kind in namespace ("" for a cluster-scoped
// one) with the fields given.
func object(gvr schema.GroupVersionResource, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// vllmLabels are the labels of the world's vLLM server pod, which the
// scrape configurations select.
var vllmLabels = map[string]string{"app": "vllm-qwen"}

// withVLLM adds a vLLM server pod in namespace llm.
func withVLLM(w *checkstest.World) {
	w.Pods = append(w.Pods, checkstest.ReadyPod("llm", "vllm-qwen-0", vllmLabels, "gpu-node-1"))
}

// daemonSet is a DaemonSet whose pod template carries labels, ready of
// desired pods ready.
func daemonSet(ns, name string, labels map[string]string, desired, ready int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, CurrentNumberScheduled: desired, NumberReady: ready, NumberAvailable: ready},
	}
}

// endpoint is one endpoint status as Google's operator writes it,
// updated ago before the judgement; errors are the sample targets' last
// errors.
func endpoint(name string, active, unhealthy int64, ago time.Duration, errors ...string) map[string]any {
	e := map[string]any{"name": name, "activeTargets": active, "unhealthyTargets": unhealthy,
		"lastUpdateTime": checkstest.JudgeAt.Add(-ago).UTC().Format(time.RFC3339), "collectorsFraction": "1"}
	if len(errors) > 0 {
		var samples []any
		for _, msg := range errors {
			samples = append(samples, map[string]any{"labels": map[string]any{"instance": "vllm-qwen-0:metrics", "job": "vllm"},
				"lastError": msg, "lastScrapeDurationSeconds": "0.001", "health": "down"})
		}
		e["sampleGroups"] = []any{map[string]any{"sampleTargets": samples, "count": int64(len(errors))}}
	}
	return e
}

// podMonitoring is a PodMonitoring in llm selecting the vLLM pod on port
// metrics, with the endpoint statuses given (none: no status).
func podMonitoring(endpoints ...map[string]any) *unstructured.Unstructured {
	fields := map[string]any{"spec": map[string]any{
		"selector":  map[string]any{"matchLabels": map[string]any{"app": "vllm-qwen"}},
		"endpoints": []any{map[string]any{"port": "metrics", "interval": "30s"}},
	}}
	if len(endpoints) > 0 {
		var es []any
		for _, e := range endpoints {
			es = append(es, e)
		}
		fields["status"] = map[string]any{
			"observedGeneration": int64(1),
			"conditions": []any{map[string]any{"type": "ConfigurationCreateSuccess", "status": "True",
				"lastUpdateTime": checkstest.JudgeAt.Add(-time.Hour).UTC().Format(time.RFC3339)}},
			"endpointStatuses": es,
		}
	}
	return object(podMonitoringsGVR, "PodMonitoring", "llm", "vllm", fields)
}

// withGMP replaces the Prometheus Operator by Google Cloud Managed
// Service for Prometheus: its CRDs, its collector on two nodes, and the
// PodMonitoring given.
func withGMP(pm *unstructured.Unstructured) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		withoutMonitoring(w)
		withVLLM(w)
		w.CRDs = append(w.CRDs,
			served("podmonitorings", "monitoring.googleapis.com", "PodMonitoring", "v1", false),
			served("clusterpodmonitorings", "monitoring.googleapis.com", "ClusterPodMonitoring", "v1", true))
		w.ExtraDaemonSets = append(w.ExtraDaemonSets, daemonSet("gmp-system", "collector",
			map[string]string{"app": "managed-prometheus-collector", "app.kubernetes.io/name": "collector", "app.kubernetes.io/version": "0.17.3"}, 2, 2))
		if pm != nil {
			w.Custom[podMonitoringsGVR] = append(w.Custom[podMonitoringsGVR], pm)
		}
	}
}

const vllmEndpoint = "PodMonitoring/llm/vllm/metrics"

func TestMonitoringTargetsGMP(t *testing.T) {
	refused := `Get "http://10.244.2.21:8000/metrics": dial tcp 10.244.2.21:8000: connect: connection refused`
	checkstest.RunCases(t, observability.MonitoringTargets{}, []checkstest.Case{
		{Name: "endpoints healthy", Edit: withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 0, time.Minute))), Status: checks.Pass,
			Reason: "Google Cloud Managed Service for Prometheus: 2 of 2 targets healthy by the status of 1 scrape configuration selecting 1 pod; AI workloads: vLLM 1"},
		{Name: "one endpoint of two unhealthy", Edit: withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 1, time.Minute, refused))), Status: checks.Warn,
			Reason: "but PodMonitoring llm/vllm endpoint " + vllmEndpoint + ": 1 of 2 targets unhealthy (vllm-qwen-0:metrics: " + refused + ")"},
		{Name: "every endpoint unhealthy", Edit: withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 2, time.Minute, refused))), Status: checks.Fail,
			Reason: "no monitoring system collects from the cluster: Google Cloud Managed Service for Prometheus: none of the 2 targets its scrape configurations report is healthy"},
		{Name: "no active target", Edit: withGMP(podMonitoring(endpoint(vllmEndpoint, 0, 0, time.Minute))), Status: checks.Fail,
			Reason: "1 scrape configuration selecting 1 pod, but their status reports no active target"},
		{Name: "target status off", Edit: withGMP(podMonitoring()), Status: checks.Warn,
			Reason: "what is scraped cannot be seen in the cluster: Google Cloud Managed Service for Prometheus: 1 scrape configuration selecting 1 pod, but no scrape status of theirs in the cluster: the operator writes endpointStatuses only when its OperatorConfig (gmp-public/config) sets features.targetStatus.enabled"},
		{Name: "a status hours old", Edit: withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 0, 2*time.Hour))), Status: checks.Warn,
			Reason: "the status of endpoint " + vllmEndpoint + " of PodMonitoring llm/vllm was last updated 2h0m0s ago"},
		{Name: "selecting no pod", Edit: func(w *checkstest.World) {
			pm := podMonitoring(endpoint(vllmEndpoint, 0, 0, time.Minute))
			require.NoError(t, unstructured.SetNestedStringMap(pm.Object, map[string]string{"app": "gone"}, "spec", "selector", "matchLabels"))
			withGMP(pm)(w)
		}, Status: checks.Fail,
			Reason: "no PodMonitoring or ClusterPodMonitoring selects a workload of the cluster (1 object)"},
		{Name: "a selector that does not parse", Edit: func(w *checkstest.World) {
			pm := podMonitoring()
			require.NoError(t, unstructured.SetNestedField(pm.Object, map[string]any{"matchExpressions": []any{
				map[string]any{"key": "app", "operator": "Near", "values": []any{"vllm-qwen"}}}}, "spec", "selector"))
			withGMP(pm)(w)
		}, Status: checks.Fail,
			Reason: "PodMonitoring llm/vllm selects nothing aiconform can name: its spec.selector does not parse"},
		{Name: "no PodMonitoring", Edit: withGMP(nil), Status: checks.Fail,
			Reason: "no PodMonitoring or ClusterPodMonitoring selects a workload of the cluster (0 objects)"},
		{Name: "its collector not ready", Edit: func(w *checkstest.World) {
			withGMP(podMonitoring())(w)
			w.ExtraDaemonSets[len(w.ExtraDaemonSets)-1].Status.NumberReady = 0
		}, Status: checks.Fail,
			Reason: "Google Cloud Managed Service for Prometheus: its collectors have no ready pod: DaemonSet gmp-system/collector 0/2 ready"},
		{Name: "a ClusterPodMonitoring selecting across namespaces", Edit: func(w *checkstest.World) {
			withGMP(nil)(w)
			cpm := object(clusterPodMonitoringsGVR, "ClusterPodMonitoring", "", "vllm", map[string]any{
				"spec": map[string]any{"selector": map[string]any{"matchExpressions": []any{
					map[string]any{"key": "app", "operator": "In", "values": []any{"vllm-qwen", "triton"}}}},
					"endpoints": []any{map[string]any{"port": "metrics", "interval": "30s"}}},
				"status": map[string]any{"endpointStatuses": []any{endpoint("ClusterPodMonitoring/vllm/metrics", 1, 0, 30*time.Second)}},
			})
			w.Custom[clusterPodMonitoringsGVR] = []*unstructured.Unstructured{cpm}
		}, Status: checks.Pass,
			Reason: "1 of 1 targets healthy by the status of 1 scrape configuration selecting 1 pod; AI workloads: vLLM 1"},
		{Name: "GMP's CRDs left beside a Prometheus that works", Edit: func(w *checkstest.World) {
			w.CRDs = append(w.CRDs, served("podmonitorings", "monitoring.googleapis.com", "PodMonitoring", "v1", false))
		}, Status: checks.Pass,
			Reason:  "monitoring/prometheus-operated scrapes 2 of 2 active targets, 2 discovered in the cluster; AI workloads: KServe 1",
			Details: []string{"Google Cloud Managed Service for Prometheus: no collector of it runs (a DaemonSet labelled app=managed-prometheus-collector)"}},
		{Name: "beside a Prometheus that works", Edit: func(w *checkstest.World) {
			prom, svcs, targets := w.Prometheuses, w.Services, w.Targets
			withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 2, time.Minute, refused)))(w)
			w.CRDs, w.Prometheuses, w.Services, w.Targets = append(w.CRDs, checkstest.MonitoringCRDs()...), prom, svcs, targets
		}, Status: checks.Warn,
			Reason: "monitoring/prometheus-operated scrapes 2 of 2 active targets, 2 discovered in the cluster; AI workloads: KServe 1; but Google Cloud Managed Service for Prometheus: none of the 2 targets"},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		// The evidence of GMP's view, where it is judged.
		if tc.Status == checks.Pass && !strings.Contains(tc.Name, "beside") {
			var commands []string
			for _, e := range r.Evidence {
				commands = append(commands, e.Command)
			}
			assert.Contains(t, strings.Join(commands, "\n"), "kubectl get ds -A | grep -E 'NAME|collector'")
			assert.Contains(t, strings.Join(commands, "\n"), ".monitoring.googleapis.com")
			assert.Contains(t, strings.Join(commands, "\n"), "UNHEALTHY:.status.endpointStatuses[*].unhealthyTargets")
		}
	})
}

func TestMonitoringSystemCollectors(t *testing.T) {
	checkstest.RunCases(t, observability.MonitoringSystem{}, []checkstest.Case{
		{Name: "GMP's collector runs", Edit: withGMP(podMonitoring()), Status: checks.Pass,
			Reason: "Google Cloud Managed Service for Prometheus (collectors DaemonSet gmp-system/collector 2/2 ready)"},
		{Name: "GMP's collector on one node of two", Edit: func(w *checkstest.World) {
			withGMP(nil)(w)
			w.ExtraDaemonSets[len(w.ExtraDaemonSets)-1].Status.NumberReady = 1
		}, Status: checks.Warn,
			Reason: "Google Cloud Managed Service for Prometheus collector DaemonSet gmp-system/collector has 1 of 2 pods ready"},
		{Name: "GMP's CRDs, no collector", Edit: func(w *checkstest.World) {
			withGMP(nil)(w)
			w.ExtraDaemonSets = w.ExtraDaemonSets[:len(w.ExtraDaemonSets)-1]
		}, Status: checks.Fail,
			Reason: "no monitoring system runs a collector: Google Cloud Managed Service for Prometheus is installed but no collector of it runs (a DaemonSet labelled app=managed-prometheus-collector)"},
		{Name: "GMP's CRDs left beside a Prometheus", Edit: func(w *checkstest.World) {
			w.CRDs = append(w.CRDs, served("podmonitorings", "monitoring.googleapis.com", "PodMonitoring", "v1", false))
		}, Status: checks.Pass,
			Reason:  "Prometheus Operator (Prometheus API at monitoring/prometheus-operated); Google Cloud Managed Service for Prometheus (collects outside the cluster)",
			Details: []string{"Google Cloud Managed Service for Prometheus is installed but no collector of it runs (a DaemonSet labelled app=managed-prometheus-collector)"}},
		{Name: "Azure's add-on", Edit: withAzure(nil, 1), Status: checks.Pass,
			Reason: "Azure Monitor managed service for Prometheus (collectors Deployment kube-system/ama-metrics 2/2 ready, DaemonSet kube-system/ama-metrics-node 1/1 ready)"},
		{Name: "a VMAgent its operator failed", Edit: func(w *checkstest.World) {
			withVictoriaMetrics(w)
			w.Custom[vmAgentsGVR] = []*unstructured.Unstructured{object(vmAgentsGVR, "VMAgent", "monitoring", "vm", map[string]any{
				"spec":   map[string]any{"selectAllByDefault": true},
				"status": map[string]any{"updateStatus": "failed", "reason": "cannot create deployment: quota exceeded"},
			})}
		}, Status: checks.Warn,
			Reason: "VictoriaMetrics Operator (Prometheus API at monitoring/vmagent-vm); VMAgent monitoring/vm is status.updateStatus=failed: cannot create deployment: quota exceeded"},
		{Name: "Grafana Alloy, found by its DaemonSet alone", Edit: withAlloy, Status: checks.Pass,
			Reason: "Grafana Alloy (collectors DaemonSet alloy/alloy 2/2 ready)"},
	}, nil)
}

// vmagentBase is the targets API of the VMAgent vm's Service through the
// service proxy.
const vmagentBase = "/api/v1/namespaces/monitoring/services/vmagent-vm:http/proxy/api/v1/targets"

// withVictoriaMetrics replaces the Prometheus Operator by the
// VictoriaMetrics operator: its CRDs, a VMAgent's Service and a
// VMPodScrape selecting the vLLM pod.
func withVictoriaMetrics(w *checkstest.World) {
	withoutMonitoring(w)
	withVLLM(w)
	w.CRDs = append(w.CRDs,
		served("vmagents", "operator.victoriametrics.com", "VMAgent", "v1beta1", false),
		served("vmservicescrapes", "operator.victoriametrics.com", "VMServiceScrape", "v1beta1", false),
		served("vmpodscrapes", "operator.victoriametrics.com", "VMPodScrape", "v1beta1", false))
	w.Services = []*corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "vmagent-vm", Labels: map[string]string{
			"app.kubernetes.io/name": "vmagent", "app.kubernetes.io/instance": "vm", "app.kubernetes.io/component": "monitoring", "managed-by": "vm-operator"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8429}}},
	}}
	w.Custom[vmPodScrapesGVR] = []*unstructured.Unstructured{object(vmPodScrapesGVR, "VMPodScrape", "llm", "vllm", map[string]any{
		"spec":   map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "vllm-qwen"}}, "podMetricsEndpoints": []any{map[string]any{"port": "metrics"}}},
		"status": map[string]any{"updateStatus": "operational"},
	})}
}

// vmagentTarget is the target vmagent reports of the vLLM pod, with its
// discovered labels dropped (-promscrape.dropOriginalLabels).
func vmagentTarget(health, lastError string) simulate.PrometheusTarget {
	return simulate.PrometheusTarget{
		DiscoveredLabels: map[string]string{},
		Labels:           map[string]string{"job": "podScrape/llm/vllm/0", "instance": "10.244.2.21:8000", "namespace": "llm", "pod": "vllm-qwen-0"},
		ScrapePool:       "podScrape/llm/vllm/0", ScrapeURL: "http://10.244.2.21:8000/metrics",
		LastError: lastError, LastScrape: checkstest.JudgeAt.Add(-10 * time.Second), Health: health,
	}
}

func TestMonitoringTargetsVictoriaMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []simulate.PrometheusTarget
		status  checks.Status
		reason  string
	}{
		{"vmagent scrapes the model", []simulate.PrometheusTarget{vmagentTarget("up", "")}, checks.Pass,
			"monitoring/vmagent-vm scrapes 1 of 1 active targets, 1 discovered in the cluster; AI workloads: vLLM 1"},
		{"its target down", []simulate.PrometheusTarget{vmagentTarget("down", "connection refused")}, checks.Fail,
			"Prometheus monitoring/vmagent-vm: none of its 1 target is up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			withVictoriaMetrics(w)
			f := w.Serve()
			f.Get = func(path string) ([]byte, error) {
				base, query, _ := strings.Cut(path, "?")
				if base != vmagentBase {
					return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services/proxy"}, path)
				}
				q, err := url.ParseQuery(query)
				require.NoError(t, err)
				return simulate.PrometheusTargets(tc.targets, q), nil
			}
			r := checkstest.Result(t, f.Run([]checks.Check{observability.MonitoringTargets{}}, nil), "monitoring-targets", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.status == checks.Pass {
				last := r.Evidence[len(r.Evidence)-1]
				assert.Contains(t, last.Command, "kubectl get --raw '"+vmagentBase+"?state=active&scrapePool=podScrape%2Fllm%2Fvllm%2F0'")
				assert.Contains(t, last.Output, `"health":"up"`)
			}
		})
	}
}

// Without the Service of its vmagent, the VictoriaMetrics operator is
// judged on its own objects: a VMPodScrape its operator rejected selects
// nothing.
func TestMonitoringTargetsVictoriaMetricsObjects(t *testing.T) {
	noService := func(w *checkstest.World) {
		withVictoriaMetrics(w)
		w.Services = nil
		w.Deployments = append(w.Deployments, checkstest.AvailableDeployment("monitoring", "vmagent-vm",
			map[string]string{"app.kubernetes.io/name": "vmagent", "app.kubernetes.io/instance": "vm", "app.kubernetes.io/component": "monitoring", "managed-by": "vm-operator"}, "victoriametrics/vmagent:v1.110.0"))
	}
	checkstest.RunCases(t, observability.MonitoringTargets{}, []checkstest.Case{
		{Name: "its VMPodScrape selects the model", Edit: noService, Status: checks.Warn,
			Reason: "VictoriaMetrics Operator: 1 scrape configuration selecting 1 pod, but no scrape status of theirs in the cluster; its targets are kept in vmagent's own /api/v1/targets"},
		{Name: "its VMPodScrape rejected", Edit: func(w *checkstest.World) {
			noService(w)
			pm := w.Custom[vmPodScrapesGVR][0]
			require.NoError(t, unstructured.SetNestedField(pm.Object, "failed", "status", "updateStatus"))
			require.NoError(t, unstructured.SetNestedField(pm.Object, "cannot parse relabeling", "status", "reason"))
		}, Status: checks.Fail,
			Reason: "VictoriaMetrics Operator: no VMServiceScrape or VMPodScrape selects a workload of the cluster (1 object); VMPodScrape llm/vllm is not in effect: status.updateStatus=failed: cannot parse relabeling"},
	}, nil)
}

// withAzure replaces the Prometheus Operator by the Azure Monitor metrics
// add-on: its CRDs, its collectors (the node collector on ready of one
// node) and the PodMonitor given.
func withAzure(pm *unstructured.Unstructured, ready int32) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		withoutMonitoring(w)
		withVLLM(w)
		w.CRDs = append(w.CRDs,
			served("podmonitors", "azmonitoring.coreos.com", "PodMonitor", "v1", false),
			served("servicemonitors", "azmonitoring.coreos.com", "ServiceMonitor", "v1", false))
		rs := checkstest.AvailableDeployment("kube-system", "ama-metrics", map[string]string{"rsName": "ama-metrics", "kubernetes.azure.com/managedby": "aks"}, "mcr.microsoft.com/azuremonitor/containerinsights/ciprod/prometheus-collector/images:6.10.0-main")
		rs.Spec.Replicas = checkstest.Ptr[int32](2)
		rs.Status.Replicas, rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = 2, 2*ready, 2*ready
		w.Deployments = append(w.Deployments, rs)
		w.ExtraDaemonSets = append(w.ExtraDaemonSets, daemonSet("kube-system", "ama-metrics-node", map[string]string{"dsName": "ama-metrics-node", "kubernetes.azure.com/managedby": "aks"}, 1, ready))
		if pm != nil {
			w.Custom[azurePodMonitorsGVR] = []*unstructured.Unstructured{pm}
		}
	}
}

// azurePodMonitor is the add-on's PodMonitor in namespace ns, selecting
// the vLLM pod in namespace llm.
func azurePodMonitor(ns string) *unstructured.Unstructured {
	return object(azurePodMonitorsGVR, "PodMonitor", ns, "vllm", map[string]any{"spec": map[string]any{
		"selector":            map[string]any{"matchLabels": map[string]any{"app": "vllm-qwen"}},
		"namespaceSelector":   map[string]any{"matchNames": []any{"llm"}},
		"podMetricsEndpoints": []any{map[string]any{"port": "metrics"}},
	}})
}

// withAlloy replaces the Prometheus Operator by Grafana Alloy's chart.
func withAlloy(w *checkstest.World) {
	withoutMonitoring(w)
	w.ExtraDaemonSets = append(w.ExtraDaemonSets, daemonSet("alloy", "alloy", map[string]string{"app.kubernetes.io/name": "alloy", "app.kubernetes.io/instance": "alloy"}, 2, 2))
}

// A managed collector whose targets are kept outside the cluster is judged
// on what the cluster shows, and says what could not be seen: never Error.
func TestMonitoringTargetsUnseen(t *testing.T) {
	checkstest.RunCases(t, observability.MonitoringTargets{}, []checkstest.Case{
		{Name: "Azure's PodMonitor selects the model", Edit: withAzure(azurePodMonitor("kube-system"), 1), Status: checks.Warn,
			Reason: "what is scraped cannot be seen in the cluster: Azure Monitor managed service for Prometheus: 1 scrape configuration selecting 1 pod, but no scrape status of theirs in the cluster; its targets are kept in the add-on's own Prometheus UI"},
		{Name: "Azure's PodMonitor selects in its own namespace only", Edit: func(w *checkstest.World) {
			pm := azurePodMonitor("llm")
			unstructured.RemoveNestedField(pm.Object, "spec", "namespaceSelector")
			withAzure(pm, 1)(w)
		}, Status: checks.Warn, Reason: "selecting 1 pod"},
		{Name: "Azure's PodMonitor in another namespace selects nothing", Edit: func(w *checkstest.World) {
			pm := azurePodMonitor("kube-system")
			unstructured.RemoveNestedField(pm.Object, "spec", "namespaceSelector")
			withAzure(pm, 1)(w)
		}, Status: checks.Warn,
			Reason: "no PodMonitor or ServiceMonitor selects a workload of the cluster; what the ama-metrics-prometheus-config and ama-metrics-settings-configmap ConfigMaps in kube-system tell it to scrape is not read"},
		{Name: "Azure's collectors not ready", Edit: withAzure(azurePodMonitor("kube-system"), 0), Status: checks.Fail,
			Reason: "Azure Monitor managed service for Prometheus: its collectors have no ready pod: Deployment kube-system/ama-metrics 0/2 ready, DaemonSet kube-system/ama-metrics-node 0/1 ready"},
		{Name: "Grafana Alloy", Edit: withAlloy, Status: checks.Warn,
			Reason: "Grafana Alloy: it runs (DaemonSet alloy/alloy 2/2 ready), but what it scrapes is configured and reported outside the objects aiconform reads"},
	}, nil)
}

// A list of collectors refused matters only where the verdict needs it:
// beside a Prometheus that answers, or under a status that reports healthy
// targets, it is a detail; where only the collectors could show a system,
// an Error.
func TestCollectorsUnread(t *testing.T) {
	for _, tc := range []struct {
		name           string
		edit           func(w *checkstest.World)
		system, target checks.Status
	}{
		{"beside a Prometheus", nil, checks.Pass, checks.Pass},
		{"GMP, its status healthy", withGMP(podMonitoring(endpoint(vllmEndpoint, 2, 0, time.Minute))), checks.Error, checks.Pass},
		{"GMP, no status", withGMP(podMonitoring()), checks.Error, checks.Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			if tc.edit != nil {
				tc.edit(w)
			}
			f := w.Serve()
			f.Kube.PrependReactor("list", "daemonsets", checkstest.Forbidden("apps", "daemonsets"))
			out := f.Run([]checks.Check{observability.MonitoringSystem{}, observability.MonitoringTargets{}}, nil)
			for id, want := range map[string]checks.Status{"monitoring-system": tc.system, "monitoring-targets": tc.target} {
				r := checkstest.Result(t, out, id, "")
				assert.Equal(t, want, r.Status, "%s: %s", id, r.Reason)
				if want == checks.Error {
					assert.Contains(t, r.Reason, `cannot list resource "daemonsets"`, id)
				} else {
					assert.Contains(t, strings.Join(r.Details, "\n"), "collectors not read:", id)
				}
			}
		})
	}
}
