package accelerators

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	nodev1 "k8s.io/api/node/v1"
)

// AcceleratorDrivers judges whether every accelerator node says which
// driver and runtime it runs, and whether they agree.
type AcceleratorDrivers struct{}

// Meta implements checks.Check.
func (AcceleratorDrivers) Meta() checks.Meta {
	return checks.Meta{
		ID: "accelerator-drivers", Title: "Every accelerator node reports its driver version, and they agree",
		Requirement: "driver_runtime_management",
		Description: "Accelerator nodes are those advertising an accelerator resource and those an accelerator DRA " +
			"driver publishes devices for. Each must report the version of its vendor's driver: a DRA " +
			"driver's device attribute driverVersion where one publishes for the node (the mechanism the " +
			"checklist looks forward to), else the labels of the vendor's labeller in " +
			"checks/accelerators/node_labels.yaml (NVIDIA's GPU Feature Discovery: " +
			"nvidia.com/cuda.driver-version.full, with the CUDA runtime version beside it; AMD's node " +
			"labeller: amd.com/gpu.driver-version). Passes when every node reports one and nodes of a vendor " +
			"agree; warns naming the nodes of each version when they differ, and the nodes of a vendor no " +
			"labeller of which is known (TPU, Neuron: managed platforms keep those drivers in the node image, " +
			"unseen); fails naming the nodes of a known vendor that report none. The GPU Operator's ClusterPolicy, where installed, is shown with its state, and " +
			"the RuntimeClasses that name a vendor's container-runtime handler (NVIDIA's nvidia, nvidia-cdi, " +
			"nvidia-legacy) are named; none is said, not judged, as the nodes' default runtime or CDI may " +
			"bring the devices instead. No accelerator node makes it not applicable.",
		Remediation: "Install the vendor's labeller (GPU Feature Discovery, part of NVIDIA's GPU Operator and device " +
			"plugin chart; AMD's node labeller) or a DRA driver that publishes driverVersion, and roll one " +
			"driver version out to every node of a vendor (the GPU Operator's driver upgrade policy does it " +
			"node by node).",
	}
}

// Run implements checks.Check.
func (AcceleratorDrivers) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	ns, err := labelledNodes(ctx, env, &r)
	if ns == nil {
		return r, err
	}
	labelEvidence(ctx, env, &r, ns, func(v vendorLabels) []string {
		return v.labelKeys(slices.Concat([]string{v.DriverVersion}, v.DriverVersionParts, []string{v.RuntimeVersion})...)
	}, "each node's driver and runtime versions, as its vendor's labeller publishes them")
	sliceDriverEvidence(ctx, env, &r, ns)
	state, details := clusterPolicies(ctx, env, &r)
	if state != "" {
		r.Details = append(r.Details, "the NVIDIA GPU Operator installs and upgrades the drivers"+state)
	}
	r.Details = append(r.Details, details...)
	r.Details = append(r.Details, runtimeClasses(ctx, env, &r, ns)...)
	r.Table = &checks.Table{Header: []string{"NODE", "VENDOR", "DRIVER", "RUNTIME", "FROM"}}
	var silent, unseen, differ []string
	versions := map[string]map[string][]string{} // vendor -> driver version -> nodes
	for _, ln := range ns {
		if len(ln.vendors) == 0 {
			// No labeller of its vendor is known (TPU, Neuron): managed
			// platforms keep those drivers in the node image and publish
			// no version. Not seen is not absent.
			unseen = append(unseen, ln.node.Name)
			r.Table.Rows = append(r.Table.Rows, []string{ln.node.Name, "?", "?", "<none>", "no labeller known"})
			continue
		}
		for _, v := range ln.vendors {
			labelled := v.driverVersion(ln.node)
			driver, from := ln.advertisedDriver(v)
			if from == draAttributeSource && labelled != "" && labelled != driver {
				// One node, two words for its driver: one of them is stale.
				differ = append(differ, fmt.Sprintf("node %s: its DRA driver publishes driver %s, its %s labels say %s", ln.node.Name, driver, v.Labeller, labelled))
			}
			runtime := ln.node.Labels[v.RuntimeVersion]
			if v.RuntimeVersion == "" {
				runtime = ""
			}
			if driver == "" {
				silent = append(silent, fmt.Sprintf("%s (%s)", ln.node.Name, v.Vendor))
				r.Table.Rows = append(r.Table.Rows, []string{ln.node.Name, v.Vendor, "?", orNone(runtime), "nothing"})
				continue
			}
			if versions[v.Vendor] == nil {
				versions[v.Vendor] = map[string][]string{}
			}
			versions[v.Vendor][driver] = append(versions[v.Vendor][driver], ln.node.Name)
			r.Table.Rows = append(r.Table.Rows, []string{ln.node.Name, v.Vendor, driver, orNone(runtime), from})
		}
	}
	var agree []string
	for _, vendor := range checks.SortedKeys(versions) {
		byVersion := versions[vendor]
		if len(byVersion) == 1 {
			for version, nodes := range byVersion {
				agree = append(agree, fmt.Sprintf("%s driver %s on %s", vendor, version, checks.Plural(len(nodes), "node")))
			}
			continue
		}
		var parts []string
		for _, version := range checks.SortedKeys(byVersion) {
			parts = append(parts, fmt.Sprintf("%s on %s", version, checks.CapLines(byVersion[version], 3, ", ")))
		}
		differ = append(differ, fmt.Sprintf("%s drivers differ: %s", vendor, strings.Join(parts, "; ")))
	}
	if len(unseen) > 0 {
		r.Details = append(r.Details, fmt.Sprintf("the driver of %s cannot be seen: no labeller of its vendor is known "+
			"(node_labels.yaml), and no DRA driver publishes driverVersion for it; a "+
			"managed platform may keep it in the node image: %s",
			checks.Plural(len(unseen), "accelerator node"), checks.CapLines(unseen, 5, ", ")))
	}
	switch {
	case len(silent) > 0:
		r.Finish(checks.Fail, "no driver version reported by %s: %s", checks.Plural(len(silent), "accelerator node"), checks.CapLines(silent, 5, ", "))
	case len(unseen) > 0:
		r.Finish(checks.Warn, "the driver of %s cannot be seen (no labeller of its vendor is known): %s%s", checks.Plural(len(unseen), "accelerator node"),
			checks.CapLines(unseen, 5, ", "), agreeing(agree))
	case len(differ) > 0:
		r.Finish(checks.Warn, "%s", strings.Join(differ, "; "))
	default:
		r.Finish(checks.Pass, "every accelerator node reports its driver: %s", strings.Join(agree, "; "))
	}
	return r, nil
}

// agreeing is "; " and what the nodes that report a driver agree on, or
// nothing.
func agreeing(agree []string) string {
	if len(agree) == 0 {
		return ""
	}
	return "; every other accelerator node reports its driver: " + strings.Join(agree, "; ")
}

// runtimeClasses says, for each vendor of the nodes with a container
// runtime of its own (node_labels.yaml's runtimeHandlers), which
// RuntimeClasses run pods in it. None is no verdict: the nodes' default
// runtime may be the vendor's, or devices reach containers by CDI.
func runtimeClasses(ctx context.Context, env *checks.Env, r *checks.Result, ns []*labelledNode) []string {
	handlers := map[string][]string{} // vendor -> handlers
	for _, ln := range ns {
		for _, v := range ln.vendors {
			if len(v.RuntimeHandlers) > 0 {
				handlers[v.Vendor] = v.RuntimeHandlers
			}
		}
	}
	if len(handlers) == 0 {
		return nil
	}
	classes, err := checks.List[*nodev1.RuntimeClass](ctx, env, cluster.Query{Resource: cluster.RuntimeClasses})
	if err != nil {
		return []string{fmt.Sprintf("cannot tell which RuntimeClasses run the accelerators' container runtime: %v", err)}
	}
	var out []string
	shown := false
	for _, vendor := range checks.SortedKeys(handlers) {
		var named []string
		for _, c := range classes {
			if slices.Contains(handlers[vendor], c.Handler) {
				named = append(named, fmt.Sprintf("%s (handler %s)", c.Name, c.Handler))
			}
		}
		if len(named) == 0 {
			out = append(out, fmt.Sprintf("no RuntimeClass names %s's container runtime (handler %s): its devices "+
				"reach containers only where the nodes' default runtime is %s's, or by CDI", vendor, strings.Join(handlers[vendor], ", "), vendor))
			continue
		}
		if !shown {
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.RuntimeClasses}}, "the RuntimeClasses, and the container-runtime handler each names")
			shown = true
		}
		out = append(out, fmt.Sprintf("%s's container runtime is named by RuntimeClass %s", vendor, strings.Join(named, ", ")))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
