package observability_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/observability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// withoutMonitoring removes the Prometheus Operator, its Prometheus and
// its Service.
func withoutMonitoring(w *checkstest.World) {
	monitoring := map[string]bool{}
	for _, c := range checkstest.MonitoringCRDs() {
		monitoring[c.Name] = true
	}
	w.CRDs = slices.DeleteFunc(w.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool { return monitoring[c.Name] })
	w.Prometheuses, w.Services, w.Targets = nil, nil, nil
}

// chartPrometheus is the prometheus-community chart's server Service.
func chartPrometheus() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus-server",
			Labels: map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

func TestMonitoringSystem(t *testing.T) {
	checkstest.RunCases(t, observability.MonitoringSystem{}, []checkstest.Case{
		{Name: "the Prometheus Operator", Status: checks.Pass,
			Reason: "Prometheus Operator (Prometheus API at monitoring/prometheus-operated)"},
		{Name: "nothing", Edit: withoutMonitoring, Status: checks.Fail,
			Reason: "no monitoring system: none of Prometheus Operator, Prometheus, Google Cloud Managed Service for Prometheus, VictoriaMetrics Operator, Azure Monitor managed service for Prometheus, Amazon CloudWatch agent, Grafana Alloy, OpenTelemetry Operator, OpenShift cluster monitoring is installed"},
		{Name: "no Prometheus object", Edit: func(w *checkstest.World) { w.Prometheuses, w.Services = nil, nil }, Status: checks.Fail,
			Reason: "the Prometheus Operator is installed but runs no Prometheus"},
		{Name: "its Prometheus unavailable, no Service", Edit: func(w *checkstest.World) {
			w.Prometheuses = []*unstructured.Unstructured{checkstest.Prometheus("monitoring", "k8s", "False")}
			w.Services = nil
		}, Status: checks.Fail, Reason: "the Prometheus Operator runs no available Prometheus: Prometheus monitoring/k8s is Available=False"},
		{Name: "one of two degraded", Edit: func(w *checkstest.World) {
			w.Prometheuses = append(w.Prometheuses, checkstest.Prometheus("team-a", "models", "Degraded"))
		}, Status: checks.Warn, Reason: "Prometheus team-a/models is Available=Degraded"},
		{Name: "a chart's Prometheus", Edit: func(w *checkstest.World) {
			withoutMonitoring(w)
			w.Services = []*corev1.Service{chartPrometheus()}
		}, Status: checks.Pass, Reason: "Prometheus (Prometheus API at monitoring/prometheus-server)"},
		{Name: "a managed collector", Edit: func(w *checkstest.World) {
			withoutMonitoring(w)
			gmp := checkstest.EstablishedCRD("podmonitorings", "PodMonitoring")
			gmp.Name, gmp.Spec.Group = "podmonitorings.monitoring.googleapis.com", "monitoring.googleapis.com"
			w.CRDs = append(w.CRDs, gmp)
			w.ExtraDaemonSets = append(w.ExtraDaemonSets, daemonSet("gmp-system", "collector", map[string]string{"app": "managed-prometheus-collector"}, 3, 3))
		}, Status: checks.Pass, Reason: "Google Cloud Managed Service for Prometheus (collectors DaemonSet gmp-system/collector 3/3 ready)"},
		{Name: "a probe's Service is not the cluster's", Edit: func(w *checkstest.World) {
			withoutMonitoring(w)
			svc := chartPrometheus()
			svc.Namespace = "aiconform-probe-x1"
			w.Services = []*corev1.Service{svc}
		}, Status: checks.Fail, Reason: "no monitoring system"},
	}, nil)
}

// setTarget edits the world's target of a scrape pool.
func setTarget(pool string, edit func(t *checkstest.Target)) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		for i := range w.Targets {
			if w.Targets[i].ScrapePool == pool {
				edit(&w.Targets[i])
				return
			}
		}
		panic(pool)
	}
}

const (
	dcgmPool   = "podMonitor/gpu-operator/nvidia-dcgm-exporter/0"
	kservePool = "podMonitor/ml/sklearn-iris/0"
)

func TestMonitoringTargets(t *testing.T) {
	checkstest.RunCases(t, observability.MonitoringTargets{}, []checkstest.Case{
		{Name: "a model among the targets", Status: checks.Pass,
			Reason: "monitoring/prometheus-operated scrapes 2 of 2 active targets, 2 discovered in the cluster; AI workloads: KServe 1"},
		{Name: "the model's target down", Edit: setTarget(kservePool, func(t *checkstest.Target) {
			t.Health, t.LastError = "down", `Get "http://10.244.2.14:8080/metrics": dial tcp 10.244.2.14:8080: connect: connection refused`
		}), Status: checks.Warn, Reason: "but KServe target podMonitor/ml/sklearn-iris/0 http://10.244.2.14:8080/metrics is down: Get",
			Details: []string{`podMonitor/ml/sklearn-iris/0 http://10.244.2.14:8080/metrics is down: Get "http://10.244.2.14:8080/metrics": dial tcp 10.244.2.14:8080: connect: connection refused`}},
		{Name: "the model's target no longer scraped", Edit: setTarget(kservePool, func(t *checkstest.Target) {
			t.LastScrape = t.LastScrape.Add(-10 * time.Minute)
		}), Status: checks.Warn, Reason: "is not scraped for 10m0s (every 30s)"},
		{Name: "no AI workload", Edit: func(w *checkstest.World) { w.Targets = w.Targets[:1] }, Status: checks.Warn,
			Reason: "scrapes 1 of 1 active targets, 1 discovered in the cluster; but no AI workload is among its targets (KServe, KubeRay"},
		{Name: "a vLLM server known by its job", Edit: func(w *checkstest.World) {
			w.Targets[1].DiscoveredLabels = map[string]string{"__address__": "10.244.2.20:8000", "__meta_kubernetes_namespace": "llm"}
			w.Targets[1].Labels = map[string]string{"job": "llm/vllm-qwen", "instance": "10.244.2.20:8000"}
			w.Targets[1].ScrapePool = "serviceMonitor/llm/vllm-qwen/0"
		}, Status: checks.Pass, Reason: "AI workloads: vLLM 1"},
		{Name: "every target down", Edit: func(w *checkstest.World) {
			for i := range w.Targets {
				w.Targets[i].Health, w.Targets[i].LastError = "down", "context deadline exceeded"
			}
		}, Status: checks.Fail, Reason: "no Prometheus server collects from the cluster: Prometheus monitoring/prometheus-operated: none of its 2 targets is up"},
		{Name: "static configurations only", Edit: func(w *checkstest.World) {
			for i := range w.Targets {
				w.Targets[i].DiscoveredLabels = map[string]string{"__address__": "10.0.0.1:9100", "job": "static"}
			}
		}, Status: checks.Fail, Reason: "none of its 2 up targets was discovered in the cluster: static configurations only"},
		{Name: "no target", Edit: func(w *checkstest.World) { w.Targets = []checkstest.Target{} }, Status: checks.Fail,
			Reason: "it has no active target"},
		{Name: "no monitoring system", Edit: withoutMonitoring, Status: checks.Fail,
			Reason: "no monitoring system collects metrics: no Prometheus server's Service is found"},
		// OpenShift's cluster monitoring: prometheus-k8s listens on
		// loopback, kube-rbac-proxy in front of it.
		{Name: "its Prometheus listens locally", Edit: func(w *checkstest.World) {
			require.NoError(t, unstructured.SetNestedField(w.Prometheuses[0].Object, true, "spec", "listenLocal"))
		}, Status: checks.Warn,
			Reason: "what is scraped cannot be seen in the cluster: Prometheus monitoring/prometheus-operated: Prometheus monitoring/k8s listens on its pods' loopback only (spec.listenLocal)"},
		{Name: "the Prometheus Operator without its Service", Edit: func(w *checkstest.World) { w.Services = nil }, Status: checks.Fail,
			Reason: "no monitoring system collects metrics: no Prometheus server's Service is found"},
	}, func(t *testing.T, tc checkstest.Case, r checks.Result) {
		if tc.Status == checks.Pass {
			require.NotEmpty(t, r.Evidence)
			last := r.Evidence[len(r.Evidence)-1]
			assert.Contains(t, last.Command, "kubectl get --raw '"+checkstest.PrometheusTargetsPath+"?state=active&scrapePool=")
			assert.Contains(t, last.Output, `"health":"up"`)
		}
	})
}

// The OpenTelemetry Operator installed, with no collector of its running:
// nothing collects, a finding rather than an Error.
func TestMonitoringTargetsManaged(t *testing.T) {
	w := checkstest.NewWorld(t)
	withoutMonitoring(w)
	otel := checkstest.EstablishedCRD("opentelemetrycollectors", "OpenTelemetryCollector")
	otel.Name, otel.Spec.Group = "opentelemetrycollectors.opentelemetry.io", "opentelemetry.io"
	w.CRDs = append(w.CRDs, otel)
	r := checkstest.Result(t, w.Serve().Run([]checks.Check{observability.MonitoringTargets{}}, nil), "monitoring-targets", "")
	assert.Equal(t, checks.Fail, r.Status, r.Reason)
	assert.Contains(t, r.Reason, "no monitoring system collects from the cluster: OpenTelemetry Operator: no collector of it runs (a DaemonSet labelled app.kubernetes.io/component=opentelemetry-collector,app.kubernetes.io/managed-by=opentelemetry-operator")
}

// A Prometheus that does not answer fails; a read the cluster refuses (no
// services/proxy in the role) is an Error; a read the server behind the
// proxy refuses is what could not be seen.
func TestMonitoringTargetsUnreadable(t *testing.T) {
	// rbac is the API server's own refusal, as it answers a GET of the
	// service proxy (and as fixtures/forbidden-nodes.yaml holds it: the
	// error's message "unknown", the Status in the body).
	rbac := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"services \"prometheus-operated:web\" is forbidden: User \"auditor\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"monitoring\"","reason":"Forbidden","details":{"name":"prometheus-operated:web","kind":"services"},"code":403}`
	for _, tc := range []struct {
		name   string
		err    error
		body   string
		status checks.Status
		reason string
	}{
		{"no endpoints", apierrors.NewServiceUnavailable(`no endpoints available for service "prometheus-operated"`), "", checks.Fail,
			`Prometheus monitoring/prometheus-operated: its API does not answer: no endpoints available for service "prometheus-operated"`},
		// OpenShift's monitoring stack: kube-rbac-proxy in front of
		// Prometheus refuses the proxy's read, which carries no token, in
		// plain text.
		{"its server asks for credentials", apierrors.NewUnauthorized("Unauthorized"), "Unauthorized\n", checks.Warn,
			"what is scraped cannot be seen in the cluster: Prometheus monitoring/prometheus-operated: its API refuses the API server's proxy, which passes no credentials on (Unauthorized)"},
		{"its server refuses the anonymous read", apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("Forbidden (user=system:anonymous, verb=get, resource=, subresource=)")),
			"Forbidden (user=system:anonymous, verb=get, resource=, subresource=)\n", checks.Warn,
			"its API refuses the API server's proxy, which passes no credentials on"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "services/proxy"}, "prometheus-operated:web", errors.New(`User "auditor" cannot get resource "services/proxy"`)), rbac, checks.Error,
			"targets of monitoring/prometheus-operated:"},
		{"forbidden, the message in the body", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: "unknown"}}, rbac, checks.Error,
			"targets of monitoring/prometheus-operated:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := checkstest.NewWorld(t).Serve()
			f.Get = func(string) ([]byte, error) { return []byte(tc.body), tc.err }
			r := checkstest.Result(t, f.Run([]checks.Check{observability.MonitoringTargets{}}, nil), "monitoring-targets", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}
