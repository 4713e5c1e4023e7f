package simulate

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PrometheusTarget is an active scrape target as the Prometheus HTTP API's
// /api/v1/targets reports it (Prometheus 3.16's fields).
type PrometheusTarget struct {
	DiscoveredLabels   map[string]string `json:"discoveredLabels"`
	Labels             map[string]string `json:"labels"`
	ScrapePool         string            `json:"scrapePool"`
	ScrapeURL          string            `json:"scrapeUrl"`
	GlobalURL          string            `json:"globalUrl"`
	LastError          string            `json:"lastError"`
	LastScrape         time.Time         `json:"lastScrape"`
	LastScrapeDuration float64           `json:"lastScrapeDuration"`
	Health             string            `json:"health"`
	ScrapeInterval     string            `json:"scrapeInterval"`
	ScrapeTimeout      string            `json:"scrapeTimeout"`
}

// PrometheusTargets is what Prometheus answers to a GET of /api/v1/targets
// with query: the active targets, of one scrape pool when the query names
// one (recorded outputs serve it where no Prometheus runs).
func PrometheusTargets(targets []PrometheusTarget, query url.Values) []byte {
	active := []PrometheusTarget{}
	for _, t := range targets {
		if pool := query.Get("scrapePool"); pool == "" || pool == t.ScrapePool {
			active = append(active, t)
		}
	}
	// Fields in the order Prometheus writes them.
	type data struct {
		ActiveTargets       []PrometheusTarget `json:"activeTargets"`
		DroppedTargets      []any              `json:"droppedTargets"`
		DroppedTargetCounts map[string]int     `json:"droppedTargetCounts"`
	}
	body, err := json.Marshal(struct {
		Status string `json:"status"`
		Data   data   `json:"data"`
	}{"success", data{ActiveTargets: active, DroppedTargets: []any{}}})
	if err != nil {
		panic(err) // maps of strings and times always encode
	}
	return body
}

// PrometheusTargetsHandler serves targets at /api/v1/targets.
func PrometheusTargetsHandler(targets []PrometheusTarget) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/targets", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(PrometheusTargets(targets, r.URL.Query()))
	})
	return mux
}

// PodTarget is a pod as a Prometheus job's Kubernetes discovery (role pod)
// finds it, scraped on port, relabelled as the common configurations do
// (namespace, pod, node), and up, last scraped at at.
func PodTarget(job string, port int, p *corev1.Pod, at time.Time) PrometheusTarget {
	addr := net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))
	d := map[string]string{
		"__address__": addr, "__metrics_path__": "/metrics", "__scheme__": "http",
		"__scrape_interval__": "30s", "__scrape_timeout__": "10s", "job": job,
		"__meta_kubernetes_namespace": p.Namespace, "__meta_kubernetes_pod_name": p.Name,
		"__meta_kubernetes_pod_ip": p.Status.PodIP, "__meta_kubernetes_pod_node_name": p.Spec.NodeName,
		"__meta_kubernetes_pod_ready": "true", "__meta_kubernetes_pod_phase": string(p.Status.Phase),
	}
	for k, v := range p.Labels {
		d["__meta_kubernetes_pod_label_"+PromLabelName(k)] = v
		d["__meta_kubernetes_pod_labelpresent_"+PromLabelName(k)] = "true"
	}
	return PrometheusTarget{
		DiscoveredLabels: d,
		Labels:           map[string]string{"instance": addr, "job": job, "namespace": p.Namespace, "pod": p.Name, "node": p.Spec.NodeName},
		ScrapePool:       job, ScrapeURL: "http://" + addr + "/metrics", GlobalURL: "http://" + addr + "/metrics",
		LastScrape: at, LastScrapeDuration: 0.0042, Health: "up", ScrapeInterval: "30s", ScrapeTimeout: "10s",
	}
}

// PromLabelName is a Kubernetes label key as Prometheus' Kubernetes
// discovery writes it into a label name: every character outside
// [a-zA-Z0-9_] an underscore.
func PromLabelName(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, key)
}
