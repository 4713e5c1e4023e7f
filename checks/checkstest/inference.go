package checkstest

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The Gateway API Inference Extension's InferencePool: GA at v1, and the
// pre-GA one of the experimental group.
var (
	InferencePoolsGVR  = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}
	XInferencePoolsGVR = schema.GroupVersionResource{Group: "inference.networking.x-k8s.io", Version: "v1alpha2", Resource: "inferencepools"}
)

// inferenceCRD is a CRD of GAIE serving one version, stamped with release
// as GAIE's own are since v1.0 (unstamped when release is "").
func inferenceCRD(gvr schema.GroupVersionResource, kind, release string) *apiextensionsv1.CustomResourceDefinition {
	crd := EstablishedCRD(gvr.Resource, kind)
	crd.Name = gvr.Resource + "." + gvr.Group
	crd.Spec.Group = gvr.Group
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvr.Version, Served: true, Storage: true}}
	if release != "" {
		crd.Annotations = map[string]string{"inference.networking.k8s.io/bundle-version": release}
	}
	return crd
}

// InferenceCRDs are the CRDs of a GAIE release of the v1.2 to v1.5 shape:
// InferencePool at v1, and the experimental InferenceObjective,
// InferenceModelRewrite and InferencePoolImport.
func InferenceCRDs(release string) []*apiextensionsv1.CustomResourceDefinition {
	x := func(resource, version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: XInferencePoolsGVR.Group, Version: version, Resource: resource}
	}
	return []*apiextensionsv1.CustomResourceDefinition{
		inferenceCRD(InferencePoolsGVR, "InferencePool", release),
		inferenceCRD(x("inferenceobjectives", "v1alpha2"), "InferenceObjective", release),
		inferenceCRD(x("inferencemodelrewrites", "v1alpha2"), "InferenceModelRewrite", release),
		inferenceCRD(x("inferencepoolimports", "v1alpha1"), "InferencePoolImport", release),
	}
}

// PreGAInferenceCRDs are the CRDs of GAIE v0.5: InferencePool and
// InferenceModel at v1alpha2 of the experimental group, unstamped.
func PreGAInferenceCRDs() []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{
		inferenceCRD(XInferencePoolsGVR, "InferencePool", ""),
		inferenceCRD(schema.GroupVersionResource{Group: XInferencePoolsGVR.Group, Version: "v1alpha2", Resource: "inferencemodels"}, "InferenceModel", ""),
	}
}

// InferencePool is a v1 pool of the pods labelled app=name in namespace,
// whose endpoint picker is the Service NAME-epp on port 9002, and which
// gateway (namespace/name) reports on through controller with Accepted
// and ResolvedRefs as accepted; no gateway reports when gateway is "".
func InferencePool(namespace, name, gateway, controller, accepted string) *unstructured.Unstructured {
	u := gatewayObject(InferencePoolsGVR, "InferencePool", namespace, name, map[string]any{
		"selector":    map[string]any{"matchLabels": map[string]any{"app": name}},
		"targetPorts": []any{map[string]any{"number": int64(8000)}},
		"endpointPickerRef": map[string]any{"group": "", "kind": "Service", "name": name + "-epp",
			"port": map[string]any{"number": int64(9002)}, "failureMode": "FailClose"},
	})
	if gateway != "" {
		gwNS, gwName := splitName(gateway)
		u.Object["status"] = map[string]any{"parents": []any{map[string]any{
			"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gwName, "namespace": gwNS},
			"controllerName": controller,
			"conditions":     []any{GatewayCondition("Accepted", accepted, "Accepted"), GatewayCondition("ResolvedRefs", accepted, "ResolvedRefs")},
		}}}
	}
	return u
}

// EPPService is the Service of a pool's endpoint picker, on GAIE's port
// 9002.
func EPPService(namespace, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "grpc-ext-proc", Port: 9002, Protocol: corev1.ProtocolTCP}}}}
}

// EPPSlice is the EndpointSlice of service with one endpoint, ready or not.
func EPPSlice(namespace, service string, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: service + "-k2x9q", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.2.21"}, Conditions: discoveryv1.EndpointConditions{Ready: Ptr(ready)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: Ptr("grpc-ext-proc"), Port: Ptr[int32](9002)}},
	}
}

// ModelServers is a Deployment of replicas model server pods labelled
// app=app, ready of them ready.
func ModelServers(namespace, name, app string, replicas, ready int32) *appsv1.Deployment {
	d := AvailableDeployment(namespace, name, map[string]string{"app": app}, "vllm/vllm-openai:v0.11.0")
	d.Spec.Replicas = Ptr(replicas)
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	d.Spec.Template.Labels = map[string]string{"app": app}
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = replicas, ready, ready
	return d
}

// InferenceRoute is an HTTPRoute attached to gateway (namespace/name) whose
// one rule sends to the InferencePool pool of its namespace, reported on
// by controller with Accepted and ResolvedRefs as given.
func InferenceRoute(namespace, name, gateway, controller, pool, accepted, resolved string) *unstructured.Unstructured {
	u := HTTPRoute(namespace, name, gateway, controller, accepted, resolved, nil, "")
	u.Object["spec"].(map[string]any)["rules"] = []any{map[string]any{
		"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
		"backendRefs": []any{map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool}},
	}}
	return u
}

// The healthy inference setup WithInferenceExtension installs: a pool of
// vLLM servers in ml behind the world's gateway.
const (
	InferencePoolName  = "llama"
	InferenceRouteName = "llama-route"
)

// WithInferenceExtension installs a healthy Gateway API Inference
// Extension into w: GAIE v1.5.0's CRDs; the InferencePool ml/llama of two
// ready model servers (the Deployment vllm-llama), whose endpoint picker
// ml/llama-epp has a ready endpoint, accepted by the world's gateway
// inference/gw; and the HTTPRoute ml/llama-route sending to it.
func WithInferenceExtension(w *World) {
	const controller = "example.com/gateway-controller"
	w.CRDs = append(w.CRDs, InferenceCRDs("v1.5.0")...)
	if w.Custom == nil {
		w.Custom = map[schema.GroupVersionResource][]*unstructured.Unstructured{}
	}
	w.Custom[InferencePoolsGVR] = append(w.Custom[InferencePoolsGVR], InferencePool("ml", InferencePoolName, "inference/gw", controller, "True"))
	epp := InferencePoolName + "-epp"
	w.Services = append(w.Services, EPPService("ml", epp))
	w.EndpointSlices = append(w.EndpointSlices, EPPSlice("ml", epp, true))
	w.Deployments = append(w.Deployments,
		ModelServers("ml", "vllm-llama", InferencePoolName, 2, 2),
		AvailableDeployment("ml", epp, map[string]string{"app": epp}, "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"))
	w.Gateways = append(w.Gateways, InferenceRoute("ml", InferenceRouteName, "inference/gw", controller, InferencePoolName, "True", "True"))
}

// WithoutInferenceExtension takes out of w what WithInferenceExtension and
// NewWorld's llm-d stack put in, for tests that bring their own.
func WithoutInferenceExtension(w *World) {
	inference := func(group string) bool {
		return group == InferencePoolsGVR.Group || group == XInferencePoolsGVR.Group
	}
	w.CRDs = slices.DeleteFunc(w.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool { return inference(c.Spec.Group) })
	delete(w.Custom, InferencePoolsGVR)
	delete(w.Custom, XInferencePoolsGVR)
	epp := InferencePoolName + "-epp"
	w.Services = slices.DeleteFunc(w.Services, func(s *corev1.Service) bool { return s.Name == epp })
	w.EndpointSlices = slices.DeleteFunc(w.EndpointSlices, func(s *discoveryv1.EndpointSlice) bool {
		return s.Labels[discoveryv1.LabelServiceName] == epp
	})
	w.Deployments = slices.DeleteFunc(w.Deployments, func(d *appsv1.Deployment) bool {
		return d.Namespace == "ml" && (d.Name == epp || d.Spec.Template.Labels["app"] == InferencePoolName)
	})
	w.Gateways = slices.DeleteFunc(w.Gateways, func(u *unstructured.Unstructured) bool { return u.GetName() == InferenceRouteName })
}
