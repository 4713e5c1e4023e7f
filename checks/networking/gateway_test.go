package networking_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/networking"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withoutGatewayCRD removes one of the Gateway API's CRDs.
func withoutGatewayCRD(name string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		var kept []*apiextensionsv1.CustomResourceDefinition
		for _, c := range w.CRDs {
			if c.Name != name {
				kept = append(kept, c)
			}
		}
		w.CRDs = kept
	}
}

func gatewayCRD(w *checkstest.World, name string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range w.CRDs {
		if c.Name == name {
			return c
		}
	}
	panic(name)
}

func TestGatewayAPICRDs(t *testing.T) {
	checkstest.RunCases(t, networking.GatewayAPICRDs{}, []checkstest.Case{
		{Name: "standard channel", Status: checks.Pass, Reason: "Gateway API v1.6.3, standard channel: GatewayClass, Gateway and HTTPRoute served at v1"},
		{Name: "not installed", Edit: func(w *checkstest.World) { w.CRDs = w.CRDs[:1] }, Status: checks.Fail,
			Reason: "the Gateway API is not installed: no GatewayClass, Gateway or HTTPRoute CRD of gateway.networking.k8s.io"},
		{Name: "no HTTPRoute", Edit: withoutGatewayCRD("httproutes.gateway.networking.k8s.io"), Status: checks.Fail,
			Reason: "the Gateway API is not fully served: httproutes.gateway.networking.k8s.io is missing"},
		{Name: "v1beta1 only", Edit: func(w *checkstest.World) {
			gatewayCRD(w, "gateways.gateway.networking.k8s.io").Spec.Versions[0].Served = false
		}, Status: checks.Fail, Reason: "gateways.gateway.networking.k8s.io does not serve v1"},
		{Name: "not established", Edit: func(w *checkstest.World) {
			gatewayCRD(w, "gatewayclasses.gateway.networking.k8s.io").Status.Conditions = nil
		}, Status: checks.Fail, Reason: "gatewayclasses.gateway.networking.k8s.io is not Established"},
		{Name: "installed by hand, unstamped, with GRPCRoute", Edit: func(w *checkstest.World) {
			for _, c := range w.CRDs {
				c.Annotations = nil
			}
			grpc := checkstest.EstablishedCRD("grpcroutes", "GRPCRoute")
			grpc.Name, grpc.Spec.Group = "grpcroutes.gateway.networking.k8s.io", "gateway.networking.k8s.io"
			w.CRDs = append(w.CRDs, grpc)
		}, Status: checks.Pass, Reason: "Gateway API (release not stamped on its CRDs): GatewayClass",
			Details: []string{"further Gateway API kinds: grpcroutes.gateway.networking.k8s.io"}},
	}, nil)
}

func TestGatewaysProgrammed(t *testing.T) {
	const controller = "example.com/gateway-controller"
	checkstest.RunCases(t, networking.GatewaysProgrammed{}, []checkstest.Case{
		{Name: "programmed", Status: checks.Pass, Reason: "1 Gateway programmed: Gateway inference/gw (class example, controller example.com/gateway-controller) at 192.0.2.10"},
		{Name: "no API", Edit: func(w *checkstest.World) { w.CRDs = w.CRDs[:1] }, Status: checks.Skip, Reason: "the Gateway API is not served at v1"},
		{Name: "no class", Edit: func(w *checkstest.World) { w.Gateways = w.Gateways[1:] }, Status: checks.Fail,
			Reason: "there is no GatewayClass: no Gateway API implementation is installed"},
		{Name: "class not accepted", Edit: func(w *checkstest.World) {
			w.Gateways[0] = checkstest.GatewayClass("example", controller, "Unknown")
		}, Status: checks.Fail, Reason: "no GatewayClass is accepted by its controller: GatewayClass example (controller example.com/gateway-controller): Accepted is Unknown Accepted"},
		{Name: "accepted for an older generation", Edit: func(w *checkstest.World) {
			w.Gateways[0].SetGeneration(2)
		}, Status: checks.Fail, Reason: "Accepted is True for generation 1, the object is at 2"},
		{Name: "no gateway", Edit: func(w *checkstest.World) { w.Gateways = w.Gateways[:1] }, Status: checks.Warn,
			Reason: "GatewayClass example (controller example.com/gateway-controller) is accepted, but there is no Gateway of it"},
		{Name: "gateway not programmed", Edit: func(w *checkstest.World) {
			w.Gateways[1] = checkstest.Gateway("inference", "gw", "example", "False", "")
		}, Status: checks.Warn, Reason: "no Gateway of an accepted class is programmed: Gateway inference/gw (class example): Programmed is False Programmed"},
		{Name: "one of two programmed", Edit: func(w *checkstest.World) {
			w.Gateways = append(w.Gateways, checkstest.Gateway("inference", "internal", "example", "False", ""))
		}, Status: checks.Warn, Reason: "1 of 2 Gateways programmed",
			Details: []string{"Gateway inference/internal (class example): Programmed is False Programmed"}},
		{Name: "a gateway of another implementation's class is not counted", Edit: func(w *checkstest.World) {
			w.Gateways = append(w.Gateways, checkstest.Gateway("inference", "other", "unknown-class", "False", ""))
		}, Status: checks.Pass, Reason: "1 Gateway programmed"},
	}, nil)
}

func TestHTTPRoutesAccepted(t *testing.T) {
	const controller = "example.com/gateway-controller"
	route := func(name, accepted, resolved string, weights []int64, header string) *unstructured.Unstructured {
		return checkstest.HTTPRoute("ml", name, "inference/gw", controller, accepted, resolved, weights, header)
	}
	checkstest.RunCases(t, networking.HTTPRoutesAccepted{}, on(checkstest.WithoutInferenceExtension, []checkstest.Case{
		{Name: "split and matched", Status: checks.Pass,
			Reason: "HTTPRoute ml/llm, accepted by inference/gw (controller example.com/gateway-controller), splits by weight 80/20 and matches header x-model"},
		{Name: "no route", Edit: func(w *checkstest.World) { w.Gateways = w.Gateways[:2] }, Status: checks.Skip, Reason: "there is no HTTPRoute"},
		{Name: "default weights split evenly", Edit: func(w *checkstest.World) {
			rt := route("llm", "True", "True", []int64{1, 1}, "")
			refs, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
			rule := refs[0].(map[string]any)
			for _, ref := range rule["backendRefs"].([]any) {
				delete(ref.(map[string]any), "weight")
			}
			require.NoError(t, unstructured.SetNestedSlice(rt.Object, refs, "spec", "rules"))
			w.Gateways[2] = rt
		}, Status: checks.Pass, Reason: "splits by weight 1/1"},
		{Name: "plain route", Edit: func(w *checkstest.World) { w.Gateways[2] = route("llm", "True", "True", []int64{1}, "") }, Status: checks.Skip,
			Reason: "1 HTTPRoute accepted (ml/llm), none splits by weight or matches a header"},
		{Name: "backend missing", Edit: func(w *checkstest.World) { w.Gateways[2] = route("llm", "True", "False", []int64{80, 20}, "x-model") }, Status: checks.Fail,
			Reason: "none of 1 HTTPRoute is accepted with its refs resolved: HTTPRoute ml/llm: inference/gw: ResolvedRefs is False ResolvedRefs"},
		{Name: "no implementation reports", Edit: func(w *checkstest.World) { delete(w.Gateways[2].Object, "status") }, Status: checks.Fail,
			Reason: "no implementation reports on it (status.parents is empty)"},
		{Name: "one accepted, one rejected", Edit: func(w *checkstest.World) {
			w.Gateways = append(w.Gateways, route("embed", "False", "True", []int64{50, 50}, ""))
		}, Status: checks.Warn, Reason: "1 of 2 HTTPRoutes not accepted: HTTPRoute ml/embed: inference/gw: Accepted is False Accepted"},
		{Name: "the split route rejected beside a plain one accepted", Edit: func(w *checkstest.World) {
			w.Gateways[2] = route("llm", "True", "False", []int64{80, 20}, "x-model")
			w.Gateways = append(w.Gateways, route("plain", "True", "True", []int64{1}, ""))
		}, Status: checks.Fail, Reason: "no HTTPRoute that splits by weight or matches a header is accepted with its refs resolved (1 route without either is): HTTPRoute ml/llm: inference/gw: ResolvedRefs is False ResolvedRefs"},
		{Name: "stale acceptance", Edit: func(w *checkstest.World) { w.Gateways[2].SetGeneration(3) }, Status: checks.Fail,
			Reason: "Accepted is True for generation 1, the object is at 3"},
	}), nil)
}
