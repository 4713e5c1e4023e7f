package observability

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
)

// MonitoringSystem checks that a monitoring system is installed and runs
// a Prometheus server whose API the cluster can reach.
type MonitoringSystem struct{}

// Meta implements checks.Check.
func (MonitoringSystem) Meta() checks.Meta {
	return checks.Meta{
		ID: "monitoring-system", Title: "A monitoring system runs in the cluster",
		Requirement: "ai_service_metrics",
		Description: "Finds the monitoring systems checks/observability/monitoring.yaml knows, by their CRDs, " +
			"the Services of their servers and their collector workloads (Deployments and DaemonSets by " +
			"pod-template labels, in any namespace): the Prometheus Operator (its Prometheus, ServiceMonitor " +
			"and PodMonitor CRDs, and each Prometheus object's Available condition), a Prometheus server of " +
			"its own (the Services the common charts and manifests label), the VictoriaMetrics operator's " +
			"vmagent, and collectors that keep their targets elsewhere: Google Cloud Managed Service for " +
			"Prometheus (its collector DaemonSet), the Azure Monitor metrics add-on (ama-metrics), the " +
			"Amazon CloudWatch agent, Grafana Alloy and the OpenTelemetry Operator. Passes when one is " +
			"found with its servers available and its collectors ready; warns when some are not; fails " +
			"when no monitoring system is found, the Prometheus Operator runs no available Prometheus, or " +
			"the systems found run no ready collector. What a system collects is judged by " +
			"monitoring-targets.",
		Remediation: "Install a monitoring system that discovers workloads in the cluster, such as the Prometheus " +
			"Operator (kube-prometheus-stack) with a Prometheus object; `kubectl get prometheus -A` and the " +
			"operator's logs say why a Prometheus is not Available; a collector's DaemonSet or Deployment, " +
			"why its pods are not ready.",
	}
}

// Run implements checks.Check.
func (MonitoringSystem) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	data, m, err := findMonitoring(ctx, env)
	if err != nil {
		return r, err
	}
	m.addEvidence(ctx, env, &r)
	var unavailable, available []string
	for _, p := range m.prometheuses {
		c, ok := prometheusState(p)
		switch {
		case ok && c.Status == "True":
			available = append(available, kube.ObjectName(p))
		case !ok:
			unavailable = append(unavailable, fmt.Sprintf("Prometheus %s has no Available condition yet", kube.ObjectName(p)))
		default:
			unavailable = append(unavailable, fmt.Sprintf("Prometheus %s is Available=%s: %s %s", kube.ObjectName(p), c.Status, c.Reason, c.Message))
		}
	}
	// Collector objects their operator says are not in effect.
	for _, in := range m.instances {
		if why := in.kind.State.failed(in.obj); why != "" {
			unavailable = append(unavailable, fmt.Sprintf("%s %s is %s", in.res.Kind, kube.ObjectName(in.obj), why))
		}
	}
	// Collectors: whether one runs, and those that do not run whole.
	collecting := false
	for _, c := range m.collectors {
		if c.ready > 0 {
			collecting = true
		}
		if c.ready < c.desired {
			unavailable = append(unavailable, fmt.Sprintf("%s collector %s has %d of %d pods ready", c.system, c, c.ready, c.desired))
		}
	}
	systems := m.systemNames()
	// Systems installed whose collectors are known, none of which runs:
	// CRDs left behind are no fault beside a system that collects.
	var idle []string
	allCollectors := len(systems) > 0
	for _, name := range systems {
		sys := data.system(name)
		if len(sys.Collectors) == 0 || m.serving(name) {
			allCollectors = false
			continue
		}
		if len(m.collectorsOf(name)) == 0 {
			idle = append(idle, fmt.Sprintf("%s is installed but no collector of it runs (%s)", name, collectorHint(sys)))
		}
	}
	r.Details = append(append(r.Details, unavailable...), idle...)
	r.Table = serversTable(m)
	if m.collectorsErr != nil {
		if len(m.servers) == 0 {
			return r, fmt.Errorf("collectors: %w", m.collectorsErr)
		}
		r.Details = append(r.Details, "collectors not read: "+m.collectorsErr.Error())
	}
	switch {
	case len(systems) == 0:
		r.Finish(checks.Fail, "no monitoring system: none of %s is installed", systemList(data))
	case allCollectors && !collecting:
		r.Finish(checks.Fail, "no monitoring system runs a collector: %s", checks.CapLines(append(idle, unavailable...), 3, "; "))
	case len(m.prometheuses) > 0 && len(available) == 0 && len(m.servers) == 0 && !collecting:
		r.Finish(checks.Fail, "the Prometheus Operator runs no available Prometheus: %s", checks.CapLines(unavailable, 3, "; "))
	case len(systems) == 1 && systems[0] == "Prometheus Operator" && len(m.prometheuses) == 0 && len(m.servers) == 0:
		r.Finish(checks.Fail, "the Prometheus Operator is installed but runs no Prometheus: there is no Prometheus object")
	case len(unavailable) > 0:
		r.Finish(checks.Warn, "%s; %s", found(data, m), checks.CapLines(unavailable, 3, "; "))
	default:
		r.Finish(checks.Pass, "%s", found(data, m))
	}
	return r, nil
}

// addEvidence shows the systems' CRDs, the Prometheus objects and the
// servers' Services.
func (m monitoring) addEvidence(ctx context.Context, env *checks.Env, r *checks.Result) {
	if len(m.crds) > 0 {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: m.crds}, "")
	}
	if len(m.prometheuses) > 0 {
		if res, err := checks.CustomResource(ctx, env, prometheusOperatorCRD); err == nil {
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true}, "")
		}
	}
	if len(m.servers) > 0 {
		names := []string{"NAME"}
		for _, s := range m.servers {
			names = append(names, s.service.Name)
		}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Services}, AllNamespaces: true, Grep: cluster.GrepAny(names...)}, "")
	}
	var shown []string
	for _, in := range m.instances {
		if !slices.Contains(shown, in.res.Arg) {
			shown = append(shown, in.res.Arg)
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{in.res}, AllNamespaces: true}, "")
		}
	}
	addCollectorsEvidence(ctx, env, r, m.collectors, "the monitoring systems' collectors")
}

// found says which systems were found, and which servers answer or
// collectors run for them.
func found(data monitoringData, m monitoring) string {
	var parts []string
	for _, name := range m.systemNames() {
		var servers []string
		for _, s := range m.servers {
			if s.system == name {
				servers = append(servers, s.name())
			}
		}
		var collectors []string
		for _, c := range m.collectorsOf(name) {
			collectors = append(collectors, fmt.Sprintf("%s %d/%d ready", c, c.ready, c.desired))
		}
		switch {
		case len(servers) > 0:
			parts = append(parts, fmt.Sprintf("%s (Prometheus API at %s)", name, strings.Join(servers, ", ")))
		case name == "Prometheus Operator":
			parts = append(parts, name+" (no Service of its Prometheus found)")
		case len(collectors) > 0:
			parts = append(parts, fmt.Sprintf("%s (collectors %s)", name, checks.CapLines(collectors, 3, ", ")))
		case len(data.system(name).Servers) > 0:
			parts = append(parts, name+" (no Service of its servers found)")
		default:
			parts = append(parts, name+" (collects outside the cluster)")
		}
	}
	return strings.Join(parts, "; ")
}

// serversTable is the Prometheus servers found.
func serversTable(m monitoring) *checks.Table {
	if len(m.servers) == 0 {
		return nil
	}
	t := &checks.Table{Header: []string{"SYSTEM", "SERVICE", "PORT"}}
	for _, s := range m.servers {
		t.Rows = append(t.Rows, []string{s.system, s.name(), s.port})
	}
	return t
}

func systemList(data monitoringData) string {
	var names []string
	for _, s := range data.Systems {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// MonitoringTargets checks that a Prometheus server discovers and scrapes
// workloads of the cluster, AI workloads among them.
type MonitoringTargets struct{}

// Meta implements checks.Check.
func (MonitoringTargets) Meta() checks.Meta {
	return checks.Meta{
		ID: "monitoring-targets", Title: "The monitoring system discovers workloads and collects their metrics",
		Requirement: "ai_service_metrics",
		Description: "Reads the active scrape targets of each server monitoring-system found (Prometheus, " +
			"vmagent), from its HTTP API through the API server's service proxy, as `kubectl get --raw " +
			"/api/v1/namespaces/NS/services/NAME:PORT/proxy/api/v1/targets` does, never dialling the server. " +
			"A target is up when its last scrape succeeded and is recent (within three of its scrape " +
			"intervals of the newest scrape the server reports); it is discovered when Kubernetes " +
			"discovery found it (its discovered labels, or a scrape pool the system's discovery names). " +
			"A system found without such a server is judged on its own objects: its scrape configurations " +
			"(PodMonitoring, ClusterPodMonitoring, VMPodScrape, Azure's PodMonitor... by the CRDs in " +
			"monitoring.yaml) and the pods or Services their selectors select, and the scrape status the " +
			"collector writes into them (Google's status.endpointStatuses: active and unhealthy targets, " +
			"trusted for 15 minutes after its lastUpdateTime). The AI workloads among the targets or the " +
			"selected pods (KServe, KubeRay, Kubeflow, vLLM, Triton... by the labels and names in " +
			"monitoring.yaml) are counted. Passes when a server scrapes up targets it discovered in the " +
			"cluster, or a collector's status reports its targets healthy, AI workloads among them and all " +
			"up; warns when no AI workload is among them, some are down, or a collector keeps its targets " +
			"where the cluster does not show them (the reason says what could not be seen); fails when " +
			"nothing shows a target collected: no server answers with a discovered target up, no " +
			"scrape configuration selects a workload, every target reported is unhealthy, or the " +
			"collectors have no ready pod.",
		Remediation: "Have the monitoring system discover the AI workloads (a ServiceMonitor, PodMonitor, " +
			"PodMonitoring or VMPodScrape selecting their pods, or prometheus.io annotations where the " +
			"configuration honours them); the server's /targets page, read with `kubectl get --raw` " +
			"through the service proxy, shows each target's last error, as a PodMonitoring's " +
			"status.endpointStatuses do once the OperatorConfig enables features.targetStatus.",
	}
}

// serverTargets is what one server answered.
type serverTargets struct {
	server
	set     targetSet
	problem string // why it shows no collection; "" when it does
	// unseen says why its targets could not be read, when the server
	// refused the read.
	unseen string
}

// Run implements checks.Check.
func (MonitoringTargets) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	data, m, err := findMonitoring(ctx, env)
	if err != nil {
		return r, err
	}
	views, err := collectorViews(ctx, env, data, m)
	if err != nil {
		return r, err
	}
	if len(m.servers) == 0 && len(views) == 0 {
		r.Finish(checks.Fail, "no monitoring system collects metrics: no Prometheus server's Service is found (see monitoring-system)")
		return r, nil
	}
	results := make([]serverTargets, len(m.servers))
	for i, s := range m.servers {
		st := &results[i]
		st.server = s
		if local := m.listeningLocally(s); local != "" {
			st.unseen = fmt.Sprintf("Prometheus %s listens on its pods' loopback only (spec.listenLocal), behind "+
				"a proxy of its own: its targets cannot be read through the API server", local)
			continue
		}
		body, _, err := env.Cluster.Raw(ctx, s.targetsPath(""))
		if err != nil {
			if refusedBehind(err, body) {
				st.unseen = "its API refuses the API server's proxy, which passes no credentials on (" + answerOf(err) + "): its targets cannot be read this way"
				continue
			}
			if refused(err) {
				return r, fmt.Errorf("targets of %s: %w", s.name(), err)
			}
			st.problem = "its API does not answer: " + answerOf(err)
			continue
		}
		all, err := parseTargets(body)
		if err != nil {
			st.problem = err.Error()
			continue
		}
		st.set = judgeTargets(all, data.Workloads, data.system(s.system))
		switch {
		case len(all) == 0:
			st.problem = "it has no active target"
		case len(st.set.up) == 0:
			st.problem = fmt.Sprintf("none of its %s is up", checks.Plural(len(all), "target"))
		case st.set.discoveredUp == 0:
			st.problem = fmt.Sprintf("none of its %d up targets was discovered in the cluster: static configurations only", len(st.set.up))
		}
	}
	r.Table = targetsTable(results, views)
	addTargetsEvidence(ctx, env, &r, results)
	addViewsEvidence(ctx, env, &r, views)

	// idle are systems installed that run no collector: a fault only
	// when nothing else collects.
	var working, failing, warnings, unseen, idle []string
	aiTargets := 0
	for _, st := range results {
		if st.unseen != "" {
			unseen = append(unseen, fmt.Sprintf("Prometheus %s: %s", st.name(), st.unseen))
			continue
		}
		if st.problem != "" {
			failing = append(failing, fmt.Sprintf("Prometheus %s: %s", st.name(), st.problem))
			continue
		}
		line := fmt.Sprintf("%s scrapes %d of %d active targets, %d discovered in the cluster", st.name(), len(st.set.up), len(st.set.all), st.set.discoveredUp)
		if len(st.set.ai) > 0 {
			line += "; AI workloads: " + st.set.aiSummary()
		}
		working = append(working, line)
		for _, t := range st.set.ai {
			aiTargets += len(t)
		}
		warnings = append(warnings, st.set.aiDown...)
	}
	for _, v := range views {
		switch {
		case v.working != "":
			line := v.working
			if len(v.ai) > 0 {
				line += "; AI workloads: " + v.aiSummary()
			}
			working = append(working, line)
			for _, n := range v.ai {
				aiTargets += n
			}
		case v.absent:
			idle = append(idle, v.sys.Name+": "+v.problem)
		case v.problem != "":
			failing = append(failing, v.sys.Name+": "+v.problem)
		default:
			unseen = append(unseen, v.sys.Name+": "+v.unseen)
		}
		warnings = append(warnings, v.warnings...)
	}
	// The targets that are down, a bounded few of each server.
	for _, st := range results {
		down := st.set.down
		if len(down) > maxDownShown {
			down = append(down[:maxDownShown:maxDownShown], fmt.Sprintf("and %d more targets not up", len(st.set.down)-maxDownShown))
		}
		r.Details = append(r.Details, down...)
	}
	if len(working) == 0 && len(unseen) == 0 {
		failing = append(failing, idle...)
	} else {
		r.Details = append(r.Details, idle...)
	}
	if m.collectorsErr != nil {
		if len(working) == 0 {
			return r, fmt.Errorf("collectors: %w", m.collectorsErr)
		}
		r.Details = append(r.Details, "collectors not read: "+m.collectorsErr.Error())
	}
	switch {
	case len(working) == 0 && len(unseen) == 0 && len(views) == 0:
		r.Finish(checks.Fail, "no Prometheus server collects from the cluster: %s", checks.CapLines(failing, 3, "; "))
	case len(working) == 0 && len(unseen) == 0:
		r.Finish(checks.Fail, "no monitoring system collects from the cluster: %s", checks.CapLines(append(failing, warnings...), 3, "; "))
	case len(working) == 0:
		// A managed collector keeps its targets where the cluster does not
		// show them: what it shows is judged, and what it does not is said.
		r.Finish(checks.Warn, "what is scraped cannot be seen in the cluster: %s", checks.CapLines(append(unseen, append(failing, warnings...)...), 4, "; "))
	case len(failing) > 0 || len(warnings) > 0 || len(unseen) > 0:
		r.Finish(checks.Warn, "%s; but %s", strings.Join(working, "; "), checks.CapLines(append(failing, append(warnings, unseen...)...), 3, "; "))
	case aiTargets == 0:
		r.Finish(checks.Warn, "%s; but no AI workload is among its targets (%s)", strings.Join(working, "; "), workloadList(data))
	default:
		r.Finish(checks.Pass, "%s", strings.Join(working, "; "))
	}
	return r, nil
}

// addTargetsEvidence shows, through the same proxy, the targets of a few
// scrape pools: the AI workloads' first, else one that was up, and what
// a failing server answered.
func addTargetsEvidence(ctx context.Context, env *checks.Env, r *checks.Result, results []serverTargets) {
	shown := 0
	show := func(path, note string) {
		if shown < 3 {
			shown++
			r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: path}, note)
		}
	}
	for _, st := range results {
		if st.problem != "" || st.unseen != "" {
			continue
		}
		pools := st.set.pools
		if len(pools) == 0 && st.set.discoveredPool != "" {
			pools = []string{st.set.discoveredPool}
		}
		for _, p := range pools[:min(len(pools), 2)] {
			show(st.targetsPath(p), fmt.Sprintf("targets of scrape pool %s of %s", p, st.name()))
		}
	}
	for _, st := range results {
		switch {
		case st.unseen != "":
			show(st.targetsPath(""), "Prometheus "+st.name()+" refuses the proxy")
		case st.problem == "":
		case len(st.set.all) > 0 && len(st.set.all) <= 20:
			show(st.targetsPath(""), "Prometheus "+st.name())
		case len(st.set.all) > 0:
			// One pool of many: what a target that is not up answered.
			for _, t := range st.set.all {
				if t.Health != "up" {
					show(st.targetsPath(t.ScrapePool), fmt.Sprintf("targets of scrape pool %s of %s", t.ScrapePool, st.name()))
					break
				}
			}
		default:
			show(st.targetsPath(""), "Prometheus "+st.name())
		}
	}
}

// targetsTable is each server's targets, and the targets the views'
// scrape configurations report.
func targetsTable(results []serverTargets, views []collectorView) *checks.Table {
	t := &checks.Table{Header: []string{"PROMETHEUS", "TARGETS", "UP", "DISCOVERED UP", "AI WORKLOADS"}}
	for _, st := range results {
		ai := st.set.aiSummary()
		if ai == "" {
			ai = "-"
		}
		if (st.problem != "" || st.unseen != "") && st.set.all == nil {
			t.Rows = append(t.Rows, []string{st.name(), "-", "-", "-", "-"})
			continue
		}
		t.Rows = append(t.Rows, []string{st.name(), strconv.Itoa(len(st.set.all)), strconv.Itoa(len(st.set.up)), strconv.Itoa(st.set.discoveredUp), ai})
	}
	for _, v := range views {
		ai := v.aiSummary()
		if ai == "" {
			ai = "-"
		}
		if v.working == "" {
			t.Rows = append(t.Rows, []string{v.sys.Name, "-", "-", "-", ai})
			continue
		}
		// A status counts the targets of Kubernetes discovery only.
		n := strconv.FormatInt(v.healthy, 10)
		t.Rows = append(t.Rows, []string{v.sys.Name, strconv.FormatInt(v.active, 10), n, n, ai})
	}
	return t
}

func workloadList(data monitoringData) string {
	var names []string
	for _, w := range data.Workloads {
		names = append(names, w.Name)
	}
	return checks.CapLines(names, 5, ", ")
}

// maxDownShown bounds the targets not up named in the details, per
// server: a large cluster's report stays readable.
const maxDownShown = 20
