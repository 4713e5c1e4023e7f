package accelerators

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	corev1 "k8s.io/api/core/v1"
)

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
			"(partitionable devices), or of type mig. Passes naming each strategy and its nodes; fails when " +
			"the nodes expose none (naming those whose GPUs could be partitioned, " +
			"nvidia.com/mig.capable=true). No accelerator node makes it not applicable.",
		Remediation: "Configure one sharing strategy: MIG through the GPU Operator's MIG manager " +
			"(nvidia.com/mig.config), time-slicing or MPS through the device plugin's sharing configuration " +
			"(replicas per GPU), or a DRA driver that publishes partitions.",
	}
}

// Run implements checks.Check.
func (GPUSharing) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	ns, err := labelledNodes(ctx, env, &r)
	if ns == nil {
		return r, err
	}
	labelEvidence(ctx, env, &r, ns, func(v vendorLabels) []string {
		return v.labelKeys(v.Count, v.SharingStrategy, v.Replicas, v.MIGStrategy, v.MIGCapable)
	}, "each node's physical devices and sharing, as its vendor's labeller publishes them")
	addAllocatable(ctx, env, &r, ns)
	found := map[string][]string{} // strategy -> nodes
	var capable []string
	for _, ln := range ns {
		for _, s := range sharingOf(ln) {
			found[s] = append(found[s], ln.node.Name)
		}
		for _, v := range ln.vendors {
			if v.MIGCapable != "" && ln.node.Labels[v.MIGCapable] == "true" {
				capable = append(capable, ln.node.Name)
			}
		}
	}
	if len(found) == 0 {
		why := ""
		if len(capable) > 0 {
			why = fmt.Sprintf(" (MIG-capable, not partitioned: %s)", checks.CapLines(capable, 5, ", "))
		}
		r.Finish(checks.Fail, "none of %s exposes a sharing strategy: no MIG partition, no time-slicing or MPS replicas, no partitionable DRA device%s", checks.Plural(len(ns), "accelerator node"), why)
		return r, nil
	}
	var parts []string
	for _, s := range checks.SortedKeys(found) {
		parts = append(parts, fmt.Sprintf("%s on %s", s, checks.CapLines(found[s], 3, ", ")))
	}
	r.Finish(checks.Pass, "%s", strings.Join(parts, "; "))
	return r, nil
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
