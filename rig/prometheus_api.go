package rig

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"
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
