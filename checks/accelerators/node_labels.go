package accelerators

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
)

//go:embed node_labels.yaml
var nodeLabelsYAML []byte

var _ = checks.RegisterData[[]vendorLabels]("node_labels.yaml", nodeLabelsYAML)

// vendorLabels is one vendor's entry of node_labels.yaml.
type vendorLabels struct {
	Vendor             string   `yaml:"vendor"`
	Resources          []string `yaml:"resources"`
	DRADrivers         []string `yaml:"draDrivers"`
	Labeller           string   `yaml:"labeller"`
	DriverVersion      string   `yaml:"driverVersion"`
	DriverVersionParts []string `yaml:"driverVersionParts"`
	RuntimeVersion     string   `yaml:"runtimeVersion"`
	RuntimeHandlers    []string `yaml:"runtimeHandlers"`
	Count              string   `yaml:"count"`
	Product            string   `yaml:"product"`
	SharingStrategy    string   `yaml:"sharingStrategy"`
	Replicas           string   `yaml:"replicas"`
	MIGStrategy        string   `yaml:"migStrategy"`
	MIGCapable         string   `yaml:"migCapable"`
	VGPUPresent        string   `yaml:"vgpuPresent"`
	Workload           string   `yaml:"workload"`
}

func nodeLabels() ([]vendorLabels, error) {
	return checks.Data[[]vendorLabels]("node_labels.yaml", nodeLabelsYAML)
}

// serves is true when the vendor's entry applies to the resource.
func (v vendorLabels) serves(res corev1.ResourceName) bool {
	for _, r := range v.Resources {
		if p, ok := strings.CutSuffix(r, "*"); ok && strings.HasPrefix(string(res), p) || string(res) == r {
			return true
		}
	}
	return false
}

// labelKeys are the labels of the entry that the evidence shows, in the
// order of the data file, those set to "" left out.
func (v vendorLabels) labelKeys(keys ...string) []string {
	var out []string
	for _, k := range keys {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// driverVersion is what the node's labels say of the vendor's driver.
func (v vendorLabels) driverVersion(n *corev1.Node) string {
	if s := n.Labels[v.DriverVersion]; v.DriverVersion != "" && s != "" {
		return s
	}
	var parts []string
	for _, k := range v.DriverVersionParts {
		if s := n.Labels[k]; s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ".")
}

// labelledNode is an accelerator node, the vendors whose resources it
// offers, and what accelerator DRA drivers publish for it.
type labelledNode struct {
	node    *corev1.Node
	vendors []vendorLabels
	// slices are the node's ResourceSlices of accelerator drivers.
	slices []*resourcev1.ResourceSlice
}

// labelledNodes reads the nodes with accelerators, by extended resource or
// by an accelerator DRA driver's devices, in name order. With none, r
// skips, saying so, and out is nil.
func labelledNodes(ctx context.Context, env *checks.Env, r *checks.Result) (out []*labelledNode, err error) {
	vendors, err := nodeLabels()
	if err != nil {
		return nil, err
	}
	nodes, dra, err := hardware.AcceleratorNodes(ctx, env, r)
	if nodes == nil {
		return nil, err
	}
	var rslices []*resourcev1.ResourceSlice
	if len(dra) > 0 {
		// Listed already by checks.AcceleratorNodes: served from the run's cache.
		if rslices, err = checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices}); err != nil {
			return nil, err
		}
	}
	// By node, so that matching costs one pass over the slices, not one
	// per node: a large cluster publishes thousands.
	byNode := map[string][]*resourcev1.ResourceSlice{}
	for _, s := range rslices {
		if s.Spec.NodeName != nil {
			byNode[*s.Spec.NodeName] = append(byNode[*s.Spec.NodeName], s)
		}
	}
	for _, n := range nodes {
		res := hardware.AcceleratorResources(n)
		ln := &labelledNode{node: n}
		for _, v := range vendors {
			if slices.ContainsFunc(checks.SortedKeys(res), v.serves) || slices.ContainsFunc(dra[n.Name], func(d string) bool { return slices.Contains(v.DRADrivers, d) }) {
				ln.vendors = append(ln.vendors, v)
			}
		}
		for _, s := range byNode[n.Name] {
			if slices.Contains(dra[n.Name], s.Spec.Driver) {
				ln.slices = append(ln.slices, s)
			}
		}
		out = append(out, ln)
	}
	return out, nil
}

// deviceAttributes are the values, as text, that the devices of the
// node's slices carry for an attribute: a DRA driver's own word for it.
// name matches a qualified name in any domain.
func (ln *labelledNode) deviceAttributes(name string) []string {
	var out []string
	for _, s := range ln.slices {
		for _, d := range s.Spec.Devices {
			for key, a := range d.Attributes {
				if k := string(key); k != name && !strings.HasSuffix(k, "/"+name) {
					continue
				}
				switch {
				case a.VersionValue != nil:
					out = append(out, *a.VersionValue)
				case a.StringValue != nil:
					out = append(out, *a.StringValue)
				}
			}
		}
	}
	return out
}

// deviceAttribute is the first value of deviceAttributes, "" for none.
func (ln *labelledNode) deviceAttribute(name string) string {
	if vs := ln.deviceAttributes(name); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// draAttributeSource is where advertisedDriver found a version published
// by a DRA driver.
const draAttributeSource = "DRA device attribute"

// advertisedDriver is the driver version the node advertises for the
// vendor, and where: the device attribute driverVersion of its DRA driver
// first, as the checklist looks forward to drivers publishing it, else
// the vendor's labeller's labels. version is "" when neither says.
func (ln *labelledNode) advertisedDriver(v vendorLabels) (version, from string) {
	if version = ln.deviceAttribute("driverVersion"); version != "" {
		return version, draAttributeSource
	}
	return v.driverVersion(ln.node), v.Labeller + " labels"
}

// sliceDriverEvidence shows the driver version each DRA driver publishes
// with its devices, where advertisedDriver looks first: the slices of the
// first few nodes of ns that have any, as labelEvidence shows their labels
// (a large cluster has a slice per node and driver).
func sliceDriverEvidence(ctx context.Context, env *checks.Env, r *checks.Result, ns []*labelledNode) {
	var names []string
	shown, with := 0, 0
	for _, ln := range ns {
		if len(ln.slices) == 0 {
			continue
		}
		with++
		if shown == maxNodeEvidence {
			continue
		}
		shown++
		for _, s := range ln.slices {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	note := "the driver version each DRA driver publishes with its devices"
	if with > shown {
		note += fmt.Sprintf("; the slices of %d of %d nodes shown", shown, with)
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ResourceSlices}, Names: names,
		Columns: "NAME:.metadata.name,NODE:.spec.nodeName,DRIVER:.spec.driver,DRIVER_VERSION:.spec.devices[*].attributes.driverVersion.version"},
		note)
}

// addAllocatable shows the nodes' capacity and allocatable of each
// accelerator resource they offer, a few nodes at most.
func addAllocatable(ctx context.Context, env *checks.Env, r *checks.Result, ns []*labelledNode) {
	res := map[string]bool{}
	for _, ln := range ns {
		for name := range hardware.AcceleratorResources(ln.node) {
			res[string(name)] = true
		}
	}
	if len(res) == 0 {
		return
	}
	names := nodeNames(ns)
	names = names[:min(len(names), maxNodeEvidence)]
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names, Columns: gpuColumns(checks.SortedKeys(res))}, "what each node offers the scheduler")
}

// nodeNames are the names of the nodes, in order.
func nodeNames(ns []*labelledNode) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.node.Name
	}
	return out
}

// labelEvidence shows the nodes with the vendors' labels named, as
// `kubectl get nodes NAME... -L ...` does, a few nodes at most.
func labelEvidence(ctx context.Context, env *checks.Env, r *checks.Result, ns []*labelledNode, keys func(v vendorLabels) []string, note string) {
	var cols []string
	for _, n := range ns {
		for _, v := range n.vendors {
			for _, k := range keys(v) {
				if !slices.Contains(cols, k) {
					cols = append(cols, k)
				}
			}
		}
	}
	names := nodeNames(ns)
	if len(names) > maxNodeEvidence {
		note = strings.TrimPrefix(note+fmt.Sprintf("; %d of %d accelerator nodes shown", maxNodeEvidence, len(names)), "; ")
		names = names[:maxNodeEvidence]
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names, LabelColumns: cols}, note)
}
