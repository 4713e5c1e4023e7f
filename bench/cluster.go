package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/rig"
	"github.com/aiconform/aiconform/simulate"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Size is how big a synthetic cluster is.
type Size struct {
	Nodes int
	// GPUNodes of the Nodes carry 8 nvidia.com/gpu and GPU Feature
	// Discovery's labels.
	GPUNodes    int
	PodsPerNode int
	// Namespaces is how many namespaces hold the bulk pods: four for the
	// node agents (DaemonSet pods), the rest for applications.
	Namespaces int
}

// Production is the cluster of the performance target: `kubectl get pods
// -A` on it takes tens of seconds and gigabytes.
var Production = Size{Nodes: 2000, GPUNodes: 500, PodsPerNode: 25, Namespaces: 200}

// Objects are a cluster's objects by kind, built-in kinds typed and custom
// resources unstructured, as typed clients and the dynamic client return
// them.
type Objects struct {
	Namespaces      []*corev1.Namespace
	Nodes           []*corev1.Node
	Deployments     []*appsv1.Deployment
	ReplicaSets     []*appsv1.ReplicaSet
	Pods            []*corev1.Pod
	Services        []*corev1.Service
	EndpointSlices  []*discoveryv1.EndpointSlice
	CRDs            []*apiextensionsv1.CustomResourceDefinition
	Validating      []*admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating        []*admissionregistrationv1.MutatingWebhookConfiguration
	CustomResources []CustomResource
	DaemonSets      []*appsv1.DaemonSet
	Leases          []*coordinationv1.Lease
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	ConfigMaps      []*corev1.ConfigMap
	Events          []*corev1.Event
	// APIServices are the aggregator's registrations, unstructured as
	// aiconform reads them.
	APIServices []*unstructured.Unstructured
	// NVIDIA's DRA driver: its class, a slice per GPU node, and claims;
	// DRANET's class and a slice of two NICs per GPU node.
	DeviceClasses  []*resourcev1.DeviceClass
	ResourceSlices []*resourcev1.ResourceSlice
	ResourceClaims []*resourcev1.ResourceClaim
	// gVisor's RuntimeClass.
	RuntimeClasses []*nodev1.RuntimeClass
	// Metrics are what the GPU nodes' DCGM Exporter pods serve, each at
	// its pod's address and at the API server path that proxies to it.
	Metrics []Metrics
	// Targets are what the Prometheus server in front of which Services
	// has monitoring/prometheus-server reports scraping: every node's
	// exporter.
	Targets []simulate.PrometheusTarget
}

// PrometheusTargetsPath is where the Prometheus server's targets are
// read, through the API server's service proxy.
const PrometheusTargetsPath = "/api/v1/namespaces/" + rig.PrometheusNamespace + "/services/" + rig.PrometheusService + ":http/proxy/api/v1/targets"

// Metrics is one exporter pod's metrics.
type Metrics struct {
	// Path is the pod proxy's path, Addr the pod's address and port.
	Path string
	Addr netip.AddrPort
	Body []byte
}

// CustomResource is a custom resource with the resource it is served as.
type CustomResource struct {
	GVR    schema.GroupVersionResource
	Object *unstructured.Unstructured
}

// Add appends o's objects to objs.
func (objs *Objects) Add(o *Objects) {
	objs.Namespaces = append(objs.Namespaces, o.Namespaces...)
	objs.Nodes = append(objs.Nodes, o.Nodes...)
	objs.Deployments = append(objs.Deployments, o.Deployments...)
	objs.ReplicaSets = append(objs.ReplicaSets, o.ReplicaSets...)
	objs.Pods = append(objs.Pods, o.Pods...)
	objs.Services = append(objs.Services, o.Services...)
	objs.EndpointSlices = append(objs.EndpointSlices, o.EndpointSlices...)
	objs.CRDs = append(objs.CRDs, o.CRDs...)
	objs.Validating = append(objs.Validating, o.Validating...)
	objs.Mutating = append(objs.Mutating, o.Mutating...)
	objs.CustomResources = append(objs.CustomResources, o.CustomResources...)
	objs.DaemonSets = append(objs.DaemonSets, o.DaemonSets...)
	objs.Leases = append(objs.Leases, o.Leases...)
	objs.HPAs = append(objs.HPAs, o.HPAs...)
	objs.ConfigMaps = append(objs.ConfigMaps, o.ConfigMaps...)
	objs.Events = append(objs.Events, o.Events...)
	objs.APIServices = append(objs.APIServices, o.APIServices...)
	objs.DeviceClasses = append(objs.DeviceClasses, o.DeviceClasses...)
	objs.ResourceSlices = append(objs.ResourceSlices, o.ResourceSlices...)
	objs.ResourceClaims = append(objs.ResourceClaims, o.ResourceClaims...)
	objs.RuntimeClasses = append(objs.RuntimeClasses, o.RuntimeClasses...)
	objs.Targets = append(objs.Targets, o.Targets...)
}

// Cluster is the whole synthetic cluster: the bulk of Workload plus KServe
// and KubeRay installed and healthy, as of now.
func Cluster(size Size, now time.Time) (*Objects, error) {
	objs := Workload(size, now)
	var cpu, gpu *corev1.Node
	for _, n := range objs.Nodes {
		_, isGPU := n.Status.Capacity["nvidia.com/gpu"]
		switch {
		case isGPU && gpu == nil:
			gpu = n
		case !isGPU && cpu == nil:
			cpu = n
		}
	}
	if cpu == nil || gpu == nil {
		return nil, fmt.Errorf("size %+v: the operators need a CPU node and a GPU node", size)
	}
	ops, err := Operators(now, cpu, gpu)
	if err != nil {
		return nil, err
	}
	objs.Add(ops)
	objs.sort()
	return objs, nil
}

// Node agents: every node runs these DaemonSets' pods, as a production
// cluster runs its network, proxy, metrics and log (or device-plugin) agents.
type agent struct {
	ns, name, image string
	port            int32
}

var agents = []agent{
	{"kube-system", "kube-proxy", "registry.k8s.io/kube-proxy:v1.37.2", 10256},
	{"kube-system", "calico-node", "docker.io/calico/node:v3.30.2", 9099},
	nodeExporterAgent,
}

var nodeExporterAgent = agent{"monitoring", "node-exporter", "quay.io/prometheus/node-exporter:v1.9.1", 9100}

// The fourth agent differs: GPU nodes run NVIDIA's device plugin, the
// others a log shipper. GPU nodes run NVIDIA's DCGM Exporter where the
// others run the node exporter, so that every node runs as many pods.
var (
	dcgmAgent = agent{"gpu-operator", "nvidia-dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04", simulate.DCGMExporterPort}
	gpuAgent  = agent{"gpu-operator", "nvidia-device-plugin-daemonset", "nvcr.io/nvidia/k8s-device-plugin:v0.17.2", 2112}
	logAgent  = agent{"logging", "fluent-bit", "cr.fluentbit.io/fluent/fluent-bit:4.0.3", 2020}
)

var (
	teams   = []string{"search", "ads", "recs", "payments", "fraud", "vision", "speech", "nlp", "ranking", "feeds", "maps", "mail", "chat", "docs", "photos", "video", "music", "games", "shop", "travel", "health", "finance", "identity", "security", "platform"}
	stages  = []string{"prod", "staging", "dev", "batch", "train", "serve", "eval", "infra"}
	cpuApps = []string{"api", "worker", "frontend", "cache", "scheduler", "ingest", "etl", "gateway", "indexer", "notifier"}
	gpuApps = []string{"trainer", "vllm", "finetune", "embedder", "triton"}
)

// gpusPerPod is what each GPU pod requests; GPU node k runs k%5 of them,
// so GPU nodes range from idle to fully allocated.
const gpusPerPod = 2

// replicas is the size of each application Deployment.
const replicas = 10

// Workload is the bulk of the cluster: nodes, namespaces and pods with
// their Deployments and ReplicaSets, with the statuses kubelets and
// controllers write. Each node runs PodsPerNode pods: four node agents and
// application pods; some pods on GPU nodes request nvidia.com/gpu.
func Workload(size Size, now time.Time) *Objects {
	g := &gen{now: now}
	objs := &Objects{}
	nodes := make([]*corev1.Node, size.Nodes)
	for i := range nodes {
		if i < size.GPUNodes {
			nodes[i] = g.node(i, fmt.Sprintf("gpu-node-%04d", i+1), true)
		} else {
			nodes[i] = g.node(i, fmt.Sprintf("cpu-node-%04d", i-size.GPUNodes+1), false)
		}
	}
	objs.Nodes = nodes

	agentNS := []string{"kube-system", "monitoring", "logging", "gpu-operator"}
	appNS := appNamespaces(size.Namespaces - len(agentNS))
	for _, ns := range append(append([]string(nil), agentNS...), appNS...) {
		objs.Namespaces = append(objs.Namespaces, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns, UID: uid("Namespace", "", ns),
				Labels:            map[string]string{"kubernetes.io/metadata.name": ns},
				CreationTimestamp: metav1.NewTime(now.Add(-400 * 24 * time.Hour))},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}

	// Node agents take the first slots of every node.
	nAgents := len(agents) + 1
	for i, n := range nodes {
		list := append(append(agents[:0:0], agents...), logAgent)
		if i < size.GPUNodes {
			list[len(list)-1] = gpuAgent
			list[2] = dcgmAgent
		}
		for _, a := range list {
			p := g.agentPod(a, n)
			objs.Pods = append(objs.Pods, p)
			switch a {
			case dcgmAgent:
				objs.Targets = append(objs.Targets, simulate.PodTarget("gpu-metrics", int(a.port), p, now))
			case nodeExporterAgent:
				objs.Targets = append(objs.Targets, simulate.PodTarget("node-exporter", int(a.port), p, now))
			}
			if a == dcgmAgent {
				addr := netip.AddrPortFrom(netip.MustParseAddr(p.Status.PodIP), uint16(a.port))
				objs.Metrics = append(objs.Metrics, Metrics{Addr: addr,
					Path: fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy/metrics", p.Namespace, p.Name, a.port),
					Body: simulate.DCGMMetrics(n.Name, 8, rig.GPUDriverVersion)})
			}
		}
	}
	gpuNodes := min(size.GPUNodes, size.Nodes)
	for _, a := range agents {
		n := len(nodes)
		if a == nodeExporterAgent {
			n -= gpuNodes
		}
		objs.DaemonSets = append(objs.DaemonSets, g.daemonSet(a, n))
	}
	objs.DaemonSets = append(objs.DaemonSets, g.daemonSet(gpuAgent, gpuNodes), g.daemonSet(logAgent, len(nodes)-gpuNodes), g.daemonSet(dcgmAgent, gpuNodes))
	// The Prometheus server that scrapes the node agents, as the
	// community chart names and labels its Service.
	objs.Services = append(objs.Services, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: rig.PrometheusNamespace, Name: rig.PrometheusService, Labels: rig.PrometheusServiceLabels,
			UID: uid("Service", rig.PrometheusNamespace, rig.PrometheusService), CreationTimestamp: metav1.NewTime(now.Add(-400 * 24 * time.Hour))},
		Spec: corev1.ServiceSpec{Selector: rig.PrometheusServiceLabels, ClusterIP: "10.96.0.90", Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(rig.PrometheusPort), Protocol: corev1.ProtocolTCP}}},
	})

	// Application slots, slot-major so that a Deployment's replicas spread
	// over consecutive nodes as the scheduler's spreading would.
	var gpuSlots, cpuSlots []*corev1.Node
	for s := 0; s < size.PodsPerNode-nAgents; s++ {
		for i, n := range nodes {
			if i < size.GPUNodes && s < i%5 {
				gpuSlots = append(gpuSlots, n)
			} else {
				cpuSlots = append(cpuSlots, n)
			}
		}
	}
	w := 0
	place := func(slots []*corev1.Node, gpu bool) {
		for start := 0; start < len(slots); start += replicas {
			end := min(start+replicas, len(slots))
			ns := appNS[w%len(appNS)]
			apps := cpuApps
			if gpu {
				apps = gpuApps
			}
			name := fmt.Sprintf("%s-%d", apps[w%len(apps)], w)
			dep, rs, pods := g.app(ns, name, gpu, w%3 == 0 && !gpu, slots[start:end])
			if gpu && apps[w%len(apps)] == "vllm" {
				// Model servers scale on their queue, as KEDA does it.
				objs.HPAs = append(objs.HPAs, g.hpa(dep))
			}
			objs.Deployments = append(objs.Deployments, dep)
			objs.ReplicaSets = append(objs.ReplicaSets, rs)
			objs.Pods = append(objs.Pods, pods...)
			w++
		}
	}
	place(gpuSlots, true)
	place(cpuSlots, false)
	// cluster-autoscaler grows both node groups; it added the last GPU
	// node for a pending GPU pod.
	objs.ConfigMaps = []*corev1.ConfigMap{caStatus(now, size)}
	if size.GPUNodes > 0 {
		objs.Events = []*corev1.Event{{
			ObjectMeta:     metav1.ObjectMeta{Namespace: appNS[0], Name: "scale-up.18f3a", UID: uid("Event", appNS[0], "scale-up")},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: appNS[0], Name: "trainer-0"},
			Type:           corev1.EventTypeNormal, Reason: "TriggeredScaleUp", Source: corev1.EventSource{Component: "cluster-autoscaler"},
			Message:       fmt.Sprintf("pod triggered scale-up: [{%s %d->%d (max: %d)}]", gpuNodeGroup, size.GPUNodes-1, size.GPUNodes, size.GPUNodes+100),
			LastTimestamp: g.ago(20 * time.Minute),
		}}
	}
	objs.APIServices = []*unstructured.Unstructured{
		apiService("v1beta1.metrics.k8s.io", "kube-system", "metrics-server"),
		apiService("v1beta1.external.metrics.k8s.io", "keda", "keda-operator-metrics-apiserver"),
		apiService("v1.resource.k8s.io", "", ""),
	}
	g.dra(objs, nodes[:gpuNodes], appNS[0])
	g.dranet(objs, nodes[:gpuNodes])
	objs.RuntimeClasses = []*nodev1.RuntimeClass{{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", UID: uid("RuntimeClass", "", "gvisor"), CreationTimestamp: g.ago(300 * 24 * time.Hour)}, Handler: "runsc"}}
	objs.sort()
	return objs
}

// draDriver is NVIDIA's DRA driver, which the synthetic cluster runs on
// every GPU node beside the device plugin: the most a run reads of DRA.
const draDriver = "gpu.nvidia.com"

// draClaims is how many pods have a claim allocated.
const draClaims = 100

// dra adds NVIDIA's DeviceClass, a ResourceSlice of eight GPUs per GPU
// node, and claims allocated one GPU each, as the scheduler leaves them.
func (g *gen) dra(objs *Objects, gpuNodes []*corev1.Node, ns string) {
	if len(gpuNodes) == 0 {
		return
	}
	objs.DeviceClasses = []*resourcev1.DeviceClass{{
		ObjectMeta: metav1.ObjectMeta{Name: draDriver, UID: uid("DeviceClass", "", draDriver), CreationTimestamp: g.ago(200 * 24 * time.Hour)},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == '" + draDriver + "' && device.attributes['" + draDriver + "'].type == 'gpu'"}}}},
	}}
	for _, n := range gpuNodes {
		sl := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + draDriver, UID: uid("ResourceSlice", "", n.Name), CreationTimestamp: n.CreationTimestamp},
			Spec: resourcev1.ResourceSliceSpec{Driver: draDriver, NodeName: ptr.To(n.Name),
				Pool: resourcev1.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1}},
		}
		for d := range 8 {
			sl.Spec.Devices = append(sl.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", d),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
					"type": {StringValue: ptr.To("gpu")}, "productName": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")}, "index": {IntValue: ptr.To(int64(d))},
				},
				Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}})
		}
		objs.ResourceSlices = append(objs.ResourceSlices, sl)
	}
	for i := range min(draClaims, len(gpuNodes)) {
		node, pod := gpuNodes[i].Name, fmt.Sprintf("embedder-%d", i)
		objs.ResourceClaims = append(objs.ResourceClaims, &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod + "-gpu", UID: uid("ResourceClaim", ns, pod), CreationTimestamp: g.ago(time.Hour)},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: draDriver, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}},
			Status: resourcev1.ResourceClaimStatus{
				Allocation: &resourcev1.AllocationResult{
					Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: draDriver, Pool: node, Device: "gpu-7"}}},
					NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}},
				},
				ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: uid("Pod", ns, pod)}},
			},
		})
	}
}

// dranet adds what DRANET publishes on every GPU node, as the "demo"
// scenario writes it for its own: rig.DRANETSlice, the node's two RDMA
// NICs, and the DeviceClass of them.
func (g *gen) dranet(objs *Objects, gpuNodes []*corev1.Node) {
	if len(gpuNodes) == 0 {
		return
	}
	class := rig.DRANETClass()
	class.UID, class.CreationTimestamp = uid("DeviceClass", "", class.Name), g.ago(200*24*time.Hour)
	objs.DeviceClasses = append(objs.DeviceClasses, class)
	for _, n := range gpuNodes {
		sl := rig.DRANETSlice(n.Name)
		sl.Name += "-" + suffix(n.Name+rig.DRANETDriver)
		sl.UID, sl.CreationTimestamp = uid("ResourceSlice", "", sl.Name), n.CreationTimestamp
		objs.ResourceSlices = append(objs.ResourceSlices, sl)
	}
}

// gpuNodeGroup is the node group of the GPU nodes.
const gpuNodeGroup = "gpu-p5"

// CAUpdatedAnnotation is where cluster-autoscaler records when it last
// wrote its status; Source answers it as fresh.
const CAUpdatedAnnotation = "cluster-autoscaler.kubernetes.io/last-updated"

// caStatus is cluster-autoscaler's status ConfigMap for the two node
// groups, each with room to grow.
func caStatus(now time.Time, size Size) *corev1.ConfigMap {
	group := func(name string, n int) string {
		return fmt.Sprintf(`- name: %s
  health:
    status: Healthy
    nodeCounts:
      registered: {total: %d, ready: %d}
    cloudProviderTarget: %d
    minSize: 0
    maxSize: %d
  scaleUp:
    status: NoActivity
`, name, n, n, n, n+100)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-autoscaler-status", UID: uid("ConfigMap", "kube-system", "cluster-autoscaler-status"),
			Annotations: map[string]string{CAUpdatedAnnotation: now.UTC().Format(caTimeLayout)}},
		Data: map[string]string{"status": "autoscalerStatus: Running\nclusterWide:\n  health:\n    status: Healthy\nnodeGroups:\n" +
			group("general", size.Nodes-size.GPUNodes) + group(gpuNodeGroup, size.GPUNodes)},
	}
}

// caTimeLayout is how cluster-autoscaler writes times in its status.
const caTimeLayout = "2006-01-02 15:04:05.999999999 -0700 MST"

// hpa scales a model server on an external metric, as the HPA controller
// leaves it once it has read the metric.
func (g *gen) hpa(dep *appsv1.Deployment) *autoscalingv2.HorizontalPodAutoscaler {
	target, current := resource.MustParse("10"), resource.MustParse("7")
	metric := autoscalingv2.MetricIdentifier{Name: "s0-vllm-requests-waiting",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"scaledobject.keda.sh/name": dep.Name}}}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: dep.Namespace, Name: "keda-hpa-" + dep.Name, UID: uid("HorizontalPodAutoscaler", dep.Namespace, dep.Name),
			CreationTimestamp: g.ago(30 * 24 * time.Hour)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 20,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: metric, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &target}}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: replicas, DesiredReplicas: replicas,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
				Metric: metric, Current: autoscalingv2.MetricValueStatus{AverageValue: &current}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", LastTransitionTime: g.ago(time.Hour)},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: g.ago(time.Hour)},
			},
		},
	}
}

// apiService is an Available APIService of group.version name served by
// the Service namespace/service, or by the API server itself for "".
func apiService(name, namespace, service string) *unstructured.Unstructured {
	version, group, _ := strings.Cut(name, ".")
	spec := map[string]any{"group": group, "version": version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100)}
	if service != "" {
		spec["service"] = map[string]any{"namespace": namespace, "name": service, "port": int64(443)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name, "uid": string(uid("APIService", "", name))},
		"spec":     spec,
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "Passed", "message": "all checks passed"}}},
	}}
}

// appNamespaces names n application namespaces team-stage.
func appNamespaces(n int) []string {
	var out []string
	for _, s := range stages {
		for _, t := range teams {
			if len(out) == n {
				return out
			}
			out = append(out, t+"-"+s)
		}
	}
	for i := len(out); i < n; i++ {
		out = append(out, fmt.Sprintf("team-%03d", i))
	}
	return out
}

// sort orders every kind by namespace and name, the order of the API
// server's lists.
func (objs *Objects) sort() {
	byKey := func(a, b metav1.Object) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	}
	sort.Slice(objs.Namespaces, func(i, j int) bool { return byKey(objs.Namespaces[i], objs.Namespaces[j]) })
	sort.Slice(objs.Nodes, func(i, j int) bool { return byKey(objs.Nodes[i], objs.Nodes[j]) })
	sort.Slice(objs.Deployments, func(i, j int) bool { return byKey(objs.Deployments[i], objs.Deployments[j]) })
	sort.Slice(objs.ReplicaSets, func(i, j int) bool { return byKey(objs.ReplicaSets[i], objs.ReplicaSets[j]) })
	sort.Slice(objs.Pods, func(i, j int) bool { return byKey(objs.Pods[i], objs.Pods[j]) })
	sort.Slice(objs.DaemonSets, func(i, j int) bool { return byKey(objs.DaemonSets[i], objs.DaemonSets[j]) })
}

type gen struct {
	now time.Time
	// names are the pod names given out, by namespace/name, since random
	// five-letter suffixes do collide among 2,000 pods of a DaemonSet.
	names map[string]bool
	// exporters counts the exporter pods given a virtual address.
	exporters int
}

// podName is prefix plus a five-letter suffix derived from seed, unique in
// namespace ns.
func (g *gen) podName(ns, prefix, seed string) string {
	if g.names == nil {
		g.names = map[string]bool{}
	}
	for i := 0; ; i++ {
		name := prefix + "-" + suffix(fmt.Sprint(seed, "/", i))
		if !g.names[ns+"/"+name] {
			g.names[ns+"/"+name] = true
			return name
		}
	}
}

func (g *gen) ago(d time.Duration) metav1.Time {
	return metav1.NewTime(g.now.Add(-d).Truncate(time.Second))
}

// uid is a stable UUID-shaped identifier for an object, so that two runs
// generate the same cluster.
func uid(kind, ns, name string) types.UID {
	h := hexOf(kind + "/" + ns + "/" + name)
	return types.UID(h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32])
}

// hexOf is 64 hex digits derived from s: image digests, container IDs.
func hexOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// suffix is a five-letter pod-name suffix like the ReplicaSet controller's.
func suffix(s string) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	sum := sha256.Sum256([]byte(s))
	out := make([]byte, 5)
	for i := range out {
		out[i] = letters[int(sum[i])%len(letters)]
	}
	return string(out)
}

// podTemplateHash is a ten-character pod-template-hash.
func podTemplateHash(s string) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	sum := sha256.Sum256([]byte("template/" + s))
	out := make([]byte, 10)
	for i := range out {
		out[i] = letters[int(sum[i])%len(letters)]
	}
	return string(out)
}

// GPULabels are GPU Feature Discovery's labels for an 8 x H100 node.
var GPULabels = map[string]string{
	"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
	"nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper",
	"nvidia.com/gpu.machine": "PowerEdge-XE9680", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
	"nvidia.com/cuda.driver.major": "570", "nvidia.com/cuda.driver.minor": "133", "nvidia.com/cuda.driver.rev": "20",
	"nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "8",
	"nvidia.com/mig.capable": "true", "nvidia.com/gpu.deploy.device-plugin": "true",
	"feature.node.kubernetes.io/pci-10de.present": "true",
}

// node is the i-th node of the cluster.
func (g *gen) node(i int, name string, gpu bool) *corev1.Node {
	zone := []string{"a", "b", "c"}[i%3]
	labels := map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1" + zone,
		"node.kubernetes.io/instance-type": "m7i.8xlarge",
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("131072000Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("524275692Ki"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("31850m"), corev1.ResourceMemory: resource.MustParse("126863360Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("482167794658"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
	}
	var taints []corev1.Taint
	labels["eks.amazonaws.com/nodegroup"] = "general"
	if gpu {
		labels["eks.amazonaws.com/nodegroup"] = gpuNodeGroup
		labels["node.kubernetes.io/instance-type"] = "p5.48xlarge"
		for k, v := range GPULabels {
			labels[k] = v
		}
		capacity[corev1.ResourceCPU], allocatable[corev1.ResourceCPU] = resource.MustParse("192"), resource.MustParse("191450m")
		capacity[corev1.ResourceMemory], allocatable[corev1.ResourceMemory] = resource.MustParse("2097152000Ki"), resource.MustParse("2080000000Ki")
		capacity["nvidia.com/gpu"], allocatable["nvidia.com/gpu"] = resource.MustParse("8"), resource.MustParse("8")
		taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	}
	ip := fmt.Sprintf("10.0.%d.%d", i/250, i%250+4)
	created := g.ago(time.Duration(90*24*60-i) * time.Minute)
	heartbeat := g.ago(time.Duration(i%40) * time.Second)
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: heartbeat, LastTransitionTime: created}
	}
	images := []corev1.ContainerImage{
		{Names: []string{"registry.k8s.io/kube-proxy@sha256:" + hexOf("kube-proxy"), "registry.k8s.io/kube-proxy:v1.37.2"}, SizeBytes: 31237056},
		{Names: []string{"docker.io/calico/node@sha256:" + hexOf("calico"), "docker.io/calico/node:v3.30.2"}, SizeBytes: 155892745},
		{Names: []string{"quay.io/prometheus/node-exporter@sha256:" + hexOf("node-exporter"), "quay.io/prometheus/node-exporter:v1.9.1"}, SizeBytes: 11945236},
		{Names: []string{"cr.fluentbit.io/fluent/fluent-bit@sha256:" + hexOf("fluent-bit"), "cr.fluentbit.io/fluent/fluent-bit:4.0.3"}, SizeBytes: 36214582},
		{Names: []string{"registry.k8s.io/pause@sha256:" + hexOf("pause"), "registry.k8s.io/pause:3.10"}, SizeBytes: 320368},
	}
	if gpu {
		images = append(images,
			corev1.ContainerImage{Names: []string{"nvcr.io/nvidia/pytorch@sha256:" + hexOf("pytorch"), "nvcr.io/nvidia/pytorch:25.01-py3"}, SizeBytes: 11958210183},
			corev1.ContainerImage{Names: []string{"nvcr.io/nvidia/k8s-device-plugin@sha256:" + hexOf("dp"), "nvcr.io/nvidia/k8s-device-plugin:v0.17.2"}, SizeBytes: 173561440},
		)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid("Node", "", name), Labels: labels, CreationTimestamp: created,
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"projectcalico.org/IPv4Address": ip + "/20",
			}},
		Spec: corev1.NodeSpec{
			PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256), PodCIDRs: []string{fmt.Sprintf("10.%d.%d.0/24", 100+i/256, i%256)},
			ProviderID: fmt.Sprintf("aws:///eu-west-1%s/i-%s", zone, hexOf(name)[:17]), Taints: taints,
		},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "CalicoIsUp", "Calico is running on this node"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalDNS, Address: name + ".eu-west-1.compute.internal"},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: hexOf("machine/" + name)[:32], SystemUUID: string(uid("system", "", name)), BootID: string(uid("boot", "", name)),
				KernelVersion: "6.8.0-1021-aws", OSImage: "Ubuntu 24.04.2 LTS", ContainerRuntimeVersion: "containerd://2.1.4",
				KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: images,
		},
	}
}

// agentLabels are the labels of an agent's pods: the GPU Operator labels
// its device plugin's pods app=nvidia-device-plugin-daemonset.
func agentLabels(a agent) map[string]string {
	l := map[string]string{"app.kubernetes.io/name": a.name}
	if a == gpuAgent {
		l["app"] = a.name
	}
	return l
}

// daemonSet is an agent's DaemonSet, scheduled and ready on n nodes.
func (g *gen) daemonSet(a agent, n int) *appsv1.DaemonSet {
	sel := agentLabels(a)
	c := g.container(a.name, a.image, a.port, resource.MustParse("100m"), resource.MustParse("128Mi"), 0)
	nn := int32(n)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: a.name, UID: uid("DaemonSet", a.ns, a.name), Labels: sel,
			Generation: 3, CreationTimestamp: g.ago(300 * 24 * time.Hour)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{c}, PriorityClassName: "system-node-critical"}},
		},
		Status: appsv1.DaemonSetStatus{CurrentNumberScheduled: nn, DesiredNumberScheduled: nn, NumberReady: nn,
			UpdatedNumberScheduled: nn, NumberAvailable: nn, ObservedGeneration: 3},
	}
}

// agentPod is a DaemonSet's pod on node n.
func (g *gen) agentPod(a agent, n *corev1.Node) *corev1.Pod {
	ns, ds := a.ns, a.name
	name := g.podName(ns, ds, ds+n.Name)
	c := g.container(ds, a.image, a.port, resource.MustParse("100m"), resource.MustParse("128Mi"), 0)
	c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(ds != "node-exporter")}
	labels := agentLabels(a)
	labels["controller-revision-hash"], labels["pod-template-generation"] = podTemplateHash(ds)[:9], "3"
	p := g.pod(ns, name, labels,
		metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds, UID: uid("DaemonSet", ns, ds), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		n, hostIP(n), []corev1.Container{c})
	p.Spec.HostNetwork = ds != "nvidia-device-plugin-daemonset" && a != dcgmAgent
	p.Spec.PriorityClassName = "system-node-critical"
	p.Spec.Priority = ptr.To[int32](2000001000)
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	switch {
	case p.Spec.HostNetwork:
		p.Status.PodIP, p.Status.PodIPs = hostIP(n), []corev1.PodIP{{IP: hostIP(n)}}
	case a == dcgmAgent:
		// An address of the rig's virtual range, where bench/live serves
		// what the exporter would for the API server's pod proxy.
		g.exporters++
		ip := netip.AddrFrom4([4]byte{10, 250, byte(1 + g.exporters/250), byte(1 + g.exporters%250)}).String()
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	return p
}

func hostIP(n *corev1.Node) string { return n.Status.Addresses[0].Address }

// app is an application Deployment with its ReplicaSet and one pod on each
// of nodes.
func (g *gen) app(ns, name string, gpu, sidecar bool, nodes []*corev1.Node) (*appsv1.Deployment, *appsv1.ReplicaSet, []*corev1.Pod) {
	hash := podTemplateHash(ns + "/" + name)
	labels := map[string]string{"app": name, "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": ns}
	podLabels := map[string]string{"pod-template-hash": hash}
	for k, v := range labels {
		podLabels[k] = v
	}
	image := fmt.Sprintf("registry.example.com/%s/%s:1.%d.%d", ns, name, len(name)%7, len(ns)%11)
	cpu, mem := resource.MustParse("250m"), resource.MustParse("512Mi")
	var gpus int64
	if gpu {
		image = "nvcr.io/nvidia/pytorch:25.01-py3"
		cpu, mem, gpus = resource.MustParse("16"), resource.MustParse("128Gi"), gpusPerPod
	}
	containers := []corev1.Container{g.container(name, image, 8080, cpu, mem, gpus)}
	if sidecar {
		containers = append(containers, g.container("envoy", "docker.io/envoyproxy/envoy:v1.34.1", 15021, resource.MustParse("50m"), resource.MustParse("64Mi"), 0))
	}
	created := g.ago(time.Duration(len(ns)*24+len(name)) * time.Hour)
	n := int32(len(nodes))
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Deployment", ns, name), Labels: labels, Generation: 3, CreationTimestamp: created,
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "3"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 3, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-"+hash), LastUpdateTime: created, LastTransitionTime: created},
			},
		},
	}
	rsName := name + "-" + hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: ns, UID: uid("ReplicaSet", ns, rsName), Labels: podLabels, Generation: 1, CreationTimestamp: created,
			Annotations:     map[string]string{"deployment.kubernetes.io/desired-replicas": fmt.Sprint(n), "deployment.kubernetes.io/max-replicas": fmt.Sprint(n + (n+3)/4), "deployment.kubernetes.io/revision": "3"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: dep.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name, "pod-template-hash": hash}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: corev1.PodSpec{Containers: containers}},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: 1},
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rs.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	var pods []*corev1.Pod
	for i, node := range nodes {
		pname := g.podName(ns, rsName, fmt.Sprint(rsName, i))
		ip := podIP(node, i)
		p := g.pod(ns, pname, podLabels, owner, node, ip, containers)
		if gpu {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
		pods = append(pods, p)
	}
	return dep, rs, pods
}

// podIP is an address in node n's pod CIDR.
func podIP(n *corev1.Node, i int) string {
	var a, b int
	fmt.Sscanf(n.Spec.PodCIDR, "10.%d.%d.0/24", &a, &b)
	return fmt.Sprintf("10.%d.%d.%d", a, b, 10+(i*37+len(n.Name))%240)
}

// container serves HTTP on port, which its probes check.
func (g *gen) container(name, image string, port int32, cpu, mem resource.Quantity, gpus int64) corev1.Container {
	portName := "http"
	if port != 8080 {
		portName = fmt.Sprintf("http-%d", port)
	}
	c := corev1.Container{
		Name: name, Image: image,
		Ports: []corev1.ContainerPort{{Name: portName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString(portName), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString(portName), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 15, PeriodSeconds: 20, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
	}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		c.Resources.Requests["nvidia.com/gpu"] = q
		c.Resources.Limits["nvidia.com/gpu"] = q
	}
	return c
}

// pod is a Running, Ready pod on node n, as its kubelet reports it, with
// the service account token volume admission adds.
func (g *gen) pod(ns, name string, labels map[string]string, owner metav1.OwnerReference, n *corev1.Node, ip string, template []corev1.Container) *corev1.Pod {
	containers := make([]corev1.Container, len(template))
	for i, c := range template {
		c.VolumeMounts = append(c.VolumeMounts[:len(c.VolumeMounts):len(c.VolumeMounts)],
			corev1.VolumeMount{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
		containers[i] = c
	}
	started := g.ago(time.Duration(len(name)%30*24+len(ns)) * time.Hour)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid("Pod", ns, name), Labels: labels,
			CreationTimestamp: started, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{
			Containers: containers, NodeName: n.Name,
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
						FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
				DefaultMode: ptr.To[int32](420),
			}}}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{},
			SchedulerName: corev1.DefaultSchedulerName, Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true),
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: hostIP(n), HostIPs: []corev1.HostIP{{IP: hostIP(n)}},
			PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &started, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
			},
		},
	}
	for i, c := range containers {
		cs := corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + hexOf(c.Image),
			ContainerID: "containerd://" + hexOf(name+"/"+c.Name), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
				ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)}},
		}
		// Now and then a container restarted, long ago.
		if (len(name)+i)%17 == 0 {
			cs.RestartCount = int32(1 + len(name)%3)
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", StartedAt: g.ago(50 * 24 * time.Hour), FinishedAt: started,
				ContainerID: "containerd://" + hexOf(name+"/"+c.Name+"/previous")}}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
	return p
}
