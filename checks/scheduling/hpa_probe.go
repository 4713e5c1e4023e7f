package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// HPALabel marks the HPA probe's pods.
const HPALabel = "aiconform.io/hpa"

// hpaName names both the probe's Deployment and its HPA.
const hpaName = "aiconform-hpa"

// maxMetricsTried bounds the external metrics the probe reads to find one
// with a value.
const maxMetricsTried = 5

// HPAProbe scales a Deployment of accelerator pods of the run's own with an
// HPA on an external metric the cluster's adapter serves: up to two pods,
// then back to one.
type HPAProbe struct{}

// Meta implements checks.Check.
func (HPAProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "hpa-probe", Title: "An HPA scales accelerator pods up and down on an external metric",
		Requirement: "pod_autoscaling", Probe: true,
		Description: fmt.Sprintf("Under --probe only. Checks the external metrics API is served (`kubectl get --raw /apis/external.metrics.k8s.io/v1beta1`); since it lists no metric names, reads in the run's namespace the values of up to %d known metrics, in order: the one --hpa-metric names, those the cluster's own HPAs scale on, those its adapter always serves (checks/scheduling/metrics_adapters.yaml), until one is above zero. Creates a Deployment of one pod that requests one of the accelerator the Ready nodes offer most of (and tolerates a taint of that name), running --probe-image with CPU and memory limits, non-root; then an HPA (min 1, max 2, no stabilization window) on that metric with an average-value target a tenth of its value, so the controller must scale up; once two pods are bound, the target is raised to ten times the value, so it must scale down. Watches the pods and the HPA (no polling), with a timeline of every pod's binding and deletion and of the HPA's replicas and conditions. Passes when the HPA scales up to two pods, both bound to nodes, and back to one, each within the probe timeout. Everything is labelled aiconform.io/run=RUN and deleted with the run's namespace.", maxMetricsTried),
		Remediation: "An HPA with ScalingActive=False could not read the metric: the adapter's APIService must be Available and serve the metric in the HPA's namespace. An HPA that computed two replicas whose second pod stays Pending: read the pod's scheduling message (no accelerator free, a taint not tolerated).",
	}
}

// hpaWatch follows the probe's pods and HPA.
type hpaWatch struct {
	now      func() time.Time
	timeline probe.Timeline
	bound    map[string]string // live pod -> node ("" while pending)
	pending  string            // the scheduler's last word on a pending pod
	desired  int32
	current  int32
	conds    map[string]string // condition type -> last status+reason said
	problem  string            // the HPA's last condition that is not True
}

// Run implements checks.Check.
func (HPAProbe) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe scales a Deployment of accelerator pods from one to two and back with an HPA on an external metric")
		return r, nil
	}
	acc, err := probeAccelerator(ctx, env)
	if err != nil {
		return r, err
	}
	if acc == "" {
		r.Finish(checks.Skip, "no Ready node offers an accelerator: the probe scales pods that request one")
		return r, nil
	}
	if _, err := s.EnsureNamespace(ctx); err != nil {
		return r, err
	}
	metric, value, err := externalMetric(ctx, env, &r)
	if err != nil {
		return r, err
	}
	if metric.Name == "" {
		r.Finish(checks.Skip, "no external metric known here has a value above zero in the run's namespace (none of the cluster's HPAs, nor of its adapter's): name one with --hpa-metric")
		return r, nil
	}

	w := &hpaWatch{now: env.Now, bound: map[string]string{}, conds: map[string]string{}}
	w.timeline.T0 = env.Now()
	dep, err := hpaDeployment(s.Image, acc)
	if err != nil {
		return r, err
	}
	first, err := checks.ProbeCreate(ctx, env, &r, &w.timeline, dep, fmt.Sprintf("one pod requesting one %s", acc))
	if err != nil {
		return checks.CreateFailed(r, dep, err)
	}
	events, stop, err := s.WatchAll(ctx, first.GetResourceVersion(), []probe.Source{
		{Tag: podsTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: HPALabel}},
		{Tag: hpaTag, GVR: cluster.HorizontalPodAutoscalers.GVR, Namespaced: true},
	})
	if err != nil {
		return r, err
	}
	defer stop()
	phase := func(done func() bool) (bool, error) { return s.Phase(ctx, events, w.apply, done) }
	// end adds what the probe left behind and what it saw; every outcome
	// past the Deployment's creation keeps them, a judgement or not.
	end := func() {
		fresh := env.Fresh()
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.HorizontalPodAutoscalers}, Namespace: s.Namespace}, "the probe's HPA")
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: HPALabel, Wide: true}, "its pods and the nodes they are bound to")
		r.Table = &checks.Table{Header: []string{"EVENT", "AT (UTC)", "SINCE START"}, Rows: w.timeline.Rows}
	}
	finish := func(st checks.Status, format string, args ...any) (checks.Result, error) {
		end()
		r.Finish(st, format, args...)
		return r, nil
	}
	cannotJudge := func(format string, args ...any) (checks.Result, error) {
		end()
		return r, fmt.Errorf("cannot judge: "+format, args...)
	}

	if ok, err := phase(func() bool { return w.boundPods() >= 1 }); err != nil {
		return r, err
	} else if !ok {
		return cannotJudge("the probe's pod requesting one %s was not bound within %s (%s)", acc, s.Timeout, w.pendingWhy())
	}
	up := resource.NewMilliQuantity(max(value.MilliValue()/10, 1), resource.DecimalSI)
	hpa, err := checks.ProbeObject(hpaObject(metric, up.String()))
	if err != nil {
		return r, err
	}
	t0 := env.Now()
	if _, err := checks.ProbeCreate(ctx, env, &r, &w.timeline, hpa, fmt.Sprintf("an HPA on %s with a target of %s per pod, a tenth of its value: it must scale up", metric, up)); err != nil {
		return checks.CreateFailed(r, hpa, err)
	}
	if ok, err := phase(func() bool { return w.desired >= 2 && w.boundPods() >= 2 }); err != nil {
		return r, err
	} else if !ok {
		if w.desired >= 2 {
			return cannotJudge("the HPA asked for 2 pods, but the second was not bound within %s (%s)", s.Timeout, w.pendingWhy())
		}
		return finish(checks.Fail, "the HPA did not scale up within %s on %s (its value %s, target %s per pod): %s", s.Timeout, metric, value.String(), up, w.why())
	}
	upIn := env.Now().Sub(t0)
	w.timeline.Add(env.Now(), "scaled up: 2 pods bound")

	m, err := s.Mapping(hpa.GroupVersionKind())
	if err != nil {
		return r, err
	}
	down := value.DeepCopy()
	down.Mul(10)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"metrics": []autoscalingv2.MetricSpec{externalSpec(metric, down.String())}}})
	if err != nil {
		return r, err
	}
	t1 := env.Now()
	_, perr := s.Patch(ctx, m, hpaName, patch)
	out := probe.ErrorText("patching", "", perr)
	if perr == nil {
		out = probe.PatchedText(m, hpaName)
		w.timeline.Add(t1, "target raised to %s per pod", down.String())
	}
	r.Evidence = append(r.Evidence, checks.Step{Command: probe.PatchCommand(s.Namespace, m, hpaName, patch), Output: out, CapturedAt: t1.UTC(),
		Note: "the target raised to ten times the metric's value: it must scale down"})
	if perr != nil {
		return r, fmt.Errorf("cannot patch the probe's HPA: %w", perr)
	}
	if ok, err := phase(func() bool { return w.desired == 1 && len(w.bound) == 1 }); err != nil {
		return r, err
	} else if !ok {
		return finish(checks.Fail, "the HPA scaled up to 2 pods in %s, but not back down to 1 within %s: %s", probe.Seconds(upIn), s.Timeout, w.why())
	}
	downIn := env.Now().Sub(t1)
	w.timeline.Add(env.Now(), "scaled down: 1 pod left")
	return finish(checks.Pass, "an HPA on the external metric %s (value %s) scaled pods requesting %s from 1 to 2 in %s, both bound to nodes, and back to 1 in %s", metric, value.String(), acc, probe.Seconds(upIn), probe.Seconds(downIn))
}

// hpaTag names the probe's watch of its HPA.
const hpaTag = "hpa"

// probeAccelerator is the accelerator resource the Ready nodes offer most
// of, "" when none offers any.
func probeAccelerator(ctx context.Context, env *checks.Env) (string, error) {
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		return "", err
	}
	total := map[string]int64{}
	for _, n := range nodes {
		if ready, _ := checks.NodeReady(n); ready != corev1.ConditionTrue || n.Spec.Unschedulable {
			continue
		}
		for name := range checks.AcceleratorResources(n) {
			q := n.Status.Allocatable[name]
			total[string(name)] += q.Value()
		}
	}
	best := ""
	for _, name := range checks.SortedKeys(total) {
		if total[name] > 0 && (best == "" || total[name] > total[best]) {
			best = name
		}
	}
	return best, nil
}

// externalMetric finds an external metric with a value above zero in the
// run's namespace among the candidates, showing each read as `kubectl get
// --raw`. It returns no name when none has one; the external metrics API
// not being served is an error.
func externalMetric(ctx context.Context, env *checks.Env, r *checks.Result) (probe.Metric, resource.Quantity, error) {
	s := env.Probe
	var zero resource.Quantity
	raw := func(uri, note string) ([]byte, error) {
		body, err := s.GetRaw(ctx, uri)
		out := string(body)
		if err != nil {
			out = probe.ErrorText("", "", err)
		}
		r.Evidence = append(r.Evidence, checks.Step{Command: probe.RawCommand(uri), Output: out, CapturedAt: env.Now().UTC(), Note: note})
		return body, err
	}
	base := "/apis/" + externalMetricsGroup + "/v1beta1"
	if _, err := raw(base, "the external metrics API is served"); err != nil {
		return probe.Metric{}, zero, fmt.Errorf("cannot read the external metrics: %w", err)
	}
	candidates, err := metricCandidates(ctx, env)
	if err != nil {
		return probe.Metric{}, zero, err
	}
	for i, m := range candidates {
		if i >= maxMetricsTried {
			break
		}
		uri := base + "/namespaces/" + s.Namespace + "/" + m.Name
		if len(m.Selector) > 0 {
			uri += "?" + url.Values{"labelSelector": {labels.SelectorFromSet(m.Selector).String()}}.Encode()
		}
		body, err := raw(uri, "the value of "+m.String()+" in the run's namespace, as the HPA controller reads it")
		if err != nil {
			continue // not served here: the next candidate
		}
		var values struct {
			Items []struct {
				Value resource.Quantity `json:"value"`
			} `json:"items"`
		}
		if json.Unmarshal(body, &values) != nil {
			continue
		}
		var sum resource.Quantity
		for _, v := range values.Items {
			sum.Add(v.Value)
		}
		if sum.Sign() > 0 {
			return m, sum, nil
		}
	}
	return probe.Metric{}, zero, nil
}

// metricCandidates are the external metrics the probe may scale on, in
// order: the one --hpa-metric names, those the cluster's own HPAs scale
// on, and those the adapter serving external metrics always serves. The
// external metrics API lists no metric names, so these are what is known.
func metricCandidates(ctx context.Context, env *checks.Env) ([]probe.Metric, error) {
	var out []probe.Metric
	add := func(m probe.Metric) {
		if !slices.ContainsFunc(out, func(o probe.Metric) bool { return o.String() == m.String() }) {
			out = append(out, m)
		}
	}
	if env.Probe.Metric != nil {
		add(*env.Probe.Metric)
	}
	hpas, err := checks.List[*autoscalingv2.HorizontalPodAutoscaler](ctx, env, cluster.Query{Resource: cluster.HorizontalPodAutoscalers})
	if err != nil {
		return nil, err
	}
	for _, h := range hpas {
		if _, ok := checks.ProbeRun(h.Labels, h.Namespace); ok {
			continue
		}
		for _, m := range h.Spec.Metrics {
			if m.Type != autoscalingv2.ExternalMetricSourceType || m.External == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsMap(m.External.Metric.Selector)
			if err != nil {
				continue // set-based: not what a probe can repeat
			}
			add(probe.Metric{Name: m.External.Metric.Name, Selector: sel})
		}
	}
	adapters, err := metricsAdapters()
	if err != nil {
		return nil, err
	}
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return nil, err
	}
	for _, svc := range services {
		group, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
		ns, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "name")
		if a := findAdapter(adapters, ns, name); group == externalMetricsGroup && a != nil {
			for _, m := range a.ProbeMetrics {
				add(probe.Metric{Name: m})
			}
		}
	}
	return out, nil
}

// hpaDeployment is the probe's Deployment: one pod asking one accelerator.
func hpaDeployment(image, acc string) (*unstructured.Unstructured, error) {
	labels := map[string]string{HPALabel: "probe"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: hpaName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       checks.ProbePodSpec(image, corev1.ResourceList{corev1.ResourceName(acc): resource.MustParse("1")}, acc),
			},
		},
	}
	return checks.Unstructured(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
}

// hpaObject is the probe's HPA with an external metric target.
func hpaObject(metric probe.Metric, target string) string {
	spec, _ := json.Marshal(externalSpec(metric, target))
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: %[1]s
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
  minReplicas: 1
  maxReplicas: 2
  metrics: [%[2]s]
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 1, periodSeconds: 1}]
    scaleDown:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 1, periodSeconds: 1}]
`, hpaName, spec)
}

func externalSpec(metric probe.Metric, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: metric.Name, Selector: metric.LabelSelector()},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
	}}
}

func (w *hpaWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if e.Tag == hpaTag {
		var h autoscalingv2.HorizontalPodAutoscaler
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h) == nil && h.Name == hpaName {
			w.applyHPA(&h)
		}
		return
	}
	var pod corev1.Pod
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod) != nil {
		return
	}
	if e.Type == watch.Deleted || pod.DeletionTimestamp != nil {
		if _, live := w.bound[pod.Name]; live {
			delete(w.bound, pod.Name)
			w.timeline.Add(w.now(), "pod %s deleted", pod.Name)
		}
		return
	}
	node, seen := w.bound[pod.Name]
	if !seen {
		w.timeline.Add(w.now(), "pod %s created", pod.Name)
	}
	w.bound[pod.Name] = pod.Spec.NodeName
	if pod.Spec.NodeName != "" && node == "" {
		w.timeline.Add(w.now(), "pod %s bound to %s", pod.Name, pod.Spec.NodeName)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			w.pending = fmt.Sprintf("pod %s: %s: %s", pod.Name, c.Reason, c.Message)
		}
	}
}

// applyHPA puts each change of the HPA's replicas and conditions in the
// timeline.
func (w *hpaWatch) applyHPA(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Status.DesiredReplicas != w.desired || h.Status.CurrentReplicas != w.current {
		w.desired, w.current = h.Status.DesiredReplicas, h.Status.CurrentReplicas
		value := ""
		for _, m := range h.Status.CurrentMetrics {
			if m.External != nil && m.External.Current.AverageValue != nil {
				value = fmt.Sprintf(" (metric at %s per pod)", m.External.Current.AverageValue)
			}
		}
		w.timeline.Add(w.now(), "HPA: %d current, %d desired replicas%s", w.current, w.desired, value)
	}
	for _, c := range h.Status.Conditions {
		said := string(c.Status) + " " + c.Reason
		if w.conds[string(c.Type)] == said {
			continue
		}
		w.conds[string(c.Type)] = said
		w.timeline.Add(w.now(), "HPA: %s=%s (%s)", c.Type, c.Status, c.Reason)
		// Only these two say the HPA cannot act; ScalingLimited (clamped
		// to the probe's maximum of 2) and the others are normal.
		if c.Type != autoscalingv2.ScalingActive && c.Type != autoscalingv2.AbleToScale {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			w.problem = fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		} else if strings.HasPrefix(w.problem, string(c.Type)+"=") {
			w.problem = ""
		}
	}
}

func (w *hpaWatch) boundPods() int {
	n := 0
	for _, node := range w.bound {
		if node != "" {
			n++
		}
	}
	return n
}

func (w *hpaWatch) pendingWhy() string {
	if w.pending == "" {
		return "the scheduler said nothing"
	}
	return w.pending
}

// why is what the HPA last said, for a verdict.
func (w *hpaWatch) why() string {
	if w.problem != "" {
		return w.problem
	}
	return fmt.Sprintf("it reports %d current and %d desired replicas", w.current, w.desired)
}
