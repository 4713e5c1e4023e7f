package scheduling

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The metrics APIs an HPA reads: resource metrics (CPU, memory), custom
// metrics of Kubernetes objects, and external metrics of anything else.
const (
	resourceMetricsGroup = "metrics.k8s.io"
	customMetricsGroup   = "custom.metrics.k8s.io"
	externalMetricsGroup = "external.metrics.k8s.io"
)

//go:embed metrics_adapters.yaml
var metricsAdaptersYAML []byte

var _ = checks.RegisterData[[]metricsAdapter]("metrics_adapters.yaml", metricsAdaptersYAML)

// metricsAdapter is an adapter known by the Service its APIServices name.
type metricsAdapter struct {
	Name     string           `yaml:"name"`
	Services []adapterService `yaml:"services"`
	// ProbeMetrics are external metrics it always serves.
	ProbeMetrics []string `yaml:"probeMetrics"`
}

type adapterService struct {
	Namespace string `yaml:"namespace"`
	Name      string `yaml:"name"`
}

// metricsAdapters reads the embedded metrics_adapters.yaml.
func metricsAdapters() ([]metricsAdapter, error) {
	return checks.Data[[]metricsAdapter]("metrics_adapters.yaml", metricsAdaptersYAML)
}

// adapterName names the adapter behind a Service.
func adapterName(as []metricsAdapter, namespace, name string) string {
	if a := findAdapter(as, namespace, name); a != nil {
		return fmt.Sprintf("%s (%s/%s)", a.Name, namespace, name)
	}
	return "the Service " + namespace + "/" + name
}

// findAdapter is the first adapter known to serve behind the Service, nil
// for none.
func findAdapter(as []metricsAdapter, namespace, name string) *metricsAdapter {
	for i, a := range as {
		for _, s := range a.Services {
			if s.Name == name && (s.Namespace == "" || s.Namespace == namespace) {
				return &as[i]
			}
		}
	}
	return nil
}

// MetricsAPIs judges the aggregated metrics APIs an HPA scales on: they
// must be registered, served by an adapter, and Available.
type MetricsAPIs struct{}

// Meta implements checks.Check.
func (MetricsAPIs) Meta() checks.Meta {
	return checks.Meta{
		ID: "metrics-apis", Title: "Custom or external metrics APIs are served and Available",
		Requirement: "pod_autoscaling",
		Description: "Lists the APIServices (one LIST) and reads those of metrics.k8s.io, custom.metrics.k8s.io and " +
			"external.metrics.k8s.io: which adapter's Service serves each (metrics-server, KEDA, " +
			"prometheus-adapter... as checks/scheduling/metrics_adapters.yaml knows them) and whether the " +
			"aggregator reports it Available. Passes when custom.metrics.k8s.io or external.metrics.k8s.io " +
			"is Available and no metrics APIService is unavailable; fails when one is unavailable (with the " +
			"aggregator's reason) or when neither is registered, since an HPA can then scale on CPU and " +
			"memory only. No metrics.k8s.io warns: HPAs on CPU or memory have nothing to read.",
		Remediation: "Install an adapter that serves the metrics AI workloads are scaled on (prometheus-adapter over " +
			"Prometheus, KEDA, a cloud's adapter); for an unavailable APIService, the reason names what the " +
			"aggregator could not reach (a missing Service, no endpoints, a failing discovery call).",
	}
}

// Run implements checks.Check.
func (MetricsAPIs) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	adapters, err := metricsAdapters()
	if err != nil {
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.APIServices}, Grep: cluster.GrepAny("NAME", "metrics.k8s.io")}, "")
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return r, err
	}
	available := map[string][]string{} // group -> the adapters serving it
	var unavailable []string
	for _, s := range services {
		group, _, _ := unstructured.NestedString(s.Object, "spec", "group")
		if group != resourceMetricsGroup && group != customMetricsGroup && group != externalMetricsGroup {
			continue
		}
		ns, _, _ := unstructured.NestedString(s.Object, "spec", "service", "namespace")
		name, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
		by := "the API server itself"
		if name != "" {
			by = adapterName(adapters, ns, name)
		}
		c, ok := kube.FindCondition(kube.Conditions(s), "Available")
		if !ok || c.Status != "True" {
			why := "no Available condition"
			if ok {
				why = fmt.Sprintf("Available=%s (%s: %s)", c.Status, c.Reason, c.Message)
			}
			unavailable = append(unavailable, fmt.Sprintf("%s, served by %s: %s", s.GetName(), by, why))
			continue
		}
		if !checks.Contains(available[group], by) {
			available[group] = append(available[group], by)
		}
	}
	for _, g := range []string{customMetricsGroup, externalMetricsGroup, resourceMetricsGroup} {
		if by := available[g]; len(by) > 0 {
			r.Details = append(r.Details, fmt.Sprintf("%s: Available, served by %s", g, strings.Join(by, ", ")))
		}
	}
	r.Details = append(r.Details, unavailable...)
	scalable := len(available[customMetricsGroup]) + len(available[externalMetricsGroup])
	switch {
	case len(unavailable) > 0:
		r.Finish(checks.Fail, "%s not Available: %s", checks.Plural(len(unavailable), "metrics APIService"), unavailable[0])
	case scalable == 0:
		r.Finish(checks.Fail, "neither %s nor %s is registered: an HPA can scale on CPU and memory only "+
			"(looked for their APIServices)", customMetricsGroup, externalMetricsGroup)
	case len(available[resourceMetricsGroup]) == 0:
		r.Finish(checks.Warn, "%s; %s is not registered: HPAs on CPU or memory have nothing to read", servedBy(available), resourceMetricsGroup)
	default:
		r.Finish(checks.Pass, "%s", servedBy(available))
	}
	return r, nil
}

// servedBy says which adapter serves each custom or external metrics API,
// each adapter once.
func servedBy(available map[string][]string) string {
	var adapters []string
	groups := map[string][]string{}
	for _, g := range []string{customMetricsGroup, externalMetricsGroup} {
		by := strings.Join(available[g], ", ")
		if by == "" {
			continue
		}
		if _, seen := groups[by]; !seen {
			adapters = append(adapters, by)
		}
		groups[by] = append(groups[by], g)
	}
	var parts []string
	for _, by := range adapters {
		parts = append(parts, strings.Join(groups[by], " and ")+" served by "+by)
	}
	return strings.Join(parts, "; ")
}
