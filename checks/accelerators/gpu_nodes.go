package accelerators

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// maxNodeEvidence bounds how many GPU nodes the evidence names; the summary
// table covers every node.
const maxNodeEvidence = 5

// GPUAllocatable checks that accelerator nodes can take GPU workloads.
type GPUAllocatable struct{}

// Meta implements checks.Check.
func (GPUAllocatable) Meta() checks.Meta {
	return checks.Meta{
		ID:          "gpu-allocatable",
		Title:       "GPU nodes Ready and allocatable",
		Requirement: "gpu_nodes_allocatable", ReadsNodePods: true,
		Description: "Nodes advertising an accelerator resource (" + hardware.DescribeAccelerators((*hardware.Accelerators).ResourceNames) +
			": the vendors of checks/hardware/accelerators.yaml) are found from the node list; each must be Ready (Unknown is " +
			"not Ready) and have more than zero of it allocatable. What running pods request is read per GPU " +
			"node with a spec.nodeName field selector, as `kubectl describe node` does. No accelerator node " +
			"at all makes the requirement not applicable.",
		Remediation: "For a NotReady node, read its conditions (`kubectl describe node`); for zero allocatable, check " +
			"the device plugin DaemonSet (NVIDIA GPU Operator or k8s-device-plugin, or the vendor's plugin) runs on that node and " +
			"the driver is loaded.",
	}
}

type gpuNode struct {
	node      *corev1.Node
	resources []corev1.ResourceName
	requested map[corev1.ResourceName]resource.Quantity
	err       error
}

// Run implements checks.Check.
func (GPUAllocatable) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	if _, err := hardware.AcceleratorTable(); err != nil {
		return r, err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		// Show the refusal as kubectl would meet it.
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}}, "")
		return r, err
	}
	var gpus []*gpuNode
	for _, n := range nodes {
		set := hardware.AcceleratorResources(n)
		if len(set) == 0 {
			continue
		}
		g := &gpuNode{node: n}
		for name := range set {
			g.resources = append(g.resources, name)
		}
		sort.Slice(g.resources, func(i, j int) bool { return g.resources[i] < g.resources[j] })
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		r.Finish(checks.Skip, "none of %d nodes advertises an accelerator resource", len(nodes))
		return r, nil
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].node.Name < gpus[j].node.Name })

	readRequests(ctx, env, gpus)

	resSet := map[string]bool{}
	for _, g := range gpus {
		for _, res := range g.resources {
			resSet[string(res)] = true
		}
	}
	var fails []string
	var bad, good []string
	table := &checks.Table{Header: []string{"NODE", "READY", "RESOURCE", "CAPACITY", "ALLOCATABLE", "REQUESTED"}}
	for _, g := range gpus {
		n := g.node
		healthy := g.err == nil
		ready, msg := kube.NodeReady(n)
		if ready != corev1.ConditionTrue {
			fails = append(fails, fmt.Sprintf("node %s is not Ready (Ready=%s: %s)", n.Name, ready, msg))
			healthy = false
		}
		for _, res := range g.resources {
			capacity, alloc := n.Status.Capacity[res], n.Status.Allocatable[res]
			requested := "?"
			if g.err == nil {
				q := g.requested[res]
				requested = q.String()
			}
			table.Rows = append(table.Rows, []string{n.Name, string(ready), string(res), capacity.String(), alloc.String(), requested})
			if alloc.Sign() <= 0 {
				fails = append(fails, fmt.Sprintf("node %s has %s allocatable %s of capacity %s", n.Name, res, alloc.String(), capacity.String()))
				healthy = false
			}
		}
		if healthy {
			good = append(good, n.Name)
		} else {
			bad = append(bad, n.Name)
		}
	}

	// Evidence names the nodes that fail first, then healthy ones, up to a
	// few: a command naming 500 nodes is no evidence anyone re-runs. The
	// table above covers every node.
	shown := append([]string(nil), bad...)
	if len(shown) > maxNodeEvidence {
		shown = shown[:maxNodeEvidence]
	}
	for _, name := range good {
		if len(shown) >= maxNodeEvidence {
			break
		}
		shown = append(shown, name)
	}
	note := ""
	if len(shown) < len(gpus) {
		note = fmt.Sprintf("%d of %d GPU nodes shown, those failing first; the summary table covers all", len(shown), len(gpus))
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: shown, Wide: true}, note)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: shown, Columns: gpuColumns(checks.SortedKeys(resSet))}, note)
	for _, name := range shown {
		r.AddEvidence(ctx, env, hardware.PodsOnNode(name), "pods on "+name+", whose requests count against its allocatable")
	}
	r.Table = table
	for _, g := range gpus {
		if g.err != nil {
			return r, fmt.Errorf("pods on node %s: %w", g.node.Name, g.err)
		}
	}
	r.Details = fails
	if len(fails) > 0 {
		r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
		return r, nil
	}
	r.Finish(checks.Pass, "%s Ready with accelerators allocatable", checks.Plural(len(gpus), "GPU node"))
	return r, nil
}

// gpuColumns shows each accelerator resource's capacity and allocatable.
func gpuColumns(resources []string) string {
	cols := []string{"NAME:.metadata.name"}
	for _, res := range resources {
		path := strings.ReplaceAll(res, ".", `\.`)
		short := strings.ToUpper(res[strings.LastIndex(res, "/")+1:])
		cols = append(cols,
			fmt.Sprintf("%s_CAPACITY:.status.capacity.%s", short, path),
			fmt.Sprintf("%s_ALLOCATABLE:.status.allocatable.%s", short, path))
	}
	return strings.Join(cols, ",")
}

// readRequests sums what non-terminated pods request of each accelerator on
// each node.
func readRequests(ctx context.Context, env *checks.Env, gpus []*gpuNode) {
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.node.Name
	}
	hardware.EachNodePods(ctx, env, names, func(i int, pods []*cluster.NodePod, err error) {
		g := gpus[i]
		if err != nil {
			g.err = err
			return
		}
		g.requested = map[corev1.ResourceName]resource.Quantity{}
		for _, p := range pods {
			if p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
				continue
			}
			for _, res := range g.resources {
				q := g.requested[res]
				q.Add(hardware.PodRequest(p, res))
				g.requested[res] = q
			}
		}
	})
}
