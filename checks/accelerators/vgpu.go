package accelerators

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
)

// VirtualizedAccelerators looks for virtualized accelerators the nodes
// expose: vGPUs a hypervisor gives the node, or that the node hands to
// virtual machines, or an AMD GPU's virtual functions.
type VirtualizedAccelerators struct{}

// Meta implements checks.Check.
func (VirtualizedAccelerators) Meta() checks.Meta {
	return checks.Meta{
		ID: "vgpu-exposed", Title: "Virtualized accelerators are exposed to workloads",
		Requirement: "virtualized_accelerator",
		Description: "Reads the accelerator nodes (an accelerator resource, or an accelerator DRA driver's devices) " +
			"for virtualized accelerators, from the labels of checks/accelerators/node_labels.yaml: GPU " +
			"Feature Discovery's nvidia.com/vgpu.present=true (the node's GPUs are vGPUs of a hypervisor), " +
			"the GPU Operator's nvidia.com/gpu.workload.config=vm-vgpu (the node hands vGPUs to virtual " +
			"machines), AMD's amd.com/gpu.mode=vf-passthrough (virtual functions); and DRA devices of type " +
			"vgpu. Passes naming the nodes and the mechanism; fails when no accelerator node shows one. No " +
			"accelerator node, or only accelerators whose vendor offers no virtualization (virtualization: " +
			"unsupported in checks/hardware/accelerators.yaml: Google TPU) and no DRA device, makes it not applicable.",
		Remediation: "Where the accelerators support it, run them virtualized: NVIDIA vGPU with the GPU Operator's " +
			"vGPU manager (vm-vgpu workloads, or vGPU guests with GPU Feature Discovery), AMD's virtual " +
			"functions through its GPU Operator.",
	}
}

// Run implements checks.Check.
func (VirtualizedAccelerators) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	ns, err := labelledNodes(ctx, env, &r)
	if ns == nil {
		return r, err
	}
	labelEvidence(ctx, env, &r, ns, func(v vendorLabels) []string {
		return v.labelKeys(v.VGPUPresent, v.Workload)
	}, "whether each node's accelerators are virtualized, as its vendor's labeller publishes it")
	found := map[string][]string{} // mechanism -> nodes
	for _, ln := range ns {
		for _, m := range virtualizedOf(ln) {
			found[m] = append(found[m], ln.node.Name)
		}
	}
	if len(found) == 0 {
		vendors, verr := noneSupports(ns, func(v *hardware.AcceleratorVendor) string { return v.Virtualization })
		if verr != nil {
			return r, verr
		}
		if vendors != "" {
			r.Finish(checks.Skip, "the accelerators of %s have no virtualized form (%s, per "+
				"accelerators.yaml), and the requirement asks it only of accelerators that do", checks.Plural(len(ns), "accelerator node"), vendors)
			return r, nil
		}
		r.Finish(checks.Fail, "none of %s exposes a virtualized accelerator: no vGPU guest "+
			"(nvidia.com/vgpu.present), no vGPU for virtual machines (vm-vgpu), no "+
			"virtual function (vf-passthrough), no DRA device of type vgpu", checks.Plural(len(ns), "accelerator node"))
		return r, nil
	}
	var parts []string
	for _, m := range checks.SortedKeys(found) {
		parts = append(parts, fmt.Sprintf("%s on %s", m, checks.CapLines(found[m], 3, ", ")))
	}
	r.Finish(checks.Pass, "%s", strings.Join(parts, "; "))
	return r, nil
}

// virtualizedOf names the virtualization one node shows.
func virtualizedOf(ln *labelledNode) []string {
	var out []string
	for _, v := range ln.vendors {
		if v.VGPUPresent != "" && ln.node.Labels[v.VGPUPresent] == "true" {
			out = append(out, v.Vendor+" vGPU guest")
		}
		switch ln.node.Labels[v.Workload] {
		case "vm-vgpu":
			out = append(out, v.Vendor+" vGPUs for virtual machines")
		case "vf-passthrough":
			out = append(out, v.Vendor+" virtual functions for virtual machines")
		}
	}
	for _, t := range ln.deviceAttributes("type") {
		if t == "vgpu" {
			out = append(out, "vGPUs as DRA devices")
			break
		}
	}
	return out
}
