package observability

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// LoadLabel marks the accelerator load probe's pod.
const LoadLabel = "aiconform.io/load"

// The load probe's pod and its one container, which holds one accelerator.
const (
	podLoad       = "aiconform-load"
	loadContainer = "load"
)

// loadEvery is how often the probe reads the exporter while its load runs.
// DCGM Exporter collects every 30 seconds by default: reads in between
// repeat a value, but see a change within seconds of its collection.
const loadEvery = 5 * time.Second

// loadFor is how long the load runs at most: a few of DCGM Exporter's
// default collections, so that at least one falls inside it.
const loadFor = 2 * time.Minute

// readsAfterEnd are the reads made once the load has ended that may still
// show it: an exporter collects on its own clock, so its last collection
// under the load can come up to one interval (40 s > DCGM's 30 s) after.
const readsAfterEnd = 8

// loadSpec is how an exporter's vendor's accelerator is loaded, and how
// the load shows in its metrics (the load entry of exporters.yaml).
type loadSpec struct {
	Image string `yaml:"image"`
	// Command runs the load; the word SECONDS is how long.
	Command []string `yaml:"command"`
	CPU     string   `yaml:"cpu"`
	Memory  string   `yaml:"memory"`
	// PodLabel and NamespaceLabel are the labels the exporter names the
	// pod holding a device with.
	PodLabel       string `yaml:"podLabel"`
	NamespaceLabel string `yaml:"namespaceLabel"`
	// Watch are the utilization metrics the load must lift, the first one
	// served judged, each by the rise that counts.
	Watch []loadMetric `yaml:"watch"`
}

// loadMetric is a utilization metric and how much a load must lift it.
type loadMetric struct {
	Metric string  `yaml:"metric"`
	Rise   float64 `yaml:"rise"`
}

// AcceleratorLoadProbe runs a load on one accelerator and watches its
// utilization move in the exporter's metrics, read through the API server.
type AcceleratorLoadProbe struct {
	// ticks, when set, replaces the clock between two reads of the
	// exporter: each value received is one more read, and its closing
	// ends the window. Nil is a ticker of loadEvery within the probe
	// timeout.
	ticks <-chan time.Time
}

// Meta implements checks.Check.
func (AcceleratorLoadProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "accelerator-load-probe", Title: "An accelerator's utilization metric moves while a workload uses it",
		Requirement: "accelerator_metrics", Probe: true,
		Description: "Under --probe only. Picks the Ready, schedulable accelerator node with the most free of a " +
			"resource whose exporter checks/observability/exporters.yaml knows how to load (NVIDIA's: " +
			"dcgmproftester in DCGM's image, with no privilege), finds the exporter pod on it as " +
			"accelerator-metrics does, and reads its metrics through the API server's pod proxy, as `kubectl " +
			"get --raw` does: the utilization of each device before the load. Then one pod " +
			"(--probe-load-image, else the vendor's image; non-root, no privilege, all capabilities dropped, " +
			"CPU and memory limits, a deadline) holding one accelerator runs the load for up to two minutes " +
			"while the probe reads the exporter every 5 seconds. Passes when the device the exporter ties to " +
			"the probe's pod (its pod and namespace labels) rises by the stated amount (10 points of " +
			"DCGM_FI_DEV_GPU_UTIL); warns when a device of the node rises but no series names the pod, so " +
			"the rise cannot be tied to it; fails when the load runs to its end (and 40 seconds after) with " +
			"no device rising, when the node has no Ready exporter, or when the exporter serves no " +
			"utilization the probe can watch. An error when the pod cannot run or its load exits in error, " +
			"or when the metrics cannot be read; skips where no Ready node offers such a resource. The pod " +
			"is deleted as soon as the probe has judged, freeing the GPU before the run ends.",
		Remediation: "Utilization that does not move under a load: the exporter reads stale or no device data (its " +
			"logs; DCGM's host engine), or collects too rarely (its collection interval). No series naming " +
			"the pod: turn on the exporter's Kubernetes pod mapping (DCGM_EXPORTER_KUBERNETES, with the " +
			"kubelet's pod-resources socket mounted), as the GPU Operator does.",
	}
}

// loadTarget is where the load runs and who watches it.
type loadTarget struct {
	node     *corev1.Node
	res      corev1.ResourceName
	exporter *exporter
	pod      *cluster.NodePod
	path     string
}

// Run implements checks.Check.
func (c AcceleratorLoadProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs a load on one accelerator and watches its utilization move in the exporter's metrics")
		return r, nil
	}
	t, why, err := planLoad(ctx, env, &r)
	if err != nil || why != "" {
		if why != "" {
			r.Finish(checks.Skip, "%s", why)
		}
		return r, err
	}
	if r.Status != "" {
		return r, nil
	}
	spec := t.exporter.Load

	// Before the load: what the device's utilization is without it, and
	// which metric the exporter serves to show it.
	base, baseEnv, problem, err := readLoad(ctx, env, t)
	if err != nil {
		return r, err
	}
	if problem != "" {
		return r, fmt.Errorf("on node %s, %s", t.node.Name, problem)
	}
	i := slices.IndexFunc(spec.Watch, func(m loadMetric) bool { return len(base.series[m.Metric]) > 0 })
	if i < 0 {
		r.AddRawEvidence(ctx, baseEnv, cluster.GetRaw{Path: t.path}, "what the exporter on node "+t.node.Name+" serves")
		r.Finish(checks.Fail, "on node %s, %s (%s) serves none of %s: a load on its accelerators cannot be seen", t.node.Name, t.exporter.Name, t.pod.Name, strings.Join(watchedNames(spec), ", "))
		return r, nil
	}
	o := &loadObservation{metric: spec.Watch[i], base: base.series[spec.Watch[i].Metric], peak: map[string]float64{}, pod: podLoad, namespace: s.Namespace, deviceLabel: t.exporter.DeviceLabels[0]}
	grep := cluster.GetRaw{Path: t.path, Grep: "^" + regexp.QuoteMeta(o.metric.Metric) + `\{`}
	r.AddRawEvidence(ctx, baseEnv, grep, fmt.Sprintf("%s of node %s's accelerators before the load", o.metric.Metric, t.node.Name))

	seconds := int(min(loadFor, s.Timeout) / time.Second)
	pod, err := checks.Unstructured(loadPod(cmp.Or(s.LoadImage, spec.Image), t, spec, seconds, s.Timeout), corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		return r, err
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	created, err := pr.Create(ctx, pod, fmt.Sprintf("on node %s: a container holding one %s runs a load for %d s", t.node.Name, t.res, seconds))
	if err != nil {
		return pr.Refused(err)
	}
	lw := &loadWatch{now: env.Now, tl: &pr.Timeline}
	lw.apply(probe.Event{Event: watch.Event{Type: watch.Added, Object: created}})
	if err := pr.Watch(ctx, lw.apply,
		probe.Source{Tag: "pods", GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: LoadLabel}},
	); err != nil {
		return r, err
	}
	ok, err := pr.Phase(ctx, func() bool { return lw.started() || lw.ended() })
	if err != nil {
		return r, err
	}
	showPod := func() {
		r.AddEvidence(ctx, env.Fresh(), cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: LoadLabel, Wide: true}, "the probe's load pod and the node it runs on")
	}
	if !lw.started() {
		showPod()
		if ok {
			return r, fmt.Errorf("the probe's load pod %s ended before it was seen running: %s", podLoad, lw.where())
		}
		return r, fmt.Errorf("the probe's load pod %s did not start within %s: %s", podLoad, s.Timeout, lw.where())
	}

	// Under the load: reads until a device rises, or the load has ended
	// and its last collection passed, or the window ends.
	last := c.watchLoad(ctx, env, s, t, o, lw, pr.Events())
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	showPod()
	if last != nil {
		note := fmt.Sprintf("%s of node %s's accelerators under the load", o.metric.Metric, t.node.Name)
		if o.riseAt.IsZero() {
			note = fmt.Sprintf("%s of node %s's accelerators at the probe's last read", o.metric.Metric, t.node.Name)
		}
		r.AddRawEvidence(ctx, last, grep, note)
	}
	logs, lerr := s.Logs(ctx, podLoad, loadContainer, 4096)
	if lerr != nil {
		logs = probe.ErrorText("reading the logs of", "", lerr)
	}
	r.Evidence = append(r.Evidence, checks.Step{Command: fmt.Sprintf("kubectl logs -n %s %s -c %s", s.Namespace, podLoad, loadContainer), Output: logs, CapturedAt: env.Now().UTC(), Note: "what the load printed"})
	// The GPU is free again as soon as the probe has seen what it
	// needed, not only when the run cleans up; a deletion that fails is
	// left to that cleanup.
	_ = pr.Delete(ctx, corev1.SchemeGroupVersion.WithKind("Pod"), podLoad, "the load stopped, its GPU free again")
	if o.refused != nil {
		return r, o.refused
	}
	st, reason := o.verdict(t, lw)
	if st == checks.Error {
		return r, errors.New(reason)
	}
	r.Finish(st, "%s", reason)
	return r, nil
}

// planLoad picks the node and finds its exporter. why says why nothing
// can be probed; r is finished when the node's exporter fails the
// requirement already.
func planLoad(ctx context.Context, env *checks.Env, r *checks.Result) (loadTarget, string, error) {
	known, err := exporters()
	if err != nil {
		return loadTarget{}, "", err
	}
	loads := func(res corev1.ResourceName) bool {
		return slices.ContainsFunc(known, func(e exporter) bool {
			return e.Load != nil && e.serves(map[corev1.ResourceName]bool{res: true})
		})
	}
	pick, skip, err := hardware.PickAcceleratorNode(ctx, env, loads)
	if skip != "" {
		skip = "no Ready node offers an accelerator resource the probe knows how to load " +
			"(NVIDIA's nvidia.com/gpu): accelerator-metrics judges the others' metrics read-only"
	}
	if err != nil || skip != "" {
		return loadTarget{}, skip, err
	}
	if pick.Free == 0 {
		return loadTarget{}, "", fmt.Errorf("no Ready accelerator node has a %s free to give the load: it cannot be judged while they are all in use", pick.Resource)
	}
	sets, err := checks.List[*appsv1.DaemonSet](ctx, env, cluster.Query{Resource: cluster.DaemonSets})
	if err != nil {
		return loadTarget{}, "", err
	}
	owners, _ := exporterOwners(sets, known)
	nm := nodeMetrics{node: pick.Node}
	hardware.EachNodePods(ctx, env, []string{pick.Node.Name}, func(_ int, pods []*cluster.NodePod, perr error) {
		if err = perr; err == nil {
			nm.find(pods, owners)
		}
	})
	if err != nil {
		return loadTarget{}, "", fmt.Errorf("pods on node %s: %w", pick.Node.Name, err)
	}
	if nm.problem != "" || nm.exporter.Load == nil {
		r.AddEvidence(ctx, env, hardware.PodsOnNode(pick.Node.Name), "the pods of the node the probe would load")
		why := nm.problem
		if why == "" {
			why = nm.exporter.Name + " serves it, whose load the probe does not know"
		}
		r.Finish(checks.Fail, "node %s, the one with the most %s free, cannot show a load: %s", pick.Node.Name, pick.Resource, why)
		return loadTarget{}, "", nil
	}
	return loadTarget{node: pick.Node, res: pick.Resource, exporter: nm.exporter, pod: nm.pod, path: nm.path}, "", nil
}

// exporterOwners are the DaemonSets that run a known exporter's image, by
// UID (their pods name them as owner), and their names.
func exporterOwners(sets []*appsv1.DaemonSet, known []exporter) (map[types.UID]*exporter, []string) {
	owners := map[types.UID]*exporter{}
	var names []string
	for _, ds := range sets {
		for i := range known {
			if slices.ContainsFunc(ds.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return known[i].isImage(c.Image) }) {
				owners[ds.UID] = &known[i]
				names = append(names, ds.Name)
				break
			}
		}
	}
	return owners, names
}

// loadPod is the probe's pod: one container holding one accelerator of
// the node's, running the vendor's load for seconds.
func loadPod(image string, t loadTarget, spec *loadSpec, seconds int, timeout time.Duration) *corev1.Pod {
	podSpec := checks.PrintingPodSpec(image, "", t.node, timeout, string(t.res))
	c := &podSpec.Containers[0]
	c.Name = loadContainer
	c.Command = nil
	for _, w := range spec.Command {
		c.Command = append(c.Command, strings.ReplaceAll(w, "SECONDS", strconv.Itoa(seconds)))
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(spec.CPU),
		corev1.ResourceMemory: resource.MustParse(spec.Memory),
		t.res:                 *resource.NewQuantity(1, resource.DecimalSI),
	}
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podLoad, Labels: map[string]string{LoadLabel: "probe"}}, Spec: podSpec}
}

// loadRead is one read of the exporter: the watched metrics' series by
// name, then device.
type loadRead struct {
	series map[string]map[string]loadSample
}

// loadSample is one device's value, and the pod the exporter says holds
// it ("" when it names none).
type loadSample struct {
	value          float64
	pod, namespace string
}

// readLoad reads the exporter once, fresh: the read and the environment
// holding it (for the evidence), or a problem when it did not answer; a
// refused read is an error.
func readLoad(ctx context.Context, env *checks.Env, t loadTarget) (loadRead, *checks.Env, string, error) {
	fe := env.Fresh()
	body, _, err := fe.Cluster.Raw(ctx, t.path)
	if err != nil {
		if refused(err) {
			return loadRead{}, fe, "", fmt.Errorf("metrics of node %s: %w", t.node.Name, err)
		}
		return loadRead{}, fe, fmt.Sprintf("%s's metrics do not answer: %s", t.exporter.Name, answerOf(err)), nil
	}
	lr, err := t.exporter.parseLoad(body)
	if err != nil {
		return loadRead{}, fe, fmt.Sprintf("%s's metrics: %v", t.exporter.Name, err), nil
	}
	return lr, fe, "", nil
}

// parseLoad reads the watched metrics' series from an exposition, with
// the Prometheus project's parser.
func (e exporter) parseLoad(body []byte) (loadRead, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return loadRead{}, fmt.Errorf("not the Prometheus text format: %w", err)
	}
	lr := loadRead{series: map[string]map[string]loadSample{}}
	for _, w := range e.Load.Watch {
		f, ok := families[w.Metric]
		if !ok {
			continue
		}
		byDevice := map[string]loadSample{}
		for _, m := range f.GetMetric() {
			d := e.device(m)
			if d == "" {
				continue
			}
			s := loadSample{value: m.GetGauge().GetValue()}
			if m.GetGauge() == nil {
				s.value = m.GetUntyped().GetValue()
			}
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case e.Load.PodLabel:
					s.pod = l.GetValue()
				case e.Load.NamespaceLabel:
					s.namespace = l.GetValue()
				}
			}
			byDevice[d] = s
		}
		lr.series[w.Metric] = byDevice
	}
	return lr, nil
}

// loadObservation is what the reads under the load saw.
type loadObservation struct {
	metric loadMetric
	// base is each device's value before the load; peak the highest seen
	// under it.
	base map[string]loadSample
	peak map[string]float64
	// mine are the devices a series ties to the probe's pod.
	mine           map[string]bool
	pod, namespace string
	deviceLabel    string
	reads          int
	// risen is the device that rose, at riseAt after the load started.
	risen   string
	riseAt  time.Time
	startAt time.Time
	// problem is the last read that did not answer; refused a read the
	// cluster did not allow.
	problem string
	refused error
}

// watchLoad reads the exporter on each tick while following the pod,
// until a device rises, the load has ended and readsAfterEnd more reads
// passed, or the window ends. It returns the environment of the last read
// that answered, for the evidence.
func (c AcceleratorLoadProbe) watchLoad(ctx context.Context, env *checks.Env, s *probe.Session, t loadTarget, o *loadObservation, lw *loadWatch, events <-chan probe.Event) *checks.Env {
	wctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	ticks := c.ticks
	if ticks == nil {
		tk := time.NewTicker(loadEvery)
		defer tk.Stop()
		ticks = tk.C
	}
	o.startAt = lw.startedAt
	var last *checks.Env
	afterEnd := 0
	for {
		lr, fe, problem, err := readLoad(wctx, env, t)
		if wctx.Err() != nil {
			return last
		}
		if err != nil {
			o.refused = err
			return last
		}
		o.problem = problem
		if problem == "" {
			last = fe
			if o.add(lr, env.Now()) {
				lw.tl.Add(o.riseAt, "%s of %s=%s at %s", o.metric.Metric, o.deviceLabel, o.risen, formatValue(o.peak[o.risen]))
				return last
			}
		}
		if lw.ended() {
			if afterEnd++; afterEnd > readsAfterEnd {
				return last
			}
		}
		// The pod's events until the next tick: a read is due on ticks
		// only, however many events come.
	wait:
		for {
			select {
			case <-wctx.Done():
				return last
			case e := <-events:
				lw.apply(e)
			case _, open := <-ticks:
				if !open {
					return last
				}
				break wait
			}
		}
	}
}

// add takes one read; true once a device has risen by the metric's rise:
// one the exporter ties to the probe's pod, or any of the node's while it
// ties none.
func (o *loadObservation) add(lr loadRead, at time.Time) bool {
	o.reads++
	series := lr.series[o.metric.Metric]
	for d, s := range series {
		if s.pod == o.pod && s.namespace == o.namespace {
			if o.mine == nil {
				o.mine = map[string]bool{}
			}
			o.mine[d] = true
		}
		if p, ok := o.peak[d]; !ok || s.value > p {
			o.peak[d] = s.value
		}
	}
	for _, d := range slices.Sorted(maps.Keys(series)) {
		if o.mine != nil && !o.mine[d] {
			continue
		}
		if o.rose(d) {
			o.risen, o.riseAt = d, at
			return true
		}
	}
	return false
}

// rose says whether a device's peak is its value before the load lifted
// by the metric's rise; a device not seen before counts from zero.
func (o *loadObservation) rose(d string) bool {
	p, ok := o.peak[d]
	return ok && p-o.base[d].value >= o.metric.Rise
}

// verdict judges what the reads saw. Error stands for a load that could
// not be watched, or did not run.
func (o *loadObservation) verdict(t loadTarget, lw *loadWatch) (checks.Status, string) {
	on := fmt.Sprintf("on node %s", t.node.Name)
	dev := func(d string) string { return o.deviceLabel + "=" + d }
	if o.risen != "" {
		from := fmt.Sprintf("%s of %s went from %s to %s %s after the load started", o.metric.Metric, dev(o.risen), formatValue(o.base[o.risen].value), formatValue(o.peak[o.risen]), probe.Seconds(o.riseAt.Sub(o.startAt)))
		if o.mine != nil {
			return checks.Pass, fmt.Sprintf("%s, the accelerator %s ties to the probe's pod %s/%s: %s, read through the API server", on, t.exporter.Name, o.namespace, o.pod, from)
		}
		return checks.Warn, fmt.Sprintf("%s, %s while the probe's load ran, but no series of %s names the probe's "+
			"pod (its pod mapping is off), so the rise cannot be tied to the load", on, from, t.exporter.Name)
	}
	if o.reads == 0 {
		return checks.Error, fmt.Sprintf("%s, %s could not be read while the load ran: %s", on, t.exporter.Name, o.problem)
	}
	if code, why, failed := lw.failure(); failed {
		return checks.Error, fmt.Sprintf("%s, the load did not run to its end: container %s exited %d (%s), and no "+
			"device's %s rose (its logs are in the evidence; is --probe-load-image an image with %s?)", on, loadContainer, code, why, o.metric.Metric, t.exporter.Load.Command[0])
	}
	ran := "ran to its end"
	if !lw.ended() {
		ran = "ran"
	}
	watched := slices.Sorted(maps.Keys(o.peak))
	what := fmt.Sprintf("no accelerator's %s rose", o.metric.Metric)
	if o.mine != nil {
		watched = slices.Sorted(maps.Keys(o.mine))
		what = fmt.Sprintf("%s of the accelerator %s ties to the probe's pod did not rise", o.metric.Metric, t.exporter.Name)
	}
	var values []string
	for _, d := range watched {
		values = append(values, fmt.Sprintf("%s %s before, at most %s", dev(d), formatValue(o.base[d].value), formatValue(o.peak[d])))
	}
	return checks.Fail, fmt.Sprintf("%s, %s by %s over %d reads while the probe's load %s: %s", on, what, formatValue(o.metric.Rise), o.reads, ran, checks.CapLines(values, 4, "; "))
}

// formatValue is a metric's value as Prometheus's text format writes it.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func watchedNames(spec *loadSpec) []string {
	var out []string
	for _, w := range spec.Watch {
		out = append(out, w.Metric)
	}
	return out
}

// loadWatch follows the probe's load pod.
type loadWatch struct {
	now       func() time.Time
	tl        *probe.Timeline
	pod       *corev1.Pod
	bound     bool
	startedAt time.Time
	endedAt   time.Time
}

func (w *loadWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok || u.GetName() != podLoad || e.Type == watch.Deleted {
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
	if w.startedAt.IsZero() && p.Status.Phase == corev1.PodRunning {
		w.startedAt = w.now()
		w.tl.Add(w.startedAt, "pod %s running: the load started", p.Name)
	}
	if w.endedAt.IsZero() && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		w.endedAt = w.now()
		w.tl.Add(w.endedAt, "pod %s %s: the load ended", p.Name, p.Status.Phase)
	}
}

func (w *loadWatch) started() bool { return !w.startedAt.IsZero() }
func (w *loadWatch) ended() bool   { return !w.endedAt.IsZero() }

// failure is the load's exit when it ended in error.
func (w *loadWatch) failure() (code int32, why string, failed bool) {
	if w.pod == nil || w.pod.Status.Phase != corev1.PodFailed {
		return 0, "", false
	}
	why = cmp.Or(w.pod.Status.Reason, "Error")
	for _, c := range w.pod.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			return c.State.Terminated.ExitCode, cmp.Or(c.State.Terminated.Reason, why), true
		}
	}
	return -1, why, true
}

// where says where the pod stands, in the scheduler's or the kubelet's
// words.
func (w *loadWatch) where() string {
	if w.pod == nil {
		return "not seen"
	}
	if code, why, failed := w.failure(); failed {
		return fmt.Sprintf("Failed (%s exited %d: %s)", loadContainer, code, why)
	}
	return cmp.Or(string(w.pod.Status.Phase), "Pending") + checks.PodWhy(w.pod)
}
