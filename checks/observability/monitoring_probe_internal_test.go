package observability

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const probeRun = "20270102-030405-abcd"

var probeNS = probe.NamespacePrefix + probeRun

// probePodIP is where the probe's pod runs in the fake.
const probePodIP = "10.244.2.20"

// readyAt is when the fake's kubelet says the probe's pod got Ready.
var readyAt = checkstest.Clock

// operatorPool is the scrape pool the operator gives the probe's
// PodMonitor.
var operatorPool = "podMonitor/" + probeNS + "/aiconform-metrics/0"

// probeCase is a world, what its Prometheus answers at each read, and
// what the probe says of it.
type probeCase struct {
	name string
	edit func(w *checkstest.World)
	// targets are the active targets at the n-th read (from 0).
	targets func(n int) []checkstest.Target
	// query is the query's answer; "" is the probe's series.
	query string
	// get, when set, answers paths first (nil, nil: not handled).
	get func(path string) ([]byte, error)
	// pod is the pod the fake kubelet reports; nil is Ready.
	pod   func(p *corev1.Pod)
	react func(f *checkstest.FakeCluster)
	// polls is how many reads the window holds.
	polls   int
	status  checks.Status
	reason  string
	errText string
}

// probePod is the probe's pod as the fake's kubelet reports it: Ready.
func probePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNS, Name: metricsName, ResourceVersion: "2", Labels: map[string]string{MetricsLabel: "probe", probe.RunLabel: probeRun}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: probePodIP, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)},
		}},
	}
}

// probeTarget is the probe's pod as a target of pool, scraped at at with
// health.
func probeTarget(pool, health string, at time.Time, lastError string) checkstest.Target {
	t := simulate.PodTarget(pool, metricsPort, probePod(), at)
	t.Health, t.LastError = health, lastError
	return t
}

func upTarget(pool string) func(int) []checkstest.Target {
	return func(int) []checkstest.Target {
		return []checkstest.Target{probeTarget(pool, "up", readyAt.Add(2*time.Second), "")}
	}
}

// selecting makes the world's Prometheus select PodMonitors labelled
// release=kps in any namespace, as kube-prometheus-stack's does.
func selecting(w *checkstest.World) {
	w.Prometheuses[0].Object["spec"] = map[string]any{
		"podMonitorSelector":          map[string]any{"matchLabels": map[string]any{"release": "kps"}},
		"podMonitorNamespaceSelector": map[string]any{},
	}
}

// chartPrometheus replaces the operator's Prometheus by the community
// chart's server, which discovers annotated pods.
func chartPrometheus(w *checkstest.World) {
	w.Prometheuses = nil
	w.Services = []*corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus-server", Labels: map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}}
}

var seriesAnswer = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"aiconform_probe_up","run":"` + probeRun + `","namespace":"` + probeNS + `","pod":"aiconform-metrics"},"value":[1798254247.5,"1"]}]}}`

// runProbe runs the probe on the case's world; it returns the result,
// its error and the fake, whose objects the probe created.
func runProbe(t *testing.T, tc probeCase) (checks.Result, error, *checkstest.FakeCluster) {
	t.Helper()
	w := checkstest.NewWorld(t)
	if tc.edit != nil {
		tc.edit(w)
	}
	f := w.Serve()
	var mu sync.Mutex
	reads := 0
	f.Get = func(path string) ([]byte, error) {
		if tc.get != nil {
			if body, err := tc.get(path); body != nil || err != nil {
				return body, err
			}
		}
		base, query, _ := strings.Cut(path, "?")
		switch {
		case strings.HasSuffix(base, "/proxy/api/v1/targets"):
			q, err := url.ParseQuery(query)
			require.NoError(t, err)
			mu.Lock()
			n := reads
			reads++
			mu.Unlock()
			var ts []checkstest.Target
			if tc.targets != nil {
				ts = tc.targets(n)
			}
			return simulate.PrometheusTargets(ts, q), nil
		case strings.HasSuffix(base, "/proxy/api/v1/query"):
			if tc.query != "" {
				return []byte(tc.query), nil
			}
			return []byte(seriesAnswer), nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services/proxy"}, path)
	}
	// The fake's kubelet runs the pod and reports it.
	f.Kubelet(t, probeNS, func(*corev1.Pod) *corev1.Pod {
		p := probePod()
		if tc.pod != nil {
			tc.pod(p)
		}
		return p
	})
	if tc.react != nil {
		tc.react(f)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mapper.Add(podMonitorGVK, meta.RESTScopeNamespace)
	s := probe.NewSession(f.Dyn, mapper, probeRun, time.Minute)
	ticks := make(chan time.Time, tc.polls)
	for range tc.polls {
		ticks <- checkstest.Clock
	}
	close(ticks)
	env := &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow, Probe: s}
	r, err := MonitoringProbe{ticks: ticks}.Run(context.Background(), env)
	return r, err, f
}

func TestMonitoringProbe(t *testing.T) {
	never := func(int) []checkstest.Target { return nil }
	cases := []probeCase{
		{name: "PodMonitor selected, scraped, stored", edit: selecting, targets: upTarget(operatorPool),
			status: checks.Pass, reason: "Prometheus monitoring/prometheus-operated discovered the probe's pod " + probeNS + "/aiconform-metrics by the PodMonitor aiconform-metrics, which Prometheus monitoring/k8s selects as target http://" + probePodIP + ":8080/metrics (scrape pool " + operatorPool + ") and scraped it, up, 0.0 s after the pod was Ready; the query aiconform_probe_up{run=\"" + probeRun + "\"} returns its series"},
		{name: "annotations, discovered on the third read", edit: chartPrometheus, polls: 5,
			targets: func(n int) []checkstest.Target {
				other := checkstest.PodTarget("kubernetes-pods", "ml", "model-0", "10.244.2.14:8080", nil)
				if n < 2 {
					return []checkstest.Target{other}
				}
				return []checkstest.Target{other, probeTarget("kubernetes-pods", "up", readyAt.Add(3*time.Second), "")}
			},
			status: checks.Pass, reason: "Prometheus monitoring/prometheus-server discovered the probe's pod " + probeNS + "/aiconform-metrics by its prometheus.io annotations as target http://" + probePodIP + ":8080/metrics (scrape pool kubernetes-pods)"},
		{name: "not discovered", edit: selecting, targets: never, polls: 3,
			status: checks.Fail, reason: "Prometheus monitoring/prometheus-operated did not discover the probe's pod " + probeNS + "/aiconform-metrics by the PodMonitor aiconform-metrics, which Prometheus monitoring/k8s selects: no active target of it within 1m0s of the pod being Ready"},
		{name: "annotations, not discovered", edit: chartPrometheus, targets: never, polls: 1,
			status: checks.Fail, reason: "by its prometheus.io annotations: no active target of it within 1m0s of the pod being Ready (does its configuration keep the pods annotated prometheus.io/scrape=true?)"},
		{name: "discovered but down", edit: chartPrometheus, polls: 2,
			targets: func(int) []checkstest.Target {
				return []checkstest.Target{probeTarget("kubernetes-pods", "down", readyAt.Add(time.Second), `Get "http://10.244.2.20:8080/metrics": dial tcp 10.244.2.20:8080: connect: connection refused`)}
			},
			status: checks.Fail, reason: `discovered the probe's pod as target http://10.244.2.20:8080/metrics (scrape pool kubernetes-pods), but it is down within 1m0s of the pod being Ready: Get "http://10.244.2.20:8080/metrics": dial tcp 10.244.2.20:8080: connect: connection refused`},
		{name: "up, but last scraped before the pod was Ready", edit: chartPrometheus, polls: 2,
			targets: func(int) []checkstest.Target {
				return []checkstest.Target{probeTarget("kubernetes-pods", "up", readyAt.Add(-10*time.Second), "")}
			},
			status: checks.Fail, reason: "but did not scrape it within 1m0s of the pod being Ready"},
		{name: "scraped, the query returns nothing", edit: selecting, targets: upTarget(operatorPool), polls: 2,
			query:  `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			status: checks.Fail, reason: "scraped the probe's pod as target http://" + probePodIP + ":8080/metrics (scrape pool " + operatorPool + "), but the query aiconform_probe_up{run=\"" + probeRun + "\"} returns nothing within 1m0s of the pod being Ready"},
		{name: "podMonitorSelector unset", status: checks.Skip,
			reason: "no Prometheus would discover the probe's pod: Prometheus monitoring/k8s selects no PodMonitor (its podMonitorSelector is unset)"},
		{name: "podMonitorNamespaceSelector unset", status: checks.Skip,
			edit: func(w *checkstest.World) {
				selecting(w)
				delete(w.Prometheuses[0].Object["spec"].(map[string]any), "podMonitorNamespaceSelector")
			},
			reason: "Prometheus monitoring/k8s selects PodMonitors in its own namespace monitoring only (its podMonitorNamespaceSelector is unset), not in the probe's"},
		{name: "podMonitorNamespaceSelector of other labels", status: checks.Skip,
			edit: func(w *checkstest.World) {
				selecting(w)
				w.Prometheuses[0].Object["spec"].(map[string]any)["podMonitorNamespaceSelector"] = map[string]any{"matchLabels": map[string]any{"monitoring": "enabled"}}
			},
			reason: "Prometheus monitoring/k8s selects PodMonitors in namespaces monitoring=enabled, not in the probe's"},
		{name: "podMonitorSelector that refuses the probe's own labels", status: checks.Skip,
			edit: func(w *checkstest.World) {
				selecting(w)
				w.Prometheuses[0].Object["spec"].(map[string]any)["podMonitorSelector"] = map[string]any{
					"matchExpressions": []any{map[string]any{"key": probe.RunLabel, "operator": "DoesNotExist"}},
				}
			},
			reason: "Prometheus monitoring/k8s selects PodMonitors by !aiconform.io/run, which no labels of the probe's satisfy"},
		{name: "Prometheus not Available", status: checks.Skip,
			edit: func(w *checkstest.World) {
				w.Prometheuses = []*unstructured.Unstructured{checkstest.Prometheus("monitoring", "k8s", "False")}
				selecting(w)
			},
			reason: "Prometheus monitoring/k8s is not Available"},
		{name: "a managed collector only", status: checks.Skip,
			edit: func(w *checkstest.World) {
				w.Prometheuses, w.Services, w.CRDs = nil, nil, nil
				crd := checkstest.EstablishedCRD("podmonitorings", "PodMonitoring")
				crd.Name, crd.Spec.Group = "podmonitorings.monitoring.googleapis.com", "monitoring.googleapis.com"
				w.CRDs = append(w.CRDs, crd)
			},
			reason: "Google Cloud Managed Service for Prometheus collects outside the cluster"},
		{name: "the targets read refused", edit: selecting, polls: 2,
			get: func(path string) ([]byte, error) {
				if strings.Contains(path, "/api/v1/targets") {
					return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services/proxy"}, "prometheus-operated:web", errors.New(`User "auditor" cannot get resource "services/proxy"`))
				}
				return nil, nil
			},
			status: checks.Error, errText: "targets of monitoring/prometheus-operated: services/proxy \"prometheus-operated:web\" is forbidden"},
		{name: "the API does not answer", edit: selecting, polls: 2,
			get: func(path string) ([]byte, error) {
				if strings.Contains(path, "/api/v1/targets") {
					return nil, apierrors.NewServiceUnavailable("no endpoints available for service \"prometheus-operated:web\"")
				}
				return nil, nil
			},
			status: checks.Error, errText: "Prometheus monitoring/prometheus-operated could not be read within 1m0s of the pod being Ready: its API does not answer: no endpoints available"},
		{name: "the PodMonitor's create refused", edit: selecting,
			react: func(f *checkstest.FakeCluster) {
				f.Dyn.PrependReactor("create", "podmonitors", checkstest.Forbidden("monitoring.coreos.com", "podmonitors"))
			},
			status: checks.Error, errText: "cannot create the probe's PodMonitor"},
		{name: "the pod never Ready", edit: selecting,
			pod: func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
					{Name: "probe", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127, Reason: "Error"}}}}}
			},
			status: checks.Error, errText: "the probe's pod aiconform-metrics was not Ready within 1m0s: Failed (probe exited 127: Error)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err, _ := runProbe(t, tc)
			if tc.status == checks.Error {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errText)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}

func TestMonitoringProbeOff(t *testing.T) {
	f := checkstest.NewWorld(t).Serve()
	r, err := MonitoringProbe{}.Run(context.Background(), &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow})
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off")
}

// The objects sent, and the evidence of each step: the creates as kubectl
// prints them, the pod, the targets and the query read through the
// service proxy, and the timeline.
func TestMonitoringProbeWritesAndEvidence(t *testing.T) {
	tc := probeCase{edit: func(w *checkstest.World) {
		selecting(w)
		w.Prometheuses[0].Object["spec"].(map[string]any)["podMonitorSelector"] = map[string]any{
			"matchLabels":      map[string]any{"release": "kps"},
			"matchExpressions": []any{map[string]any{"key": "team", "operator": "In", "values": []any{"ml", "infra"}}, map[string]any{"key": "scraped", "operator": "Exists"}},
		}
	}, targets: upTarget(operatorPool)}
	r, err, f := runProbe(t, tc)
	require.NoError(t, err)
	require.Equal(t, checks.Pass, r.Status, r.Reason)

	pm, err := f.Dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"}).Namespace(probeNS).Get(context.Background(), metricsName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"release": "kps", "team": "ml", "scraped": "aiconform", MetricsLabel: "probe", probe.RunLabel: probeRun}, pm.GetLabels())

	var commands []string
	for _, s := range r.Evidence {
		commands = append(commands, s.Command)
	}
	all := strings.Join(commands, "\n")
	assert.Contains(t, all, "kubectl create -n "+probeNS+" -f - <<'EOF'\napiVersion: monitoring.coreos.com/v1\nkind: PodMonitor")
	assert.Contains(t, all, "kind: Pod\n")
	assert.Contains(t, all, "aiconform_probe_up{run=")
	assert.Contains(t, all, "runAsNonRoot: true")
	assert.Contains(t, all, "activeDeadlineSeconds: 180")
	assert.Contains(t, all, "kubectl get --raw '/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/targets?state=active&scrapePool="+url.QueryEscape(operatorPool)+"'")
	assert.Contains(t, all, "/api/v1/namespaces/monitoring/services/prometheus-operated:web/proxy/api/v1/query?query="+url.QueryEscape(`aiconform_probe_up{run="`+probeRun+`"}`))
	require.NotNil(t, r.Table)
	var events []string
	for _, row := range r.Table.Rows {
		events = append(events, row[0])
	}
	assert.Equal(t, []string{
		"created podmonitors/aiconform-metrics",
		"created pods/aiconform-metrics",
		"pod aiconform-metrics bound to gpu-node-1",
		"pod aiconform-metrics Ready (" + probePodIP + ")",
		"target " + operatorPool + " http://" + probePodIP + ":8080/metrics discovered (up)",
		"target up, last scraped 03:04:07.000",
		fmt.Sprintf("query aiconform_probe_up{run=%q} returned 1 series", probeRun),
	}, events)
}

func TestMetricsPod(t *testing.T) {
	u, err := metricsPod("busybox:1.37", probeRun, true, time.Minute)
	require.NoError(t, err)
	var p corev1.Pod
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p))
	assert.Equal(t, map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics/"}, p.Annotations)
	c := p.Spec.Containers[0]
	assert.Equal(t, "busybox:1.37", c.Image)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *p.Spec.SecurityContext.RunAsNonRoot)
	// Enough CPU for httpd to answer every scrape on a busy node, and
	// Guaranteed: requests equal to limits.
	assert.Equal(t, "100m", c.Resources.Limits.Cpu().String())
	assert.Equal(t, c.Resources.Limits, c.Resources.Requests)
	assert.Equal(t, "16Mi", c.Resources.Limits.Memory().String())
	assert.Equal(t, int64(180), *p.Spec.ActiveDeadlineSeconds)
	assert.Contains(t, c.Command[2], `aiconform_probe_up{run=\"`+probeRun+`\"} 1`)
	u, err = metricsPod("busybox:1.37", probeRun, false, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, u.GetAnnotations(), "a PodMonitor discovers it")
}
