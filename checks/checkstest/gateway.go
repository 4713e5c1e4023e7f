package checkstest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The Gateway API's resources, at v1.
var (
	GatewayClassesGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	GatewaysGVR       = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	HTTPRoutesGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// GatewayCRDs are the Gateway API's GatewayClass, Gateway and HTTPRoute
// CRDs of a standard-channel release, served at v1 and v1beta1.
func GatewayCRDs(release string) []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range []struct {
		gvr  schema.GroupVersionResource
		kind string
		ns   bool
	}{{GatewayClassesGVR, "GatewayClass", false}, {GatewaysGVR, "Gateway", true}, {HTTPRoutesGVR, "HTTPRoute", true}} {
		crd := EstablishedCRD(k.gvr.Resource, k.kind)
		crd.Name = k.gvr.Resource + "." + k.gvr.Group
		crd.Spec.Group = k.gvr.Group
		crd.Annotations = map[string]string{"gateway.networking.k8s.io/bundle-version": release, "gateway.networking.k8s.io/channel": "standard"}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}, {Name: "v1beta1", Served: true}}
		if !k.ns {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
		}
		out = append(out, crd)
	}
	return out
}

func gatewayObject(gvr schema.GroupVersionResource, kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetGeneration(1)
	return u
}

// GatewayCondition is a status condition set for generation 1.
func GatewayCondition(t, status, reason string) map[string]any {
	return map[string]any{"type": t, "status": status, "reason": reason, "observedGeneration": int64(1)}
}

// GatewayClass is a class of controller whose Accepted condition is accepted.
func GatewayClass(name, controller, accepted string) *unstructured.Unstructured {
	u := gatewayObject(GatewayClassesGVR, "GatewayClass", "", name, map[string]any{"controllerName": controller})
	u.Object["status"] = map[string]any{"conditions": []any{GatewayCondition("Accepted", accepted, "Accepted")}}
	return u
}

// Gateway is a Gateway of class whose Programmed condition is programmed,
// at address when one is given.
func Gateway(namespace, name, class, programmed, address string) *unstructured.Unstructured {
	u := gatewayObject(GatewaysGVR, "Gateway", namespace, name, map[string]any{"gatewayClassName": class,
		"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}})
	status := map[string]any{"conditions": []any{GatewayCondition("Accepted", "True", "Accepted"), GatewayCondition("Programmed", programmed, "Programmed")}}
	if address != "" {
		status["addresses"] = []any{map[string]any{"type": "IPAddress", "value": address}}
	}
	u.Object["status"] = status
	return u
}

// HTTPRoute is a route attached to gateway (namespace/name), reported on by
// controller with Accepted and ResolvedRefs as given; weights, when more
// than one, split its rule between as many backends, and header, when set,
// is matched.
func HTTPRoute(namespace, name, gateway, controller, accepted, resolved string, weights []int64, header string) *unstructured.Unstructured {
	var refs []any
	for i, w := range weights {
		refs = append(refs, map[string]any{"name": name + "-" + string(rune('a'+i)), "port": int64(8000), "weight": w})
	}
	rule := map[string]any{"backendRefs": refs}
	if header != "" {
		rule["matches"] = []any{map[string]any{"headers": []any{map[string]any{"name": header, "value": "llama-3"}}}}
	}
	gwNS, gwName := splitName(gateway)
	u := gatewayObject(HTTPRoutesGVR, "HTTPRoute", namespace, name, map[string]any{
		"parentRefs": []any{map[string]any{"name": gwName, "namespace": gwNS}},
		"rules":      []any{rule},
	})
	u.Object["status"] = map[string]any{"parents": []any{map[string]any{
		"parentRef":      map[string]any{"name": gwName, "namespace": gwNS},
		"controllerName": controller,
		"conditions":     []any{GatewayCondition("Accepted", accepted, "Accepted"), GatewayCondition("ResolvedRefs", resolved, "ResolvedRefs")},
	}}}
	return u
}

func splitName(s string) (namespace, name string) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:]
		}
	}
	return "", s
}
