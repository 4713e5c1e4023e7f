package scheduling

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restfake "k8s.io/client-go/rest/fake"
	k8stesting "k8s.io/client-go/testing"
)

const hpaRun = "20270102-030405-cafe"

var hpaNS = probe.NamespacePrefix + hpaRun

// gpuUtil is the custom metric of pods the fake adapters serve.
const gpuUtil = "DCGM_FI_DEV_GPU_UTIL"

// podsRead is where the probe and the HPA controller read gpuUtil of the
// probe's pods.
var podsRead = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + hpaNS + "/pods/*/" + gpuUtil + "?labelSelector=aiconform.io%2Fhpa%3Dprobe"

// hpaSim stands for what acts on the probe's writes on a real cluster:
// the Deployment controller, the scheduler and the kubelet (each pod of
// the Deployment bound to the GPU node and Running at once), the metrics
// adapters, and the HPA controller, which reads the metric of the HPA's
// type only when its API is served, as the real one reads it through the
// aggregator.
type hpaSim struct {
	served
	t   *testing.T
	f   *checkstest.FakeCluster
	mu  sync.Mutex
	rv  int
	ids int
	// pods are the Deployment's live pods, in order of creation.
	pods []*corev1.Pod
	hpa  *autoscalingv2.HorizontalPodAutoscaler
	// sent is every HPA the probe created or patched, as sent.
	sent         []autoscalingv2.HorizontalPodAutoscaler
	podsW, hpasW *watch.FakeWatcher
	// reads counts the reads of the pods' metric.
	reads int
	// paths are the raw reads made, in order.
	paths []string
}

// served is what the fake's metrics adapters serve.
type served struct {
	// external and custom say which metrics APIs the cluster serves.
	external, custom bool
	// externalValue is the external metric s0-queue-depth in the run's
	// namespace.
	externalValue string
	// podValue is each pod's gpuUtil, and the run's namespace's; from is
	// the read of the pods' (from 0) that first shows it: an adapter over
	// Prometheus shows none for a new pod until its series were scraped.
	podValue string
	from     int
	// listed are the custom metrics API's resources.
	listed []string
}

// nextRV is the resource version of the next event: after the
// Deployment's, 1.
func (s *hpaSim) nextRV() string {
	s.rv++
	return fmt.Sprint(s.rv + 1)
}

func (s *hpaSim) object(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(s.t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetResourceVersion(s.nextRV())
	return u
}

// push sends an event to a watch when it is open; one opened later
// replays the state.
func (s *hpaSim) push(w *watch.FakeWatcher, typ watch.EventType, obj runtime.Object) {
	if w != nil {
		w.Action(typ, s.object(obj))
	}
}

func (s *hpaSim) addPod() {
	s.ids++
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: hpaNS, Name: fmt.Sprintf("aiconform-hpa-7d4b9-%c", 'a'+s.ids-1), Labels: map[string]string{HPALabel: "probe"}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	s.pods = append(s.pods, p)
	s.push(s.podsW, watch.Modified, p)
}

// reconcile is the HPA controller's sync of the probe's HPA, then the
// Deployment controller's.
func (s *hpaSim) reconcile() {
	h := s.hpa
	m := h.Spec.Metrics[0]
	current := int32(len(s.pods))
	readable := m.Type == autoscalingv2.ExternalMetricSourceType && s.external || m.Type != autoscalingv2.ExternalMetricSourceType && s.custom
	if !readable {
		h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current, DesiredReplicas: current, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale"},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "FailedGet" + string(m.Type) + "Metric", Message: "the server could not find the requested resource"},
		}}
		s.push(s.hpasW, watch.Modified, h)
		return
	}
	var value, target float64
	switch m.Type {
	case autoscalingv2.ExternalMetricSourceType:
		value, target = quantity(s.externalValue), m.External.Target.AverageValue.AsApproximateFloat64()
	case autoscalingv2.PodsMetricSourceType:
		// The average per pod times the pods: their total.
		value, target = quantity(s.podValue)*float64(current), m.Pods.Target.AverageValue.AsApproximateFloat64()
	case autoscalingv2.ObjectMetricSourceType:
		value, target = quantity(s.podValue), m.Object.Target.AverageValue.AsApproximateFloat64()
	}
	desired := min(max(int32(math.Ceil(value/target)), *h.Spec.MinReplicas), h.Spec.MaxReplicas)
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: current, DesiredReplicas: desired, Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"},
		{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"},
	}}
	s.push(s.hpasW, watch.Modified, h)
	for int32(len(s.pods)) < desired {
		s.addPod()
	}
	for int32(len(s.pods)) > desired {
		gone := s.pods[len(s.pods)-1]
		s.pods = s.pods[:len(s.pods)-1]
		s.push(s.podsW, watch.Deleted, gone)
	}
	h.Status.CurrentReplicas = int32(len(s.pods))
	s.push(s.hpasW, watch.Modified, h)
}

func quantity(s string) float64 {
	q := resource.MustParse(s)
	return q.AsApproximateFloat64()
}

// get answers the API server's raw reads of the metrics APIs.
func (s *hpaSim) get(path string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, path)
	notFound := apierrors.NewNotFound(schema.GroupResource{}, "")
	notFound.ErrStatus.Message = "the server could not find the requested resource"
	list := func(kind, version string, items []any) ([]byte, error) {
		return json.Marshal(map[string]any{"kind": kind, "apiVersion": version, "metadata": map[string]any{}, "items": items})
	}
	switch {
	case path == "/apis/external.metrics.k8s.io/v1beta1" && s.external:
		return json.Marshal(metav1.APIResourceList{GroupVersion: "external.metrics.k8s.io/v1beta1"})
	case path == "/apis/external.metrics.k8s.io/v1beta1/namespaces/"+hpaNS+"/s0-queue-depth" && s.external:
		return list("ExternalMetricValueList", "external.metrics.k8s.io/v1beta1", []any{map[string]any{"metricName": "s0-queue-depth", "value": s.externalValue}})
	case path == "/apis/custom.metrics.k8s.io/v1beta2" && s.custom:
		res := metav1.APIResourceList{GroupVersion: "custom.metrics.k8s.io/v1beta2"}
		for _, name := range s.listed {
			res.APIResources = append(res.APIResources, metav1.APIResource{Name: name, Namespaced: true, Kind: "MetricValueList", Verbs: metav1.Verbs{"get"}})
		}
		return json.Marshal(res)
	case path == podsRead && s.custom:
		n := s.reads
		s.reads++
		var items []any
		for _, p := range s.pods {
			if n >= s.from {
				items = append(items, map[string]any{"describedObject": map[string]any{"kind": "Pod", "namespace": hpaNS, "name": p.Name, "apiVersion": "/v1"},
					"metric": map[string]any{"name": gpuUtil}, "timestamp": "2027-01-02T03:04:05Z", "value": s.podValue})
			}
		}
		return list("MetricValueList", "custom.metrics.k8s.io/v1beta2", items)
	case path == "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+hpaNS+"/metrics/"+gpuUtil && s.custom:
		var items []any
		if len(s.pods) > 0 {
			items = append(items, map[string]any{"describedObject": map[string]any{"kind": "Namespace", "name": hpaNS, "apiVersion": "/v1"},
				"metric": map[string]any{"name": gpuUtil}, "timestamp": "2027-01-02T03:04:05Z", "value": s.podValue})
		}
		return list("MetricValueList", "custom.metrics.k8s.io/v1beta2", items)
	}
	return nil, notFound
}

// serve makes the fake answer the probe's writes and watches as sim does.
func (s *hpaSim) serve() {
	t, f := s.t, s.f
	f.Get = s.get
	f.Dyn.PrependReactor("create", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		u.SetNamespace(hpaNS)
		u.SetResourceVersion("1")
		var d appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
		require.Equal(t, int32(1), *d.Spec.Replicas)
		s.addPod()
		return true, u, nil
	})
	f.Dyn.PrependReactor("create", "horizontalpodautoscalers", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		u.SetNamespace(hpaNS)
		var h autoscalingv2.HorizontalPodAutoscaler
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h))
		s.sent = append(s.sent, *h.DeepCopy())
		s.hpa = &h
		s.reconcile()
		return true, s.object(&h), nil
	})
	f.Dyn.PrependReactor("patch", "horizontalpodautoscalers", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var patch autoscalingv2.HorizontalPodAutoscaler
		require.NoError(t, json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &patch))
		s.hpa.Spec.Metrics = patch.Spec.Metrics
		s.sent = append(s.sent, *s.hpa.DeepCopy())
		s.reconcile()
		return true, s.object(s.hpa), nil
	})
	f.Dyn.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.podsW = watch.NewFakeWithChanSize(100, false)
		for _, p := range s.pods {
			s.push(s.podsW, watch.Modified, p)
		}
		return true, s.podsW, nil
	})
	f.Dyn.PrependWatchReactor("horizontalpodautoscalers", func(k8stesting.Action) (bool, watch.Interface, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.hpasW = watch.NewFakeWithChanSize(100, false)
		if s.hpa != nil {
			s.push(s.hpasW, watch.Modified, s.hpa)
		}
		return true, s.hpasW, nil
	})
}

// hpaCase is a world, what its adapters serve, and what the probe says.
type hpaCase struct {
	name string
	edit func(w *checkstest.World)
	sim  served
	// flag is --hpa-metric.
	flag string
	// rounds is how many more rounds of reads of custom metrics the wait
	// holds after the first.
	rounds int
	status checks.Status
	reason string
}

// customOnly leaves the world with prometheus-adapter serving the custom
// metrics API and nothing serving external metrics.
func customOnly(w *checkstest.World) {
	w.APIServices[1] = checkstest.APIService("v1beta1.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "True")
	w.APIServices = append(w.APIServices, checkstest.APIService("v1beta2.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "True"))
}

// runHPAProbe runs the probe on the case's world.
func runHPAProbe(t *testing.T, tc hpaCase) (checks.Result, error, *hpaSim) {
	t.Helper()
	w := checkstest.NewWorld(t)
	if tc.edit != nil {
		tc.edit(w)
	}
	sim := &hpaSim{served: tc.sim, t: t, f: w.Serve()}
	sim.serve()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), meta.RESTScopeNamespace)
	s := probe.NewSession(sim.f.Dyn, mapper, hpaRun, time.Minute)
	// The session's raw reads are the API server's too.
	s.Raw = &restfake.RESTClient{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
		body, err := sim.get(req.URL.RequestURI())
		if err != nil {
			status := err.(apierrors.APIStatus).Status()
			status.Kind, status.APIVersion = "Status", "v1"
			body, err = json.Marshal(status)
			require.NoError(t, err)
			return &http.Response{StatusCode: int(status.Code), Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
	})}
	if tc.flag != "" {
		m, err := probe.ParseMetric(tc.flag)
		require.NoError(t, err)
		s.Metric = &m
	}
	ticks := make(chan time.Time, tc.rounds)
	for range tc.rounds {
		ticks <- checkstest.Clock
	}
	close(ticks)
	env := &checks.Env{Cluster: sim.f.Cache(), Now: checkstest.FixedNow, Probe: s}
	r, err := HPAProbe{ticks: ticks}.Run(context.Background(), env)
	return r, err, sim
}

func commands(r checks.Result) []string {
	var out []string
	for _, e := range r.Evidence {
		out = append(out, e.Command)
	}
	return out
}

// The probe scales on what the cluster serves: an external metric first,
// else a custom metric of its pods (or of its namespace); with neither
// API served it skips, writing nothing.
func TestHPAProbeRun(t *testing.T) {
	external := served{external: true, externalValue: "8"}
	custom := served{custom: true, podValue: "40", listed: []string{"namespaces/" + gpuUtil, "pods/" + gpuUtil}}
	both := custom
	both.external, both.externalValue = true, "0"
	cases := []hpaCase{
		{name: "external served", sim: external,
			status: checks.Pass, reason: "an HPA on the external metric s0-queue-depth (value 8) scaled pods requesting nvidia.com/gpu from 1 to 2 in 0.0 s, both bound to nodes, and back to 1 in 0.0 s"},
		{name: "custom only: a Pods metric", edit: customOnly, sim: custom,
			status: checks.Pass, reason: "an HPA on the custom metric " + gpuUtil + " of its pods (40 per pod) scaled pods requesting nvidia.com/gpu from 1 to 2 in 0.0 s, both bound to nodes, and back to 1 in 0.0 s"},
		{name: "no external metric has a value: a custom one", sim: both,
			edit: func(w *checkstest.World) {
				w.APIServices = append(w.APIServices, checkstest.APIService("v1beta2.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "True"))
			},
			status: checks.Pass, reason: "an HPA on the custom metric " + gpuUtil + " of its pods (40 per pod)"},
		{name: "custom only: the pod's value shows on the third read", edit: customOnly, rounds: 2,
			sim:    func() served { s := custom; s.from = 2; s.listed = []string{"pods/" + gpuUtil}; return s }(),
			status: checks.Pass, reason: "an HPA on the custom metric " + gpuUtil + " of its pods (40 per pod)"},
		{name: "custom only: of namespaces alone, an Object metric", edit: customOnly,
			sim:    func() served { s := custom; s.listed = []string{"namespaces/" + gpuUtil}; return s }(),
			status: checks.Pass, reason: "an HPA on the custom metric " + gpuUtil + " of the run's namespace (value 40) scaled pods"},
		{name: "custom only: no value within the wait", edit: customOnly, rounds: 1,
			sim:    func() served { s := custom; s.from = 99; s.listed = []string{"pods/" + gpuUtil}; return s }(),
			status: checks.Skip, reason: "no custom metric tried had a value above zero for the probe's pod within 1m0s (the custom metric " + gpuUtil + " of its pods): name one with --hpa-metric"},
		{name: "custom only: nothing listed", edit: customOnly, sim: served{custom: true, listed: []string{"/custommetrics"}},
			status: checks.Skip, reason: "the custom metrics API (v1beta2) lists no metric of pods or namespaces, and no HPA of the cluster's scales on one; external.metrics.k8s.io is not registered: name one with --hpa-metric"},
		{name: "neither", edit: func(w *checkstest.World) { w.APIServices = slicesWithout(w.APIServices, 1) },
			status: checks.Skip, reason: "neither custom.metrics.k8s.io nor external.metrics.k8s.io is served and Available (custom.metrics.k8s.io is not registered; external.metrics.k8s.io is not registered): the probe has no metric to scale on but CPU and memory, which the requirement does not count"},
		{name: "neither Available",
			edit: func(w *checkstest.World) {
				w.APIServices[1] = checkstest.APIService("v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver", "False")
			},
			status: checks.Skip, reason: "(custom.metrics.k8s.io is not registered; external.metrics.k8s.io is not served: v1beta1.external.metrics.k8s.io Available=False (FailedDiscoveryCheck))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err, sim := runHPAProbe(t, tc)
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.status == checks.Skip && strings.HasPrefix(tc.name, "neither") {
				// Nothing written, nothing read but the APIServices.
				for _, a := range sim.f.Dyn.Actions() {
					assert.Contains(t, []string{"list", "watch"}, a.GetVerb(), "%s %s", a.GetVerb(), a.GetResource())
				}
				assert.Empty(t, sim.paths)
				assert.Equal(t, []string{"kubectl get apiservices | grep -E 'NAME|metrics\\.k8s\\.io'"}, commands(r))
			}
		})
	}
}

func slicesWithout[T any](s []T, i int) []T {
	return append(s[:i:i], s[i+1:]...)
}

// What the probe reads and sends on the custom metrics API: the discovery
// list, the value of its pods' metric through the API server (its last
// read in the evidence), then an HPA on that Pods metric with a target a
// tenth of the value per pod, raised to ten times it.
func TestHPAProbeCustomEvidence(t *testing.T) {
	r, err, sim := runHPAProbe(t, hpaCase{edit: customOnly, rounds: 2,
		sim: served{custom: true, podValue: "40", from: 2, listed: []string{"pods/" + gpuUtil}}})
	require.NoError(t, err)
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	cmds := commands(r)
	assert.Equal(t, "kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2", cmds[0])
	assert.Contains(t, r.Evidence[0].Output, `"name":"pods/`+gpuUtil+`"`)
	// Three reads of the value, one step: the last, which shows it.
	read := "kubectl get --raw '" + podsRead + "'"
	assert.Equal(t, 1, countOf(cmds, read), "%q", cmds)
	assert.Equal(t, 3, countOf(sim.paths, podsRead))
	for _, e := range r.Evidence {
		if e.Command == read {
			assert.Contains(t, e.Output, `"value":"40"`)
			assert.Equal(t, "the value of the custom metric "+gpuUtil+" of its pods, as the HPA controller reads it", e.Note)
		}
	}
	// Never the external metrics API: it is not served.
	for _, p := range sim.paths {
		assert.NotContains(t, p, "external.metrics.k8s.io")
	}
	require.Len(t, sim.sent, 2)
	up, down := sim.sent[0].Spec.Metrics, sim.sent[1].Spec.Metrics
	require.Len(t, up, 1)
	assert.Equal(t, autoscalingv2.PodsMetricSourceType, up[0].Type)
	assert.Equal(t, gpuUtil, up[0].Pods.Metric.Name)
	assert.Equal(t, "4", up[0].Pods.Target.AverageValue.String())
	assert.Equal(t, "400", down[0].Pods.Target.AverageValue.String())
	var said []string
	for _, row := range r.Table.Rows {
		said = append(said, row[0])
	}
	assert.Contains(t, said, "the custom metric "+gpuUtil+" of its pods (40 per pod) read")
	assert.Contains(t, said, "scaled down: 1 pod left")
}

// The external metric, as before: its discovery, its value in the run's
// namespace, an HPA on it; the custom metrics API is not read.
func TestHPAProbeExternalEvidence(t *testing.T) {
	r, err, sim := runHPAProbe(t, hpaCase{sim: served{external: true, custom: true, externalValue: "8", podValue: "40", listed: []string{"pods/" + gpuUtil}},
		edit: func(w *checkstest.World) {
			w.APIServices = append(w.APIServices, checkstest.APIService("v1beta2.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "True"))
		}})
	require.NoError(t, err)
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, []string{"/apis/external.metrics.k8s.io/v1beta1", "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + hpaNS + "/s0-queue-depth"}, sim.paths)
	require.Len(t, sim.sent, 2)
	m := sim.sent[0].Spec.Metrics[0]
	assert.Equal(t, autoscalingv2.ExternalMetricSourceType, m.Type)
	assert.Equal(t, "800m", m.External.Target.AverageValue.String())
	assert.Equal(t, "80", sim.sent[1].Spec.Metrics[0].External.Target.AverageValue.String())
}

// An Object metric describes the run's namespace, where the probe's HPA
// lives.
func TestHPAProbeObjectMetric(t *testing.T) {
	_, err, sim := runHPAProbe(t, hpaCase{edit: customOnly, sim: served{custom: true, podValue: "40", listed: []string{"namespaces/" + gpuUtil}}})
	require.NoError(t, err)
	require.Len(t, sim.sent, 2)
	m := sim.sent[0].Spec.Metrics[0]
	require.Equal(t, autoscalingv2.ObjectMetricSourceType, m.Type)
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: hpaNS}, m.Object.DescribedObject)
	assert.Equal(t, "4", m.Object.Target.AverageValue.String())
	assert.Contains(t, sim.paths, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+hpaNS+"/metrics/"+gpuUtil)
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// The custom metrics the probe tries, each once and at most five: the
// flag's, the Pods and namespace metrics of the cluster's own HPAs, then
// those of pods the adapter lists, then those of namespaces. A probe's
// HPA, a set-based selector and an adapter's placeholder are left out.
func TestCustomCandidates(t *testing.T) {
	w := checkstest.NewWorld(t)
	customOnly(w)
	pods := checkstest.GPUHPA("ml", "b", "x", corev1.ConditionTrue)
	pods.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "tokens_per_second", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"model": "llama"}}}}}}
	ns := checkstest.GPUHPA("ml", "c", "x", corev1.ConditionTrue)
	ns.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "ml"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "queue_length"}}}}
	setBased := pods.DeepCopy()
	setBased.Name = "d"
	setBased.Spec.Metrics[0].Pods.Metric = autoscalingv2.MetricIdentifier{Name: "lag", Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}}}}
	probes := pods.DeepCopy()
	probes.Namespace, probes.Name = "aiconform-probe-x", "aiconform-hpa"
	probes.Spec.Metrics[0].Pods.Metric = autoscalingv2.MetricIdentifier{Name: "probe_metric"}
	w.HPAs = append(w.HPAs, pods, ns, setBased, probes)
	f := w.Serve()
	f.Get = func(path string) ([]byte, error) {
		return json.Marshal(metav1.APIResourceList{APIResources: []metav1.APIResource{
			{Name: "/custommetrics"}, {Name: "namespaces/" + gpuUtil}, {Name: "pods/" + gpuUtil}, {Name: "pods/DCGM_FI_DEV_GPU_TEMP"}, {Name: "pods/tokens_per_second"}, {Name: "jobs.batch/" + gpuUtil},
		}})
	}
	s := probe.NewSession(nil, nil, "r", time.Minute)
	s.Metric = &probe.Metric{Name: "tokens_waiting"}
	env := &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow, Probe: s}
	var r checks.Result
	got, why, err := customCandidates(context.Background(), env, &r, "v1beta2")
	require.NoError(t, err)
	assert.Empty(t, why)
	var names []string
	for _, m := range got {
		names = append(names, m.key())
	}
	assert.Equal(t, []string{"Pods tokens_waiting", "Pods tokens_per_second{model=llama}", "Object queue_length", "Pods " + gpuUtil, "Pods DCGM_FI_DEV_GPU_TEMP"}, names)
	assert.Equal(t, []string{"kubectl get --raw /apis/custom.metrics.k8s.io/v1beta2"}, commands(r))

	// The flag's metric, listed of namespaces only, is an Object metric.
	s.Metric = &probe.Metric{Name: gpuUtil}
	w.HPAs = nil
	f = w.Serve()
	f.Get = func(path string) ([]byte, error) {
		return json.Marshal(metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "namespaces/" + gpuUtil}}})
	}
	env.Cluster = f.Cache()
	got, _, err = customCandidates(context.Background(), env, &r, "v1beta2")
	require.NoError(t, err)
	require.NotEmpty(t, got)
	assert.Equal(t, "Object "+gpuUtil, got[0].key())
}

// Which metrics APIs are served, as their APIServices say: the custom
// metrics API's v1beta2 when it is Available, v1beta1 else.
func TestServedMetricsAPIs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services []*unstructured.Unstructured
		want     metricsServed
	}{
		{"KEDA", []*unstructured.Unstructured{checkstest.APIService("v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver", "True")},
			metricsServed{external: true, missing: []string{"custom.metrics.k8s.io is not registered"}}},
		{"prometheus-adapter, v1beta2 down", []*unstructured.Unstructured{
			checkstest.APIService("v1beta1.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "True"),
			checkstest.APIService("v1beta2.custom.metrics.k8s.io", "monitoring", "prometheus-adapter", "False"),
		}, metricsServed{custom: "v1beta1", missing: []string{"external.metrics.k8s.io is not registered"}}},
		{"both", []*unstructured.Unstructured{
			checkstest.APIService("v1beta2.custom.metrics.k8s.io", "custom-metrics", "custom-metrics-apiserver", "True"),
			checkstest.APIService("v1beta1.custom.metrics.k8s.io", "custom-metrics", "custom-metrics-apiserver", "True"),
			checkstest.APIService("v1beta1.external.metrics.k8s.io", "custom-metrics", "custom-metrics-apiserver", "True"),
		}, metricsServed{external: true, custom: "v1beta2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			w.APIServices = tc.services
			env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
			got, err := servedMetricsAPIs(context.Background(), env)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The adapter framework's Service is known in any namespace: an install
// that puts it elsewhere keeps its name and the metrics it offers the probe.
func TestAdapterFoundInAnyNamespace(t *testing.T) {
	as, err := metricsAdapters()
	require.NoError(t, err)
	for _, ns := range []string{"custom-metrics", "monitoring"} {
		a := findAdapter(as, ns, "custom-metrics-apiserver")
		require.NotNil(t, a, ns)
		assert.Equal(t, "an adapter of sigs.k8s.io/custom-metrics-apiserver", a.Name)
		assert.Equal(t, []string{"my-external-metric"}, a.ProbeMetrics)
		assert.Equal(t, "an adapter of sigs.k8s.io/custom-metrics-apiserver ("+ns+"/custom-metrics-apiserver)", adapterName(as, ns, "custom-metrics-apiserver"))
	}
}
