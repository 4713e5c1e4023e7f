package scheduling_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const caEvidence = "kubectl get configmap -A --field-selector metadata.name=cluster-autoscaler-status"

// noCA removes cluster-autoscaler's status: no autoscaler at all.
func noCA(w *checkstest.World) { w.ConfigMaps = nil }

// karpenter installs Karpenter's CRDs, a NodePool for GPUs and the
// NodeClaim that added the GPU node, in place of cluster-autoscaler.
func karpenter(w *checkstest.World) {
	noCA(w)
	for _, kind := range []string{"NodePool", "NodeClaim"} {
		c := checkstest.EstablishedCRD(map[string]string{"NodePool": "nodepools", "NodeClaim": "nodeclaims"}[kind], kind)
		c.Name, c.Spec.Group, c.Spec.Scope = c.Spec.Names.Plural+".karpenter.sh", "karpenter.sh", apiextensionsv1.ClusterScoped
		w.CRDs = append(w.CRDs, c)
	}
	w.NodePools = []*unstructured.Unstructured{nodePool("gpu", "True", map[string]any{"nvidia.com/gpu": "16"}), nodePool("general", "True", nil)}
	w.NodeClaims = []*unstructured.Unstructured{nodeClaim("gpu-x7k2p", "gpu", "8", "True")}
}

func nodePool(name, ready string, limits map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"requirements": []any{
			map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}},
		}}}},
		"status": map[string]any{"resources": map[string]any{"nodes": "1"},
			"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": "NodeClassNotReady"}}},
	}}
	if limits != nil {
		u.Object["spec"].(map[string]any)["limits"] = limits
	}
	return u
}

func nodeClaim(name, pool, gpus, initialized string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"karpenter.sh/nodepool": pool}},
		"status": map[string]any{"nodeName": "gpu-node-1", "capacity": map[string]any{"cpu": "16", "nvidia.com/gpu": gpus},
			"conditions": []any{map[string]any{"type": "Initialized", "status": initialized}}},
	}}
}

func TestAutoscalerFound(t *testing.T) {
	runCases(t, scheduling.AutoscalerFound{}, "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh", []worldCase{
		{name: "cluster-autoscaler running and healthy", status: checks.Pass, reason: "cluster-autoscaler, 2 node groups"},
		{
			name:   "none: not applicable, saying what was looked for",
			edit:   noCA,
			status: checks.Skip,
			reason: "no cluster autoscaler found (looked for Karpenter (CRD nodepools.karpenter.sh), cluster-autoscaler (its status ConfigMap cluster-autoscaler-status, in any namespace, and its Deployment, by its pod labels) and node groups of machinedeployments.cluster.x-k8s.io, machinepools.cluster.x-k8s.io, machinesets.machine.openshift.io, computeclasses.cloud.google.com)",
		},
		{
			// Installed with --namespace autoscaler, as a chart may be:
			// its status is there, and found there.
			name:   "cluster-autoscaler in a namespace of its own",
			edit:   func(w *checkstest.World) { w.ConfigMaps[0].Namespace = "autoscaler" },
			status: checks.Pass,
			reason: "cluster-autoscaler, 2 node groups",
		},
		{
			name:   "cluster-wide unhealthy",
			edit:   func(w *checkstest.World) { w.ConfigMaps[0] = checkstest.CAStatus(checkstest.JudgeAt, "Unhealthy", 4) },
			status: checks.Fail,
			reason: `cluster-autoscaler: cluster-wide health "Unhealthy"`,
		},
		{
			name: "a status nobody rewrote for an hour",
			edit: func(w *checkstest.World) {
				w.ConfigMaps[0] = checkstest.CAStatus(checkstest.JudgeAt.Add(-3600e9), "Healthy", 4)
			},
			status: checks.Fail,
			reason: "its status was last written 1h0m0s ago (2026-06-01T11:00:00Z): cluster-autoscaler is not running",
		},
		{
			name: "the text status of older releases",
			edit: func(w *checkstest.World) {
				w.ConfigMaps[0].Data["status"] = "Cluster-autoscaler status at 2026-06-01 11:59:50 +0000 UTC:\nCluster-wide:\n  Health:      Healthy (ready=2 unready=0 notStarted=0 longNotStarted=0 registered=2 longUnregistered=0)\n"
			},
			status: checks.Pass,
			reason: "cluster-autoscaler, its status in the text format of releases before 1.30",
		},
	})
}

func TestAutoscalerFoundKarpenter(t *testing.T) {
	runCases(t, scheduling.AutoscalerFound{}, "kubectl get nodepools.karpenter.sh", []worldCase{
		{name: "NodePools Ready", edit: karpenter, status: checks.Pass, reason: "Karpenter, 2 NodePools Ready of 2"},
		{
			name: "a NodePool not Ready",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodePools[1] = nodePool("general", "False", nil)
			},
			status: checks.Fail,
			reason: "NodePool general: Ready=False (NodeClassNotReady",
		},
		{
			name: "no NodePool",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodePools = nil
			},
			status: checks.Warn,
			reason: "Karpenter has no NodePool: it adds no node",
		},
	})
}

func TestAcceleratorNodeGroups(t *testing.T) {
	runCases(t, scheduling.AcceleratorNodeGroups{}, "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh", []worldCase{
		{name: "a GPU node group with room", status: checks.Pass, reason: "1 node group can add accelerator nodes: gpu-pool (node gpu-node-1 has nvidia.com/gpu)"},
		{
			name:   "the GPU group at its maximum",
			edit:   func(w *checkstest.World) { w.ConfigMaps[0] = checkstest.CAStatus(checkstest.JudgeAt, "Healthy", 1) },
			status: checks.Warn,
			reason: "no accelerator node group can grow: gpu-pool (Healthy)",
		},
		{
			name: "no group adds accelerators",
			edit: func(w *checkstest.World) {
				w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionTrue, nil)
				w.Nodes[1].Labels = map[string]string{"eks.amazonaws.com/nodegroup": "gpu-pool"}
			},
			status: checks.Fail,
			reason: "none of 2 node groups adds accelerator nodes: a pod requesting one stays Pending",
		},
		{
			name:   "a group with no node cannot be told",
			edit:   func(w *checkstest.World) { w.Nodes = w.Nodes[:1] },
			status: checks.Warn,
			reason: "1 group cannot be told (no node now, nothing in the spec): gpu-pool",
		},
		{name: "none at all", edit: noCA, status: checks.Skip, reason: "no cluster autoscaler found"},
		{
			name: "a status in the old text format",
			edit: func(w *checkstest.World) {
				w.ConfigMaps[0].Data["status"] = "Cluster-wide:\n  Health:      Healthy (ready=2)\n"
			},
			status: checks.Warn,
			reason: "node groups cannot be read from its status",
		},
	})
	runCases(t, scheduling.AcceleratorNodeGroups{}, "kubectl get nodepools.karpenter.sh", []worldCase{
		{name: "a NodePool limited in GPUs", edit: karpenter, status: checks.Pass, reason: "NodePool gpu (limit nvidia.com/gpu)"},
		{
			name: "the GPU NodePool at its limit",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodePools[0].Object["status"].(map[string]any)["resources"] = map[string]any{"nodes": "2", "nvidia.com/gpu": "16"}
			},
			status: checks.Warn,
			reason: "no accelerator node group can grow: NodePool gpu (at its limit of nvidia.com/gpu=16 (its nodes hold 16))",
		},
		{
			name: "no NodePool",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodePools = nil
			},
			status: checks.Fail,
			reason: "the autoscaler has no node group",
		},
	})
}

func TestAcceleratorScaleUps(t *testing.T) {
	runCases(t, scheduling.AcceleratorScaleUps{}, "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh", []worldCase{
		{name: "cluster-autoscaler's event for the GPU group", status: checks.Pass, reason: "1 accelerator scale-up: pod ml/train-0: pod triggered scale-up: [{gpu-pool 0->1 (max: 4)}]"},
		{
			name:   "no scale-up on record",
			edit:   func(w *checkstest.World) { w.Events = nil },
			status: checks.Skip,
			reason: "nothing of the cluster's own shows the autoscaler at work",
		},
		{
			name: "a scale-up probe's pod is not the cluster's own",
			edit: func(w *checkstest.World) {
				w.Events[0].InvolvedObject.Namespace = "aiconform-probe-20261129-120000-abcd"
			},
			status: checks.Skip,
			reason: "nothing of the cluster's own shows the autoscaler at work",
		},
	})
	runCases(t, scheduling.AcceleratorScaleUps{}, "kubectl get nodepools.karpenter.sh", []worldCase{
		{name: "a NodeClaim with GPUs, initialized", edit: karpenter, status: checks.Pass, reason: "NodeClaim gpu-x7k2p of NodePool gpu added node gpu-node-1 with nvidia.com/gpu: 8"},
		{
			name: "not initialized yet",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodeClaims[0] = nodeClaim("gpu-x7k2p", "gpu", "8", "Unknown")
			},
			status: checks.Skip,
		},
		{
			name: "a probe's NodeClaim is not the cluster's own",
			edit: func(w *checkstest.World) {
				karpenter(w)
				w.NodeClaims[0].SetLabels(map[string]string{"karpenter.sh/nodepool": "gpu", probe.RunLabel: "r"})
			},
			status: checks.Skip,
		},
	})
}
