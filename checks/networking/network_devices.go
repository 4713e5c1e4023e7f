package networking

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

//go:embed network_devices.yaml
var networkDevicesYAML []byte

var _ = checks.RegisterData[networkData]("network_devices.yaml", networkDevicesYAML)

// networkData is network_devices.yaml: the DRA drivers and device plugins
// of network devices.
type networkData struct {
	DRADrivers    []networkDriver `yaml:"draDrivers"`
	DevicePlugins []networkPlugin `yaml:"devicePlugins"`
}

// networkDriver is a DRA driver of network devices.
type networkDriver struct {
	Driver string `yaml:"driver"`
	Name   string `yaml:"name"`
}

// networkPlugin is a device plugin of network devices, known by the
// extended resources it advertises.
type networkPlugin struct {
	Name      string   `yaml:"name"`
	Resources []string `yaml:"resources"`
	Except    []string `yaml:"except"`
}

func loadNetworkData() (networkData, error) {
	return checks.Data[networkData]("network_devices.yaml", networkDevicesYAML)
}

// describe names a network driver as the data knows it, with the name it
// publishes under.
func (d networkData) describe(driver string) string {
	for _, k := range d.DRADrivers {
		if k.Driver == driver {
			return k.Name + " (" + driver + ")"
		}
	}
	return driver
}

func (d networkData) isDriver(driver string) bool {
	return slices.ContainsFunc(d.DRADrivers, func(k networkDriver) bool { return k.Driver == driver })
}

// drivers are the names the network drivers publish under.
func (d networkData) drivers() []string {
	out := make([]string, len(d.DRADrivers))
	for i, k := range d.DRADrivers {
		out[i] = k.Driver
	}
	return out
}

// patterns are every device plugin's resource patterns, for messages.
func (d networkData) patterns() []string {
	var out []string
	for _, p := range d.DevicePlugins {
		out = append(out, p.Resources...)
	}
	return out
}

// plugin is the device plugin a resource name is one of.
func (d networkData) plugin(res string) (networkPlugin, bool) {
	for _, p := range d.DevicePlugins {
		if slices.ContainsFunc(p.Resources, func(pat string) bool { return matchName(pat, res) }) &&
			!slices.ContainsFunc(p.Except, func(pat string) bool { return matchName(pat, res) }) {
			return p, true
		}
	}
	return networkPlugin{}, false
}

// matchName matches a resource name against an exact name, a prefix
// ("rdma/*") or a suffix ("*.IP").
func matchName(pattern, name string) bool {
	switch {
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(name, strings.TrimSuffix(pattern, "*"))
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(name, strings.TrimPrefix(pattern, "*"))
	}
	return name == pattern
}

// netPublisher is what one network DRA driver publishes.
type netPublisher struct {
	driver  string
	nodes   []string // nodes of per-node pools
	shared  int      // pools for several nodes
	devices int
	// described counts the devices with at least one attribute;
	// attributes are their names, in order.
	described  int
	attributes []string
	slices     []string
}

// where says on which nodes a driver publishes.
func (p *netPublisher) where() string {
	s := checks.Plural(len(p.nodes), "node")
	if p.shared > 0 {
		s += fmt.Sprintf(" and %s for several nodes", checks.Plural(p.shared, "pool"))
	}
	return s
}

// networkDRA reads what the network DRA drivers of the data publish, from
// the ResourceSlices the DRA checks list; served is false when the DRA API
// is not registered, and then nothing more is read.
func networkDRA(ctx context.Context, env *checks.Env, data networkData) (pubs []*netPublisher, served bool, err error) {
	services, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: cluster.APIServices})
	if err != nil {
		return nil, false, err
	}
	served = slices.ContainsFunc(services, func(s *unstructured.Unstructured) bool {
		return str(s.Object, "spec", "group") == hardware.DRAGroup && str(s.Object, "spec", "version") == hardware.DRAVersion
	})
	if !served {
		return nil, false, nil
	}
	rslices, err := checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices})
	if err != nil {
		return nil, true, err
	}
	by := map[string]*netPublisher{}
	attrs := map[string]map[string]bool{}
	for _, s := range rslices {
		d := s.Spec.Driver
		if !data.isDriver(d) {
			continue
		}
		p := by[d]
		if p == nil {
			p = &netPublisher{driver: d}
			by[d], attrs[d] = p, map[string]bool{}
		}
		p.devices += len(s.Spec.Devices)
		p.slices = append(p.slices, s.Name)
		if n := s.Spec.NodeName; n != nil && *n != "" {
			if !slices.Contains(p.nodes, *n) {
				p.nodes = append(p.nodes, *n)
			}
		} else {
			p.shared++
		}
		for _, dev := range s.Spec.Devices {
			if len(dev.Attributes) > 0 {
				p.described++
			}
			for name := range dev.Attributes {
				attrs[d][string(name)] = true
			}
		}
	}
	for _, d := range checks.SortedKeys(by) {
		p := by[d]
		slices.Sort(p.nodes)
		slices.Sort(p.slices)
		p.attributes = checks.SortedKeys(attrs[d])
		pubs = append(pubs, p)
	}
	return pubs, true, nil
}

// sliceEvidence shows the slices of the network drivers, as `kubectl get
// resourceslices` lists them, filtered to those drivers.
func sliceEvidence(ctx context.Context, env *checks.Env, r *checks.Result, data networkData) {
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ResourceSlices}, Grep: cluster.GrepAny(append([]string{"NAME"}, data.drivers()...)...)},
		"the slices the network DRA drivers publish, a slice per node and pool")
}

// pluginResource is one network device plugin's resource on the nodes.
type pluginResource struct {
	name   string
	plugin string
	nodes  []string
	total  int64
}

// networkPlugins finds the network device plugins' resources in the nodes'
// allocatable, in name order. Accelerators are never among them.
func networkPlugins(nodes []*corev1.Node, data networkData) []*pluginResource {
	by := map[string]*pluginResource{}
	for _, n := range nodes {
		for name, q := range n.Status.Allocatable {
			if hardware.IsAccelerator(name) || q.Value() <= 0 {
				continue
			}
			p, ok := data.plugin(string(name))
			if !ok {
				continue
			}
			res := by[string(name)]
			if res == nil {
				res = &pluginResource{name: string(name), plugin: p.Name}
				by[string(name)] = res
			}
			res.nodes = append(res.nodes, n.Name)
			res.total += q.Value()
		}
	}
	var out []*pluginResource
	for _, name := range checks.SortedKeys(by) {
		slices.Sort(by[name].nodes)
		out = append(out, by[name])
	}
	return out
}

// maxNetworkNodes bounds how many nodes, and slices, the evidence names.
const maxNetworkNodes = 5

// allocatableColumns are custom columns of a node's allocatable of each
// resource.
func allocatableColumns(resources []string) string {
	cols := []string{"NAME:.metadata.name"}
	for _, res := range resources {
		short := strings.ToUpper(res[strings.LastIndex(res, "/")+1:])
		cols = append(cols, fmt.Sprintf("%s:.status.allocatable.%s", short, strings.ReplaceAll(res, ".", `\.`)))
	}
	return strings.Join(cols, ",")
}

// NetworkDevices judges whether network devices are resources the
// scheduler allocates, and whether it can see what they are.
type NetworkDevices struct{}

// Meta implements checks.Check.
func (NetworkDevices) Meta() checks.Meta {
	return checks.Meta{
		ID: "network-devices", Title: "Network devices are schedulable resources whose characteristics the scheduler sees",
		Requirement: "high_performance_networking",
		Description: "Reads the ResourceSlices of the network DRA drivers checks/networking/network_devices.yaml " +
			"knows (DRANET's dra.net, the SR-IOV DRA driver's sriovnetwork.k8snetworkplumbingwg.io; never an " +
			"accelerator's), grouping their devices by driver: on which nodes, how many, and the names of " +
			"the attributes they publish (interface, PCI address, NUMA node, RDMA...), which a claim's " +
			"selectors and the scheduler match on; and the nodes' allocatable for the resources of network " +
			"device plugins (SR-IOV pools, the RDMA shared device plugin's rdma/*, AWS EFA, GKE " +
			"multi-networking). All of these are the lists other checks make. Passes when a network DRA " +
			"driver publishes devices with attributes; warns when its devices publish none, or when network " +
			"devices are only device-plugin resources, which are requested by count with nothing the " +
			"scheduler can tell apart; fails when no network device is a resource at all. The DeviceClasses " +
			"that select each driver's devices are named.",
		Remediation: "Install a DRA network driver, such as DRANET, on the nodes with high-performance NICs (RDMA, " +
			"SR-IOV), and a DeviceClass for its devices; `kubectl get resourceslices -o yaml` shows the " +
			"attributes each device publishes.",
	}
}

// Run implements checks.Check.
func (NetworkDevices) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	data, err := loadNetworkData()
	if err != nil {
		return r, err
	}
	pubs, served, err := networkDRA(ctx, env, data)
	if err != nil {
		return r, err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}}, "")
		return r, err
	}
	plugins := networkPlugins(nodes, data)

	if served {
		sliceEvidence(ctx, env, &r, data)
	} else {
		r.Details = append(r.Details, fmt.Sprintf("%s/%s is not served: no DRA driver can publish network devices", hardware.DRAGroup, hardware.DRAVersion))
	}
	var names []string
	for _, p := range pubs {
		names = append(names, p.slices...)
	}
	if len(names) > 0 {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ResourceSlices}, Names: names[:min(len(names), maxNetworkNodes)],
			Columns: "NAME:.metadata.name,DRIVER:.spec.driver,ATTRIBUTES:.spec.devices[0].attributes"},
			"what the first device of each slice says of itself: the attributes a claim and the scheduler can select on")
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.DeviceClasses}, Columns: "NAME:.metadata.name,SELECTORS:.spec.selectors[*].cel.expression"}, "what each class selects")
		classes, err := checks.List[*resourcev1.DeviceClass](ctx, env, cluster.Query{Resource: cluster.DeviceClasses})
		if err != nil {
			return r, err
		}
		selecting := hardware.ClassesByDriver(classes)
		for _, p := range pubs {
			if cls := selecting[p.driver]; len(cls) > 0 {
				r.Details = append(r.Details, fmt.Sprintf("DeviceClass %s selects the devices of %s", strings.Join(cls, ", "), data.describe(p.driver)))
			} else {
				r.Details = append(r.Details, fmt.Sprintf("no DeviceClass names %s in its selectors: a claim requests devices through a class", data.describe(p.driver)))
			}
		}
		if anyDriver := selecting[""]; len(anyDriver) > 0 {
			r.Details = append(r.Details, fmt.Sprintf("DeviceClasses that name no driver, and may select any device: %s", strings.Join(anyDriver, ", ")))
		}
	}
	nodeEvidence(ctx, env, &r, nodes, plugins)

	r.Table = &checks.Table{Header: []string{"SOURCE", "NODES", "DEVICES", "DISCOVERABLE"}}
	var described, bare []string
	for _, p := range pubs {
		what := "no attribute"
		if len(p.attributes) > 0 {
			what = strings.Join(p.attributes, ", ")
		}
		r.Table.Rows = append(r.Table.Rows, []string{"DRA driver " + data.describe(p.driver), p.where(), fmt.Sprint(p.devices), what})
		switch {
		case p.devices == 0:
			r.Details = append(r.Details, fmt.Sprintf("%s publishes slices without devices", data.describe(p.driver)))
		case p.described == 0:
			bare = append(bare, fmt.Sprintf("%s publishes %s on %s with no attribute", data.describe(p.driver), checks.Plural(p.devices, "device"), p.where()))
		default:
			described = append(described, fmt.Sprintf("%s publishes %s on %s, with attributes %s",
				data.describe(p.driver), checks.Plural(p.devices, "device"), p.where(), checks.CapLines(p.attributes, 8, ", ")))
			if p.described < p.devices {
				r.Details = append(r.Details, fmt.Sprintf("%s: %d of %s publish no attribute", data.describe(p.driver), p.devices-p.described, checks.Plural(p.devices, "device")))
			}
		}
	}
	var counted []string
	for _, res := range plugins {
		r.Table.Rows = append(r.Table.Rows, []string{fmt.Sprintf("device plugin resource %s (%s)", res.name, res.plugin), checks.Plural(len(res.nodes), "node"), fmt.Sprint(res.total), "a count only"})
		counted = append(counted, fmt.Sprintf("%s on %s", res.name, checks.Plural(len(res.nodes), "node")))
	}
	if len(counted) > 0 && (len(described) > 0 || len(bare) > 0) {
		r.Details = append(r.Details, "also exposed as device-plugin resources, requested by count: "+checks.CapLines(counted, 5, ", "))
	}
	switch {
	case len(described) > 0:
		r.Details = append(r.Details, bare...)
		r.Finish(checks.Pass, "%s", checks.CapLines(described, 2, "; "))
	case len(bare) > 0:
		r.Finish(checks.Warn, "%s: the scheduler cannot tell the devices apart (no interface, PCI address, "+
			"NUMA node or RDMA to select on)", checks.CapLines(bare, 2, "; "))
	case len(counted) > 0:
		r.Finish(checks.Warn, "network devices are only device-plugin resources (%s): schedulable by "+
			"count, but their characteristics (RDMA, PCI address, NUMA node) are not "+
			"discoverable to the scheduler",
			checks.CapLines(counted, 3, ", "))
	default:
		why := ""
		if !served {
			why = fmt.Sprintf(" (%s/%s is not served)", hardware.DRAGroup, hardware.DRAVersion)
		}
		r.Finish(checks.Fail, "no network device is exposed as a resource: no network DRA driver (%s) "+
			"publishes devices%s, and no node offers a network device plugin's resource (%s)",
			strings.Join(data.drivers(), ", "), why, strings.Join(data.patterns(), ", "))
	}
	return r, nil
}

// nodeEvidence shows a few nodes' allocatable network resources, or, with
// none, a few nodes' whole allocatable: what was looked at.
func nodeEvidence(ctx context.Context, env *checks.Env, r *checks.Result, nodes []*corev1.Node, plugins []*pluginResource) {
	if len(plugins) == 0 {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		slices.Sort(names)
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names[:min(len(names), maxNetworkNodes)],
			Columns: "NAME:.metadata.name,ALLOCATABLE:.status.allocatable"}, "what the nodes offer the scheduler: no network device plugin's resource")
		return
	}
	var names, resources []string
	for _, p := range plugins {
		resources = append(resources, p.name)
		for _, n := range p.nodes {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names[:min(len(names), maxNetworkNodes)],
		Columns: allocatableColumns(resources)}, "the network devices each node offers through device plugins")
}
