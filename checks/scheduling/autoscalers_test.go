package scheduling_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/scheduling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The objects below are written to each project's published API
// reference: Cluster API's MachineDeployment, MachinePool and Machine
// (cluster.x-k8s.io/v1beta1) with cluster-autoscaler's clusterapi
// provider annotations; OpenShift's MachineSet and Machine
// (machine.openshift.io/v1beta1), MachineAutoscaler
// (autoscaling.openshift.io/v1beta1) and ClusterAutoscaler
// (autoscaling.openshift.io/v1); GKE's ComputeClass (cloud.google.com/v1);
// Karpenter's NodePool (karpenter.sh/v1) with the NodeClass references of
// EKS Auto Mode (eks.amazonaws.com) and AKS (karpenter.azure.com).

// addKind serves a kind of custom resource, with its objects.
func addKind(w *checkstest.World, group, version, plural, kind string, namespaced bool, objs ...*unstructured.Unstructured) {
	c := checkstest.EstablishedCRD(plural, kind)
	c.Name, c.Spec.Group = plural+"."+group, group
	c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true}}
	if !namespaced {
		c.Spec.Scope = apiextensionsv1.ClusterScoped
	}
	w.CRDs = append(w.CRDs, c)
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	w.Custom[gvr] = append(w.Custom[gvr], objs...)
}

// object is a custom resource of apiVersion and kind, namespace/name,
// with annotations, labels and the rest of its body.
func object(apiVersion, kind, namespace, name string, annotations, labels map[string]string, body map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: body}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetAnnotations(annotations)
	u.SetLabels(labels)
	return u
}

const (
	capiMin = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	capiMax = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
)

// caDeployment is cluster-autoscaler as its Helm chart installs it for
// Cluster API, in a namespace of its own.
func caDeployment(w *checkstest.World) {
	w.Deployments = append(w.Deployments, checkstest.AvailableDeployment("capi-autoscaler", "capi-cluster-autoscaler",
		map[string]string{"app.kubernetes.io/name": "clusterapi-cluster-autoscaler"}, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0"))
}

// clusterAPI is a Cluster API cluster: a GPU MachineDeployment of one
// machine (the GPU node), bounded 0..max, a CPU one not autoscaled, and
// cluster-autoscaler in place of a status ConfigMap it was told not to
// write.
func clusterAPI(replicas, max string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		noCA(w)
		caDeployment(w)
		md := func(name, replicas string, ann map[string]string) *unstructured.Unstructured {
			return object("cluster.x-k8s.io/v1beta1", "MachineDeployment", "clusters", name, ann, map[string]string{"cluster.x-k8s.io/cluster-name": "ml"},
				map[string]any{"spec": map[string]any{"clusterName": "ml", "replicas": mustInt(replicas)}})
		}
		addKind(w, "cluster.x-k8s.io", "v1beta1", "machinedeployments", "MachineDeployment", true,
			md("ml-gpu", replicas, map[string]string{capiMin: "0", capiMax: max}),
			md("ml-cpu", "1", nil))
		addKind(w, "cluster.x-k8s.io", "v1beta1", "machines", "Machine", true,
			machine("cluster.x-k8s.io/v1beta1", "clusters", "ml-gpu-7d9f-x2k4p", "cluster.x-k8s.io/deployment-name", "ml-gpu", "gpu-node-1"),
			machine("cluster.x-k8s.io/v1beta1", "clusters", "ml-cpu-5c4b-q8z7m", "cluster.x-k8s.io/deployment-name", "ml-cpu", "cpu-node-1"))
	}
}

func machine(apiVersion, namespace, name, groupLabel, group, node string) *unstructured.Unstructured {
	return object(apiVersion, "Machine", namespace, name, nil, map[string]string{groupLabel: group},
		map[string]any{"status": map[string]any{"nodeRef": map[string]any{"kind": "Node", "name": node}}})
}

func mustInt(s string) int64 {
	q := resource.MustParse(s)
	return q.Value()
}

// capiCustom edits the objects of a kind served by the world.
func capiCustom(w *checkstest.World, resource string) []*unstructured.Unstructured {
	for gvr, objs := range w.Custom {
		if gvr.Resource == resource {
			return objs
		}
	}
	return nil
}

func TestClusterAPIAutoscaling(t *testing.T) {
	const crds = "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh"
	runCases(t, scheduling.AutoscalerFound{}, crds, []worldCase{
		{
			name: "recognised: a MachineDeployment bounded for cluster-autoscaler, which runs", edit: clusterAPI("1", "4"), status: checks.Pass,
			reason: "cluster-autoscaler Deployment capi-autoscaler/capi-cluster-autoscaler (1 of 1 available); Cluster API, 1 MachineDeployment an autoscaler grows",
		},
		{
			name: "bounds, but nothing runs cluster-autoscaler here",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Deployments = w.Deployments[:len(w.Deployments)-1]
			},
			status: checks.Warn,
			reason: "nothing in this cluster runs cluster-autoscaler, which grows Cluster API's MachineDeployments: it may run in another cluster",
		},
		{
			name: "its Deployment has no available replica",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Deployments[len(w.Deployments)-1].Status.AvailableReplicas = 0
			},
			status: checks.Fail,
			reason: "cluster-autoscaler Deployment capi-autoscaler/capi-cluster-autoscaler has no available replica",
		},
		{
			name: "MachineDeployments with no bounds are not autoscaled",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Deployments = w.Deployments[:len(w.Deployments)-1]
				capiCustom(w, "machinedeployments")[0].SetAnnotations(nil)
			},
			status: checks.Skip,
			reason: "no cluster autoscaler found",
		},
	})
	runCases(t, scheduling.AcceleratorNodeGroups{}, crds, []worldCase{
		{
			name: "a GPU MachineDeployment that can grow", edit: clusterAPI("1", "4"), status: checks.Pass,
			reason: "1 node group can add accelerator nodes: MachineDeployment clusters/ml-gpu (node gpu-node-1 has nvidia.com/gpu)",
		},
		{
			name: "at its maximum", edit: clusterAPI("4", "4"), status: checks.Warn,
			reason: "no accelerator node group can grow: MachineDeployment clusters/ml-gpu (at its maximum of 4)",
		},
		{
			name: "its machines made no accelerator node",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				capiCustom(w, "machines")[0].Object["status"] = map[string]any{"nodeRef": map[string]any{"name": "cpu-node-1"}}
			},
			status: checks.Fail,
			reason: "none of 1 node group adds accelerator nodes",
		},
		{
			// Scaled to zero: the annotations say what a new node has.
			name: "scale from zero, told by the capacity annotations",
			edit: func(w *checkstest.World) {
				clusterAPI("0", "4")(w)
				capiCustom(w, "machines")[0].Object["status"] = map[string]any{}
				capiCustom(w, "machinedeployments")[0].SetAnnotations(map[string]string{capiMin: "0", capiMax: "4",
					"capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8", "capacity.cluster-autoscaler.kubernetes.io/gpu-type": "nvidia.com/gpu"})
			},
			status: checks.Pass,
			reason: "MachineDeployment clusters/ml-gpu (annotation capacity.cluster-autoscaler.kubernetes.io/gpu-count=8)",
		},
		{
			name: "scaled to zero with nothing in its spec cannot be told",
			edit: func(w *checkstest.World) {
				clusterAPI("0", "4")(w)
				capiCustom(w, "machines")[0].Object["status"] = map[string]any{}
			},
			status: checks.Warn,
			reason: "1 group cannot be told (no node now, nothing in the spec): MachineDeployment clusters/ml-gpu",
		},
		{
			name: "cluster-autoscaler runs, but no group can be read",
			edit: func(w *checkstest.World) {
				noCA(w)
				caDeployment(w)
			},
			status: checks.Warn,
			reason: "cluster-autoscaler runs, but its node groups cannot be read",
		},
		{
			// Its status names the group as its clusterapi provider does:
			// one row, with the health the status gives it.
			name: "the status's row for the MachineDeployment is the same group",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.ConfigMaps = []*corev1.ConfigMap{checkstest.CAStatus(checkstest.JudgeAt, "Healthy", 4)}
				w.ConfigMaps[0].Data["status"] = strings.ReplaceAll(w.ConfigMaps[0].Data["status"], "name: gpu-pool", "name: MachineDeployment/clusters/ml-gpu")
			},
			status: checks.Pass,
			reason: "1 node group can add accelerator nodes: MachineDeployment clusters/ml-gpu",
		},
	})
	runCases(t, scheduling.AcceleratorScaleUps{}, crds, []worldCase{
		{
			name: "cluster-autoscaler's event names the MachineDeployment",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Events[0].Message = "pod triggered scale-up: [{MachineDeployment/clusters/ml-gpu 0->1 (max: 4)}]"
			},
			status: checks.Pass,
			reason: "pod ml/train-0: pod triggered scale-up: [{MachineDeployment/clusters/ml-gpu 0->1 (max: 4)}]",
		},
		{
			// cluster-autoscaler runs in the management cluster, and
			// writes its events where the pods are.
			name: "cluster-autoscaler runs elsewhere; its event is here",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Deployments = w.Deployments[:len(w.Deployments)-1]
				w.Events[0].Message = "pod triggered scale-up: [{MachineDeployment/clusters/ml-gpu 0->1 (max: 4)}]"
			},
			status: checks.Pass,
			reason: "MachineDeployment/clusters/ml-gpu 0->1",
		},
		{
			name: "an event for the CPU MachineDeployment is no accelerator scale-up",
			edit: func(w *checkstest.World) {
				clusterAPI("1", "4")(w)
				w.Events[0].Message = "pod triggered scale-up: [{MachineDeployment/clusters/ml-cpu 0->1 (max: 4)}]"
			},
			status: checks.Skip,
		},
	})
}

// A MachinePool lists the nodes it made in its status.
func TestClusterAPIMachinePool(t *testing.T) {
	pool := func(replicas string, nodes ...string) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			noCA(w)
			caDeployment(w)
			var refs []any
			for _, n := range nodes {
				refs = append(refs, map[string]any{"kind": "Node", "name": n})
			}
			addKind(w, "cluster.x-k8s.io", "v1beta1", "machinepools", "MachinePool", true,
				object("cluster.x-k8s.io/v1beta1", "MachinePool", "clusters", "ml-gpu-pool", map[string]string{capiMin: "1", capiMax: "3"}, nil,
					map[string]any{"spec": map[string]any{"clusterName": "ml", "replicas": mustInt(replicas)}, "status": map[string]any{"nodeRefs": refs}}))
		}
	}
	runCases(t, scheduling.AcceleratorNodeGroups{}, "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh", []worldCase{
		{name: "its GPU node", edit: pool("1", "gpu-node-1"), status: checks.Pass, reason: "MachinePool clusters/ml-gpu-pool (node gpu-node-1 has nvidia.com/gpu)"},
		{name: "at its maximum", edit: pool("3", "gpu-node-1"), status: checks.Warn, reason: "MachinePool clusters/ml-gpu-pool (at its maximum of 3)"},
		{name: "CPU nodes only", edit: pool("1", "cpu-node-1"), status: checks.Fail, reason: "none of 1 node group adds accelerator nodes"},
	})
}

const openShiftNS = "openshift-machine-api"

// openShift is an OpenShift cluster: a ClusterAutoscaler, and a
// MachineAutoscaler bounding a GPU MachineSet of replicas machines (its
// operator's copy of the bounds on the MachineSet left out, as before it
// reconciles), run by the operator's cluster-autoscaler-default.
func openShift(replicas string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		noCA(w)
		w.Deployments = append(w.Deployments, checkstest.AvailableDeployment(openShiftNS, "cluster-autoscaler-default",
			map[string]string{"cluster-autoscaler": "default", "k8s-app": "cluster-autoscaler"}, "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:0123"))
		addKind(w, "autoscaling.openshift.io", "v1", "clusterautoscalers", "ClusterAutoscaler", false,
			object("autoscaling.openshift.io/v1", "ClusterAutoscaler", "", "default", nil, nil, map[string]any{"spec": map[string]any{}}))
		addKind(w, "autoscaling.openshift.io", "v1beta1", "machineautoscalers", "MachineAutoscaler", true,
			object("autoscaling.openshift.io/v1beta1", "MachineAutoscaler", openShiftNS, "ml-gpu-us-east-1a", nil, nil, map[string]any{"spec": map[string]any{
				"minReplicas": int64(0), "maxReplicas": int64(3),
				"scaleTargetRef": map[string]any{"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "ml-gpu-us-east-1a"}}}))
		addKind(w, "machine.openshift.io", "v1beta1", "machinesets", "MachineSet", true,
			object("machine.openshift.io/v1beta1", "MachineSet", openShiftNS, "ml-gpu-us-east-1a", nil, nil, map[string]any{"spec": map[string]any{"replicas": mustInt(replicas)}}),
			object("machine.openshift.io/v1beta1", "MachineSet", openShiftNS, "ml-worker-us-east-1a", nil, nil, map[string]any{"spec": map[string]any{"replicas": int64(1)}}))
		addKind(w, "machine.openshift.io", "v1beta1", "machines", "Machine", true,
			machine("machine.openshift.io/v1beta1", openShiftNS, "ml-gpu-us-east-1a-x7k2p", "machine.openshift.io/cluster-api-machineset", "ml-gpu-us-east-1a", "gpu-node-1"))
	}
}

func TestOpenShiftAutoscaling(t *testing.T) {
	const crds = "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh"
	runCases(t, scheduling.AutoscalerFound{}, crds, []worldCase{
		{
			name: "recognised: a ClusterAutoscaler and a MachineAutoscaler", edit: openShift("1"), status: checks.Pass,
			reason: "cluster-autoscaler Deployment openshift-machine-api/cluster-autoscaler-default (1 of 1 available); OpenShift, 1 MachineSet an autoscaler grows",
		},
		{
			name: "no ClusterAutoscaler: the operator runs no autoscaler",
			edit: func(w *checkstest.World) {
				openShift("1")(w)
				w.Deployments = w.Deployments[:len(w.Deployments)-1]
				for gvr := range w.Custom {
					if gvr.Resource == "clusterautoscalers" {
						w.Custom[gvr] = nil
					}
				}
			},
			status: checks.Fail,
			reason: "OpenShift: no clusterautoscalers.autoscaling.openshift.io object: the platform runs no autoscaler for its MachineSets' bounds",
		},
	})
	noMachineAutoscaler := func(w *checkstest.World) {
		openShift("1")(w)
		w.Deployments = w.Deployments[:len(w.Deployments)-1]
		for gvr := range w.Custom {
			if gvr.Resource == "machineautoscalers" {
				w.Custom[gvr] = nil
			}
		}
	}
	runCases(t, scheduling.AutoscalerFound{}, crds, []worldCase{
		{
			name: "a ClusterAutoscaler and no MachineAutoscaler", edit: noMachineAutoscaler, status: checks.Warn,
			reason: "OpenShift, 1 clusterautoscalers.autoscaling.openshift.io object: OpenShift: no MachineSet is bounded for the autoscaler: it grows none",
		},
	})
	runCases(t, scheduling.AcceleratorNodeGroups{}, crds, []worldCase{
		{name: "a ClusterAutoscaler and no MachineAutoscaler", edit: noMachineAutoscaler, status: checks.Fail, reason: "the autoscaler has no node group"},
		{
			name: "a GPU MachineSet that can grow", edit: openShift("1"), status: checks.Pass,
			reason: "MachineSet openshift-machine-api/ml-gpu-us-east-1a (node gpu-node-1 has nvidia.com/gpu)",
		},
		{
			name: "at the MachineAutoscaler's maximum", edit: openShift("3"), status: checks.Warn,
			reason: "no accelerator node group can grow: MachineSet openshift-machine-api/ml-gpu-us-east-1a (at its maximum of 3)",
		},
		{
			// The operator's copy of the bounds wins over the object it
			// copied them from, as cluster-autoscaler reads that copy;
			// its scale-from-zero annotation says what a node will have.
			name: "bounds and GPUs from the MachineSet's annotations",
			edit: func(w *checkstest.World) {
				openShift("2")(w)
				capiCustom(w, "machines")[0].Object["status"] = map[string]any{}
				capiCustom(w, "machinesets")[0].SetAnnotations(map[string]string{
					"machine.openshift.io/cluster-api-autoscaler-node-group-min-size": "0",
					"machine.openshift.io/cluster-api-autoscaler-node-group-max-size": "2",
					"machine.openshift.io/GPU":                                        "1"})
			},
			status: checks.Warn,
			reason: "MachineSet openshift-machine-api/ml-gpu-us-east-1a (at its maximum of 2)",
		},
		{
			name: "a MachineSet of CPU nodes",
			edit: func(w *checkstest.World) {
				openShift("1")(w)
				capiCustom(w, "machines")[0].Object["status"] = map[string]any{"nodeRef": map[string]any{"name": "cpu-node-1"}}
			},
			status: checks.Fail,
			reason: "none of 1 node group adds accelerator nodes",
		},
	})
}

// Karpenter on Azure (AKS node auto-provisioning) and EKS Auto Mode are
// Karpenter's NodePools, whose NodeClass says whose they are.
func TestManagedKarpenter(t *testing.T) {
	nodeClass := func(group, kind string) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			karpenter(w)
			for _, p := range w.NodePools {
				p.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["nodeClassRef"] = map[string]any{"group": group, "kind": kind, "name": "default"}
			}
		}
	}
	runCases(t, scheduling.AutoscalerFound{}, "kubectl get nodepools.karpenter.sh", []worldCase{
		{name: "AKS node auto-provisioning", edit: nodeClass("karpenter.azure.com", "AKSNodeClass"), status: checks.Pass, reason: "Karpenter (AKS node auto-provisioning), 2 NodePools Ready of 2"},
		{name: "EKS Auto Mode", edit: nodeClass("eks.amazonaws.com", "NodeClass"), status: checks.Pass, reason: "Karpenter (EKS Auto Mode), 2 NodePools Ready of 2"},
	})
	// EKS Auto Mode: a NodePool for GPU instances by its own labels, with
	// no node yet and no limit on GPUs.
	autoMode := func(limits map[string]any, used map[string]any) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			nodeClass("eks.amazonaws.com", "NodeClass")(w)
			w.NodeClaims = nil
			w.Nodes = w.Nodes[:1]
			gpu := nodePool("gpu", "True", limits)
			gpu.Object["spec"].(map[string]any)["template"] = map[string]any{"spec": map[string]any{
				"nodeClassRef": map[string]any{"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"},
				"requirements": []any{map[string]any{"key": "eks.amazonaws.com/instance-gpu-name", "operator": "In", "values": []any{"l4", "a10g"}}},
			}}
			if used != nil {
				gpu.Object["status"].(map[string]any)["resources"] = used
			}
			w.NodePools[0] = gpu
		}
	}
	runCases(t, scheduling.AcceleratorNodeGroups{}, "kubectl get nodepools.karpenter.sh", []worldCase{
		{name: "EKS Auto Mode GPU NodePool", edit: autoMode(nil, nil), status: checks.Pass, reason: "NodePool gpu (requirement eks.amazonaws.com/instance-gpu-name)"},
		{
			name: "at its limit", edit: autoMode(map[string]any{"cpu": "64"}, map[string]any{"nodes": "4", "cpu": "64"}), status: checks.Warn,
			reason: "no accelerator node group can grow: NodePool gpu (at its limit of cpu=64 (its nodes hold 64))",
		},
	})
}

// gke is a GKE cluster with node auto-provisioning: a ComputeClass with
// node pool auto-creation, its GPU priority, and no node of it yet.
func gke(enabled bool, priorities []any) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		noCA(w)
		addKind(w, "cloud.google.com", "v1", "computeclasses", "ComputeClass", false,
			object("cloud.google.com/v1", "ComputeClass", "", "inference-gpu", nil, nil, map[string]any{"spec": map[string]any{
				"nodePoolAutoCreation": map[string]any{"enabled": enabled}, "priorities": priorities}}))
	}
}

var l4 = []any{map[string]any{"gpu": map[string]any{"type": "nvidia-l4", "count": int64(1)}}, map[string]any{"machineFamily": "n4"}}

func TestGKEAutoscaling(t *testing.T) {
	const crds = "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh"
	runCases(t, scheduling.AutoscalerFound{}, crds, []worldCase{
		{name: "recognised: a ComputeClass with node pool auto-creation", edit: gke(true, l4), status: checks.Pass, reason: "GKE node auto-provisioning, 1 ComputeClass an autoscaler grows"},
		{name: "auto-creation off: no autoscaler", edit: gke(false, l4), status: checks.Skip, reason: "no cluster autoscaler found"},
	})
	runCases(t, scheduling.AcceleratorNodeGroups{}, crds, []worldCase{
		{
			name: "a GPU priority, limits kept by GKE", edit: gke(true, l4), status: checks.Pass,
			reason: "ComputeClass inference-gpu (spec.priorities[].gpu.type nvidia-l4); ComputeClass inference-gpu: its maximum is not shown in the cluster (GKE keeps the cluster's resource limits and its autoscaler outside the cluster)",
		},
		{
			name: "no accelerator priority, no node: cannot be told", edit: gke(true, []any{map[string]any{"machineFamily": "n4"}}), status: checks.Warn,
			reason: "cannot be told (no node now, nothing in the spec): ComputeClass inference-gpu",
		},
		{
			// GKE may still make GPU node pools by its cluster-wide
			// auto-provisioning, which the cluster does not show.
			name: "its nodes have no accelerator",
			edit: func(w *checkstest.World) {
				gke(true, []any{map[string]any{"machineFamily": "n4"}})(w)
				w.Nodes[0].Labels["cloud.google.com/compute-class"] = "inference-gpu"
			},
			status: checks.Warn,
			reason: "none of 1 node group seen adds accelerator nodes, and GKE keeps the cluster's resource limits and its autoscaler outside the cluster: whether it adds them cannot be seen",
		},
		{
			name: "its node has GPUs",
			edit: func(w *checkstest.World) {
				gke(true, []any{map[string]any{"machineFamily": "g2"}})(w)
				w.Nodes[1].Labels["cloud.google.com/compute-class"] = "inference-gpu"
			},
			status: checks.Pass,
			reason: "ComputeClass inference-gpu (node gpu-node-1 has nvidia.com/gpu)",
		},
	})
}

// GKE's cluster-autoscaler names its node groups by instance group URL,
// AKS's by scale set: the nodes are the group's by their names.
func TestCloudNodeGroupNames(t *testing.T) {
	renamed := func(group, node string) func(w *checkstest.World) {
		return func(w *checkstest.World) {
			w.ConfigMaps[0].Data["status"] = strings.ReplaceAll(w.ConfigMaps[0].Data["status"], "name: gpu-pool", "name: "+group)
			w.Nodes[1].Name = node
			w.Nodes[1].Labels = map[string]string{}
		}
	}
	const mig = "https://www.googleapis.com/compute/v1/projects/ml-prod/zones/us-central1-a/instanceGroups/gke-ml-gpu-pool-1a2b3c4d-grp"
	runCases(t, scheduling.AcceleratorNodeGroups{}, "kubectl get crd nodepools.karpenter.sh nodeclaims.karpenter.sh", []worldCase{
		{name: "GKE instance group", edit: renamed(mig, "gke-ml-gpu-pool-1a2b3c4d-x7k2"), status: checks.Pass, reason: "(node gke-ml-gpu-pool-1a2b3c4d-x7k2 has nvidia.com/gpu)"},
		{name: "GKE instance group, another pool's node", edit: renamed(mig, "gke-ml-cpu-pool-9f8e7d6c-x7k2"), status: checks.Warn, reason: "cannot be told"},
		{name: "AKS scale set", edit: renamed("aks-gpupool-12345678-vmss", "aks-gpupool-12345678-vmss000000"), status: checks.Pass, reason: "(node aks-gpupool-12345678-vmss000000 has nvidia.com/gpu)"},
	})
}

// cluster-autoscaler's Deployment is found by its pod labels, in any
// namespace, under any name.
func TestClusterAutoscalerDeployment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		image  string
		found  bool
	}{
		{name: "by the manifests' label", labels: map[string]string{"app": "cluster-autoscaler"}, image: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0", found: true},
		{name: "by chart label", labels: map[string]string{"app.kubernetes.io/name": "aws-cluster-autoscaler"}, image: "mirror/ca:v1", found: true},
		{name: "by OpenShift's label", labels: map[string]string{"k8s-app": "cluster-autoscaler"}, image: "quay.io/x/y@sha256:0123", found: true},
		{name: "something else", labels: map[string]string{"app": "cluster-autoscaler-dashboard"}, image: "example/dashboard:v1", found: false},
		{name: "its image alone is not read", labels: map[string]string{"app": "scaler"}, image: "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0", found: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			noCA(w)
			w.Deployments = append(w.Deployments, checkstest.AvailableDeployment("ops", "scaler", tc.labels, tc.image))
			r := runOne(t, w, scheduling.AutoscalerFound{})
			if !tc.found {
				if r.Status != checks.Skip {
					t.Fatalf("found %s: %s", tc.name, r.Reason)
				}
				return
			}
			if r.Status != checks.Pass || !strings.Contains(r.Reason, "cluster-autoscaler Deployment ops/scaler (1 of 1 available)") {
				t.Fatalf("%s: %s", r.Status, r.Reason)
			}
		})
	}
}

// A group that is both an object and a row of cluster-autoscaler's status
// is one group, with the health the status gives it.
func TestOneRowPerGroup(t *testing.T) {
	w := checkstest.NewWorld(t)
	clusterAPI("1", "4")(w)
	w.ConfigMaps = []*corev1.ConfigMap{checkstest.CAStatus(checkstest.JudgeAt, "Healthy", 4)}
	w.ConfigMaps[0].Data["status"] = strings.ReplaceAll(w.ConfigMaps[0].Data["status"], "name: gpu-pool", "name: MachineDeployment/clusters/ml-gpu")
	r := runOne(t, w, scheduling.AcceleratorNodeGroups{})
	require.Equal(t, checks.Pass, r.Status, r.Reason)
	require.NotNil(t, r.Table)
	var groups []string
	for _, row := range r.Table.Rows {
		groups = append(groups, row[0]+" | "+row[1]+" | "+row[5])
	}
	assert.Equal(t, []string{
		"Cluster API | MachineDeployment clusters/ml-gpu | Healthy",
		"cluster-autoscaler | cpu-pool | Healthy",
	}, groups)
}

// What a managed platform keeps outside the cluster is said not to be
// seen, without failing what the cluster shows.
func TestNotSeenOutside(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(w *checkstest.World)
		say  string
	}{
		{name: "GKE", edit: gke(true, l4), say: "GKE node auto-provisioning: GKE keeps the cluster's resource limits and its autoscaler outside the cluster, not seen here"},
		{name: "EKS Auto Mode", edit: func(w *checkstest.World) {
			karpenter(w)
			w.NodePools[0].Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["nodeClassRef"] = map[string]any{"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
		}, say: "EKS Auto Mode: the platform runs Karpenter's controller outside the cluster, not seen here; judged by its NodePools' conditions and NodeClaims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			tc.edit(w)
			r := runOne(t, w, scheduling.AutoscalerFound{})
			assert.Equal(t, checks.Pass, r.Status, r.Reason)
			assert.Contains(t, r.Details, tc.say)
		})
	}
}
