package accelerators

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
)

//go:embed sharing_labels.yaml
var sharingLabelsYAML []byte

var _ = checks.RegisterData[[]platformSharing]("sharing_labels.yaml", sharingLabelsYAML)

// platformSharing is one entry of sharing_labels.yaml: the labels by which
// a platform says its nodes' GPUs are shared.
type platformSharing struct {
	Platform  string `yaml:"platform"`
	Strategy  string `yaml:"strategy"`
	Clients   string `yaml:"clients"`
	Partition string `yaml:"partition"`
}

// sharingLabels reads the embedded sharing_labels.yaml; an entry without
// a platform, or with neither a strategy nor a partition label, is an
// error naming it.
func sharingLabels() ([]platformSharing, error) {
	return parseSharingLabels("sharing_labels.yaml", sharingLabelsYAML)
}

func parseSharingLabels(name string, data []byte) ([]platformSharing, error) {
	ps, err := checks.Data[[]platformSharing](name, data)
	if err != nil {
		return nil, err
	}
	for i, p := range ps {
		if p.Platform == "" || (p.Strategy == "" && p.Partition == "") {
			return nil, fmt.Errorf("%s: entry %d (%s) needs a platform and a strategy or partition label", name, i+1, p.Platform)
		}
	}
	return ps, nil
}

// keys are the entry's labels, those set.
func (p platformSharing) keys() []string {
	return slices.DeleteFunc([]string{p.Strategy, p.Clients, p.Partition}, func(k string) bool { return k == "" })
}

// of names the sharing the platform's labels say of a node.
func (p platformSharing) of(n *corev1.Node) []string {
	var out []string
	if size := n.Labels[p.Partition]; p.Partition != "" && size != "" {
		out = append(out, fmt.Sprintf("MIG partitions of %s (%s's %s)", size, p.Platform, p.Partition))
	}
	if strategy := n.Labels[p.Strategy]; p.Strategy != "" && strategy != "" && strategy != "none" {
		clients, _ := strconv.Atoi(n.Labels[p.Clients])
		if clients > 1 {
			out = append(out, fmt.Sprintf("%s, %d clients per GPU (%s's %s)", strategy, clients, p.Platform, p.Strategy))
		} else {
			out = append(out, fmt.Sprintf("%s (%s's %s)", strategy, p.Platform, p.Strategy))
		}
	}
	return out
}

// GPUSharing looks for a sharing strategy the accelerator nodes expose:
// hardware partitions as schedulable resources, or devices oversubscribed
// by time-slicing or MPS, or DRA devices that share counters.
type GPUSharing struct{}

// Meta implements checks.Check.
func (GPUSharing) Meta() checks.Meta {
	return checks.Meta{
		ID: "gpu-sharing", Title: "Accelerators are shared: partitions or oversubscription are schedulable",
		Requirement: "gpu_sharing",
		Description: "Reads the accelerator nodes (an accelerator resource, or an accelerator DRA driver's devices) " +
			"for a sharing strategy exposed to the scheduler: MIG partitions as resources of their own " +
			"(nvidia.com/mig-*, the mixed strategy) or standing for whole GPUs " +
			"(nvidia.com/mig.strategy=single); time-slicing or MPS (GPU Feature Discovery's " +
			"nvidia.com/gpu.sharing-strategy with nvidia.com/gpu.replicas above 1, or an allocatable count " +
			"above the physical nvidia.com/gpu.count); DRA devices drawing on counters a slice shares " +
			"(partitionable devices), or of type mig; a platform's sharing labels, where no labeller runs " +
			"(checks/accelerators/sharing_labels.yaml: GKE's cloud.google.com/gke-gpu-sharing-strategy, " +
			"time-sharing or mps, with gke-max-shared-clients-per-gpu, and gke-gpu-partition-size for " +
			"MIG). Passes naming each strategy and its nodes; fails when " +
			"the nodes expose none (naming those whose GPUs could be partitioned, " +
			"nvidia.com/mig.capable=true). No accelerator node, or only accelerators whose vendor cannot share " +
			"them (sharing: unsupported in checks/hardware/accelerators.yaml: Google TPU) and no DRA device, makes it " +
			"not applicable.",
		Remediation: "Configure one sharing strategy: MIG through the GPU Operator's MIG manager " +
			"(nvidia.com/mig.config), time-slicing or MPS through the device plugin's sharing configuration " +
			"(replicas per GPU), or a DRA driver that publishes partitions.",
	}
}

// Run implements checks.Check.
func (GPUSharing) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	platforms, err := sharingLabels()
	if err != nil {
		return r, err
	}
	ns, err := labelledNodes(ctx, env, &r)
	if ns == nil {
		return r, err
	}
	labelEvidence(ctx, env, &r, ns, func(v vendorLabels) []string {
		return v.labelKeys(v.Count, v.SharingStrategy, v.Replicas, v.MIGStrategy, v.MIGCapable)
	}, "each node's physical devices and sharing, as its vendor's labeller publishes them")
	platformEvidence(ctx, env, &r, ns, platforms)
	addAllocatable(ctx, env, &r, ns)
	found := map[string][]string{} // strategy -> nodes
	var capable []string
	for _, ln := range ns {
		shared := sharingOf(ln)
		for _, p := range platforms {
			shared = append(shared, p.of(ln.node)...)
		}
		for _, s := range shared {
			found[s] = append(found[s], ln.node.Name)
		}
		for _, v := range ln.vendors {
			if v.MIGCapable != "" && ln.node.Labels[v.MIGCapable] == "true" {
				capable = append(capable, ln.node.Name)
			}
		}
	}
	if len(found) == 0 {
		vendors, verr := noneSupports(ns, func(v *hardware.AcceleratorVendor) string { return v.Sharing })
		if verr != nil {
			return r, verr
		}
		if vendors != "" {
			r.Finish(checks.Skip, "the accelerators of %s support no static sharing (%s, per "+
				"accelerators.yaml), and the requirement asks it only of accelerators that do", checks.Plural(len(ns), "accelerator node"), vendors)
			return r, nil
		}
		why := ""
		if len(capable) > 0 {
			why = fmt.Sprintf(" (MIG-capable, not partitioned: %s)", checks.CapLines(capable, 5, ", "))
		}
		r.Finish(checks.Fail, "none of %s exposes a sharing strategy: no MIG partition, no time-slicing or "+
			"MPS replicas, no partitionable DRA device%s", checks.Plural(len(ns), "accelerator node"), why)
		return r, nil
	}
	var parts []string
	for _, s := range checks.SortedKeys(found) {
		parts = append(parts, fmt.Sprintf("%s on %s", s, checks.CapLines(found[s], 3, ", ")))
	}
	r.Finish(checks.Pass, "%s", strings.Join(parts, "; "))
	return r, nil
}

// platformEvidence shows the nodes with a platform's sharing labels, and
// only where a node carries one: clusters of other platforms carry none.
func platformEvidence(ctx context.Context, env *checks.Env, r *checks.Result, ns []*labelledNode, platforms []platformSharing) {
	var cols, names []string
	for _, p := range platforms {
		for _, ln := range ns {
			if slices.ContainsFunc(p.keys(), func(k string) bool { return ln.node.Labels[k] != "" }) {
				cols = append(cols, p.keys()...)
				break
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	for _, ln := range ns {
		if len(names) < maxNodeEvidence && slices.ContainsFunc(cols, func(k string) bool { return ln.node.Labels[k] != "" }) {
			names = append(names, ln.node.Name)
		}
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names, LabelColumns: slices.Compact(cols)},
		"the nodes whose platform labels say their GPUs are shared")
}

// sharingOf names the sharing strategies one node exposes.
func sharingOf(ln *labelledNode) []string {
	var out []string
	n := ln.node
	var migs []string
	for res := range n.Status.Allocatable {
		if strings.HasPrefix(string(res), "nvidia.com/mig-") {
			q := n.Status.Allocatable[res]
			if q.Value() > 0 {
				migs = append(migs, string(res))
			}
		}
	}
	if len(migs) > 0 {
		slices.Sort(migs)
		out = append(out, "MIG partitions as resources ("+strings.Join(migs, ", ")+")")
	}
	for _, v := range ln.vendors {
		if v.MIGStrategy != "" && n.Labels[v.MIGStrategy] == "single" && v.Product != "" && strings.Contains(n.Labels[v.Product], "MIG") {
			out = append(out, "MIG partitions as whole GPUs (strategy single)")
		}
		replicas, _ := strconv.Atoi(n.Labels[v.Replicas])
		if strategy := n.Labels[v.SharingStrategy]; v.SharingStrategy != "" && strategy != "" && strategy != "none" && replicas > 1 {
			out = append(out, fmt.Sprintf("%s, %d replicas per GPU", strategy, replicas))
			continue
		}
		physical, err := strconv.Atoi(n.Labels[v.Count])
		if v.Count == "" || err != nil || physical == 0 {
			continue
		}
		for _, res := range v.Resources {
			alloc, ok := n.Status.Allocatable[corev1.ResourceName(res)]
			if ok && alloc.Value() > int64(physical) {
				out = append(out, fmt.Sprintf("oversubscribed (%s allocatable %d of %d physical)", res, alloc.Value(), physical))
			}
		}
	}
	for _, s := range ln.slices {
		if len(s.Spec.SharedCounters) > 0 {
			out = append(out, "partitionable DRA devices ("+s.Spec.Driver+")")
			break
		}
	}
	if slices.Contains(ln.deviceAttributes("type"), "mig") {
		out = append(out, "MIG partitions as DRA devices")
	}
	return out
}

// noneSupports names the vendors of the accelerator nodes ns when every
// accelerator they offer is of a vendor whose field is
// checks.Unsupported; it is empty when any may have it (another vendor's
// resource, or devices a DRA driver publishes, which may be partitions).
func noneSupports(ns []*labelledNode, field func(*hardware.AcceleratorVendor) string) (string, error) {
	table, err := hardware.AcceleratorTable()
	if err != nil {
		return "", err
	}
	names := map[string]bool{}
	for _, ln := range ns {
		res := hardware.AcceleratorResources(ln.node)
		if len(ln.slices) > 0 || len(res) == 0 {
			return "", nil
		}
		for name := range res {
			v := table.Vendor(name)
			if v == nil || field(v) != hardware.Unsupported {
				return "", nil
			}
			names[v.Name] = true
		}
	}
	return strings.Join(checks.SortedKeys(names), ", "), nil
}
