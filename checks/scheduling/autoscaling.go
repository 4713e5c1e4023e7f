package scheduling

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// AcceleratorNodeGroups judges what the autoscaler can grow: at least one
// of its node groups must add accelerator nodes, and have room to.
type AcceleratorNodeGroups struct{}

// Meta implements checks.Check.
func (AcceleratorNodeGroups) Meta() checks.Meta {
	return checks.Meta{
		ID: "accelerator-node-groups", Title: "The autoscaler can add accelerator nodes",
		Requirement: "cluster_autoscaling",
		Description: "Lists the node groups of the autoscaler autoscaler-found found: Karpenter's NodePools (with " +
			"their nodes and limits), cluster-autoscaler's node groups from its status (size, target, " +
			"maximum, health, scale-up backoff), and the node groups held as objects (Cluster API's " +
			"MachineDeployments and MachinePools, OpenShift's MachineSets: replicas against the maximum of their " +
			"annotations or MachineAutoscaler; GKE's ComputeClasses with node pool auto-creation, whose maximum " +
			"GKE keeps outside the cluster and is said not to be seen). A group adds accelerator nodes when its " +
			"spec says so (a Karpenter requirement on a key of checks/scheduling/autoscalers.yaml such as " +
			"karpenter.k8s.aws/instance-gpu-count or eks.amazonaws.com/instance-gpu-name, a limit on an " +
			"accelerator resource, cluster-autoscaler's scale-from-zero gpu-count annotation, accelerator labels " +
			"in its node template, a ComputeClass's GPU or TPU priority), or when its NodeClaims or its nodes " +
			"(known by the node-group labels of the clouds, by the Machines or node references of the group, or " +
			"by the node names a cloud's group name gives) have accelerators; a group with no node and nothing in " +
			"its spec cannot be told. Passes when an accelerator group can grow; warns when every one is at its " +
			"maximum or in scale-up backoff, or when no group is known to add accelerators but some cannot be " +
			"told; fails when none adds them, but warns where a platform keeps limits outside the cluster (GKE), " +
			"as it may add them by those. No autoscaler skips.",
		Remediation: "Add a node group (or a Karpenter NodePool) whose instance types have the accelerators the " +
			"workloads request, with a maximum above its current size; for a group in backoff, the error " +
			"names what the cloud refused (quota, capacity).",
	}
}

// Run implements checks.Check.
func (AcceleratorNodeGroups) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	a, err := detectSome(ctx, env, &r)
	if a == nil {
		return r, err
	}
	if err := a.readNodes(ctx, env); err != nil {
		return r, err
	}
	groups := a.groups()
	var room, full, untold, notSeen []string
	outside := ""
	if len(groups) > 0 {
		r.Table = &checks.Table{Header: []string{"AUTOSCALER", "GROUP", "ACCELERATOR", "NODES", "MAXIMUM", "HEALTH"}}
	}
	for _, g := range groups {
		if g.outside != "" {
			outside = g.outside
		}
		acc := g.accelerator
		switch acc {
		case "":
			acc = "none"
		case "?":
			acc = "cannot tell (no node, nothing in its spec)"
			untold = append(untold, g.name)
		default:
			if g.atMax || g.unhealthy {
				full = append(full, fmt.Sprintf("%s (%s)", g.name, cmp.Or(g.health, "at its maximum of "+g.max)))
			} else {
				room = append(room, fmt.Sprintf("%s (%s)", g.name, g.accelerator))
				if g.outside != "" {
					notSeen = append(notSeen, fmt.Sprintf("%s: its maximum is not shown in the cluster (%s); it is judged by what the cluster shows", g.name, g.outside))
				}
			}
		}
		r.Table.Rows = append(r.Table.Rows, []string{g.by, g.name, acc, g.current, g.max, cmp.Or(g.health, "-")})
	}
	r.Details = append(r.Details, notSeen...)
	if a.ca != nil && a.ca.status == nil {
		r.Details = append(r.Details, "cluster-autoscaler's status is in the text format of releases before 1.30, whose node groups are not read")
	}
	switch {
	case len(groups) == 0 && a.ca != nil && a.ca.status == nil:
		r.Finish(checks.Warn, "cluster-autoscaler's node groups cannot be read from its status (the text format of releases before 1.30)")
	case len(groups) == 0 && len(a.caDeployments) > 0:
		r.Finish(checks.Warn, "cluster-autoscaler runs, but its node groups cannot be read: no status ConfigMap, and no node group of a kind autoscalers.yaml knows")
	case len(groups) == 0:
		r.Finish(checks.Fail, "the autoscaler has no node group: a pod requesting an accelerator stays Pending")
	case len(room) > 0:
		r.Finish(checks.Pass, "%s can add accelerator nodes: %s", checks.Plural(len(room), "node group"), checks.CapLines(room, 3, "; "))
		if len(notSeen) > 0 {
			r.Reason += "; " + notSeen[0]
		}
	case len(full) > 0:
		r.Finish(checks.Warn, "no accelerator node group can grow: %s", checks.CapLines(full, 3, "; "))
	case len(untold) > 0:
		r.Finish(checks.Warn, "no node group is known to add accelerator nodes; %s cannot be told (no node "+
			"now, nothing in the spec): %s", checks.Plural(len(untold), "group"), checks.CapLines(untold, 3, ", "))
	case outside != "":
		// The platform may add accelerator nodes by limits it keeps
		// outside the cluster (GKE's cluster-wide auto-provisioning).
		r.Finish(checks.Warn, "none of %s seen adds accelerator nodes, and %s: whether it adds them cannot be seen", checks.Plural(len(groups), "node group"), outside)
	default:
		r.Finish(checks.Fail, "none of %s adds accelerator nodes: a pod requesting one stays Pending", checks.Plural(len(groups), "node group"))
	}
	return r, nil
}

// AcceleratorScaleUps looks for the autoscaler's own record of adding
// accelerator nodes for pending pods: the cluster's own workloads showing
// it at work.
type AcceleratorScaleUps struct{}

// Meta implements checks.Check.
func (AcceleratorScaleUps) Meta() checks.Meta {
	return checks.Meta{
		ID: "accelerator-scale-ups", Title: "The autoscaler has added accelerator nodes for pending pods",
		Requirement: "cluster_autoscaling",
		Description: "Reads what the autoscaler leaves when it adds a node: Karpenter's NodeClaims whose node has " +
			"accelerators in its capacity and reached Initialized=True; cluster-autoscaler's " +
			"TriggeredScaleUp events (one LIST with a reason field selector, all namespaces, as long as the " +
			"API server keeps events) that name an accelerator node group of accelerator-node-groups, by the " +
			"name its status gives it or, for Cluster API and OpenShift groups, Kind/namespace/name. Passes " +
			"with one of either, naming it; skips with none: the autoscaler is then not shown at work by the " +
			"cluster's own workloads. NodeClaims are read once per run, before any probe writes; events of " +
			"pods in a probe namespace are not counted.",
		Remediation: "Nothing on record is not a fault: run a workload that requests an accelerator no node has free, " +
			"and watch a node being added (`kubectl get nodeclaims -w`, or the pod's events).",
	}
}

// Run implements checks.Check.
func (AcceleratorScaleUps) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	a, err := detectSome(ctx, env, &r)
	if a == nil {
		return r, err
	}
	var shown []string
	if k := a.karpenter; k != nil {
		for _, c := range k.claims {
			res := claimAccelerator(c)
			if res == "" || len(notTrue(c, []string{"Initialized"})) > 0 {
				continue
			}
			node, _, _ := unstructured.NestedString(c.Object, "status", "nodeName")
			shown = append(shown, fmt.Sprintf("NodeClaim %s of NodePool %s added node %s with %s", c.GetName(), c.GetLabels()["karpenter.sh/nodepool"], node, res))
		}
	}
	if a.ca != nil || len(a.caDeployments) > 0 || a.caNamedKinds() {
		if err := a.readNodes(ctx, env); err != nil {
			return r, err
		}
		// cluster-autoscaler's name for each accelerator group it grows.
		accel := map[string]bool{}
		for _, g := range a.groups() {
			if g.caName != "" && g.accelerator != "" && g.accelerator != "?" {
				accel[g.caName] = true
			}
		}
		q := cluster.Query{Resource: cluster.Events, FieldSelector: "reason=TriggeredScaleUp"}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Events}, AllNamespaces: true, FieldSelector: q.FieldSelector}, "cluster-autoscaler's scale-ups on record")
		events, err := checks.List[*corev1.Event](ctx, env, q)
		if err != nil {
			return r, err
		}
		for _, e := range events {
			// A scale-up probe of this run may have made one since.
			if _, ok := checks.ProbeRun(nil, e.InvolvedObject.Namespace); ok {
				continue
			}
			for g := range accel {
				// "pod triggered scale-up: [{gpu-pool 0->1 (max: 4)}]"
				if strings.Contains(e.Message, "{"+g+" ") {
					shown = append(shown, fmt.Sprintf("pod %s/%s: %s", e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message))
					break
				}
			}
		}
	}
	if len(shown) == 0 {
		r.Finish(checks.Skip, "no accelerator node added on record (Karpenter NodeClaims with "+
			"accelerators, cluster-autoscaler TriggeredScaleUp events for an accelerator "+
			"group): nothing of the cluster's own shows the autoscaler at work")
		return r, nil
	}
	r.Details = shown
	r.Finish(checks.Pass, "%s: %s", checks.Plural(len(shown), "accelerator scale-up"), checks.CapLines(shown, 2, "; "))
	return r, nil
}
