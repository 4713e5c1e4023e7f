package bench

import (
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/aiconform/aiconform/fixtures/scenarios"
	"github.com/aiconform/aiconform/simulate"
)

// Operators are KServe, KubeRay and Kueue installed and healthy, as the
// "demo" scenario of fixtures/scenarios writes them: CRDs (names, versions, scope
// and conditions; no schema), controller Deployments with their pods,
// webhook configurations with a real CA bundle, the webhook Services'
// EndpointSlices, and an InferenceService and a RayCluster reconciled into
// their children, Kueue's queues with a gang of two pods admitted whole,
// the Gateway API with its Inference Extension routing to an llm-d model
// served disaggregated, and Multus with one secondary network. The
// controllers, the predictor, the Ray head, the gang and the endpoint
// picker run on cpuNode, the Ray worker and llm-d's prefill and decode
// servers (one GPU each) on gpuNode.
func Operators(now time.Time, cpuNode, gpuNode *corev1.Node) (*Objects, error) {
	o := &Objects{}
	g := &gen{now: now}
	for _, ns := range []string{"kserve", "ray-system", "models", "ray", "kueue-system", "training"} {
		o.Namespaces = append(o.Namespaces, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns, UID: uid("Namespace", "", ns), Labels: map[string]string{"kubernetes.io/metadata.name": ns},
				CreationTimestamp: g.ago(200 * 24 * time.Hour)},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	installed := g.ago(200 * 24 * time.Hour)
	for _, c := range []struct {
		group, plural, kind string
		scope               apiextensionsv1.ResourceScope
		versions            []string // served, the first stored
	}{
		{"serving.kserve.io", "clusterservingruntimes", "ClusterServingRuntime", apiextensionsv1.ClusterScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "clusterstoragecontainers", "ClusterStorageContainer", apiextensionsv1.ClusterScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "inferencegraphs", "InferenceGraph", apiextensionsv1.NamespaceScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "inferenceservices", "InferenceService", apiextensionsv1.NamespaceScoped, []string{"v1beta1"}},
		{"serving.kserve.io", "localmodelcaches", "LocalModelCache", apiextensionsv1.ClusterScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "localmodelnodegroups", "LocalModelNodeGroup", apiextensionsv1.ClusterScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "localmodelnodes", "LocalModelNode", apiextensionsv1.ClusterScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "servingruntimes", "ServingRuntime", apiextensionsv1.NamespaceScoped, []string{"v1alpha1"}},
		{"serving.kserve.io", "trainedmodels", "TrainedModel", apiextensionsv1.NamespaceScoped, []string{"v1alpha1"}},
		{"ray.io", "rayclusters", "RayCluster", apiextensionsv1.NamespaceScoped, []string{"v1", "v1alpha1"}},
		{"ray.io", "rayjobs", "RayJob", apiextensionsv1.NamespaceScoped, []string{"v1", "v1alpha1"}},
		{"ray.io", "rayservices", "RayService", apiextensionsv1.NamespaceScoped, []string{"v1", "v1alpha1"}},
		{"kueue.x-k8s.io", "clusterqueues", "ClusterQueue", apiextensionsv1.ClusterScoped, []string{"v1beta2", "v1beta1"}},
		{"kueue.x-k8s.io", "localqueues", "LocalQueue", apiextensionsv1.NamespaceScoped, []string{"v1beta2", "v1beta1"}},
		{"kueue.x-k8s.io", "resourceflavors", "ResourceFlavor", apiextensionsv1.ClusterScoped, []string{"v1beta2", "v1beta1"}},
		{"kueue.x-k8s.io", "workloads", "Workload", apiextensionsv1.NamespaceScoped, []string{"v1beta2", "v1beta1"}},
	} {
		o.CRDs = append(o.CRDs, crd(c.group, c.plural, c.kind, c.scope, installed, c.versions...))
	}

	// Controllers.
	kserveLabels := map[string]string{"control-plane": "kserve-controller-manager", "app.kubernetes.io/name": "kserve-controller-manager"}
	kserve := g.operatorWorkload("kserve", "kserve-controller-manager", kserveLabels, nil, cpuNode,
		opContainer("manager", "kserve/kserve-controller:v0.15.0", 0), opContainer("kube-rbac-proxy", "quay.io/brancz/kube-rbac-proxy:v0.18.0", 0))
	kuberayLabels := map[string]string{"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/component": "kuberay-operator"}
	kuberay := g.operatorWorkload("ray-system", "kuberay-operator", kuberayLabels, nil, cpuNode,
		opContainer("kuberay-operator", "quay.io/kuberay/operator:v1.5.0", 0))
	o.addWorkload(kserve)
	o.addWorkload(kuberay)
	o.addService(g.service("kserve", "kserve-webhook-server-service", nil, map[string]string{"control-plane": "kserve-controller-manager"}, 443), 9443, kserve.pods...)
	o.addService(g.service("ray-system", "webhook-service", nil, kuberayLabels, 443), 9443, kuberay.pods...)
	// Their leaders' Leases, renewed a moment ago by their pods.
	o.Leases = append(o.Leases,
		g.lease("kserve", "kserve-controller-manager-leader-lock", kserve.pods[0].Name),
		g.lease("ray-system", "ray-operator-leader", kuberay.pods[0].Name))

	// KServe's sklearn iris InferenceService, reconciled (RawDeployment).
	o.CustomResources = append(o.CustomResources, CustomResource{
		GVR: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "clusterservingruntimes"},
		Object: g.custom("serving.kserve.io/v1alpha1", "ClusterServingRuntime", "", "kserve-sklearnserver", map[string]any{
			"supportedModelFormats": []any{map[string]any{"name": "sklearn", "version": "1", "autoSelect": true, "priority": int64(1)}},
			"protocolVersions":      []any{"v1", "v2"},
			"containers":            []any{map[string]any{"name": "kserve-container", "image": "kserve/sklearnserver:v0.15.0"}},
		}, nil),
	})
	isvc := g.custom("serving.kserve.io/v1beta1", "InferenceService", "models", "sklearn-iris", map[string]any{
		"predictor": map[string]any{"model": map[string]any{
			"modelFormat": map[string]any{"name": "sklearn"},
			"storageUri":  "gs://kfserving-examples/models/sklearn/1.0/model",
		}},
	}, map[string]any{
		"url":     "http://sklearn-iris-models.example.com",
		"address": map[string]any{"url": "http://sklearn-iris-predictor.models.svc.cluster.local"},
		"conditions": []any{
			g.cond("IngressReady", "True", ""), g.cond("LatestDeploymentReady", "True", ""),
			g.cond("PredictorReady", "True", ""), g.cond("Ready", "True", ""),
		},
		"deploymentMode": "RawDeployment",
		"modelStatus":    map[string]any{"states": map[string]any{"activeModelState": "Loaded", "targetModelState": "Loaded"}, "transitionStatus": "UpToDate"},
	})
	isvc.SetAnnotations(map[string]string{"serving.kserve.io/deploymentMode": "RawDeployment"})
	o.CustomResources = append(o.CustomResources, CustomResource{
		GVR: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}, Object: isvc})
	isvcOwner := controllerRef("serving.kserve.io/v1beta1", "InferenceService", isvc.GetName(), isvc.GetUID())
	predictorLabels := map[string]string{"serving.kserve.io/inferenceservice": "sklearn-iris", "app": "isvc.sklearn-iris-predictor", "component": "predictor"}
	pred := g.operatorWorkload("models", "sklearn-iris-predictor", predictorLabels, &isvcOwner, cpuNode,
		opContainer("kserve-container", "kserve/sklearnserver:v0.15.0", 0))
	o.addWorkload(pred)
	// The Prometheus server scrapes the model.
	o.Targets = append(o.Targets, simulate.PodTarget("kserve-models", 8080, pred.pods[0], now))
	predSvc := g.service("models", "sklearn-iris-predictor", predictorLabels, map[string]string{"app": "isvc.sklearn-iris-predictor"}, 80)
	predSvc.OwnerReferences = []metav1.OwnerReference{isvcOwner}
	o.addService(predSvc, 8080, pred.pods...)

	// KubeRay's RayCluster with a head and one GPU worker.
	rc := g.custom("ray.io/v1", "RayCluster", "ray", "raycluster-mini", map[string]any{
		"rayVersion": "2.46.0",
		"headGroupSpec": map[string]any{"rayStartParams": map[string]any{},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ray-head", "image": "rayproject/ray:2.46.0"}}}}},
		"workerGroupSpecs": []any{map[string]any{
			"groupName": "gpu-group", "replicas": int64(1), "minReplicas": int64(1), "maxReplicas": int64(1), "rayStartParams": map[string]any{},
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ray-worker", "image": "rayproject/ray:2.46.0-gpu",
				"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "1"}}}}}},
		}},
	}, map[string]any{
		"state": "ready", "desiredWorkerReplicas": int64(1), "availableWorkerReplicas": int64(1), "readyWorkerReplicas": int64(1),
		"desiredCPU": "2", "desiredMemory": "4Gi", "desiredGPU": "1", "desiredTPU": "0",
		"head": map[string]any{"podName": "raycluster-mini-head-" + suffix("head"), "serviceName": "raycluster-mini-head-svc"},
		"conditions": []any{
			g.cond("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"),
			g.cond("HeadPodReady", "True", "HeadPodRunningAndReady"),
		},
	})
	o.CustomResources = append(o.CustomResources, CustomResource{
		GVR: schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, Object: rc})
	rcOwner := controllerRef("ray.io/v1", "RayCluster", rc.GetName(), rc.GetUID())
	rayLabels := func(kind, group string) map[string]string {
		return map[string]string{"ray.io/cluster": "raycluster-mini", "ray.io/node-type": kind, "ray.io/group": group,
			"app.kubernetes.io/created-by": "kuberay-operator", "app.kubernetes.io/name": "kuberay"}
	}
	head := g.opPod("ray", "raycluster-mini-head-"+suffix("head"), rayLabels("head", "headgroup"), rcOwner, cpuNode,
		opContainer("ray-head", "rayproject/ray:2.46.0", 0))
	worker := g.opPod("ray", "raycluster-mini-gpu-group-worker-"+suffix("worker"), rayLabels("worker", "gpu-group"), rcOwner, gpuNode,
		opContainer("ray-worker", "rayproject/ray:2.46.0-gpu", 1))
	o.Pods = append(o.Pods, head, worker)
	headSvc := g.service("ray", "raycluster-mini-head-svc", map[string]string{"ray.io/cluster": "raycluster-mini", "ray.io/node-type": "head"},
		map[string]string{"ray.io/cluster": "raycluster-mini", "ray.io/node-type": "head"}, 10001)
	headSvc.OwnerReferences = []metav1.OwnerReference{rcOwner}
	o.Services = append(o.Services, headSvc)

	o.kueue(g, cpuNode)
	o.gateway(g, installed)
	o.inferenceExtension(g, installed, cpuNode, gpuNode)
	o.multus(g, installed)
	if err := o.webhooks(g); err != nil {
		return nil, err
	}
	o.sort()
	return o, nil
}

// gateway is the Gateway API's standard channel and what Envoy Gateway
// wrote of its class, a gateway and the model's route, split 80/20 on a
// header match.
func (o *Objects) gateway(g *gen, installed metav1.Time) {
	const group, controller = gatewayGroup, gatewayController
	for _, c := range []struct {
		plural, kind string
		scope        apiextensionsv1.ResourceScope
	}{{"gatewayclasses", "GatewayClass", apiextensionsv1.ClusterScoped}, {"gateways", "Gateway", apiextensionsv1.NamespaceScoped}, {"httproutes", "HTTPRoute", apiextensionsv1.NamespaceScoped}} {
		crd := crd(group, c.plural, c.kind, c.scope, installed, "v1", "v1beta1")
		crd.Annotations = map[string]string{group + "/bundle-version": "v1.6.3", group + "/channel": "standard"}
		o.CRDs = append(o.CRDs, crd)
	}
	accepted := g.gatewayCond
	gvr := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	parent := map[string]any{"name": "inference-gateway"}
	o.CustomResources = append(o.CustomResources,
		CustomResource{GVR: gvr("gatewayclasses"), Object: withoutGeneration(g.custom(group+"/v1", "GatewayClass", "", "envoy-gateway",
			map[string]any{"controllerName": controller}, map[string]any{"conditions": []any{accepted("Accepted")}}))},
		CustomResource{GVR: gvr("gateways"), Object: withoutGeneration(g.custom(group+"/v1", "Gateway", "models", "inference-gateway",
			map[string]any{"gatewayClassName": "envoy-gateway", "listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80)}}},
			map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": "10.96.0.80"}}, "conditions": []any{accepted("Accepted"), accepted("Programmed")}}))},
		CustomResource{GVR: gvr("httproutes"), Object: withoutGeneration(g.custom(group+"/v1", "HTTPRoute", "models", "sklearn-iris",
			map[string]any{"parentRefs": []any{parent}, "rules": []any{map[string]any{
				"matches": []any{map[string]any{"headers": []any{map[string]any{"name": "x-model", "value": "sklearn-iris"}}}},
				"backendRefs": []any{
					map[string]any{"name": "sklearn-iris-predictor", "port": int64(80), "weight": int64(80)},
					map[string]any{"name": "sklearn-iris-predictor-canary", "port": int64(80), "weight": int64(20)},
				},
			}}},
			map[string]any{"parents": []any{map[string]any{"parentRef": parent, "controllerName": controller,
				"conditions": []any{accepted("Accepted"), accepted("ResolvedRefs")}}}}))},
	)
}

// The Gateway API's group, and the controller of Envoy Gateway's class,
// which writes the statuses of its gateway, routes and InferencePools.
const (
	gatewayGroup      = "gateway.networking.k8s.io"
	gatewayController = "gateway.envoyproxy.io/gatewayclass-controller"
)

// gatewayCond is a condition of type t, True, as Gateway API
// implementations write it: with the generation it was set for.
func (g *gen) gatewayCond(t string) map[string]any {
	c := g.cond(t, "True", t)
	c["observedGeneration"], c["message"] = int64(1), ""
	return c
}

// withoutGeneration drops status.observedGeneration: the Gateway API and
// its Inference Extension keep the generation per condition.
func withoutGeneration(u *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(u.Object, "status", "observedGeneration")
	return u
}

// The Gateway API Inference Extension's groups, and llm-d's labels: the
// one its model servers carry for their InferencePool to select them, and
// the one that tells its prefill servers from its decode ones.
const (
	inferenceGroup  = "inference.networking.k8s.io"
	inferenceXGroup = "inference.networking.x-k8s.io"
	servingLabel    = "llm-d.ai/inference-serving"
	roleLabel       = "llm-d.ai/role"
)

// inferenceExtension is what the "demo" scenario writes of the Gateway API
// Inference Extension v1.6.0 (fixtures/scenarios/inference.go): the CRDs
// of its module's config/crd/bases, and a model served as llm-d serves
// one: prefill and decode in Deployments of their own, their pods on
// gpuNode, an InferencePool selecting both whose endpoint picker runs on
// cpuNode, accepted by the gateway, and an HTTPRoute sending the model's
// requests to the pool.
func (o *Objects) inferenceExtension(g *gen, installed metav1.Time, cpuNode, gpuNode *corev1.Node) {
	pools := crd(inferenceGroup, "inferencepools", "InferencePool", apiextensionsv1.NamespaceScoped, installed, "v1")
	pools.Spec.Names.ShortNames, pools.Status.AcceptedNames.ShortNames = []string{"infpool"}, []string{"infpool"}
	pools.Annotations = map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/1173",
		inferenceGroup + "/bundle-version": "v1.6.0"}
	imports := crd(inferenceXGroup, "inferencepoolimports", "InferencePoolImport", apiextensionsv1.NamespaceScoped, installed, "v1alpha1")
	imports.Spec.Names.ShortNames, imports.Status.AcceptedNames.ShortNames = []string{"infpimp"}, []string{"infpimp"}
	imports.Annotations = map[string]string{inferenceGroup + "/bundle-version": "v1.6.0"}
	o.CRDs = append(o.CRDs, pools, imports)

	for _, role := range []string{"prefill", "decode"} {
		labels := map[string]string{"app": "qwen-" + role, servingLabel: "true", roleLabel: role}
		w := g.operatorWorkload("models", "qwen-"+role, labels, nil, gpuNode, opContainer("vllm", "ghcr.io/llm-d/llm-d-cuda:v0.4.0", 1))
		for _, p := range w.pods {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
		o.addWorkload(w)
	}
	eppLabels := map[string]string{"app": "qwen-epp"}
	epp := g.operatorWorkload("models", "qwen-epp", eppLabels, nil, cpuNode,
		opContainer("epp", "registry.k8s.io/gateway-api-inference-extension/epp:v1.6.0", 0))
	o.addWorkload(epp)
	svc := g.service("models", "qwen-epp", eppLabels, eppLabels, 9002)
	svc.Spec.Ports[0].Name = "grpc-ext-proc"
	o.addService(svc, 9002, epp.pods...)
	o.EndpointSlices[len(o.EndpointSlices)-1].Ports[0].Name = ptr.To("grpc-ext-proc")

	gateway := map[string]any{"group": gatewayGroup, "kind": "Gateway", "name": "inference-gateway"}
	parents := func() map[string]any {
		return map[string]any{"parents": []any{map[string]any{"parentRef": gateway, "controllerName": gatewayController,
			"conditions": []any{g.gatewayCond("Accepted"), g.gatewayCond("ResolvedRefs")}}}}
	}
	o.CustomResources = append(o.CustomResources,
		CustomResource{GVR: schema.GroupVersionResource{Group: inferenceGroup, Version: "v1", Resource: "inferencepools"},
			Object: withoutGeneration(g.custom(inferenceGroup+"/v1", "InferencePool", "models", "qwen", map[string]any{
				"selector":          map[string]any{"matchLabels": map[string]any{servingLabel: "true"}},
				"targetPorts":       []any{map[string]any{"number": int64(8000)}},
				"endpointPickerRef": map[string]any{"name": "qwen-epp", "port": map[string]any{"number": int64(9002)}, "failureMode": "FailClose"},
			}, parents()))},
		CustomResource{GVR: schema.GroupVersionResource{Group: gatewayGroup, Version: "v1", Resource: "httproutes"},
			Object: withoutGeneration(g.custom(gatewayGroup+"/v1", "HTTPRoute", "models", "qwen", map[string]any{
				"parentRefs": []any{gateway},
				"rules": []any{map[string]any{
					"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
					"backendRefs": []any{map[string]any{"group": inferenceGroup, "kind": "InferencePool", "name": "qwen"}},
				}},
			}, parents()))},
	)
}

// multus is Multus' NetworkAttachmentDefinition CRD, as its module ships
// it (network-attachment-definition-client, artifacts/networks-crd.yaml:
// no status, no controller-gen stamp), and one secondary network of the
// GPU nodes' RDMA NICs.
func (o *Objects) multus(g *gen, installed metav1.Time) {
	c := crd("k8s.cni.cncf.io", "network-attachment-definitions", "NetworkAttachmentDefinition", apiextensionsv1.NamespaceScoped, installed, "v1")
	c.Annotations = nil
	c.Spec.Names.Singular, c.Spec.Names.ShortNames = "network-attachment-definition", []string{"net-attach-def"}
	c.Status.AcceptedNames = c.Spec.Names
	c.Spec.Versions[0].Subresources = nil
	o.CRDs = append(o.CRDs, c)
	o.CustomResources = append(o.CustomResources, CustomResource{
		GVR: schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"},
		Object: g.custom("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", "models", "rdma-net", map[string]any{
			"config": `{"cniVersion":"1.0.0","name":"rdma-net","type":"host-device","device":"ens10f0np0","ipam":{"type":"static"}}`,
		}, nil)})
}

// kueue is Kueue's controller, its queues, and Job training/gang-train of
// two pods that Kueue admitted whole: its Workload Admitted, both pods
// Running on node.
func (o *Objects) kueue(g *gen, node *corev1.Node) {
	labels := map[string]string{"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
	kueue := g.operatorWorkload("kueue-system", "kueue-controller-manager", labels, nil, node,
		opContainer("manager", "registry.k8s.io/kueue/kueue:v0.17.0", 0))
	o.addWorkload(kueue)
	o.addService(g.service("kueue-system", "kueue-webhook-service", nil, map[string]string{"control-plane": "controller-manager"}, 443), 9443, kueue.pods...)
	o.Leases = append(o.Leases, g.lease("kueue-system", "c1f6bfd2.kueue.x-k8s.io", kueue.pods[0].Name))
	gvr := func(resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
	}
	active := map[string]any{"conditions": []any{g.cond("Active", "True", "Ready")}}
	job := "gang-train"
	jobUID := uid("Job", "training", job)
	wl := g.custom("kueue.x-k8s.io/v1beta2", "Workload", "training", "job-"+job+"-"+suffix(job), map[string]any{
		"queueName": "user-queue",
		"podSets":   []any{map[string]any{"name": "main", "count": int64(2)}},
	}, map[string]any{
		"admission":  map[string]any{"clusterQueue": "cluster-queue"},
		"conditions": []any{g.cond("QuotaReserved", "True", "QuotaReserved"), g.cond("Admitted", "True", "Admitted")},
	})
	wl.SetOwnerReferences([]metav1.OwnerReference{controllerRef("batch/v1", "Job", job, jobUID)})
	o.CustomResources = append(o.CustomResources,
		CustomResource{GVR: gvr("clusterqueues"), Object: g.custom("kueue.x-k8s.io/v1beta2", "ClusterQueue", "", "cluster-queue",
			map[string]any{"namespaceSelector": map[string]any{}}, active)},
		CustomResource{GVR: gvr("localqueues"), Object: g.custom("kueue.x-k8s.io/v1beta2", "LocalQueue", "training", "user-queue",
			map[string]any{"clusterQueue": "cluster-queue"}, map[string]any{"conditions": []any{g.cond("Active", "True", "Ready")}})},
		CustomResource{GVR: gvr("workloads"), Object: wl})
	for i := range 2 {
		name := fmt.Sprintf("%s-%d-%s", job, i, suffix(fmt.Sprint(job, i)))
		o.Pods = append(o.Pods, g.opPod("training", name,
			map[string]string{"batch.kubernetes.io/job-name": job, "batch.kubernetes.io/controller-uid": string(jobUID)},
			controllerRef("batch/v1", "Job", job, jobUID), node, opContainer("trainer", "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime", 0)))
	}
}

func crd(group, plural, kind string, scope apiextensionsv1.ResourceScope, created metav1.Time, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	name := plural + "." + group
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"}
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("CustomResourceDefinition", "", name), CreationTimestamp: created, Generation: 1,
			Annotations: map[string]string{"controller-gen.kubebuilder.io/version": "v0.16.4"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Names: names, Scope: scope,
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			AcceptedNames:  names,
			StoredVersions: []string{versions[0]},
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found", LastTransitionTime: created},
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted", LastTransitionTime: created},
			},
		},
	}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0, Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}})
	}
	return c
}

// workload is a Deployment with its ReplicaSet and pod.
type workload struct {
	dep  *appsv1.Deployment
	rs   *appsv1.ReplicaSet
	pods []*corev1.Pod
}

func (o *Objects) addWorkload(w workload) {
	o.Deployments = append(o.Deployments, w.dep)
	o.ReplicaSets = append(o.ReplicaSets, w.rs)
	o.Pods = append(o.Pods, w.pods...)
}

func opContainer(name, image string, gpus int64) corev1.Container {
	c := corev1.Container{Name: name, Image: image, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}, TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy: corev1.PullIfNotPresent}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		c.Resources.Requests["nvidia.com/gpu"] = q
		c.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
	}
	return c
}

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// operatorWorkload is a one-replica Deployment -> ReplicaSet -> Pod chain,
// Available and Running.
func (g *gen) operatorWorkload(ns, name string, labels map[string]string, owner *metav1.OwnerReference, node *corev1.Node, containers ...corev1.Container) workload {
	hash := podTemplateHash(ns + "/" + name)
	podLabels := map[string]string{"pod-template-hash": hash}
	for k, v := range labels {
		podLabels[k] = v
	}
	created := g.ago(150 * 24 * time.Hour)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Deployment", ns, name), Labels: labels, Generation: 1, CreationTimestamp: created},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-"+hash), LastUpdateTime: created, LastTransitionTime: created},
			}},
	}
	if owner != nil {
		dep.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	rsName := name + "-" + hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: ns, UID: uid("ReplicaSet", ns, rsName), Labels: podLabels, CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", name, dep.UID)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: corev1.PodSpec{Containers: containers}}},
		Status: appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 1},
	}
	p := g.opPod(ns, g.podName(ns, rsName, name), podLabels, controllerRef("apps/v1", "ReplicaSet", rsName, rs.UID), node, containers...)
	return workload{dep: dep, rs: rs, pods: []*corev1.Pod{p}}
}

func (g *gen) opPod(ns, name string, labels map[string]string, owner metav1.OwnerReference, n *corev1.Node, containers ...corev1.Container) *corev1.Pod {
	p := g.pod(ns, name, labels, owner, n, podIP(n, 200+len(name)), containers)
	p.Status.QOSClass = corev1.PodQOSBurstable
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].RestartCount = 0
		p.Status.ContainerStatuses[i].LastTerminationState = corev1.ContainerState{}
	}
	return p
}

func (g *gen) service(ns, name string, labels, selector map[string]string, port int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Service", ns, name), Labels: labels, CreationTimestamp: g.ago(150 * 24 * time.Hour)},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, Selector: selector,
			ClusterIP: fmt.Sprintf("10.96.%d.%d", len(name)%200, len(ns)+10), ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", len(name)%200, len(ns)+10)},
			Ports: []corev1.ServicePort{{Name: "http", Port: port, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// addService adds svc and its EndpointSlice, with pods as ready endpoints.
func (o *Objects) addService(svc *corev1.Service, port int32, pods ...*corev1.Pod) {
	o.Services = append(o.Services, svc)
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-" + suffix(svc.Name), Namespace: svc.Namespace, UID: uid("EndpointSlice", svc.Namespace, svc.Name),
			CreationTimestamp: svc.CreationTimestamp,
			Labels:            map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"},
			OwnerReferences:   []metav1.OwnerReference{controllerRef("v1", "Service", svc.Name, svc.UID)},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(p.Spec.NodeName),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		})
	}
	o.EndpointSlices = append(o.EndpointSlices, s)
}

func (g *gen) custom(apiVersion, kind, ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "uid": string(uid(kind, ns, name)), "generation": int64(1),
		"creationTimestamp": g.ago(30 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	if ns != "" {
		meta["namespace"] = ns
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta, "spec": spec}}
	if status != nil {
		status["observedGeneration"] = int64(1)
		u.Object["status"] = status
	}
	return u
}

func (g *gen) cond(t, status, reason string) map[string]any {
	c := map[string]any{"type": t, "status": status, "lastTransitionTime": g.ago(29 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	if reason != "" {
		c["reason"] = reason
	}
	return c
}

// webhooks are KServe's and KubeRay's admission webhooks, served by their
// controllers' Services, with a CA valid for ten years.
func (o *Objects) webhooks(g *gen) error {
	ca, err := scenarios.SelfSignedCA("kserve-webhook-ca", g.now.Add(-150*24*time.Hour), 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	rayCA, err := scenarios.SelfSignedCA("kuberay-webhook-ca", g.now.Add(-150*24*time.Hour), 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	kueueCA, err := scenarios.SelfSignedCA("kueue-ca", g.now.Add(-150*24*time.Hour), 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	created := g.ago(150 * 24 * time.Hour)
	hook := func(ns, svc, path string, ca []byte, groups, resources []string) (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations) {
		return admissionregistrationv1.WebhookClientConfig{CABundle: ca,
				Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svc, Path: ptr.To(path), Port: ptr.To[int32](443)}},
			[]admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: []string{"*"}, Resources: resources, Scope: ptr.To(admissionregistrationv1.AllScopes)},
			}}
	}
	validating := func(config, name, ns, svc, path string, ca []byte, groups, resources []string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		cc, rules := hook(ns, svc, path, ca, groups, resources)
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: config, UID: uid("ValidatingWebhookConfiguration", "", config), CreationTimestamp: created},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: name, ClientConfig: cc, Rules: rules,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](10)}},
		}
	}
	kserve := []string{"serving.kserve.io"}
	const ns, svc = "kserve", "kserve-webhook-server-service"
	o.Validating = []*admissionregistrationv1.ValidatingWebhookConfiguration{
		validating("clusterservingruntime.serving.kserve.io", "clusterservingruntime.kserve-webhook-server.validator", ns, svc, "/validate-serving-kserve-io-v1alpha1-clusterservingruntime", ca, kserve, []string{"clusterservingruntimes"}),
		validating("inferencegraph.serving.kserve.io", "inferencegraph.kserve-webhook-server.validator", ns, svc, "/validate-serving-kserve-io-v1alpha1-inferencegraph", ca, kserve, []string{"inferencegraphs"}),
		validating("inferenceservice.serving.kserve.io", "inferenceservice.kserve-webhook-server.validator", ns, svc, "/validate-serving-kserve-io-v1beta1-inferenceservice", ca, kserve, []string{"inferenceservices"}),
		validating("servingruntime.serving.kserve.io", "servingruntime.kserve-webhook-server.validator", ns, svc, "/validate-serving-kserve-io-v1alpha1-servingruntime", ca, kserve, []string{"servingruntimes"}),
		validating("trainedmodel.serving.kserve.io", "trainedmodel.kserve-webhook-server.validator", ns, svc, "/validate-serving-kserve-io-v1alpha1-trainedmodel", ca, kserve, []string{"trainedmodels"}),
		validating("validating-webhook-configuration", "vraycluster.kb.io", "ray-system", "webhook-service", "/validate-ray-io-v1-raycluster", rayCA, []string{"ray.io"}, []string{"rayclusters"}),
		validating("kueue-validating-webhook-configuration", "vclusterqueue.kb.io", "kueue-system", "kueue-webhook-service", "/validate-kueue-x-k8s-io-v1beta2-clusterqueue", kueueCA, []string{"kueue.x-k8s.io"}, []string{"clusterqueues"}),
	}
	defCC, defRules := hook(ns, svc, "/mutate-serving-kserve-io-v1beta1-inferenceservice", ca, kserve, []string{"inferenceservices"})
	podCC, podRules := hook(ns, svc, "/mutate-pods", ca, []string{""}, []string{"pods"})
	o.Mutating = []*admissionregistrationv1.MutatingWebhookConfiguration{{
		ObjectMeta: metav1.ObjectMeta{Name: "inferenceservice.serving.kserve.io", UID: uid("MutatingWebhookConfiguration", "", "inferenceservice.serving.kserve.io"), CreationTimestamp: created},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "inferenceservice.kserve-webhook-server.defaulter", ClientConfig: defCC, Rules: defRules,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}},
			{Name: "inferenceservice.kserve-webhook-server.pod-mutator", ClientConfig: podCC, Rules: podRules,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
				ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "serving.kserve.io/inferenceservice", Operator: metav1.LabelSelectorOpExists}}}},
		},
	}}
	return nil
}

// lease is a leader-election Lease held by the pod named holder, as
// controller-runtime writes it: `<hostname>_<uuid>`.
func (g *gen) lease(ns, name, holder string) *coordinationv1.Lease {
	renewed := metav1.NewMicroTime(g.now.Add(-2 * time.Second))
	acquired := metav1.NewMicroTime(g.now.Add(-30 * 24 * time.Hour))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid("Lease", ns, name), CreationTimestamp: g.ago(200 * 24 * time.Hour)},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder + "_" + string(uid("leader", ns, name))),
			LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime:          &acquired,
			RenewTime:            &renewed,
		},
	}
}
