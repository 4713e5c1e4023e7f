package observability

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// targetsAnswer is the Prometheus HTTP API's answer to /api/v1/targets.
type targetsAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ActiveTargets []target `json:"activeTargets"`
	} `json:"data"`
}

// target is one active scrape target, with the interval the API reports
// beside what the Prometheus client's type holds.
type target struct {
	promv1.ActiveTarget
	ScrapeInterval string `json:"scrapeInterval"`
}

// label is one of the target's labels.
func (t target) label(name string) string { return string(t.Labels[model.LabelName(name)]) }

// discovered says whether the target came from Prometheus' Kubernetes
// discovery (a ServiceMonitor, a PodMonitor, kubernetes_sd_configs), not
// from a static configuration.
func (t target) discovered() bool {
	for k := range t.DiscoveredLabels {
		if strings.HasPrefix(k, "__meta_kubernetes_") {
			return true
		}
	}
	return false
}

// String names the target as Prometheus' own page does: its pool and
// scrape URL.
func (t target) String() string { return t.ScrapePool + " " + t.ScrapeURL }

// parseTargets reads an answer of /api/v1/targets.
func parseTargets(body []byte) ([]target, error) {
	var a targetsAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("not an answer of the Prometheus HTTP API: %w", err)
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("the Prometheus HTTP API answered %s: %s %s", a.Status, a.ErrorType, a.Error)
	}
	return a.Data.ActiveTargets, nil
}

// staleAfter is how many scrape intervals a target that says it is up may
// go unscraped before it counts as no longer collected.
const staleAfter = 3

// defaultInterval is Prometheus' own default scrape interval, for a target
// whose interval the API does not report.
const defaultInterval = time.Minute

// targetSet is what a Prometheus server's targets show.
type targetSet struct {
	all []target
	// up are the targets whose last scrape succeeded and is recent;
	// down the others, with why.
	up   []target
	down []string
	// discoveredUp are the up targets Kubernetes discovery found.
	discoveredUp int
	// ai are the AI workloads' targets, by workload name; aiDown says why
	// those not up are not.
	ai     map[string][]target
	aiUp   map[string]int
	aiDown []string
	pools  []string // the AI workloads' scrape pools, in order found
	// discoveredPool is the pool of the first up target discovered.
	discoveredPool string
}

// judgeTargets sorts targets into up and down, and finds the AI workloads
// among them. Recent is measured against the newest scrape of the same
// answer, not the reader's clock: a recording judged later says the same.
// A target was discovered in the cluster when its discovered labels say
// so, or its pool is one the server's system's discovery names (vmagent
// may drop discovered labels).
func judgeTargets(all []target, workloads []aiWorkload, sys monitoringSystem) targetSet {
	s := targetSet{all: all, ai: map[string][]target{}, aiUp: map[string]int{}}
	var newest time.Time
	for _, t := range all {
		if t.LastScrape.After(newest) {
			newest = t.LastScrape
		}
	}
	for _, t := range all {
		why := ""
		switch {
		case t.Health != promv1.HealthGood:
			why = string(t.Health)
			if t.LastError != "" {
				why += ": " + t.LastError
			}
		case newest.Sub(t.LastScrape) > staleAfter*interval(t):
			why = fmt.Sprintf("not scraped for %s (every %s)", newest.Sub(t.LastScrape).Round(time.Second), interval(t))
		}
		if why == "" {
			s.up = append(s.up, t)
			if t.discovered() || sys.discoveredPool(t.ScrapePool) {
				s.discoveredUp++
				if s.discoveredPool == "" {
					s.discoveredPool = t.ScrapePool
				}
			}
		} else {
			s.down = append(s.down, t.String()+" is "+why)
		}
		words := t.words()
		for _, w := range workloads {
			if !w.matches(t, words) {
				continue
			}
			s.ai[w.Name] = append(s.ai[w.Name], t)
			if why == "" {
				s.aiUp[w.Name]++
			} else {
				s.aiDown = append(s.aiDown, w.Name+" target "+t.String()+" is "+why)
			}
			if !slices.Contains(s.pools, t.ScrapePool) {
				s.pools = append(s.pools, t.ScrapePool)
			}
			break
		}
	}
	return s
}

// interval is how often the target is scraped.
func interval(t target) time.Duration {
	if d, err := model.ParseDuration(t.ScrapeInterval); err == nil && d > 0 {
		return time.Duration(d)
	}
	return defaultInterval
}

// aiSummary counts the AI workloads' targets: "KServe 2, vLLM 1 of 2".
func (s targetSet) aiSummary() string {
	var parts []string
	for _, name := range sortedNames(s.ai) {
		n, up := len(s.ai[name]), s.aiUp[name]
		if up == n {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d of %d up", name, up, n))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedNames(m map[string][]target) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
