package observability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/prometheus/common/model"
)

// queryPath is the server's instant query API, through the service proxy.
func (s server) queryPath(query string) string {
	return fmt.Sprintf("/api/v1/namespaces/%s/services/%s:%s/proxy/api/v1/query?query=%s", s.service.Namespace, s.service.Name, s.port, url.QueryEscape(query))
}

// queryAnswer is the Prometheus HTTP API's answer to an instant query,
// read for the series' labels.
type queryAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric seriesLabels `json:"metric"`
		} `json:"result"`
	} `json:"data"`
}

// seriesLabels are a series' labels, by name.
type seriesLabels map[string]string

// parseSeries reads the series of an answer of /api/v1/query whose result
// is a vector, by their labels. The queries here ask which series exist,
// never their values, so values are not read: decoding each sample as the
// Prometheus client's model.Sample (a JSON decoder of its own for the
// sample, its labels and its value) took more than twice as long, a tenth of
// check all's CPU with the 24,000 series of 500 nodes of 8 GPUs
// (BenchmarkParseSeries).
func parseSeries(body []byte) ([]seriesLabels, error) {
	var a queryAnswer
	// A result of another type (a scalar is an array of a time and a
	// value) is a type error, and the rest of the answer is still read:
	// what the server answered says more.
	err := json.Unmarshal(body, &a)
	var typeErr *json.UnmarshalTypeError
	switch {
	case err != nil && !errors.As(err, &typeErr):
		return nil, fmt.Errorf("not an answer of the Prometheus HTTP API: %w", err)
	case a.Status != "success":
		return nil, fmt.Errorf("the Prometheus HTTP API answered %s: %s %s", a.Status, a.ErrorType, a.Error)
	case a.Data.ResultType != "vector":
		return nil, fmt.Errorf("the query answered a %s, not a vector", a.Data.ResultType)
	case err != nil:
		return nil, fmt.Errorf("the query's vector: %w", err)
	}
	out := make([]seriesLabels, len(a.Data.Result))
	for i, s := range a.Data.Result {
		out[i] = s.Metric
	}
	return out, nil
}

// collected is what a Prometheus server holds of the exporters' series.
type collected struct {
	server server
	// byPod are the series of each exporter pod (namespace/name), sorted
	// by kind and device as a scrape of the pod would be.
	byPod map[string]scrape
	// match says, for each pod, the label selector its series were found
	// by, for the evidence.
	match map[string]string
}

// seriesQuery is one query for every exporter's metrics of every kind:
// one series per metric, exporter target and device, whatever else labels
// them. On a cluster of hundreds of accelerator nodes it replaces one
// proxied scrape per node with a single read.
func seriesQuery(known []exporter) string {
	var names, by []string
	for _, e := range known {
		for _, kind := range allKinds {
			for _, n := range e.names(kind) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		for _, l := range slices.Concat(e.DeviceLabels, e.InstanceLabels) {
			if !slices.Contains(by, l) {
				by = append(by, l)
			}
		}
	}
	return fmt.Sprintf(`group by (__name__, instance, namespace, pod, %s) ({__name__=~"%s"})`, strings.Join(by, ", "), strings.Join(names, "|"))
}

// fromPrometheus reads, with one query of each Prometheus server found,
// the exporters' series it has collected, and ties them to the exporter
// pods of results: by the target's instance (the pod's address and port)
// or by its namespace and pod labels. A server that does not answer the
// query is passed over: the exporters are then read one by one.
func fromPrometheus(ctx context.Context, env *checks.Env, known []exporter, results []nodeMetrics) *collected {
	_, m, err := findMonitoring(ctx, env)
	if err != nil || len(m.servers) == 0 {
		return nil
	}
	byAddr, byName := map[string]*nodeMetrics{}, map[string]*nodeMetrics{}
	for i := range results {
		nm := &results[i]
		if nm.pod == nil || nm.problem != "" {
			continue
		}
		byName[nm.pod.Namespace+"/"+nm.pod.Name] = nm
		byAddr[net.JoinHostPort(nm.pod.IP, fmt.Sprint(nm.exporter.Port))] = nm
	}
	if len(byName) == 0 {
		return nil
	}
	query := seriesQuery(known)
	for _, s := range m.servers {
		body, _, err := env.Cluster.Raw(ctx, s.queryPath(query))
		if err != nil {
			continue
		}
		v, err := parseSeries(body)
		if err != nil {
			continue
		}
		c := &collected{server: s, byPod: map[string]scrape{}, match: map[string]string{}}
		for _, l := range v {
			nm, byInstance := byAddr[l["instance"]], true
			if nm == nil {
				nm, byInstance = byName[l["namespace"]+"/"+l["pod"]], false
			}
			if nm == nil {
				continue
			}
			key := nm.pod.Namespace + "/" + nm.pod.Name
			sc, ok := c.byPod[key]
			if !ok {
				sc = scrape{devices: map[string]map[string]bool{}, found: map[string][]string{}}
				for _, kind := range allKinds {
					sc.devices[kind] = map[string]bool{}
				}
				c.byPod[key] = sc
				if byInstance {
					c.match[key] = fmt.Sprintf(`instance=%q`, l["instance"])
				} else {
					c.match[key] = fmt.Sprintf(`namespace=%q, pod=%q`, l["namespace"], l["pod"])
				}
			}
			name := l[model.MetricNameLabel]
			for _, kind := range allKinds {
				if !nm.exporter.isName(kind, name) {
					continue
				}
				if !slices.Contains(sc.found[kind], name) {
					sc.found[kind] = append(sc.found[kind], name)
				}
				if d := nm.exporter.deviceOf(func(n string) string { return l[n] }); d != "" {
					sc.devices[kind][d] = true
				}
			}
		}
		if len(c.byPod) > 0 {
			return c
		}
	}
	return nil
}

// covers says whether a scrape has utilization and memory for all of a
// node's accelerators: what a read of the exporter itself could add
// nothing to.
func (s scrape) covers(want int) bool {
	for _, kind := range requiredKinds {
		have := len(s.devices[kind])
		if have == 0 || want > 0 && have < want {
			return false
		}
	}
	return true
}

// evidenceQuery is the query that shows one pod's utilization and memory
// series as the server holds them.
func (c *collected) evidenceQuery(nm *nodeMetrics) string {
	var names []string
	for _, kind := range requiredKinds {
		if f := nm.scrape.found[kind]; len(f) > 0 {
			names = append(names, regexp.QuoteMeta(f[0]))
		}
	}
	return fmt.Sprintf(`{__name__=~"%s", %s}`, strings.Join(names, "|"), c.match[nm.pod.Namespace+"/"+nm.pod.Name])
}
