package observability

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

//go:embed monitoring.yaml
var monitoringYAML []byte

var _ = checks.RegisterData[monitoringData]("monitoring.yaml", monitoringYAML)

// monitoringData is monitoring.yaml.
type monitoringData struct {
	Systems   []monitoringSystem `yaml:"systems"`
	Workloads []aiWorkload       `yaml:"workloads"`
}

// monitoringSystem is one monitoring system: the CRDs and collector
// workloads that show it, the Services of its servers that answer the
// Prometheus targets API, and its scrape configurations.
type monitoringSystem struct {
	Name    string           `yaml:"name"`
	CRDs    []string         `yaml:"crds"`
	Servers []serverSelector `yaml:"servers"`
	Ports   []string         `yaml:"ports"`
	// Pools are the prefixes of the scrape pools its Kubernetes discovery
	// names: a target of such a pool was discovered in the cluster even
	// when the server does not report its discovered labels.
	Pools      []string            `yaml:"pools"`
	Collectors []collectorSelector `yaml:"collectors"`
	Scrapes    []scrapeKind        `yaml:"scrapes"`
	// Instances are custom resources each of which is one of its
	// collectors (VMAgent), with the state its operator writes.
	Instances []instanceKind `yaml:"instances"`
	// OtherConfig says what else may tell it what to scrape, which
	// aiconform does not read.
	OtherConfig string `yaml:"otherConfig"`
	// KeepsTargets says where a collector whose targets cannot be read in
	// the cluster keeps them.
	KeepsTargets string `yaml:"keepsTargets"`
}

// collectorSelector selects a system's collector workloads: a kind
// (Deployment or DaemonSet) whose pod template carries the labels.
type collectorSelector struct {
	Kind   string            `yaml:"kind"`
	Labels map[string]string `yaml:"labels"`
}

// scrapeKind is a custom resource that tells a collector what to scrape.
type scrapeKind struct {
	CRD string `yaml:"crd"`
	// Selects is pods or services.
	Selects string `yaml:"selects"`
	// Selector is the path of its label selector, spec.selector when
	// unset; Namespaces the path of its namespace selector ({any,
	// matchNames}), unset when it selects in its own namespace only (every
	// namespace, for a cluster-scoped kind).
	Selector   string `yaml:"selector"`
	Namespaces string `yaml:"namespaces"`
	// Endpoints is the path of the scrape status its collector writes of
	// each endpoint; EndpointsHint says what turns it on.
	Endpoints     string `yaml:"endpoints"`
	EndpointsHint string `yaml:"endpointsHint"`
	// State is what its operator says of it, when it can reject it.
	State *objectState `yaml:"state"`
}

// instanceKind is a custom resource of which each object is a collector.
type instanceKind struct {
	CRD   string       `yaml:"crd"`
	State *objectState `yaml:"state"`
}

// objectState is where an operator writes the state of an object: the
// path of a string field, the values of it that say the object is not in
// effect, and the path of the reason it gives.
type objectState struct {
	Path   string   `yaml:"path"`
	Bad    []string `yaml:"bad"`
	Reason string   `yaml:"reason"`
}

// failed says why obj is not in effect by the state st, or "".
func (st *objectState) failed(obj *unstructured.Unstructured) string {
	if st == nil || st.Path == "" {
		return ""
	}
	v, _, _ := unstructured.NestedString(obj.Object, strings.Split(st.Path, ".")...)
	if !slices.Contains(st.Bad, v) {
		return ""
	}
	why := fmt.Sprintf("%s=%s", st.Path, v)
	if st.Reason != "" {
		if r, _, _ := unstructured.NestedString(obj.Object, strings.Split(st.Reason, ".")...); r != "" {
			if len(r) > 200 {
				r = r[:200] + "..."
			}
			why += ": " + r
		}
	}
	return why
}

// discoveredPool says whether pool is one the system's Kubernetes
// discovery names.
func (sys monitoringSystem) discoveredPool(pool string) bool {
	return slices.ContainsFunc(sys.Pools, func(p string) bool { return strings.HasPrefix(pool, p) })
}

// system is the system called name.
func (data monitoringData) system(name string) monitoringSystem {
	for _, s := range data.Systems {
		if s.Name == name {
			return s
		}
	}
	return monitoringSystem{}
}

// serverSelector selects the Services of a system's Prometheus servers.
type serverSelector struct {
	Labels map[string]string `yaml:"labels"`
}

// aiWorkload is one kind of AI workload a scrape target may be.
type aiWorkload struct {
	Name   string   `yaml:"name"`
	Labels []string `yaml:"labels"`
	Names  []string `yaml:"names"`
}

func loadMonitoring() (monitoringData, error) {
	return checks.Data[monitoringData]("monitoring.yaml", monitoringYAML)
}

// prometheusOperatorCRD is the Prometheus Operator's kind for a Prometheus
// server, whose conditions say whether the operator runs it.
const prometheusOperatorCRD = "prometheuses.monitoring.coreos.com"

// server is a Prometheus server's Service: where its HTTP API answers
// through the API server's service proxy.
type server struct {
	system  string
	service *corev1.Service
	port    string // the Service port's name, or its number
}

// name is namespace/name of the server's Service.
func (s server) name() string { return s.service.Namespace + "/" + s.service.Name }

// targetsPath is the server's targets API, read through the service proxy
// as `kubectl get --raw` reads it; pool, when set, narrows it to one scrape
// pool.
func (s server) targetsPath(pool string) string {
	p := fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s/proxy/api/v1/targets?state=active", s.service.Namespace, s.service.Name, s.port)
	if pool != "" {
		p += "&scrapePool=" + url.QueryEscape(pool)
	}
	return p
}

// monitoring is what a cluster shows of its monitoring systems.
type monitoring struct {
	// installed are the systems whose CRDs the cluster serves, by name.
	installed []string
	crds      []string // those CRDs, for the evidence
	// prometheuses are the Prometheus Operator's Prometheus objects.
	prometheuses []*unstructured.Unstructured
	servers      []server
	// collectors are the systems' collector workloads found;
	// collectorsErr why they could not be listed.
	collectors    []collector
	collectorsErr error
	// instances are the systems' collector objects (VMAgent).
	instances []instance
	// scrapes are the scrape configurations of the systems installed;
	// kindNames the kinds of their CRDs, by CRD name.
	scrapes   []scrapeConfig
	kindNames map[string]string
}

// collector is one collector workload of a system.
type collector struct {
	system string
	kind   string
	res    cluster.Resource
	ns     string
	name   string
	// desired and ready count its pods.
	desired, ready int32
}

// String is kind namespace/name.
func (c collector) String() string { return c.kind + " " + c.ns + "/" + c.name }

// instance is one collector object of a system.
type instance struct {
	system string
	kind   instanceKind
	res    cluster.Resource
	obj    *unstructured.Unstructured
}

// scrapeConfig is one scrape configuration object of a system.
type scrapeConfig struct {
	system string
	kind   scrapeKind
	res    cluster.Resource
	// namespaced is whether the kind is namespaced.
	namespaced bool
	obj        *unstructured.Unstructured
}

// systemNames are the names of the systems found, installed, serving or
// running a collector.
func (m monitoring) systemNames() []string {
	names := slices.Clone(m.installed)
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, s := range m.servers {
		add(s.system)
	}
	for _, c := range m.collectors {
		add(c.system)
	}
	return names
}

// collectorsOf are the system's collectors found.
func (m monitoring) collectorsOf(system string) []collector {
	var out []collector
	for _, c := range m.collectors {
		if c.system == system {
			out = append(out, c)
		}
	}
	return out
}

// serving says whether a server of the system was found.
func (m monitoring) serving(system string) bool {
	return slices.ContainsFunc(m.servers, func(s server) bool { return s.system == system })
}

// findMonitoring reads the CRDs and Services for the monitoring systems
// monitoring.yaml knows, and returns those with the data. An error is a
// read the cluster refused, or data that does not load.
func findMonitoring(ctx context.Context, env *checks.Env) (monitoringData, monitoring, error) {
	data, err := loadMonitoring()
	if err != nil {
		return data, monitoring{}, err
	}
	m, err := data.find(ctx, env)
	return data, m, err
}

func (data monitoringData) find(ctx context.Context, env *checks.Env) (monitoring, error) {
	var m monitoring
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return m, err
	}
	for _, sys := range data.Systems {
		found := false
		for _, name := range sys.CRDs {
			if kube.FindCRD(crds, name) != nil {
				m.crds = append(m.crds, name)
				found = true
			}
		}
		if found {
			m.installed = append(m.installed, sys.Name)
		}
		for _, k := range sys.Scrapes {
			if k.Selects != "pods" && k.Selects != "services" {
				return m, fmt.Errorf("monitoring.yaml: %s: scrapes of %s select %q, not pods or services", sys.Name, k.CRD, k.Selects)
			}
		}
		for _, c := range sys.Collectors {
			if _, ok := collectorKinds[c.Kind]; !ok {
				return m, fmt.Errorf("monitoring.yaml: %s: a collector of kind %q, not Deployment or DaemonSet", sys.Name, c.Kind)
			}
		}
	}
	if crd := kube.FindCRD(crds, prometheusOperatorCRD); crd != nil {
		m.prometheuses, err = checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: kube.CRDResource(crd)})
		if err != nil {
			return m, err
		}
	}
	// A verdict that stands on a server does not need the collectors: a
	// failed list of them is kept, and matters only where it would.
	m.collectors, m.collectorsErr = data.findCollectors(ctx, env)
	for _, sys := range data.Systems {
		if !slices.Contains(m.installed, sys.Name) {
			continue
		}
		for _, k := range sys.Instances {
			crd := kube.FindCRD(crds, k.CRD)
			if crd == nil {
				continue
			}
			res := kube.CRDResource(crd)
			objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
			if err != nil {
				return m, err
			}
			for _, o := range objs {
				m.instances = append(m.instances, instance{system: sys.Name, kind: k, res: res, obj: o})
			}
		}
		for _, k := range sys.Scrapes {
			crd := kube.FindCRD(crds, k.CRD)
			if crd == nil {
				continue
			}
			res := kube.CRDResource(crd)
			if m.kindNames == nil {
				m.kindNames = map[string]string{}
			}
			m.kindNames[k.CRD] = crd.Spec.Names.Kind
			objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
			if err != nil {
				return m, err
			}
			for _, o := range objs {
				m.scrapes = append(m.scrapes, scrapeConfig{system: sys.Name, kind: k, res: res,
					namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, obj: o})
			}
		}
	}
	services, err := checks.List[*corev1.Service](ctx, env, cluster.Query{Resource: cluster.Services})
	if err != nil {
		return m, err
	}
	for _, svc := range services {
		if run, ok := checks.ProbeRun(svc.Labels, svc.Namespace); ok && run != "" {
			continue // a probe's, not the cluster's
		}
		for _, sys := range data.Systems {
			if port, ok := sys.serves(svc); ok {
				m.servers = append(m.servers, server{system: sys.Name, service: svc, port: port})
				break
			}
		}
	}
	return m, nil
}

// collectorKinds are the kinds a collector may be, with how many pods
// each wants and has ready.
var collectorKinds = map[string]cluster.Resource{"Deployment": cluster.Deployments, "DaemonSet": cluster.DaemonSets}

// findCollectors lists the kinds the systems' collectors name, and finds
// the workloads whose pod template carries a collector's labels, in any
// namespace.
func (data monitoringData) findCollectors(ctx context.Context, env *checks.Env) ([]collector, error) {
	var out []collector
	// The selectors are made once, not once for each of thousands of
	// workloads.
	type selector struct {
		system, kind string
		labels.Selector
	}
	var sels []selector
	for _, sys := range data.Systems {
		for _, c := range sys.Collectors {
			if len(c.Labels) > 0 {
				sels = append(sels, selector{sys.Name, c.Kind, labels.SelectorFromSet(c.Labels)})
			}
		}
	}
	match := func(kind, ns, name string, tmpl map[string]string, desired, ready int32) {
		for _, s := range sels {
			if s.kind == kind && s.Matches(labels.Set(tmpl)) {
				out = append(out, collector{system: s.system, kind: kind, res: collectorKinds[kind], ns: ns, name: name, desired: desired, ready: ready})
				return
			}
		}
	}
	wanted := func(kind string) bool {
		return slices.ContainsFunc(data.Systems, func(s monitoringSystem) bool {
			return slices.ContainsFunc(s.Collectors, func(c collectorSelector) bool { return c.Kind == kind })
		})
	}
	if wanted("Deployment") {
		deps, _, err := env.Cluster.Workloads(ctx, cluster.Deployments)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			match("Deployment", d.Namespace, d.Name, d.TemplateLabels, d.Replicas, d.Ready)
		}
	}
	if wanted("DaemonSet") {
		sets, err := checks.List[*appsv1.DaemonSet](ctx, env, cluster.Query{Resource: cluster.DaemonSets})
		if err != nil {
			return nil, err
		}
		for _, d := range sets {
			match("DaemonSet", d.Namespace, d.Name, d.Spec.Template.Labels, d.Status.DesiredNumberScheduled, d.Status.NumberReady)
		}
	}
	return out, nil
}

// serves says whether svc is in front of one of the system's Prometheus
// servers, and on which of its ports the HTTP API answers.
func (sys monitoringSystem) serves(svc *corev1.Service) (string, bool) {
	matched := slices.ContainsFunc(sys.Servers, func(s serverSelector) bool {
		return len(s.Labels) > 0 && labels.SelectorFromSet(s.Labels).Matches(labels.Set(svc.Labels))
	})
	if !matched {
		return "", false
	}
	for _, want := range sys.Ports {
		for _, p := range svc.Spec.Ports {
			if p.Name == want {
				return p.Name, true
			}
		}
	}
	// A Service of one unnamed port: the API answers there or nowhere.
	if len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].Name == "" {
		return fmt.Sprint(svc.Spec.Ports[0].Port), true
	}
	return "", false
}

// listeningLocally names the Prometheus Operator's Prometheus objects in
// the namespace of the server's Service when every one of them listens on
// its pods' loopback only (spec.listenLocal, as OpenShift's monitoring
// runs them, behind kube-rbac-proxy): the Service's web port then reaches
// no server. "" otherwise.
func (m monitoring) listeningLocally(s server) string {
	if s.system != "Prometheus Operator" {
		return ""
	}
	var names []string
	for _, p := range m.prometheuses {
		if p.GetNamespace() != s.service.Namespace {
			continue
		}
		local, _, _ := unstructured.NestedBool(p.Object, "spec", "listenLocal")
		if !local {
			return ""
		}
		names = append(names, kube.ObjectName(p))
	}
	return strings.Join(names, ", ")
}

// prometheusState says whether the Prometheus Operator runs a Prometheus:
// its Available condition ("" when the operator wrote none yet).
func prometheusState(p *unstructured.Unstructured) (kube.Condition, bool) {
	return kube.FindCondition(kube.Conditions(p), "Available")
}

// refused says whether err is the cluster refusing the reader: the check
// cannot decide.
func refused(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) }

// refusedBehind says whether a read through the service proxy was refused
// by the server behind it, not by the API server: a 401 or 403 whose body
// is not the API server's own Status (RBAC's refusal of services/proxy is
// one, kube-rbac-proxy's "Unauthorized" or "Forbidden (user=...)" is
// plain text). The proxy does not pass the reader's credentials on, so a
// server behind an authenticating proxy (OpenShift's monitoring) refuses
// every such read.
func refusedBehind(err error, body []byte) bool {
	if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		return false
	}
	var st struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(body, &st) != nil || st.Kind != "Status"
}

// answerOf says what a failed read through a proxy answered: the API
// server's message, and what it relayed from behind the proxy, which a
// 503 keeps apart from its message ("error trying to reach service: ...").
func answerOf(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err.Error()
	}
	s := st.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			// "unknown" is client-go's word for an empty body.
			if m := strings.TrimSpace(c.Message); m != "" && m != "unknown" && !strings.Contains(s.Message, m) {
				if len(m) > 200 {
					m = m[:200] + "..."
				}
				return s.Message + ": " + m
			}
		}
	}
	return s.Message
}

// separators split a target's names into words.
var separators = regexp.MustCompile(`[^a-z0-9]+`)

// matches says whether a target's labels show it is this workload: one of
// its Kubernetes label keys, as discovery carries it or as a relabelling
// copied it, or one of its names as whole words of the job, pool, pod,
// service or container. words are t.words(), made once by a caller that
// matches one target against many workloads.
func (w aiWorkload) matches(t target, words []string) bool {
	for _, key := range w.Labels {
		l := promLabel(key)
		for _, meta := range []string{"__meta_kubernetes_pod_label_" + l, "__meta_kubernetes_service_label_" + l} {
			if t.DiscoveredLabels[meta] != "" {
				return true
			}
		}
		if t.label(l) != "" {
			return true
		}
	}
	if len(w.Names) == 0 {
		return false
	}
	for _, n := range w.Names {
		needle := "-" + separators.ReplaceAllString(strings.ToLower(n), "-") + "-"
		if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(w, needle) }) {
			return true
		}
	}
	return false
}

// words are the target's pool, job, pod, service and container names,
// lower case, each between dashes with its separators made dashes: what a
// workload's names are looked for in.
func (t target) words() []string {
	var words []string
	for _, v := range []string{t.ScrapePool, t.label("job"), t.label("pod"), t.label("service"), t.label("container")} {
		words = append(words, "-"+strings.Trim(separators.ReplaceAllString(strings.ToLower(v), "-"), "-")+"-")
	}
	return words
}

// promLabel is a Kubernetes label key as Prometheus' Kubernetes discovery
// writes it into a label name: every character outside [a-zA-Z0-9_] an
// underscore.
func promLabel(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, key)
}
