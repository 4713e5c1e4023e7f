package observability

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
)

//go:embed exporters.yaml
var exportersYAML []byte

var _ = checks.RegisterData[[]exporter]("exporters.yaml", exportersYAML)

// exporter is one entry of exporters.yaml.
type exporter struct {
	Name      string   `yaml:"name"`
	Resources []string `yaml:"resources"`
	// Count are the resources whose allocatable counts the accelerators
	// the device label tells apart (Neuron's series are per core: its
	// aws.amazon.com/neuroncore), a trailing "*" matching any rest; none
	// means Resources.
	Count        []string `yaml:"count"`
	Images       []string `yaml:"images"`
	Port         int      `yaml:"port"`
	Path         string   `yaml:"path"`
	DeviceLabels []string `yaml:"deviceLabels"`
	// InstanceLabels name a partition of the device a series is about
	// (a MIG instance), where the exporter serves one series per
	// partition: each partition is then an accelerator of its own, as the
	// scheduler sees it.
	InstanceLabels []string            `yaml:"instanceLabels"`
	Prefixes       []string            `yaml:"prefixes"`
	Metrics        map[string][]string `yaml:"metrics"`
	// Load is how accelerator-load-probe loads one of the vendor's
	// accelerators; nil where no load is known.
	Load *loadSpec `yaml:"load"`
}

func exporters() ([]exporter, error) {
	return parseExporters("exporters.yaml", exportersYAML)
}

// parseExporters reads an exporters file and checks each entry has what
// the checks read: a bad entry is an error naming it.
func parseExporters(name string, data []byte) ([]exporter, error) {
	es, err := checks.Data[[]exporter](name, data)
	if err != nil {
		return nil, err
	}
	for i, e := range es {
		var missing []string
		for what, ok := range map[string]bool{
			"name": e.Name != "", "resources": len(e.Resources) > 0, "images": len(e.Images) > 0, "port": e.Port > 0,
			"path": strings.HasPrefix(e.Path, "/"), "deviceLabels": len(e.DeviceLabels) > 0,
			"metrics.utilization": len(e.Metrics["utilization"]) > 0, "metrics.memory": len(e.Metrics["memory"]) > 0,
		} {
			if !ok {
				missing = append(missing, what)
			}
		}
		for kind := range e.Metrics {
			if !slices.Contains(allKinds, kind) {
				missing = append(missing, "a known kind of metric instead of "+kind)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return nil, fmt.Errorf("%s: entry %d (%s) needs %s", name, i+1, e.Name, strings.Join(missing, ", "))
		}
	}
	return es, nil
}

// counted says whether the node's allocatable of res counts the
// accelerators the exporter's device label tells apart.
func (e exporter) counted(res corev1.ResourceName) bool {
	count := e.Count
	if len(count) == 0 {
		count = e.Resources
	}
	return slices.ContainsFunc(count, func(c string) bool {
		prefix, ok := strings.CutSuffix(c, "*")
		return string(res) == c || (ok && strings.HasPrefix(string(res), prefix))
	})
}

// optional are the optional kinds the exporter has metrics of: those of
// which a node's missing series are named.
func (e exporter) optional() []string {
	return slices.DeleteFunc(slices.Clone(optionalKinds), func(kind string) bool { return len(e.Metrics[kind]) == 0 })
}

// The kinds of metric the requirement names: per accelerator utilization
// and memory must be there; the others are reported when the hardware
// gives them.
var (
	requiredKinds = []string{"utilization", "memory"}
	optionalKinds = []string{"temperature", "power", "interconnect"}
	// allKinds are both, in the order reports show them.
	allKinds = slices.Concat(requiredKinds, optionalKinds)
)

// serves says whether the exporter is for a node with these accelerator
// resources: one of its vendor's (nvidia.com/gpu stands for nvidia.com/*,
// MIG partitions too).
func (e exporter) serves(res map[corev1.ResourceName]bool) bool {
	for r := range res {
		domain, _, _ := strings.Cut(string(r), "/")
		if slices.ContainsFunc(e.Resources, func(mine string) bool { return strings.HasPrefix(mine, domain+"/") }) {
			return true
		}
	}
	return false
}

// isImage says whether a container image is the exporter's.
func (e exporter) isImage(image string) bool {
	return slices.ContainsFunc(e.Images, func(s string) bool { return strings.Contains(image, s) })
}

// names are the metric names of a kind, with each prefix the exporter may
// be given.
func (e exporter) names(kind string) []string {
	prefixes := e.Prefixes
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	var out []string
	for _, n := range e.Metrics[kind] {
		for _, p := range prefixes {
			out = append(out, p+n)
		}
	}
	return out
}

// isName says whether name is one of the metric names of a kind, with a
// prefix the exporter may be given, as names would, without making them:
// it is asked for each of a query's thousands of series.
func (e exporter) isName(kind, name string) bool {
	for _, n := range e.Metrics[kind] {
		prefix, ok := strings.CutSuffix(name, n)
		if ok && (len(e.Prefixes) == 0 && prefix == "" || slices.Contains(e.Prefixes, prefix)) {
			return true
		}
	}
	return false
}

// scrape is what an exporter served, by kind of metric: the devices that
// have a series of it, and the names of the metrics found.
type scrape struct {
	devices map[string]map[string]bool // kind -> device -> true
	found   map[string][]string        // kind -> metric names present
}

// parseScrape reads a body in the Prometheus text exposition format, with
// the Prometheus project's own parser, and sorts its series by kind and
// device.
func (e exporter) parseScrape(body []byte) (scrape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return scrape{}, fmt.Errorf("not the Prometheus text format: %w", err)
	}
	s := scrape{devices: map[string]map[string]bool{}, found: map[string][]string{}}
	for _, kind := range allKinds {
		s.devices[kind] = map[string]bool{}
		for _, name := range e.names(kind) {
			f, ok := families[name]
			if !ok {
				continue
			}
			s.found[kind] = append(s.found[kind], name)
			for _, m := range f.GetMetric() {
				if d := e.device(m); d != "" {
					s.devices[kind][d] = true
				}
			}
		}
	}
	return s, nil
}

// device is the device a series is about, "" when no label says.
func (e exporter) device(m *dto.Metric) string {
	return e.deviceOf(func(name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	})
}

// deviceOf is the device named by the first of the exporter's device
// labels that label has, "" when none does; with the partition its
// instance labels name, when they name one.
func (e exporter) deviceOf(label func(name string) string) string {
	for _, want := range e.DeviceLabels {
		if v := label(want); v != "" {
			for _, in := range e.InstanceLabels {
				if i := label(in); i != "" {
					return v + "/" + in + "=" + i
				}
			}
			return v
		}
	}
	return ""
}
