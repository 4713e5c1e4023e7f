package observability

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// AcceleratorMetrics checks that every accelerator node's exporter serves
// per-accelerator utilization and memory.
type AcceleratorMetrics struct{}

// Meta implements checks.Check.
func (AcceleratorMetrics) Meta() checks.Meta {
	return checks.Meta{
		ID: "accelerator-metrics", Title: "Every accelerator's utilization and memory are served as metrics",
		Requirement: "accelerator_metrics", ReadsNodePods: true,
		Description: "Finds the accelerator metrics exporters checks/observability/exporters.yaml knows (" +
			exporterList() + ") by their DaemonSets' images, " +
			"and on each accelerator node the exporter pod for its accelerators. Where a Prometheus server " +
			"monitoring-system finds answers, one instant query of it (through the API server's service " +
			"proxy) gives the series it has collected of every exporter pod, tied to a pod by the target's " +
			"instance address or its namespace and pod labels; a node whose accelerators all have " +
			"utilization and memory there needs no other read. Every other node's exporter is read itself, " +
			"through the API server's pod proxy, as `kubectl get --raw " +
			"/api/v1/namespaces/NS/pods/NAME:PORT/proxy/metrics` does, never dialling the pod, and parsed " +
			"with the Prometheus project's own parser: no node fails on what a server has not collected. " +
			"Each accelerator of the node (GPU Feature Discovery's gpu.count, else the allocatable count of " +
			"what the exporter's series count: Neuron's per core) must have a utilization and a memory " +
			"series, told apart by the exporter's device label; temperature, power and interconnect series " +
			"are reported, and named when absent where the exporter has them. Passes when " +
			"every accelerator node's accelerators all have both; warns when only optional kinds are " +
			"missing; fails, naming the node, when a node has no exporter pod, a pod not Ready, metrics that " +
			"do not answer, or accelerators without series.",
		Remediation: "Run an accelerator metrics exporter on every accelerator node (the GPU Operator's DCGM " +
			"Exporter, AMD's GPU Operator metrics exporter, the vendor's exporter for others): `kubectl get --raw` of its pod's /metrics " +
			"through the proxy shows what it serves, and its logs why a device has no series.",
	}
}

// nodeMetrics is what one accelerator node showed.
type nodeMetrics struct {
	node     *corev1.Node
	exporter *exporter
	pod      *cluster.NodePod
	path     string
	want     int // accelerators to cover; 0 when the node does not say
	scrape   scrape
	problem  string
	forbid   error // a read the cluster refused: the check cannot decide
	// collected is true when the series came from a Prometheus server's
	// query, not from a read of the exporter.
	collected bool
}

// Run implements checks.Check.
func (AcceleratorMetrics) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	known, err := exporters()
	if err != nil {
		return r, err
	}
	nodes, _, err := hardware.AcceleratorNodes(ctx, env, &r)
	if err != nil || nodes == nil {
		return r, err
	}
	sets, err := checks.List[*appsv1.DaemonSet](ctx, env, cluster.Query{Resource: cluster.DaemonSets})
	if err != nil {
		return r, err
	}
	// The exporters' DaemonSets, by UID: their pods name them as owner.
	owners, dsNames := exporterOwners(sets, known)
	if len(owners) == 0 {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DaemonSets}, AllNamespaces: true}, "")
		r.Finish(checks.Fail, "no accelerator metrics exporter runs: no DaemonSet runs the image of %s", exporterNames(known))
		return r, nil
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DaemonSets}, AllNamespaces: true, Grep: cluster.GrepAny(append([]string{"NAME"}, dsNames...)...)}, "")

	results := make([]nodeMetrics, len(nodes))
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	hardware.EachNodePods(ctx, env, names, func(i int, pods []*cluster.NodePod, err error) {
		nm := &results[i]
		nm.node = nodes[i]
		if err != nil {
			nm.forbid = fmt.Errorf("pods on node %s: %w", nm.node.Name, err)
			return
		}
		nm.find(pods, owners)
	})
	for _, nm := range results {
		if nm.forbid != nil {
			return r, nm.forbid
		}
	}
	// What a Prometheus server already collected, in one query; a node
	// it shows whole needs no read of its own, and any other is read
	// from its exporter, so that no node fails on what a server has not
	// (yet) collected.
	prom := fromPrometheus(ctx, env, known, results)
	var direct []int
	for i := range results {
		nm := &results[i]
		if nm.pod == nil || nm.problem != "" {
			continue
		}
		if prom != nil {
			if s, ok := prom.byPod[nm.pod.Namespace+"/"+nm.pod.Name]; ok && s.covers(nm.want) {
				nm.scrape, nm.collected = s, true
				continue
			}
		}
		direct = append(direct, i)
	}
	hardware.Each(len(direct), func(k int) { results[direct[k]].read(ctx, env) })

	var failed, partial []string
	for _, nm := range results {
		if nm.forbid != nil {
			return r, nm.forbid
		}
		if nm.problem != "" {
			failed = append(failed, "node "+nm.node.Name+": "+nm.problem)
		} else if missing := nm.missingOptional(); len(missing) > 0 {
			partial = append(partial, fmt.Sprintf("node %s: no %s series", nm.node.Name, strings.Join(missing, ", ")))
		}
	}
	r.Table = metricsTable(results)
	// Every node named, where the reason names only the first few.
	r.Details = append(append(r.Details, failed...), partial...)
	// A few series verbatim: the first two nodes that served them.
	shownEvidence := 0
	for i := range results {
		nm := &results[i]
		if nm.scrape.devices == nil || shownEvidence == 2 {
			continue
		}
		shownEvidence++
		if nm.collected {
			r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: prom.server.queryPath(prom.evidenceQuery(nm))},
				fmt.Sprintf("utilization and memory series of node %s, as Prometheus %s collected them", nm.node.Name, prom.server.name()))
			continue
		}
		r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: nm.path, Grep: nm.seriesPattern()}, fmt.Sprintf("utilization and memory series of node %s", nm.node.Name))
	}
	for _, nm := range results {
		if nm.scrape.devices == nil && nm.path != "" && shownEvidence < 3 {
			// What the failing read answered, as kubectl shows it.
			shownEvidence++
			r.AddRawEvidence(ctx, env, cluster.GetRaw{Path: nm.path}, "node "+nm.node.Name)
		}
	}
	switch {
	case len(failed) > 0:
		r.Finish(checks.Fail, "%d of %s without per-accelerator utilization and memory: %s", len(failed), checks.Plural(len(results), "accelerator node"), checks.CapLines(failed, 3, "; "))
	case len(partial) > 0:
		r.Finish(checks.Warn, "%s; %s", served(results), checks.CapLines(partial, 3, "; "))
	default:
		r.Finish(checks.Pass, "%s%s", served(results), withOptional(results))
	}
	return r, nil
}

// find finds the node's exporter pod among its pods.
func (nm *nodeMetrics) find(pods []*cluster.NodePod, owners map[types.UID]*exporter) {
	res := hardware.AcceleratorResources(nm.node)
	for _, p := range pods {
		for _, o := range p.Owners {
			e := owners[o.UID]
			// A node known by a DRA driver alone advertises no resource:
			// any exporter of the node's is its own.
			if e == nil || (len(res) > 0 && !e.serves(res)) {
				continue
			}
			nm.exporter, nm.pod = e, p
		}
	}
	if nm.pod == nil {
		nm.problem = "no accelerator metrics exporter pod runs on it"
		return
	}
	nm.want = acceleratorCount(nm.node, nm.exporter)
	if nm.pod.Phase != corev1.PodRunning || !nm.pod.Ready {
		nm.problem = fmt.Sprintf("exporter pod %s/%s is %s, not Ready", nm.pod.Namespace, nm.pod.Name, nm.pod.Phase)
		return
	}
	nm.path = fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy%s", nm.pod.Namespace, nm.pod.Name, nm.exporter.Port, nm.exporter.Path)
}

// read reads the metrics of the node's exporter pod, through the pod
// proxy, and says which accelerators lack series.
func (nm *nodeMetrics) read(ctx context.Context, env *checks.Env) {
	body, _, err := env.Cluster.Raw(ctx, nm.path)
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			nm.forbid = fmt.Errorf("metrics of node %s: %w", nm.node.Name, err)
			return
		}
		nm.problem = fmt.Sprintf("%s's metrics do not answer: %s", nm.exporter.Name, answerOf(err))
		return
	}
	s, err := nm.exporter.parseScrape(body)
	if err != nil {
		nm.problem = fmt.Sprintf("%s's metrics: %v", nm.exporter.Name, err)
		return
	}
	nm.scrape = s
	var short []string
	for _, kind := range requiredKinds {
		have := len(s.devices[kind])
		switch {
		case have == 0:
			short = append(short, "no "+kind+" series")
		case nm.want > 0 && have < nm.want:
			short = append(short, fmt.Sprintf("%s series for %d of %d accelerators", kind, have, nm.want))
		}
	}
	if len(short) > 0 {
		nm.problem = fmt.Sprintf("%s (%s) serves %s", nm.exporter.Name, nm.pod.Name, strings.Join(short, ", "))
	}
}

// acceleratorCount is how many accelerators the node says it has of the
// exporter's kind: GPU Feature Discovery's count (physical GPUs, whatever
// MIG or time-slicing make of them), else what it can allocate.
func acceleratorCount(n *corev1.Node, e *exporter) int {
	if c, err := strconv.Atoi(n.Labels["nvidia.com/gpu.count"]); err == nil && slices.Contains(e.Resources, "nvidia.com/gpu") {
		return c
	}
	total := 0
	for r, q := range n.Status.Allocatable {
		if e.counted(r) {
			total += int(q.Value())
		}
	}
	return total
}

// missingOptional are the optional kinds the exporter has metrics of but
// served no series of.
func (nm *nodeMetrics) missingOptional() []string {
	var out []string
	for _, kind := range nm.exporter.optional() {
		if len(nm.scrape.devices[kind]) == 0 {
			out = append(out, kind)
		}
	}
	return out
}

// seriesPattern selects the utilization and memory series found.
func (nm *nodeMetrics) seriesPattern() string {
	var names []string
	for _, kind := range requiredKinds {
		if f := nm.scrape.found[kind]; len(f) > 0 {
			names = append(names, regexp.QuoteMeta(f[0]))
		}
	}
	return "^(" + strings.Join(names, "|") + ")\\{"
}

// withOptional says which optional kinds the nodes' exporters served,
// all of those they have: ", with temperature, power and interconnect".
func withOptional(results []nodeMetrics) string {
	var kinds []string
	for _, kind := range optionalKinds {
		if slices.ContainsFunc(results, func(nm nodeMetrics) bool { return slices.Contains(nm.exporter.optional(), kind) }) {
			kinds = append(kinds, kind)
		}
	}
	switch len(kinds) {
	case 0:
		return " (its exporters have no temperature, power or interconnect metrics)"
	case 1:
		return ", with " + kinds[0]
	}
	return ", with " + strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1]
}

// exporterList names the exporters of exporters.yaml, for the
// description; were the file bad, the check's Run returns its error.
func exporterList() string {
	known, err := exporters()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return exporterNames(known)
}

// served says what was shown: which exporters, how many nodes and
// accelerators.
func served(results []nodeMetrics) string {
	var names []string
	accels := 0
	for _, nm := range results {
		if !slices.Contains(names, nm.exporter.Name) {
			names = append(names, nm.exporter.Name)
		}
		accels += len(nm.scrape.devices["utilization"])
	}
	verb := "serves"
	if len(names) > 1 {
		verb = "serve"
	}
	out := fmt.Sprintf("%s %s utilization and memory for each of %s on %s", strings.Join(names, " and "), verb, checks.Plural(accels, "accelerator"), checks.Plural(len(results), "accelerator node"))
	if c := collectedBy(results); c > 0 {
		out += fmt.Sprintf(" (%d of them as a Prometheus server collected them)", c)
	}
	return out
}

// collectedBy counts the nodes whose series came from a Prometheus query.
func collectedBy(results []nodeMetrics) int {
	n := 0
	for _, nm := range results {
		if nm.collected {
			n++
		}
	}
	return n
}

// metricsTable is the devices with series of each kind, node by node.
func metricsTable(results []nodeMetrics) *checks.Table {
	t := &checks.Table{Header: append([]string{"NODE", "EXPORTER POD", "ACCELERATORS"}, allKinds...)}
	for i := range t.Header[3:] {
		t.Header[3+i] = strings.ToUpper(t.Header[3+i])
	}
	t.Header = append(t.Header, "READ FROM")
	for _, nm := range results {
		pod, want := "-", "-"
		if nm.pod != nil {
			pod = nm.pod.Namespace + "/" + nm.pod.Name
		}
		if nm.want > 0 {
			want = strconv.Itoa(nm.want)
		}
		row := []string{nm.node.Name, pod, want}
		for _, kind := range allKinds {
			cell := "-"
			if nm.scrape.devices != nil {
				cell = strconv.Itoa(len(nm.scrape.devices[kind]))
			}
			row = append(row, cell)
		}
		switch {
		case nm.collected:
			row = append(row, "prometheus")
		case nm.scrape.devices != nil:
			row = append(row, "exporter")
		default:
			row = append(row, "-")
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func exporterNames(known []exporter) string {
	var names []string
	for _, e := range known {
		names = append(names, e.Name)
	}
	return strings.Join(names, ", ")
}
