package observability

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
)

// The solutions of the observability checks, each derived from the data
// file the check reads (docs/solutions.md).

// Solutions are the exporters of exporters.yaml.
func (c AcceleratorMetrics) Solutions() ([]checks.Solution, error) { return exporterRows(c, false) }

// Solutions are the exporters of exporters.yaml that say how to load one
// of their accelerators.
func (c AcceleratorLoadProbe) Solutions() ([]checks.Solution, error) { return exporterRows(c, true) }

// Solutions are the monitoring systems of monitoring.yaml.
func (c MonitoringSystem) Solutions() ([]checks.Solution, error) { return systemRows(c) }

// Solutions are the monitoring systems of monitoring.yaml, whose targets
// the check reads where they are kept in the cluster.
func (c MonitoringTargets) Solutions() ([]checks.Solution, error) { return systemRows(c) }

func exporterRows(c checks.Check, loads bool) ([]checks.Solution, error) {
	known, err := exporters()
	if err != nil {
		return nil, err
	}
	m := c.Meta()
	var out []checks.Solution
	for _, e := range known {
		if loads && e.Load == nil {
			continue
		}
		how := fmt.Sprintf("DaemonSet pods whose image is named %s, on nodes with %s; series from port %d%s",
			strings.Join(e.Images, " or "), strings.Join(e.Resources, ", "), e.Port, e.Path)
		out = append(out, checks.Solution{Requirement: m.Requirement, Name: e.Name, Detected: how, Checks: []string{m.ID}})
	}
	return out, nil
}

func systemRows(c checks.Check) ([]checks.Solution, error) {
	data, err := loadMonitoring()
	if err != nil {
		return nil, err
	}
	m := c.Meta()
	var out []checks.Solution
	for _, s := range data.Systems {
		var how []string
		if len(s.CRDs) > 0 {
			how = append(how, "CRDs "+strings.Join(s.CRDs, ", "))
		}
		var servers []string
		for _, sel := range s.Servers {
			servers = append(servers, labelList(sel.Labels))
		}
		if len(servers) > 0 {
			how = append(how, "server Services labelled "+strings.Join(servers, " or ")+", any namespace")
		}
		var collectors []string
		for _, col := range s.Collectors {
			collectors = append(collectors, col.Kind+" labelled "+labelList(col.Labels))
		}
		if len(collectors) > 0 {
			how = append(how, "collectors: "+strings.Join(collectors, " or "))
		}
		out = append(out, checks.Solution{Requirement: m.Requirement, Name: s.Name, Detected: strings.Join(how, "; "), Checks: []string{m.ID}})
	}
	return out, nil
}

// labelList prints labels as k=v, sorted by key.
func labelList(ls map[string]string) string {
	var out []string
	for k, v := range ls {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
