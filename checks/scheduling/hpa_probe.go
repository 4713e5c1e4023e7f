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
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// hpaPodLabels are the probe's pods' labels, which its Deployment selects
// and its reads of a Pods metric name as the HPA controller does.
var hpaPodLabels = map[string]string{HPALabel: "probe"}

// maxMetricsTried bounds the metrics of each metrics API the probe reads
// to find one with a value.
const maxMetricsTried = 5

// metricPollEvery is how often the probe reads the custom metrics of its
// pod again until one has a value: an adapter over Prometheus has none
// for a new pod until its series were scraped.
const metricPollEvery = 5 * time.Second

// HPAProbe scales a Deployment of accelerator pods of the run's own with an
// HPA on a metric the cluster serves, an external metric or else a custom
// metric of its pods: up to two pods, then back to one.
type HPAProbe struct {
	// ticks, when set, replaces the clock between two rounds of reads of
	// the custom metrics of the probe's pod: each value received is one
	// more round, and its closing ends the wait. Nil is a ticker of
	// metricPollEvery within the probe timeout.
	ticks <-chan time.Time
}

// Meta implements checks.Check.
func (HPAProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "hpa-probe", Title: "An HPA scales accelerator pods up and down on an external or custom metric",
		Requirement: "pod_autoscaling", Probe: true,
		Description: fmt.Sprintf("Under --probe only. Scales on what the cluster serves, as its APIServices show it (one LIST). "+
			"First an external metric: when external.metrics.k8s.io is served and Available and `kubectl get "+
			"--raw /apis/external.metrics.k8s.io/v1beta1` answers, since that lists no metric names, reads "+
			"in the run's namespace the values of up to %[1]d known metrics, in order: the one --hpa-metric "+
			"names, those the cluster's own HPAs scale on, those its adapter always serves "+
			"(checks/scheduling/metrics_adapters.yaml), until one is above zero. Else a custom metric: when "+
			"custom.metrics.k8s.io is served and Available, reads its discovery list (`kubectl get --raw "+
			"/apis/custom.metrics.k8s.io/v1beta2`, or v1beta1) for what the adapter serves, and tries up to "+
			"%[1]d, in order: the one --hpa-metric names, the Pods metrics (and Object metrics of a "+
			"namespace) the cluster's own HPAs scale on, the metrics of pods it lists (such as "+
			"DCGM_FI_DEV_GPU_UTIL through prometheus-adapter), then those of namespaces it lists. Skips, "+
			"writing nothing, when neither API is served and Available: an API the requirement does not ask "+
			"for being absent is no finding. Creates a Deployment of one pod that requests one of the "+
			"accelerator the Ready nodes offer most of (and tolerates a taint of that name), running "+
			"--probe-image with CPU and memory limits, non-root. For a custom metric, once the pod is bound, "+
			"reads each one's value through the API server as the HPA controller will (a Pods metric for the "+
			"probe's pods, `kubectl get --raw "+
			"'/apis/custom.metrics.k8s.io/v1beta2/namespaces/RUN/pods/*/METRIC?labelSelector=aiconform.io%%2Fhpa%%3Dprobe'`; "+
			"an Object metric for the run's namespace), every %[2]s within the probe timeout, until one is "+
			"above zero, and skips when none is. Then creates an HPA (min 1, max 2, no stabilization window) "+
			"on that metric with an average-value target a tenth of its value (per pod for a Pods metric), "+
			"so the controller must scale up; once two pods are bound, the target is raised to ten times the "+
			"value, so it must scale down. Watches the pods and the HPA (no polling), with a timeline of "+
			"every pod's binding and deletion and of the HPA's replicas and conditions. Passes when the HPA "+
			"scales up to two pods, both bound to nodes, and back to one, each within the probe timeout. "+
			"Everything is labelled aiconform.io/run=RUN and deleted with the run's namespace.", maxMetricsTried, metricPollEvery),
		Remediation: "An HPA with ScalingActive=False could not read the metric: the adapter's APIService must be " +
			"Available and serve the metric in the HPA's namespace (for a Pods metric, for each of its pods: " +
			"one without a value keeps an HPA from scaling down). An HPA that computed two replicas whose " +
			"second pod stays Pending: read the pod's scheduling message (no accelerator free, a taint not " +
			"tolerated). A skip that names no metric with a value: name one the adapter serves with " +
			"--hpa-metric.",
	}
}

// hpaMetric is a metric the probe's HPA may scale on, and its value once
// read.
type hpaMetric struct {
	// source is External, Pods (the probe's pods) or Object (the run's
	// namespace).
	source autoscalingv2.MetricSourceType
	probe.Metric
	// value is the external metric's total in the run's namespace, the
	// average of a Pods metric over the probe's pods, or the namespace's
	// value of an Object metric.
	value resource.Quantity
}

// label names the metric in a reason.
func (m hpaMetric) label() string {
	switch m.source {
	case autoscalingv2.PodsMetricSourceType:
		return "the custom metric " + m.String() + " of its pods"
	case autoscalingv2.ObjectMetricSourceType:
		return "the custom metric " + m.String() + " of the run's namespace"
	}
	return "the external metric " + m.String()
}

// valued is label with the value read.
func (m hpaMetric) valued() string {
	if m.source == autoscalingv2.PodsMetricSourceType {
		return fmt.Sprintf("%s (%s per pod)", m.label(), m.value.String())
	}
	return fmt.Sprintf("%s (value %s)", m.label(), m.value.String())
}

// key tells candidates apart.
func (m hpaMetric) key() string { return string(m.source) + " " + m.String() }

// hpaWatch follows the probe's pods and HPA.
type hpaWatch struct {
	now      func() time.Time
	timeline *probe.Timeline
	bound    map[string]string // live pod -> node ("" while pending)
	pending  string            // the scheduler's last word on a pending pod
	desired  int32
	current  int32
	conds    map[string]string // condition type -> last status+reason said
	problem  string            // the HPA's last condition that is not True
}

// Run implements checks.Check.
func (c HPAProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe scales a Deployment of accelerator pods from one to two and back with an HPA on an external or custom metric")
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
	served, err := servedMetricsAPIs(ctx, env)
	if err != nil {
		return r, err
	}
	if !served.external && served.custom == "" {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.APIServices}, Grep: cluster.GrepAny("NAME", "metrics.k8s.io")}, "the metrics APIs the aggregator serves")
		r.Finish(checks.Skip, "neither %s nor %s is served and Available (%s): the probe has no metric to "+
			"scale on but CPU and memory, which the requirement does not count", customMetricsGroup, externalMetricsGroup, strings.Join(served.missing, "; "))
		return r, nil
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	var chosen *hpaMetric
	var none []string // why each API gave no metric
	if served.external {
		m, why, err := externalMetric(ctx, env, &r)
		if err != nil {
			return r, err
		}
		chosen = m
		if why != "" {
			none = append(none, why)
		}
	}
	var candidates []hpaMetric
	if chosen == nil && served.custom != "" {
		var why string
		candidates, why, err = customCandidates(ctx, env, &r, served.custom)
		if err != nil {
			return r, err
		}
		if why != "" {
			none = append(none, why)
		}
	}
	if chosen == nil && len(candidates) == 0 {
		r.Finish(checks.Skip, "%s: name one with --hpa-metric", strings.Join(slices.Concat(none, served.missing), "; "))
		return r, nil
	}

	w := &hpaWatch{now: env.Now, timeline: &pr.Timeline, bound: map[string]string{}, conds: map[string]string{}}
	dep, err := hpaDeployment(s.Image, acc)
	if err != nil {
		return r, err
	}
	if _, err := pr.Create(ctx, dep, fmt.Sprintf("one pod requesting one %s", acc)); err != nil {
		return pr.Refused(err)
	}
	if err := pr.Watch(ctx, w.apply,
		probe.Source{Tag: podsTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: HPALabel}},
		probe.Source{Tag: hpaTag, GVR: cluster.HorizontalPodAutoscalers.GVR, Namespaced: true},
	); err != nil {
		return r, err
	}
	phase := func(done func() bool) (bool, error) { return pr.Phase(ctx, done) }
	// end adds what the probe left behind and what it saw; every outcome
	// past the Deployment's creation keeps them, a judgement or not.
	end := func() {
		fresh := env.Fresh()
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.HorizontalPodAutoscalers}, Namespace: s.Namespace}, "the probe's HPA")
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: HPALabel, Wide: true}, "its pods and the nodes they are bound to")
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
	if chosen == nil {
		m, err := c.customMetric(ctx, env, &r, w, pr.Events(), served.custom, candidates)
		if err != nil {
			end()
			return r, err
		}
		if m == nil {
			var names []string
			for _, m := range candidates {
				names = append(names, m.label())
			}
			return finish(checks.Skip, "no custom metric tried had a value above zero for the probe's pod within %s "+
				"(%s): name one with --hpa-metric", s.Timeout, strings.Join(names, ", "))
		}
		chosen = m
	}
	value := chosen.value
	up := resource.NewMilliQuantity(max(value.MilliValue()/10, 1), resource.DecimalSI)
	hpa, err := checks.ProbeObject(hpaObject(metricSpec(*chosen, s.Namespace, up.String())))
	if err != nil {
		return r, err
	}
	t0 := env.Now()
	if _, err := pr.Create(ctx, hpa, fmt.Sprintf("an HPA on %s with a target of %s per pod, a tenth of its value: it must scale up", chosen.label(), up)); err != nil {
		return pr.Refused(err)
	}
	if ok, err := phase(func() bool { return w.desired >= 2 && w.boundPods() >= 2 }); err != nil {
		return r, err
	} else if !ok {
		if w.desired >= 2 {
			return cannotJudge("the HPA asked for 2 pods, but the second was not bound within %s (%s)", s.Timeout, w.pendingWhy())
		}
		return finish(checks.Fail, "the HPA did not scale up within %s on %s (its value %s, target %s per pod): %s", s.Timeout, chosen.label(), value.String(), up, w.why())
	}
	upIn := env.Now().Sub(t0)
	w.timeline.Add(env.Now(), "scaled up: 2 pods bound")

	m, err := s.Mapping(hpa.GroupVersionKind())
	if err != nil {
		return r, err
	}
	down := value.DeepCopy()
	down.Mul(10)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"metrics": []autoscalingv2.MetricSpec{metricSpec(*chosen, s.Namespace, down.String())}}})
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
	return finish(checks.Pass, "an HPA on %s scaled pods requesting %s from 1 to 2 in %s, both bound to "+
		"nodes, and back to 1 in %s", chosen.valued(), acc, probe.Seconds(upIn), probe.Seconds(downIn))
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
		if ready, _ := kube.NodeReady(n); ready != corev1.ConditionTrue || n.Spec.Unschedulable {
			continue
		}
		for name := range hardware.AcceleratorResources(n) {
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

// metricsServed is what the aggregator serves of the metrics APIs an HPA
// scales on beyond CPU and memory.
type metricsServed struct {
	external bool
	// custom is the version of custom.metrics.k8s.io to read (v1beta2
	// when it is Available, as the HPA controller prefers it), "" when
	// none is.
	custom string
	// missing says why each API that is not served is not.
	missing []string
}

// servedMetricsAPIs reads the APIServices of the custom and external
// metrics APIs: an API is served when one of its versions is registered
// and Available.
func servedMetricsAPIs(ctx context.Context, env *checks.Env) (metricsServed, error) {
	var out metricsServed
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return out, err
	}
	available := map[string][]string{}   // group -> its Available versions
	unavailable := map[string][]string{} // group -> why each other version is not
	for _, svc := range services {
		group, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(svc.Object, "spec", "version")
		if group != customMetricsGroup && group != externalMetricsGroup {
			continue
		}
		c, ok := kube.FindCondition(kube.Conditions(svc), "Available")
		switch {
		case ok && c.Status == "True":
			available[group] = append(available[group], version)
		case ok:
			unavailable[group] = append(unavailable[group], fmt.Sprintf("%s Available=%s (%s)", svc.GetName(), c.Status, c.Reason))
		default:
			unavailable[group] = append(unavailable[group], svc.GetName()+" has no Available condition")
		}
	}
	out.external = len(available[externalMetricsGroup]) > 0
	for _, v := range []string{"v1beta2", "v1beta1"} {
		if out.custom == "" && slices.Contains(available[customMetricsGroup], v) {
			out.custom = v
		}
	}
	for _, g := range []string{customMetricsGroup, externalMetricsGroup} {
		switch {
		case g == customMetricsGroup && out.custom != "", g == externalMetricsGroup && out.external:
		case len(unavailable[g]) > 0:
			out.missing = append(out.missing, g+" is not served: "+strings.Join(unavailable[g], ", "))
		default:
			out.missing = append(out.missing, g+" is not registered")
		}
	}
	return out, nil
}

// refusedRead is a read the API server refused: the probe cannot judge
// without it, whatever else it could read.
func refusedRead(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// rawRead reads path through the API server, now, and adds the read to
// r's evidence as `kubectl get --raw`.
func rawRead(ctx context.Context, env *checks.Env, r *checks.Result, path, note string) ([]byte, error) {
	fresh := env.Fresh()
	r.AddRawEvidence(ctx, fresh, cluster.GetRaw{Path: path}, note)
	body, _, err := fresh.Cluster.Raw(ctx, path) // the read just made, from the cache
	return body, err
}

// externalMetric finds an external metric with a value above zero in the
// run's namespace among the candidates, showing each read as `kubectl get
// --raw`. With none, it says why; only a read the API server refused is
// an error.
func externalMetric(ctx context.Context, env *checks.Env, r *checks.Result) (*hpaMetric, string, error) {
	s := env.Probe
	base := "/apis/" + externalMetricsGroup + "/v1beta1"
	if _, err := rawRead(ctx, env, r, base, "the external metrics API is served"); err != nil {
		if refusedRead(err) {
			return nil, "", fmt.Errorf("cannot read the external metrics: %w", err)
		}
		return nil, fmt.Sprintf("%s does not answer: %v", externalMetricsGroup, err), nil
	}
	candidates, err := metricCandidates(ctx, env)
	if err != nil {
		return nil, "", err
	}
	for i, m := range candidates {
		if i >= maxMetricsTried {
			break
		}
		uri := base + "/namespaces/" + s.Namespace + "/" + m.Name
		if len(m.Selector) > 0 {
			uri += "?" + url.Values{"labelSelector": {labels.SelectorFromSet(m.Selector).String()}}.Encode()
		}
		body, err := rawRead(ctx, env, r, uri, "the value of "+m.String()+" in the run's namespace, as the HPA controller reads it")
		if err != nil {
			if refusedRead(err) {
				return nil, "", fmt.Errorf("cannot read the external metric %s: %w", m, err)
			}
			continue // not served here: the next candidate
		}
		if sum, _, ok := metricValues(body); ok && sum.Sign() > 0 {
			return &hpaMetric{source: autoscalingv2.ExternalMetricSourceType, Metric: m, value: sum}, "", nil
		}
	}
	return nil, "no external metric known here has a value above zero in the run's namespace (none of the cluster's HPAs, nor of its adapter's)", nil
}

// metricValues is the sum of the values of a metrics API's list
// (ExternalMetricValueList, or MetricValueList of either custom metrics
// version) and how many there are; not ok when the body is not one.
func metricValues(body []byte) (sum resource.Quantity, n int, ok bool) {
	var values struct {
		Items []struct {
			Value resource.Quantity `json:"value"`
		} `json:"items"`
	}
	if json.Unmarshal(body, &values) != nil {
		return sum, 0, false
	}
	for _, v := range values.Items {
		sum.Add(v.Value)
	}
	return sum, len(values.Items), true
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
	hpas, err := clusterHPAs(ctx, env)
	if err != nil {
		return nil, err
	}
	for _, h := range hpas {
		for _, m := range h.Spec.Metrics {
			if m.Type != autoscalingv2.ExternalMetricSourceType || m.External == nil {
				continue
			}
			if pm, ok := repeatable(m.External.Metric); ok {
				add(pm)
			}
		}
	}
	adapters, err := adaptersServing(ctx, env, externalMetricsGroup)
	if err != nil {
		return nil, err
	}
	for _, a := range adapters {
		for _, m := range a.ProbeMetrics {
			add(probe.Metric{Name: m})
		}
	}
	return out, nil
}

// clusterHPAs are the cluster's own HPAs, a probe run's left out.
func clusterHPAs(ctx context.Context, env *checks.Env) ([]*autoscalingv2.HorizontalPodAutoscaler, error) {
	hpas, err := checks.List[*autoscalingv2.HorizontalPodAutoscaler](ctx, env, cluster.Query{Resource: cluster.HorizontalPodAutoscalers})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(hpas), func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
		_, probed := checks.ProbeRun(h.Labels, h.Namespace)
		return probed
	}), nil
}

// repeatable is an HPA's metric as the probe can name it: not with a
// set-based selector.
func repeatable(id autoscalingv2.MetricIdentifier) (probe.Metric, bool) {
	sel, err := metav1.LabelSelectorAsMap(id.Selector)
	if err != nil {
		return probe.Metric{}, false
	}
	return probe.Metric{Name: id.Name, Selector: sel}, true
}

// adaptersServing are the known adapters behind the APIServices of group.
func adaptersServing(ctx context.Context, env *checks.Env, group string) ([]*metricsAdapter, error) {
	adapters, err := metricsAdapters()
	if err != nil {
		return nil, err
	}
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return nil, err
	}
	var out []*metricsAdapter
	for _, svc := range services {
		g, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
		ns, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(svc.Object, "spec", "service", "name")
		if a := findAdapter(adapters, ns, name); g == group && a != nil && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// customCandidates reads the custom metrics API's discovery list, showing
// it as `kubectl get --raw`, and returns the metrics the probe may scale
// on, at most maxMetricsTried, in order: the one --hpa-metric names, the
// Pods metrics and namespace Object metrics the cluster's own HPAs scale
// on, the metrics of pods the list names, then those of namespaces. With none, it says why; only a
// read the API server refused is an error.
func customCandidates(ctx context.Context, env *checks.Env, r *checks.Result, version string) ([]hpaMetric, string, error) {
	base := "/apis/" + customMetricsGroup + "/" + version
	body, err := rawRead(ctx, env, r, base, "the custom metrics API is served: the metrics its adapter lists")
	if err != nil {
		if refusedRead(err) {
			return nil, "", fmt.Errorf("cannot read the custom metrics: %w", err)
		}
		return nil, fmt.Sprintf("%s does not answer: %v", customMetricsGroup, err), nil
	}
	// Each resource is RESOURCE/METRIC: the metric of objects of that
	// resource. Others (an adapter's placeholder) name no metric.
	var list metav1.APIResourceList
	_ = json.Unmarshal(body, &list) // a list that does not parse lists nothing
	var ofPods, ofNamespaces []string
	for _, res := range list.APIResources {
		resource, metric, ok := strings.Cut(res.Name, "/")
		switch {
		case !ok || metric == "":
		case resource == "pods":
			ofPods = append(ofPods, metric)
		case resource == "namespaces":
			ofNamespaces = append(ofNamespaces, metric)
		}
	}

	var out []hpaMetric
	add := func(src autoscalingv2.MetricSourceType, m probe.Metric) {
		c := hpaMetric{source: src, Metric: m}
		if !slices.ContainsFunc(out, func(o hpaMetric) bool { return o.key() == c.key() }) {
			out = append(out, c)
		}
	}
	if m := env.Probe.Metric; m != nil {
		// Of pods, unless the adapter lists it of namespaces only.
		src := autoscalingv2.PodsMetricSourceType
		if !slices.Contains(ofPods, m.Name) && slices.Contains(ofNamespaces, m.Name) {
			src = autoscalingv2.ObjectMetricSourceType
		}
		add(src, *m)
	}
	hpas, err := clusterHPAs(ctx, env)
	if err != nil {
		return nil, "", err
	}
	for _, h := range hpas {
		for _, m := range h.Spec.Metrics {
			switch {
			case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
				if pm, ok := repeatable(m.Pods.Metric); ok {
					add(autoscalingv2.PodsMetricSourceType, pm)
				}
			case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && m.Object.DescribedObject.Kind == "Namespace":
				if pm, ok := repeatable(m.Object.Metric); ok {
					add(autoscalingv2.ObjectMetricSourceType, pm)
				}
			}
		}
	}
	for _, name := range ofPods {
		add(autoscalingv2.PodsMetricSourceType, probe.Metric{Name: name})
	}
	for _, name := range ofNamespaces {
		add(autoscalingv2.ObjectMetricSourceType, probe.Metric{Name: name})
	}
	if len(out) == 0 {
		return nil, fmt.Sprintf("the custom metrics API (%s) lists no metric of pods or namespaces, and no HPA of the cluster's scales on one", version), nil
	}
	if len(out) > maxMetricsTried {
		out = out[:maxMetricsTried]
	}
	return out, "", nil
}

// customPath is where the HPA controller reads a custom metric for the
// probe: of the pods its Deployment selects, or of the run's namespace.
func customPath(version, namespace string, m hpaMetric) string {
	q := url.Values{}
	if len(m.Selector) > 0 {
		q.Set("metricLabelSelector", labels.SelectorFromSet(m.Selector).String())
	}
	path := "/apis/" + customMetricsGroup + "/" + version + "/namespaces/" + namespace
	if m.source == autoscalingv2.PodsMetricSourceType {
		q.Set("labelSelector", labels.SelectorFromSet(hpaPodLabels).String())
		path += "/pods/*/" + m.Name
	} else {
		path += "/metrics/" + m.Name
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}

// customMetric reads the candidates' values through the API server, as
// the HPA controller will, until one is above zero or the probe timeout
// passes, a round every metricPollEvery; the probe's watch goes on
// meanwhile. Each candidate's last read is in the evidence. It returns nil
// when none had a value; only a read the API server refused is an error.
func (c HPAProbe) customMetric(ctx context.Context, env *checks.Env, r *checks.Result, w *hpaWatch, events <-chan probe.Event, version string, candidates []hpaMetric) (*hpaMetric, error) {
	s := env.Probe
	wctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	ticks := c.ticks
	if ticks == nil {
		t := time.NewTicker(metricPollEvery)
		defer t.Stop()
		ticks = t.C
	}
	steps := map[string]int{} // path -> its step in r.Evidence
	for {
		for _, m := range candidates {
			path := customPath(version, s.Namespace, m)
			note := "the value of " + m.label() + ", as the HPA controller reads it"
			body, err := rawRead(wctx, env, r, path, note)
			if wctx.Err() != nil {
				r.Evidence = r.Evidence[:len(r.Evidence)-1] // cut short: no answer to show
				return nil, ctx.Err()
			}
			// A later read of the same path replaces the earlier one.
			if i, ok := steps[path]; ok {
				r.Evidence[i] = r.Evidence[len(r.Evidence)-1]
				r.Evidence = r.Evidence[:len(r.Evidence)-1]
			} else {
				steps[path] = len(r.Evidence) - 1
			}
			if err != nil {
				if refusedRead(err) {
					return nil, fmt.Errorf("cannot read %s: %w", m.label(), err)
				}
				continue
			}
			sum, n, ok := metricValues(body)
			if !ok || n == 0 || sum.Sign() <= 0 {
				continue
			}
			m.value = sum
			if m.source == autoscalingv2.PodsMetricSourceType {
				m.value = *resource.NewMilliQuantity(sum.MilliValue()/int64(n), resource.DecimalSI)
			}
			w.timeline.Add(env.Now(), "%s read", m.valued())
			return &m, nil
		}
	wait:
		for {
			select {
			case <-wctx.Done():
				return nil, ctx.Err()
			case e := <-events:
				w.apply(e)
			case _, open := <-ticks:
				if !open {
					return nil, nil
				}
				break wait
			}
		}
	}
}

// hpaDeployment is the probe's Deployment: one pod asking one accelerator.
func hpaDeployment(image, acc string) (*unstructured.Unstructured, error) {
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: hpaName, Labels: hpaPodLabels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: hpaPodLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: hpaPodLabels},
				Spec:       checks.ProbePodSpec(image, corev1.ResourceList{corev1.ResourceName(acc): resource.MustParse("1")}, acc),
			},
		},
	}
	return checks.Unstructured(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))
}

// hpaObject is the probe's HPA on one metric.
func hpaObject(metric autoscalingv2.MetricSpec) string {
	spec, _ := json.Marshal(metric)
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

// metricSpec is the HPA's metric with an average-value target: the total
// of an external metric or the value of an Object metric divided by the
// replicas, the average over the pods of a Pods metric. An Object metric
// describes the run's namespace.
func metricSpec(m hpaMetric, namespace, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	id := autoscalingv2.MetricIdentifier{Name: m.Name, Selector: m.LabelSelector()}
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}
	switch m.source {
	case autoscalingv2.PodsMetricSourceType:
		return autoscalingv2.MetricSpec{Type: m.source, Pods: &autoscalingv2.PodsMetricSource{Metric: id, Target: t}}
	case autoscalingv2.ObjectMetricSourceType:
		return autoscalingv2.MetricSpec{Type: m.source, Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: namespace},
			Metric:          id, Target: t,
		}}
	}
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: t}}
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
			if v := currentAverage(m); v != nil {
				value = fmt.Sprintf(" (metric at %s per pod)", v)
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

// currentAverage is the average per pod an HPA reports of one of its
// metrics, nil when it reports none.
func currentAverage(m autoscalingv2.MetricStatus) *resource.Quantity {
	switch {
	case m.External != nil:
		return m.External.Current.AverageValue
	case m.Pods != nil:
		return m.Pods.Current.AverageValue
	case m.Object != nil:
		return m.Object.Current.AverageValue
	}
	return nil
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
