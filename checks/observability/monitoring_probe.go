package observability

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// MetricsLabel marks the monitoring probe's pod, and is what its PodMonitor
// selects.
const MetricsLabel = "aiconform.io/metrics"

// metricsName names the probe's pod and its PodMonitor.
const metricsName = "aiconform-metrics"

// metricsPort is where the probe's pod serves; metricsPath is the path
// it is scraped on. BusyBox's httpd types a file by its suffix, and
// Prometheus 3 refuses a scrape that is not text/plain: the metrics are a
// directory's index page, index.txt, so that /metrics/ answers text/plain
// and /metrics (a configuration that ignores the path annotation) is
// redirected there.
const (
	metricsPort     = 8080
	metricsPortName = "metrics"
	metricsPath     = "/metrics/"
)

// pollEvery is how often the probe reads the Prometheus server's targets
// while it waits for its pod to be scraped.
const pollEvery = 2 * time.Second

// podMonitorGVK is the Prometheus Operator's PodMonitor.
var podMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// MonitoringProbe runs a pod that serves metrics of the run's own, has the
// monitoring system discover it as the cluster's workloads are, and reads
// back from the Prometheus server that it was scraped and its series
// stored.
type MonitoringProbe struct {
	// ticks, when set, replaces the clock between two reads of the
	// targets: each value received is one more read, and its closing ends
	// the window. Nil is a ticker of pollEvery within the probe timeout.
	ticks <-chan time.Time
}

// Meta implements checks.Check.
func (MonitoringProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "monitoring-probe", Title: "The monitoring system discovers a new pod, scrapes it and stores its series",
		Requirement: "ai_service_metrics", Probe: true,
		Description: "Under --probe only. Runs a pod of --probe-shell-image (BusyBox; non-root, no privilege, all " +
			"capabilities dropped, CPU and memory limits, a deadline) whose httpd serves, in the Prometheus " +
			"text format, a series of the run's own: aiconform_probe_up{run=\"RUN\"} 1. The Prometheus " +
			"server monitoring-system found is told of it as it is told of any workload: for the Prometheus " +
			"Operator, a PodMonitor in the run's namespace, labelled so that an available Prometheus " +
			"object's podMonitorSelector and podMonitorNamespaceSelector select it; for a Prometheus of its " +
			"own (the community chart's kubernetes-pods job), the pod's prometheus.io/scrape, port and path " +
			"annotations. Once the pod is Ready, reads the server's /api/v1/targets through the API server's " +
			"service proxy, as monitoring-targets does, every two seconds within --probe-timeout, then the " +
			"instant query of the series. Passes when the pod's target is active and up with a scrape after " +
			"the pod was Ready, and the query returns the series. Fails naming the step that did not happen " +
			"in time: not discovered, discovered but down (with its last error), scraped but the query " +
			"returning nothing. Skips when no Prometheus would select a PodMonitor in the run's namespace, " +
			"or the only collectors are managed ones outside the cluster; an error when a read or a write is " +
			"refused or the pod does not get Ready.",
		Remediation: "A pod not discovered: the Prometheus object's podMonitorSelector and " +
			"podMonitorNamespaceSelector (`kubectl get prometheus -A -o yaml`) or the server's scrape " +
			"configuration (`kubectl get --raw .../proxy/api/v1/status/config`) leave it out; a target down: " +
			"its lastError, and whether the server reaches pods' addresses (network policies); nothing " +
			"stored: the server's own logs (out of order or rejected samples).",
	}
}

// discoverer is how the probe has the monitoring system discover its pod.
type discoverer struct {
	server server
	// prometheus is the Prometheus Operator's object that selects the
	// PodMonitor (namespace/name); empty for annotations.
	prometheus string
	// monitorLabels are the PodMonitor's labels its podMonitorSelector
	// matches.
	monitorLabels map[string]string
}

// how says how the pod is discovered, for the reasons.
func (d discoverer) how() string {
	if d.prometheus != "" {
		return fmt.Sprintf("by the PodMonitor %s, which Prometheus %s selects", metricsName, d.prometheus)
	}
	return "by its prometheus.io annotations"
}

// pool is the scrape pool the operator gives the PodMonitor's one
// endpoint; "" when it is not known in advance.
func (d discoverer) pool(namespace string) string {
	if d.prometheus == "" {
		return ""
	}
	return fmt.Sprintf("podMonitor/%s/%s/0", namespace, metricsName)
}

// Run implements checks.Check.
func (c MonitoringProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs a pod serving metrics of its own and has the monitoring system discover and scrape it")
		return r, nil
	}
	data, m, err := findMonitoring(ctx, env)
	if err != nil {
		return r, err
	}
	d, why := pickDiscoverer(data, m, s)
	if why != "" {
		r.Finish(checks.Skip, "%s", why)
		return r, nil
	}
	if d.prometheus != "" {
		if res, err := checks.CustomResource(ctx, env, prometheusOperatorCRD); err == nil {
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true}, "the Prometheus objects; "+d.prometheus+" selects PodMonitors the probe's labels match")
		}
	}
	pod, err := metricsPod(s.ShellImage, s.RunID, d.prometheus == "", s.Timeout)
	if err != nil {
		return r, err
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	if d.prometheus != "" {
		if _, err := pr.Create(ctx, podMonitor(d.monitorLabels), "Prometheus "+d.prometheus+" selects PodMonitors of these labels in this namespace"); err != nil {
			return pr.Refused(err)
		}
	}
	created, err := pr.Create(ctx, pod, "serves aiconform_probe_up{run=\""+s.RunID+"\"} at :8080"+metricsPath)
	if err != nil {
		return pr.Refused(err)
	}

	// The pod, until Ready.
	pw := &metricsPodWatch{now: env.Now, tl: &pr.Timeline}
	pw.apply(probe.Event{Tag: metricsTag, Event: watch.Event{Type: watch.Added, Object: created}})
	if err := pr.Watch(ctx, pw.apply,
		probe.Source{Tag: metricsTag, GVR: corev1.SchemeGroupVersion.WithResource("pods"), Namespaced: true, Options: metav1.ListOptions{LabelSelector: MetricsLabel}},
	); err != nil {
		return r, err
	}
	ok, err := pr.Phase(ctx, pw.settled)
	pr.Stop()
	if err != nil {
		return r, err
	}
	r.AddEvidence(ctx, env.Fresh(), cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: MetricsLabel, Wide: true}, "the probe's pod and the node it runs on")
	if !ok || !pw.ready() {
		return r, fmt.Errorf("the probe's pod %s was not Ready within %s: %s", metricsName, s.Timeout, pw.where())
	}

	// The targets and the query, until the series is stored.
	o := c.observe(ctx, env, s, d, pw)
	if o.ctxErr != nil {
		return r, o.ctxErr
	}
	if o.targetsEnv != nil {
		note := fmt.Sprintf("the active targets of Prometheus %s", d.server.name())
		if strings.Contains(o.targetsPath, "scrapePool=") {
			note = fmt.Sprintf("the active targets of scrape pool %s of Prometheus %s", o.pool, d.server.name())
		}
		r.AddRawEvidence(ctx, o.targetsEnv, cluster.GetRaw{Path: o.targetsPath}, note)
	}
	if o.queryEnv != nil {
		r.AddRawEvidence(ctx, o.queryEnv, cluster.GetRaw{Path: d.server.queryPath(o.query)}, "the probe's series, as Prometheus "+d.server.name()+" stores it")
	}
	if o.refused != nil {
		return r, o.refused
	}
	st, reason := o.verdict(d, s)
	if st == checks.Error {
		return r, errors.New(reason)
	}
	r.Finish(st, "%s", reason)
	return r, nil
}

// pickDiscoverer decides how the monitoring system found is to discover
// the probe's pod, or says why the probe cannot run.
func pickDiscoverer(data monitoringData, m monitoring, s *probe.Session) (discoverer, string) {
	nsLabels := labels.Set{probe.RunLabel: s.RunID, corev1.LabelMetadataName: s.Namespace}
	var refusals []string
	for _, p := range m.prometheuses {
		name := kube.ObjectName(p)
		if c, ok := prometheusState(p); !ok || c.Status != "True" {
			refusals = append(refusals, fmt.Sprintf("Prometheus %s is not Available", name))
			continue
		}
		i := slices.IndexFunc(m.servers, func(sv server) bool {
			return sv.system == "Prometheus Operator" && sv.service.Namespace == p.GetNamespace()
		})
		if i < 0 {
			refusals = append(refusals, fmt.Sprintf("Prometheus %s has no Service of its own (prometheus-operated) to read its targets through", name))
			continue
		}
		set, why := selectedBy(p, nsLabels, labels.Set{MetricsLabel: "probe", probe.RunLabel: s.RunID})
		if why != "" {
			refusals = append(refusals, fmt.Sprintf("Prometheus %s %s", name, why))
			continue
		}
		return discoverer{server: m.servers[i], prometheus: name, monitorLabels: set}, ""
	}
	for _, sv := range m.servers {
		if sv.system == "Prometheus" {
			return discoverer{server: sv}, ""
		}
	}
	if len(refusals) > 0 {
		return discoverer{}, "no Prometheus would discover the probe's pod: " + checks.CapLines(refusals, 3, "; ")
	}
	var managed []string
	for _, name := range m.systemNames() {
		if len(data.system(name).Servers) == 0 {
			managed = append(managed, name)
		}
	}
	if len(managed) > 0 {
		return discoverer{}, fmt.Sprintf("%s collects outside the cluster: what it scrapes cannot be read in the cluster", strings.Join(managed, ", "))
	}
	return discoverer{}, "no Prometheus server's Service is found to discover the probe's pod and read its targets (see monitoring-system)"
}

// selectedBy says which labels a PodMonitor in the probe's namespace
// (labelled nsLabels) needs for the Prometheus object p to select it, or
// why p selects none there. The operator's rules: a podMonitorSelector
// unset selects no PodMonitor, an empty one every one; a
// podMonitorNamespaceSelector unset selects p's own namespace only, an
// empty one every namespace. own are the labels the PodMonitor carries
// anyway.
func selectedBy(p *unstructured.Unstructured, nsLabels, own labels.Set) (map[string]string, string) {
	spec, _, _ := unstructured.NestedMap(p.Object, "spec")
	raw, ok := spec["podMonitorSelector"]
	if !ok || raw == nil {
		return nil, "selects no PodMonitor (its podMonitorSelector is unset)"
	}
	sel, err := labelSelector(raw)
	if err != nil {
		return nil, "has a podMonitorSelector that does not parse: " + err.Error()
	}
	rawNS, ok := spec["podMonitorNamespaceSelector"]
	if !ok || rawNS == nil {
		return nil, fmt.Sprintf("selects PodMonitors in its own namespace %s only (its podMonitorNamespaceSelector is unset), not in the probe's", p.GetNamespace())
	}
	nsSel, err := labelSelector(rawNS)
	if err != nil {
		return nil, "has a podMonitorNamespaceSelector that does not parse: " + err.Error()
	}
	if ns, err := metav1.LabelSelectorAsSelector(nsSel); err != nil || !ns.Matches(nsLabels) {
		return nil, fmt.Sprintf("selects PodMonitors in namespaces %s, not in the probe's (labelled %s)", metav1.FormatLabelSelector(nsSel), nsLabels)
	}
	// The labels that satisfy the selector: its matchLabels, the first
	// value of each In, a value for each Exists.
	set := map[string]string{}
	for k, v := range sel.MatchLabels {
		set[k] = v
	}
	for _, e := range sel.MatchExpressions {
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			if _, ok := set[e.Key]; !ok && len(e.Values) > 0 {
				set[e.Key] = e.Values[0]
			}
		case metav1.LabelSelectorOpExists:
			if _, ok := set[e.Key]; !ok {
				set[e.Key] = "aiconform"
			}
		}
	}
	all := labels.Merge(own, set)
	if s, err := metav1.LabelSelectorAsSelector(sel); err != nil || !s.Matches(all) {
		return nil, fmt.Sprintf("selects PodMonitors by %s, which no labels of the probe's satisfy", metav1.FormatLabelSelector(sel))
	}
	return set, ""
}

// labelSelector reads a selector of a custom resource's spec.
func labelSelector(raw any) (*metav1.LabelSelector, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object: %v", raw)
	}
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &sel); err != nil {
		return nil, err
	}
	return &sel, nil
}

// podMonitor is the probe's PodMonitor: the probe's pod, on its metrics
// port and path, every five seconds.
func podMonitor(monitorLabels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{MetricsLabel: "probe"}},
			"podMetricsEndpoints": []any{map[string]any{
				"port": metricsPortName, "path": metricsPath, "interval": "5s",
			}},
		},
	}}
	u.SetGroupVersionKind(podMonitorGVK)
	u.SetName(metricsName)
	l := map[string]string{MetricsLabel: "probe"}
	for k, v := range monitorLabels {
		l[k] = v
	}
	u.SetLabels(l)
	return u
}

// metricsScript writes the metrics of the run and serves them with
// BusyBox's httpd, in the foreground, from the pod's emptyDir.
func metricsScript(runID string) string {
	body := "# HELP aiconform_probe_up A series of one aiconform probe run.\\n# TYPE aiconform_probe_up gauge\\naiconform_probe_up{run=\\\"" + runID + "\\\"} 1\\n"
	return fmt.Sprintf(`busybox mkdir -p /www/metrics && printf "%s" > /www/metrics/index.txt && `+
		`echo 'I:index.txt' > /www/httpd.conf && exec busybox httpd -f -v -p %d -h /www -c /www/httpd.conf`, body, metricsPort)
}

// metricsCPU is the CPU (request and limit) of the probe's pod. httpd
// forks a process for each request, the kubelet's readiness check and
// every scrape: at the 10m a sleeping probe pod gets, the quota throttled
// it on a loaded node until the answers came after the scraper's timeout
// and the target stayed down, a verdict on the pod rather than on the
// monitoring system.
var metricsCPU = resource.MustParse("100m")

// metricsPod is the probe's pod: httpd serving the run's series, Ready
// once it answers, annotated for a Prometheus that discovers annotated
// pods when annotate is set.
func metricsPod(image, runID string, annotate bool, timeout time.Duration) (*unstructured.Unstructured, error) {
	spec := checks.ProbePodSpec(image, corev1.ResourceList{corev1.ResourceCPU: metricsCPU})
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.ActiveDeadlineSeconds = checks.ProbeDeadline(timeout)
	ctr := &spec.Containers[0]
	ctr.Command = []string{"sh", "-c", metricsScript(runID)}
	ctr.Ports = []corev1.ContainerPort{{Name: metricsPortName, ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP}}
	ctr.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: metricsPath, Port: intstr.FromString(metricsPortName)}},
		PeriodSeconds: 1,
	}
	ctr.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: "www", MountPath: "/www"}}
	spec.Volumes = []corev1.Volume{{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: metricsName, Labels: map[string]string{MetricsLabel: "probe"}}, Spec: spec}
	if annotate {
		pod.Annotations = map[string]string{
			"prometheus.io/scrape": "true",
			"prometheus.io/port":   fmt.Sprint(metricsPort),
			"prometheus.io/path":   metricsPath,
		}
	}
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

// metricsTag tags the watch of the probe's pod.
const metricsTag = "pods"

// metricsPodWatch follows the probe's pod until it is Ready or ended.
type metricsPodWatch struct {
	now     func() time.Time
	tl      *probe.Timeline
	pod     *corev1.Pod
	bound   bool
	readyAt time.Time // when the probe saw it Ready
	// readySince is the Ready condition's transition time, on the API
	// server's clock, to the second: a scrape after it is one of the pod
	// serving.
	readySince time.Time
}

func (w *metricsPodWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok || u.GetName() != metricsName || e.Type == watch.Deleted {
		return
	}
	var p corev1.Pod
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) != nil {
		return
	}
	w.pod = &p
	if p.Spec.NodeName != "" && !w.bound {
		w.bound = true
		w.tl.Add(w.now(), "pod %s bound to %s", p.Name, p.Spec.NodeName)
	}
	if w.readyAt.IsZero() && kube.PodReady(&p) {
		w.readyAt = w.now()
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				w.readySince = c.LastTransitionTime.Time
			}
		}
		w.tl.Add(w.readyAt, "pod %s Ready (%s)", p.Name, p.Status.PodIP)
	}
}

func (w *metricsPodWatch) ready() bool { return !w.readyAt.IsZero() }

// settled is true once the pod is Ready, or has ended and never will be.
func (w *metricsPodWatch) settled() bool {
	return w.ready() || w.pod != nil && (w.pod.Status.Phase == corev1.PodSucceeded || w.pod.Status.Phase == corev1.PodFailed)
}

// where says where the pod stands, in the scheduler's or the kubelet's
// words.
func (w *metricsPodWatch) where() string {
	p := w.pod
	if p == nil {
		return "not seen"
	}
	out := cmp.Or(string(p.Status.Phase), "Pending")
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			return out + " (" + c.Message + ")"
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil && c.State.Waiting.Reason != "":
			return fmt.Sprintf("%s (%s: %s %s)", out, c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			return fmt.Sprintf("%s (%s exited %d: %s)", out, c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason)
		}
	}
	return out + ", not Ready"
}

// observation is what the reads of the window saw, the last of each kind
// kept for the evidence.
type observation struct {
	window time.Duration
	// pool is the target's scrape pool once known (the PodMonitor's in
	// advance).
	pool        string
	targetsPath string
	targetsEnv  *checks.Env
	query       string
	queryEnv    *checks.Env
	// target is the pod's target as last read; found says it was.
	target *target
	// discoveredAt, upAt are when the probe first saw the target, and
	// first saw it up and scraped since the pod was Ready.
	discoveredAt, upAt time.Time
	readyAt            time.Time
	series             int
	// problem is the last read that did not answer.
	problem string
	refused error
	ctxErr  error
}

// observe reads the server's targets until the pod's target is up and
// scraped since the pod was Ready, then the query of its series, until it
// returns it or the window ends.
func (c MonitoringProbe) observe(ctx context.Context, env *checks.Env, s *probe.Session, d discoverer, pw *metricsPodWatch) *observation {
	o := &observation{window: s.Timeout, pool: d.pool(s.Namespace), readyAt: pw.readyAt,
		query: fmt.Sprintf(`aiconform_probe_up{run=%q}`, s.RunID)}
	wctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	ticks := c.ticks
	if ticks == nil {
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		ticks = t.C
	}
	tl := pw.tl
	lastHealth := ""
	for {
		if o.poll(wctx, env, d, pw, tl, &lastHealth) {
			o.ctxErr = ctx.Err()
			return o
		}
		select {
		case <-wctx.Done():
			o.ctxErr = ctx.Err()
			return o
		case _, open := <-ticks:
			if !open {
				return o
			}
		}
	}
}

// poll is one read of the targets (and of the query, once the target is
// up); true when the probe is done reading.
func (o *observation) poll(ctx context.Context, env *checks.Env, d discoverer, pw *metricsPodWatch, tl *probe.Timeline, lastHealth *string) bool {
	fe := env.Fresh()
	path := d.server.targetsPath(o.pool)
	body, _, err := fe.Cluster.Raw(ctx, path)
	if ctx.Err() != nil {
		return true
	}
	o.targetsPath, o.targetsEnv = path, fe
	if err != nil {
		if refused(err) {
			o.refused = fmt.Errorf("targets of %s: %w", d.server.name(), err)
			return true
		}
		o.problem = "its API does not answer: " + answerOf(err)
		return false
	}
	all, err := parseTargets(body)
	if err != nil {
		o.problem = err.Error()
		return false
	}
	o.problem = ""
	t := findPodTarget(all, pw.pod)
	if t == nil {
		return false
	}
	now := env.Now()
	if o.target == nil {
		o.discoveredAt = now
		tl.Add(now, "target %s discovered (%s)", t, cmp.Or(string(t.Health), "unknown"))
	}
	o.target = t
	o.pool = t.ScrapePool
	if h := string(t.Health); h != *lastHealth {
		if h == string(promv1.HealthBad) {
			tl.Add(now, "target %s down: %s", t, t.LastError)
		}
		*lastHealth = h
	}
	if t.Health != promv1.HealthGood || t.LastScrape.Before(pw.readySince) {
		return false
	}
	if o.upAt.IsZero() {
		o.upAt = now
		tl.Add(now, "target up, last scraped %s", t.LastScrape.UTC().Format("15:04:05.000"))
	}
	qe := env.Fresh()
	qbody, _, err := qe.Cluster.Raw(ctx, d.server.queryPath(o.query))
	if ctx.Err() != nil {
		return true
	}
	o.queryEnv = qe
	if err != nil {
		if refused(err) {
			o.refused = fmt.Errorf("query of %s: %w", d.server.name(), err)
			return true
		}
		o.problem = "its query API does not answer: " + answerOf(err)
		return false
	}
	v, err := parseSeries(qbody)
	if err != nil {
		o.problem = err.Error()
		return false
	}
	o.series = len(v)
	if o.series > 0 {
		tl.Add(env.Now(), "query %s returned %d series", o.query, o.series)
		return true
	}
	return false
}

// findPodTarget is the target of the probe's pod among all: by the
// namespace and pod Kubernetes discovery found it in, by the labels a
// relabelling copied them to, or by its address.
func findPodTarget(all []target, pod *corev1.Pod) *target {
	if pod == nil {
		return nil
	}
	addr := fmt.Sprintf("%s:%d", pod.Status.PodIP, metricsPort)
	for i, t := range all {
		switch {
		case t.DiscoveredLabels["__meta_kubernetes_namespace"] == pod.Namespace && t.DiscoveredLabels["__meta_kubernetes_pod_name"] == pod.Name,
			t.label("namespace") == pod.Namespace && t.label("pod") == pod.Name,
			pod.Status.PodIP != "" && t.label("instance") == addr:
			return &all[i]
		}
	}
	return nil
}

// verdict judges what the window saw.
func (o *observation) verdict(d discoverer, s *probe.Session) (checks.Status, string) {
	within := fmt.Sprintf("within %s of the pod being Ready", o.window)
	who := fmt.Sprintf("Prometheus %s", d.server.name())
	switch {
	case o.series > 0:
		first := ""
		if o.discoveredAt.Before(o.upAt) {
			first = fmt.Sprintf(" (first seen %s after)", probe.Seconds(o.discoveredAt.Sub(o.readyAt)))
		}
		return checks.Pass, fmt.Sprintf("%s discovered the probe's pod %s/%s %s as target %s (scrape pool %s) and "+
			"scraped it, up, %s after the pod was Ready%s; the query %s returns its series",
			who, s.Namespace, metricsName, d.how(), o.target.ScrapeURL, o.target.ScrapePool, probe.Seconds(o.upAt.Sub(o.readyAt)), first, o.query)
	case o.target == nil && o.problem != "":
		return checks.Error, fmt.Sprintf("%s could not be read %s: %s", who, within, o.problem)
	case o.target == nil:
		hint := ""
		if d.prometheus == "" {
			hint = " (does its configuration keep the pods annotated prometheus.io/scrape=true?)"
		}
		return checks.Fail, fmt.Sprintf("%s did not discover the probe's pod %s/%s %s: no active target of it %s%s", who, s.Namespace, metricsName, d.how(), within, hint)
	case o.upAt.IsZero() && o.target.Health == promv1.HealthBad:
		return checks.Fail, fmt.Sprintf("%s discovered the probe's pod as target %s (scrape pool %s), but it is down %s: %s", who, o.target.ScrapeURL, o.target.ScrapePool, within, o.target.LastError)
	case o.upAt.IsZero():
		return checks.Fail, fmt.Sprintf("%s discovered the probe's pod as target %s (scrape pool %s), but did not scrape it %s", who, o.target.ScrapeURL, o.target.ScrapePool, within)
	case o.problem != "":
		return checks.Error, fmt.Sprintf("%s scraped target %s, but its query could not be read %s: %s", who, o.target.ScrapeURL, within, o.problem)
	}
	return checks.Fail, fmt.Sprintf("%s scraped the probe's pod as target %s (scrape pool %s), but the query %s returns nothing %s", who, o.target.ScrapeURL, o.target.ScrapePool, o.query, within)
}
