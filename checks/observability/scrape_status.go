package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// statusStaleAfter is how old an endpoint's scrape status may be before
// it no longer says what the collector scrapes now. Google's operator
// rewrites it every minute or so; a status hours old is a collector that
// stopped reporting.
const statusStaleAfter = 15 * time.Minute

// endpointStatus is the scrape status a collector writes of one endpoint
// of a scrape configuration, in the form of Google Cloud Managed Service
// for Prometheus' PodMonitoring status.endpointStatuses.
type endpointStatus struct {
	Name             string    `json:"name"`
	ActiveTargets    int64     `json:"activeTargets"`
	UnhealthyTargets int64     `json:"unhealthyTargets"`
	LastUpdateTime   time.Time `json:"lastUpdateTime"`
	SampleGroups     []struct {
		SampleTargets []struct {
			Labels    map[string]string `json:"labels"`
			LastError *string           `json:"lastError"`
			Health    string            `json:"health"`
		} `json:"sampleTargets"`
		Count *int32 `json:"count"`
	} `json:"sampleGroups"`
}

// firstError is the first error a sample of the endpoint's unhealthy
// targets reports, with the target's instance.
func (e endpointStatus) firstError() string {
	for _, g := range e.SampleGroups {
		for _, t := range g.SampleTargets {
			if t.LastError != nil && *t.LastError != "" {
				if i := t.Labels["instance"]; i != "" {
					return i + ": " + *t.LastError
				}
				return *t.LastError
			}
		}
	}
	return ""
}

// configState is what one scrape configuration selects and what its
// status says of the scrape.
type configState struct {
	scrapeConfig
	// every is set when it selects every pod or service of every
	// namespace; selected are otherwise the objects it selects.
	every    bool
	selected []string
	// ai are the AI workloads among them, by workload name.
	ai map[string]int
	// unreadable says why its selector could not be read.
	unreadable string
	// endpoints are its endpoints' scrape status; stale says which are
	// too old to count.
	endpoints []endpointStatus
	stale     []string
}

// name is Kind namespace/name.
func (c configState) name() string { return c.res.Kind + " " + kube.ObjectName(c.obj) }

// selects says whether it selects anything.
func (c configState) selects() bool { return c.every || len(c.selected) > 0 }

// collectorView is what the cluster shows of a system found without a
// server whose targets can be read: its collectors, its scrape
// configurations and the status they carry. Exactly one of working,
// problem and unseen is set once judged.
type collectorView struct {
	sys        monitoringSystem
	collectors []collector
	configs    []configState
	// working says what it collects; problem why it collects nothing;
	// unseen what could not be seen when the cluster shows neither.
	working, problem, unseen string
	warnings                 []string
	// absent is set when the problem is that no collector of it runs: its
	// CRDs are left, and beside a system that collects, that is no fault.
	absent bool
	// active and healthy count the targets its configurations report;
	// ai the AI workloads among what they select.
	active, healthy int64
	ai              map[string]int
	// kindNames are the kinds of the scrape CRDs served, by CRD name.
	kindNames map[string]string
}

// collectorViews are the views of every system found that has no server
// found: a managed collector, or a server whose Service is missing.
func collectorViews(ctx context.Context, env *checks.Env, data monitoringData, m monitoring) ([]collectorView, error) {
	var views []collectorView
	for _, name := range m.systemNames() {
		sys := data.system(name)
		if m.serving(name) || len(sys.Collectors) == 0 && len(sys.Scrapes) == 0 && sys.KeepsTargets == "" {
			continue
		}
		v := collectorView{sys: sys, collectors: m.collectorsOf(name), ai: map[string]int{}, kindNames: m.kindNames}
		for _, sc := range m.scrapes {
			if sc.system != name {
				continue
			}
			cs, err := readConfig(ctx, env, data, sc)
			if err != nil {
				return nil, err
			}
			v.configs = append(v.configs, cs)
		}
		v.judge(env.Now())
		views = append(views, v)
	}
	return views, nil
}

// readConfig finds what a scrape configuration selects and reads its
// endpoints' status.
func readConfig(ctx context.Context, env *checks.Env, data monitoringData, sc scrapeConfig) (configState, error) {
	cs := configState{scrapeConfig: sc, ai: map[string]int{}}
	path := sc.kind.Selector
	if path == "" {
		path = "spec.selector"
	}
	sel := labels.Everything()
	if raw, ok, _ := unstructured.NestedFieldNoCopy(sc.obj.Object, strings.Split(path, ".")...); ok && raw != nil {
		ls, err := labelSelector(raw)
		if err == nil {
			sel, err = metav1.LabelSelectorAsSelector(ls)
		}
		if err != nil {
			// A selector the API server accepted and aiconform cannot
			// read selects nothing it can name.
			cs.unreadable = fmt.Sprintf("its %s does not parse: %v", path, err)
		}
	}
	namespaces, all := configNamespaces(sc)
	switch {
	case cs.unreadable != "":
	case sel.Empty() && all:
		cs.every = true
	default:
		var found []target
		switch sc.kind.Selects {
		case "pods":
			for _, ns := range namespaces {
				pods, err := checks.List[*corev1.Pod](ctx, env, cluster.Query{Resource: cluster.Pods, Namespace: ns, LabelSelector: sel.String()})
				if err != nil {
					return cs, fmt.Errorf("pods %s selects: %w", cs.name(), err)
				}
				for _, p := range pods {
					if run, ok := checks.ProbeRun(p.Labels, p.Namespace); ok && run != "" {
						continue
					}
					cs.selected = append(cs.selected, "pod "+p.Namespace+"/"+p.Name)
					found = append(found, selectedTarget("pod", p.Namespace, p.Name, p.Labels, p.Spec.Containers))
				}
			}
		case "services":
			svcs, err := checks.List[*corev1.Service](ctx, env, cluster.Query{Resource: cluster.Services})
			if err != nil {
				return cs, err
			}
			for _, s := range svcs {
				if (all || slices.Contains(namespaces, s.Namespace)) && sel.Matches(labels.Set(s.Labels)) {
					cs.selected = append(cs.selected, "service "+s.Namespace+"/"+s.Name)
					found = append(found, selectedTarget("service", s.Namespace, s.Name, s.Labels, nil))
				}
			}
		}
		for _, t := range found {
			words := t.words()
			for _, w := range data.Workloads {
				if w.matches(t, words) {
					cs.ai[w.Name]++
					break
				}
			}
		}
	}
	if sc.kind.Endpoints != "" {
		raw, ok, _ := unstructured.NestedFieldNoCopy(sc.obj.Object, strings.Split(sc.kind.Endpoints, ".")...)
		if ok && raw != nil {
			b, err := json.Marshal(raw)
			if err == nil {
				err = json.Unmarshal(b, &cs.endpoints)
			}
			if err != nil {
				cs.endpoints = nil
			}
		}
	}
	return cs, nil
}

// configNamespaces are the namespaces a scrape configuration selects in;
// all is set for every namespace.
func configNamespaces(sc scrapeConfig) (namespaces []string, all bool) {
	if !sc.namespaced {
		return []string{""}, true
	}
	if sc.kind.Namespaces != "" {
		ns, ok, _ := unstructured.NestedMap(sc.obj.Object, strings.Split(sc.kind.Namespaces, ".")...)
		if ok {
			if any, _ := ns["any"].(bool); any {
				return []string{""}, true
			}
			if names, _, _ := unstructured.NestedStringSlice(ns, "matchNames"); len(names) > 0 {
				return names, false
			}
		}
	}
	return []string{sc.obj.GetNamespace()}, false
}

// selectedTarget is a pod or Service a configuration selects, as the
// target Kubernetes discovery would make of it: what an AI workload is
// known by.
func selectedTarget(role, namespace, name string, objLabels map[string]string, containers []corev1.Container) target {
	t := target{ActiveTarget: promv1.ActiveTarget{DiscoveredLabels: map[string]string{}, Labels: model.LabelSet{
		"namespace": model.LabelValue(namespace), model.LabelName(role): model.LabelValue(name)}}}
	for k, v := range objLabels {
		t.DiscoveredLabels["__meta_kubernetes_"+role+"_label_"+promLabel(k)] = v
	}
	if len(containers) > 0 {
		t.Labels["container"] = model.LabelValue(containers[0].Name)
	}
	return t
}

// judge decides what the view shows, against now for the age of a status.
func (v *collectorView) judge(now time.Time) {
	sys := v.sys
	var running []string
	var readyPods int32
	for _, c := range v.collectors {
		readyPods += c.ready
		running = append(running, fmt.Sprintf("%s %d/%d ready", c, c.ready, c.desired))
		if c.ready < c.desired {
			v.warnings = append(v.warnings, fmt.Sprintf("%s collector %s has %d of %d pods ready", sys.Name, c, c.ready, c.desired))
		}
	}
	var selecting, withStatus []*configState
	for i := range v.configs {
		c := &v.configs[i]
		if why := c.kind.State.failed(c.obj); why != "" {
			// Its operator rejected it: it tells the collector nothing.
			v.warnings = append(v.warnings, fmt.Sprintf("%s is not in effect: %s", c.name(), why))
			continue
		}
		if c.unreadable != "" {
			v.warnings = append(v.warnings, c.name()+" selects nothing aiconform can name: "+c.unreadable)
			continue
		}
		if !c.selects() {
			continue
		}
		selecting = append(selecting, c)
		for n, k := range c.ai {
			v.ai[n] += k
		}
		var recent []endpointStatus
		for _, e := range c.endpoints {
			if !e.LastUpdateTime.IsZero() && now.Sub(e.LastUpdateTime) > statusStaleAfter {
				c.stale = append(c.stale, fmt.Sprintf("the status of endpoint %s of %s was last updated %s ago", e.Name, c.name(), now.Sub(e.LastUpdateTime).Round(time.Second)))
				continue
			}
			recent = append(recent, e)
		}
		c.endpoints = recent
		v.warnings = append(v.warnings, c.stale...)
		if len(recent) > 0 {
			withStatus = append(withStatus, c)
		}
	}
	var errs []string
	for _, c := range withStatus {
		for _, e := range c.endpoints {
			v.active += e.ActiveTargets
			v.healthy += max(e.ActiveTargets-e.UnhealthyTargets, 0)
			if e.UnhealthyTargets > 0 {
				line := fmt.Sprintf("%s endpoint %s: %d of %d targets unhealthy", c.name(), e.Name, e.UnhealthyTargets, e.ActiveTargets)
				if err := e.firstError(); err != "" {
					line += " (" + err + ")"
				}
				errs = append(errs, line)
			}
		}
	}
	where := sys.KeepsTargets
	if where == "" {
		where = "outside the cluster"
	}
	kinds := scrapeKindNames(sys, v.kindNames)
	switch {
	case len(sys.Collectors) > 0 && len(v.collectors) == 0 && v.healthy == 0:
		v.problem = fmt.Sprintf("no collector of it runs (%s)", collectorHint(sys))
		v.absent = true
	case len(v.collectors) > 0 && readyPods == 0 && v.healthy == 0:
		v.problem = "its collectors have no ready pod: " + strings.Join(running, ", ")
	case len(sys.Scrapes) == 0:
		v.unseen = fmt.Sprintf("it runs (%s), but what it scrapes is configured and reported outside the "+
			"objects aiconform reads: its targets are kept in %s", strings.Join(running, ", "), where)
	case len(selecting) == 0 && sys.OtherConfig != "":
		v.unseen = fmt.Sprintf("no %s selects a workload of the cluster; what %s tell it to scrape is not "+
			"read, and its targets are kept in %s", kinds, sys.OtherConfig, where)
	case len(selecting) == 0:
		v.problem = fmt.Sprintf("no %s selects a workload of the cluster (%s)", kinds, checks.Plural(len(v.configs), "object"))
	case len(withStatus) == 0:
		hint := ""
		for _, c := range selecting {
			if c.kind.Endpoints != "" && c.kind.EndpointsHint != "" {
				hint = ": " + c.kind.EndpointsHint
				break
			}
		}
		if hint == "" {
			hint = "; its targets are kept in " + where
		}
		v.unseen = fmt.Sprintf("%s selecting %s, but no scrape status of theirs in the cluster%s", checks.Plural(len(selecting), "scrape configuration"), selectedSummary(selecting), hint)
	case v.active == 0:
		v.problem = fmt.Sprintf("%s selecting %s, but their status reports no active target", checks.Plural(len(selecting), "scrape configuration"), selectedSummary(selecting))
	case v.healthy == 0:
		v.problem = fmt.Sprintf("none of the %s its scrape configurations report is healthy: %s", checks.Plural(int(v.active), "target"), checks.CapLines(errs, 3, "; "))
	default:
		v.working = fmt.Sprintf("%s: %d of %d targets healthy by the status of %s selecting %s", sys.Name, v.healthy, v.active, checks.Plural(len(withStatus), "scrape configuration"), selectedSummary(selecting))
		v.warnings = append(v.warnings, errs...)
		if n := len(selecting) - len(withStatus); n > 0 {
			v.warnings = append(v.warnings, fmt.Sprintf("%s of %s report no recent scrape status", checks.Plural(n, "scrape configuration"), sys.Name))
		}
	}
}

// aiSummary counts the AI workloads its configurations select: "KServe
// 2, vLLM 1".
func (v collectorView) aiSummary() string {
	var names []string
	for n := range v.ai {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, v.ai[n]))
	}
	return strings.Join(parts, ", ")
}

// scrapeKindNames names the kinds of a system's scrape configurations,
// by their CRDs' kinds where the cluster serves them: "PodMonitoring or
// ClusterPodMonitoring".
func scrapeKindNames(sys monitoringSystem, kindNames map[string]string) string {
	var kinds []string
	for _, k := range sys.Scrapes {
		if n := kindNames[k.CRD]; n != "" {
			kinds = append(kinds, n)
		} else {
			kinds = append(kinds, k.CRD)
		}
	}
	return strings.Join(kinds, " or ")
}

// collectorHint says what a system's collectors are known by.
func collectorHint(sys monitoringSystem) string {
	var parts []string
	for _, c := range sys.Collectors {
		parts = append(parts, fmt.Sprintf("a %s labelled %s", c.Kind, labels.Set(c.Labels)))
	}
	return strings.Join(parts, ", or ")
}

// selectedSummary counts what configurations select: "3 pods, 1 service"
// or "every pod".
func selectedSummary(cs []*configState) string {
	pods, services := 0, 0
	every := []string{}
	for _, c := range cs {
		if c.every {
			every = append(every, "every "+strings.TrimSuffix(c.kind.Selects, "s"))
			continue
		}
		for _, s := range c.selected {
			if strings.HasPrefix(s, "pod ") {
				pods++
			} else {
				services++
			}
		}
	}
	var parts []string
	if pods > 0 {
		parts = append(parts, checks.Plural(pods, "pod"))
	}
	if services > 0 {
		parts = append(parts, checks.Plural(services, "service"))
	}
	for _, e := range every {
		if !slices.Contains(parts, e) {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, ", ")
}

// addViewsEvidence shows the collectors and the scrape configurations of
// the views.
func addViewsEvidence(ctx context.Context, env *checks.Env, r *checks.Result, views []collectorView) {
	for _, v := range views {
		addCollectorsEvidence(ctx, env, r, v.collectors, "the collectors of "+v.sys.Name)
		var shown []string
		for _, c := range v.configs {
			if slices.Contains(shown, c.res.GVR.String()) {
				continue
			}
			shown = append(shown, c.res.GVR.String())
			g := cluster.Get{Resources: []cluster.Resource{c.res}, AllNamespaces: c.namespaced}
			if p := c.kind.Endpoints; p != "" {
				// The status judged, which no printer column shows.
				g.Columns = endpointColumns("."+p, c.namespaced)
			}
			r.AddEvidence(ctx, env, g, "the scrape configurations of "+v.sys.Name)
		}
	}
}

// endpointColumns is the custom-columns spec that prints each
// configuration's endpoint statuses at path.
func endpointColumns(path string, namespaced bool) string {
	cols := "NAME:.metadata.name"
	if namespaced {
		cols = "NAMESPACE:.metadata.namespace," + cols
	}
	return cols + ",ENDPOINTS:" + path + "[*].name,ACTIVE:" + path + "[*].activeTargets,UNHEALTHY:" + path + "[*].unhealthyTargets,UPDATED:" + path + "[*].lastUpdateTime"
}

// addCollectorsEvidence shows collector workloads, one step per kind.
func addCollectorsEvidence(ctx context.Context, env *checks.Env, r *checks.Result, collectors []collector, note string) {
	byRes := map[string][]string{}
	var order []cluster.Resource
	for _, c := range collectors {
		key := c.res.GVR.String()
		if _, ok := byRes[key]; !ok {
			order = append(order, c.res)
		}
		if !slices.Contains(byRes[key], c.name) {
			byRes[key] = append(byRes[key], c.name)
		}
	}
	for _, res := range order {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true,
			Grep: cluster.GrepAny(append([]string{"NAME"}, byRes[res.GVR.String()]...)...)}, note)
	}
}
