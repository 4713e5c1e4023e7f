package hardware

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// IsAccelerator is true for the extended resources of accelerators, those
// of a vendor of accelerators.yaml. Every category that asks about
// accelerator pods (devices, autoscaling, security) asks it here. A bad
// file makes it false for all; the checks that read accelerators return
// the file's error (AcceleratorNodes).
func IsAccelerator(name corev1.ResourceName) bool {
	a, err := AcceleratorTable()
	return err == nil && a.Vendor(name) != nil
}

// AcceleratorResources are the accelerator resources a node advertises, in
// capacity or allocatable.
func AcceleratorResources(n *corev1.Node) map[corev1.ResourceName]bool {
	set := map[corev1.ResourceName]bool{}
	for name := range n.Status.Capacity {
		if IsAccelerator(name) {
			set[name] = true
		}
	}
	for name := range n.Status.Allocatable {
		if IsAccelerator(name) {
			set[name] = true
		}
	}
	return set
}

// PodsOnNode reads the pods bound to a node, as `kubectl describe node`
// does: one LIST with a spec.nodeName field selector, never a cluster-wide
// pod LIST.
func PodsOnNode(node string) cluster.Get {
	q := cluster.NodePodsQuery(node)
	return cluster.Get{Resources: []cluster.Resource{q.Resource}, AllNamespaces: true, FieldSelector: q.FieldSelector}
}

// PodRequest is a pod's effective request of a resource: the larger of the
// sum over its containers and the largest init container, as the scheduler
// counts it.
func PodRequest(p *cluster.NodePod, res corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for _, c := range p.Containers {
		if q, ok := containerRequest(c, res); ok {
			sum.Add(q)
		}
	}
	for _, c := range p.InitContainers {
		if q, ok := containerRequest(c, res); ok && q.Cmp(sum) > 0 {
			sum = q.DeepCopy()
		}
	}
	return sum
}

// containerRequest is what a container requests of res. Extended
// resources are often given as limits only; the request then defaults to
// the limit.
func containerRequest(c cluster.NodeContainer, res corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := c.Requests.Get(res); ok {
		return q, true
	}
	return c.Limits.Get(res)
}

// EachNodePods reads the pods of each node (cluster.Cache.NodePods), a few
// nodes at a time, and hands each node's to fn, which is called
// concurrently and must only write what belongs to node i.
func EachNodePods(ctx context.Context, env *checks.Env, nodes []string, fn func(i int, pods []*cluster.NodePod, err error)) {
	Each(len(nodes), func(i int) {
		pods, _, err := env.Cluster.NodePods(ctx, nodes[i])
		fn(i, pods, err)
	})
}

// Each calls fn for 0 to n-1, a few at a time: reads of one per node or
// pod, which the API server answers side by side. fn is called
// concurrently and must only write what belongs to i.
func Each(n int, fn func(i int)) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// FreeNode is what one Ready, schedulable node has free of an accelerator.
type FreeNode struct {
	Name string
	Free int64
}

// FreeAccelerators reads what every Ready, schedulable node offering res,
// with no taint a probe's pods do not tolerate (ToleratedBy), has free of
// it: its allocatable less what its pods not yet ended request.
func FreeAccelerators(ctx context.Context, env *checks.Env, nodes []*corev1.Node, res corev1.ResourceName) ([]FreeNode, error) {
	var names []string
	for _, n := range nodes {
		alloc := n.Status.Allocatable[res]
		if ready, _ := kube.NodeReady(n); ready == corev1.ConditionTrue && !n.Spec.Unschedulable && alloc.Value() > 0 && ToleratedBy(n, res) {
			names = append(names, n.Name)
		}
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	out := make([]FreeNode, len(names))
	errs := make([]error, len(names))
	EachNodePods(ctx, env, names, func(i int, pods []*cluster.NodePod, err error) {
		if err != nil {
			errs[i] = fmt.Errorf("pods on node %s: %w", names[i], err)
			return
		}
		alloc := byName[names[i]].Status.Allocatable[res]
		free := alloc.Value()
		for _, p := range pods {
			if p.Phase != corev1.PodSucceeded && p.Phase != corev1.PodFailed {
				q := PodRequest(p, res)
				free -= q.Value()
			}
		}
		out[i] = FreeNode{Name: names[i], Free: max(free, 0)}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ToleratedBy says whether a probe's pods, which tolerate only a taint
// named after the accelerator res they ask for, may run on a node.
func ToleratedBy(n *corev1.Node, res corev1.ResourceName) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectPreferNoSchedule && t.Key != string(res) {
			return false
		}
	}
	return true
}

// AcceleratorPick is where a probe's pod holding accelerators runs: the
// node with the most of one accelerator resource free.
type AcceleratorPick struct {
	// Node is the node; nil when no Ready, schedulable node offering
	// Resource has a probe's pods tolerated.
	Node     *corev1.Node
	Resource corev1.ResourceName
	// Free is what Node has free of Resource; 0 when every one is in use.
	Free int64
}

// PickAcceleratorNode picks the node and the resource for a probe's pods
// that ask for accelerators: of the accelerator resources Ready nodes
// offer (those want accepts; nil accepts all), the one with the most free
// on one node, the first by name breaking ties, so that a probe needing
// two has the best chance. skip says why there is nothing to pick: no
// Ready node offers a resource a pod can request (DRA-only nodes offer
// none).
func PickAcceleratorNode(ctx context.Context, env *checks.Env, want func(corev1.ResourceName) bool) (pick AcceleratorPick, skip string, err error) {
	if _, err := AcceleratorTable(); err != nil {
		return AcceleratorPick{}, "", err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		return AcceleratorPick{}, "", err
	}
	offered := map[corev1.ResourceName]bool{}
	for _, n := range nodes {
		if ready, _ := kube.NodeReady(n); ready == corev1.ConditionTrue {
			for res := range AcceleratorResources(n) {
				if want == nil || want(res) {
					offered[res] = true
				}
			}
		}
	}
	if len(offered) == 0 {
		return AcceleratorPick{}, "no Ready node offers an accelerator resource for a probe pod to request (DRA-only nodes are probed by dra-probe)", nil
	}
	var best FreeNode
	found := false
	for _, res := range checks.SortedKeys(offered) {
		free, err := FreeAccelerators(ctx, env, nodes, res)
		if err != nil {
			return AcceleratorPick{}, "", err
		}
		for _, f := range free {
			if !found || f.Free > best.Free {
				best, pick.Resource, found = f, res, true
			}
		}
		if !found {
			pick.Resource, found = res, true
		}
	}
	pick.Free = best.Free
	for _, n := range nodes {
		if n.Name == best.Name {
			pick.Node = n
		}
	}
	return pick, "", nil
}
