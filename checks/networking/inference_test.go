package networking_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/networking"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const inferenceController = "example.com/gateway-controller"

// inference installs the healthy inference setup alone (not the world's
// llm-d servers beside it), then edits it.
func inference(edit func(w *checkstest.World)) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		checkstest.WithoutInferenceExtension(w)
		checkstest.WithInferenceExtension(w)
		if edit != nil {
			edit(w)
		}
	}
}

// pool is the world's InferencePool ml/llama.
func pool(w *checkstest.World) *unstructured.Unstructured {
	return w.Custom[checkstest.InferencePoolsGVR][0]
}

// inferenceRoute is the world's HTTPRoute to the pool.
func inferenceRoute(w *checkstest.World) *unstructured.Unstructured {
	for _, o := range w.Gateways {
		if o.GetName() == checkstest.InferenceRouteName {
			return o
		}
	}
	panic(checkstest.InferenceRouteName)
}

func poolCRD(w *checkstest.World) *apiextensionsv1.CustomResourceDefinition {
	return gatewayCRD(w, "inferencepools.inference.networking.k8s.io")
}

// withoutInferenceCRDs removes GAIE's CRDs, pools kept.
func withoutInferenceCRDs(w *checkstest.World) {
	var kept []*apiextensionsv1.CustomResourceDefinition
	for _, c := range w.CRDs {
		if c.Spec.Group != "inference.networking.k8s.io" && c.Spec.Group != "inference.networking.x-k8s.io" {
			kept = append(kept, c)
		}
	}
	w.CRDs = kept
}

func TestInferenceExtensionCRDs(t *testing.T) {
	const experimental = "experimental kinds of inference.networking.x-k8s.io: InferenceModelRewrite (v1alpha2), InferenceObjective (v1alpha2), InferencePoolImport (v1alpha1)"
	checkstest.RunCases(t, networking.InferenceExtensionCRDs{}, on(checkstest.WithoutInferenceExtension, []checkstest.Case{
		{Name: "GAIE v1.5.0", Edit: inference(nil), Status: checks.Pass,
			Reason: "Gateway API Inference Extension v1.5.0: InferencePool served at inference.networking.k8s.io/v1", Details: []string{experimental}},
		{Name: "installed by hand, unstamped", Edit: inference(func(w *checkstest.World) { poolCRD(w).Annotations = nil }), Status: checks.Pass,
			Reason: "Gateway API Inference Extension (release not stamped on its CRD): InferencePool served at inference.networking.k8s.io/v1"},
		{Name: "not installed", Status: checks.Fail,
			Reason: "the Gateway API Inference Extension is not installed: no InferencePool CRD of inference.networking.k8s.io"},
		{Name: "pre-GA only", Edit: func(w *checkstest.World) { w.CRDs = append(w.CRDs, checkstest.PreGAInferenceCRDs()...) }, Status: checks.Warn,
			Reason:  "only the pre-GA InferencePool is served: inferencepools.inference.networking.x-k8s.io at v1alpha2 (release not stamped), which implementations of GAIE v1.0 and later do not route to; inferencepools.inference.networking.k8s.io is missing",
			Details: []string{"experimental kinds of inference.networking.x-k8s.io: InferenceModel (v1alpha2), InferencePool (v1alpha2)"}},
		{Name: "not established", Edit: inference(func(w *checkstest.World) { poolCRD(w).Status.Conditions = nil }), Status: checks.Fail,
			Reason: "InferencePool is not served at inference.networking.k8s.io/v1: inferencepools.inference.networking.k8s.io is not Established"},
		{Name: "v1 not served", Edit: inference(func(w *checkstest.World) { poolCRD(w).Spec.Versions[0].Served = false }), Status: checks.Fail,
			Reason: "inferencepools.inference.networking.k8s.io does not serve v1"},
	}), nil)
}

func TestInferencePoolsReady(t *testing.T) {
	const healthy = "InferencePool ml/llama (endpoint picker ml/llama-epp:9002 with 1 ready endpoint, FailClose; 2/2 model servers ready (Deployment vllm-llama); accepted by inference/gw (controller example.com/gateway-controller))"
	modelServers := func(w *checkstest.World) int {
		for i, d := range w.Deployments {
			if d.Name == "vllm-llama" {
				return i
			}
		}
		panic("vllm-llama")
	}
	checkstest.RunCases(t, networking.InferencePoolsReady{}, on(checkstest.WithoutInferenceExtension, []checkstest.Case{
		{Name: "usable", Edit: inference(nil), Status: checks.Pass, Reason: "1 InferencePool usable: " + healthy},
		{Name: "API not served", Status: checks.Skip, Reason: "the InferencePool API is not served at inference.networking.k8s.io/v1 (see inference-extension-crds)"},
		{Name: "no pool", Edit: inference(func(w *checkstest.World) { w.Custom[checkstest.InferencePoolsGVR] = nil }), Status: checks.Skip,
			Reason: "there is no InferencePool: nothing shows an endpoint picker routing to model servers"},
		{Name: "no endpoint picker Service", Edit: inference(func(w *checkstest.World) { w.Services = w.Services[:len(w.Services)-1] }), Status: checks.Fail,
			Reason: "no InferencePool is usable: InferencePool ml/llama: its endpoint picker Service ml/llama-epp does not exist"},
		{Name: "endpoint picker not ready", Edit: inference(func(w *checkstest.World) {
			w.EndpointSlices = []*discoveryv1.EndpointSlice{checkstest.EPPSlice("ml", "llama-epp", false)}
		}), Status: checks.Fail,
			Reason: "InferencePool ml/llama: its endpoint picker Service ml/llama-epp has no ready endpoint"},
		{Name: "endpoint picker on another port", Edit: inference(func(w *checkstest.World) { w.Services[len(w.Services)-1].Spec.Ports[0].Port = 9003 }), Status: checks.Fail,
			Reason: "its endpoint picker Service ml/llama-epp has no port 9002"},
		{Name: "ExternalName picker", Edit: inference(func(w *checkstest.World) { w.Services[len(w.Services)-1].Spec.Type = corev1.ServiceTypeExternalName }), Status: checks.Fail,
			Reason: "its endpoint picker Service ml/llama-epp is ExternalName"},
		{Name: "no endpoint picker", Edit: inference(func(w *checkstest.World) { unstructured.RemoveNestedField(pool(w).Object, "spec", "endpointPickerRef") }), Status: checks.Fail,
			Reason: "InferencePool ml/llama: it has no endpointPickerRef: nothing picks its model servers on their metrics"},
		{Name: "model servers not ready", Edit: inference(func(w *checkstest.World) {
			w.Deployments[modelServers(w)] = checkstest.ModelServers("ml", "vllm-llama", "llama", 2, 0)
		}), Status: checks.Fail, Reason: "InferencePool ml/llama: none of its model servers is ready: 0/2 model servers ready (Deployment vllm-llama)"},
		{Name: "model servers of no Deployment", Edit: inference(func(w *checkstest.World) {
			w.Deployments = append(w.Deployments[:modelServers(w)], w.Deployments[modelServers(w)+1:]...)
			w.Pods = append(w.Pods, checkstest.ReadyPod("ml", "llama-lws-0", map[string]string{"app": "llama"}, "gpu-node-1"),
				checkstest.ReadyPod("ml", "llama-lws-1", map[string]string{"app": "llama"}, "gpu-node-1"))
			w.Pods[len(w.Pods)-1].Status.Conditions = nil
		}), Status: checks.Pass, Reason: "1/2 model servers ready (pods app=llama)"},
		{Name: "no model server", Edit: inference(func(w *checkstest.World) {
			w.Deployments = append(w.Deployments[:modelServers(w)], w.Deployments[modelServers(w)+1:]...)
		}), Status: checks.Fail, Reason: "InferencePool ml/llama: no pod of ml matches its selector app=llama"},
		{Name: "not accepted", Edit: inference(func(w *checkstest.World) {
			w.Custom[checkstest.InferencePoolsGVR][0] = checkstest.InferencePool("ml", "llama", "inference/gw", inferenceController, "False")
		}), Status: checks.Fail, Reason: "InferencePool ml/llama: no gateway accepts it: inference/gw: Accepted is False Accepted"},
		{Name: "accepted for an older generation", Edit: inference(func(w *checkstest.World) { pool(w).SetGeneration(2) }), Status: checks.Fail,
			Reason: "no gateway accepts it: inference/gw: Accepted is True for generation 1, the object is at 2"},
		{Name: "no gateway reports", Edit: inference(func(w *checkstest.World) { delete(pool(w).Object, "status") }), Status: checks.Fail,
			Reason: "InferencePool ml/llama: no gateway reports on it (status.parents is empty): no implementation routes to it"},
		{Name: "ResolvedRefs not reported", Edit: inference(func(w *checkstest.World) {
			parents, _, _ := unstructured.NestedSlice(pool(w).Object, "status", "parents")
			parent := parents[0].(map[string]any)
			parent["conditions"] = parent["conditions"].([]any)[:1]
			require.NoError(t, unstructured.SetNestedSlice(pool(w).Object, parents, "status", "parents"))
		}), Status: checks.Pass, Reason: "1 InferencePool usable"},
		{Name: "one of two usable", Edit: inference(func(w *checkstest.World) {
			w.Custom[checkstest.InferencePoolsGVR] = append(w.Custom[checkstest.InferencePoolsGVR],
				checkstest.InferencePool("ml", "mistral", "inference/gw", inferenceController, "True"))
		}), Status: checks.Warn, Reason: "1 of 2 InferencePools usable (" + healthy + "); not usable: InferencePool ml/mistral: its endpoint picker Service ml/mistral-epp does not exist; no pod of ml matches its selector app=mistral",
			Details: []string{"InferencePool ml/mistral: its endpoint picker Service ml/mistral-epp does not exist; no pod of ml matches its selector app=mistral"}},
	}), func(t *testing.T, tc checkstest.Case, r checks.Result) {
		if tc.Name == "usable" {
			var commands []string
			for _, s := range r.Evidence {
				commands = append(commands, s.Command)
			}
			assert.Contains(t, commands, "kubectl get endpointslices -n ml -l kubernetes.io/service-name=llama-epp")
			assert.Contains(t, commands, "kubectl get pods -n ml -l app=llama")
		}
	})
}

// A refused read is an Error, never a verdict.
func TestInferencePoolsReadyForbidden(t *testing.T) {
	for _, res := range []struct{ group, resource string }{{"inference.networking.k8s.io", "inferencepools"}, {"discovery.k8s.io", "endpointslices"}, {"apps", "deployments"}} {
		t.Run(res.resource, func(t *testing.T) {
			f := checkstest.NewWorld(t).Serve()
			f.Kube.PrependReactor("list", res.resource, checkstest.Forbidden(res.group, res.resource))
			f.Dyn.PrependReactor("list", res.resource, checkstest.Forbidden(res.group, res.resource))
			r := checkstest.Result(t, f.Run([]checks.Check{networking.InferencePoolsReady{}}, nil), "inference-pools-ready", "")
			assert.Equal(t, checks.Error, r.Status, r.Reason)
			assert.Contains(t, r.Reason, "forbidden")
		})
	}
}

func TestInferenceRoutesAccepted(t *testing.T) {
	checkstest.RunCases(t, networking.InferenceRoutesAccepted{}, on(checkstest.WithoutInferenceExtension, []checkstest.Case{
		{Name: "accepted", Edit: inference(nil), Status: checks.Pass,
			Reason: "HTTPRoute ml/llama-route, accepted by inference/gw (controller example.com/gateway-controller), sends to InferencePool ml/llama"},
		{Name: "Gateway API not served", Edit: inference(func(w *checkstest.World) { w.CRDs = w.CRDs[:1] }), Status: checks.Skip,
			Reason: "the Gateway API is not served at v1"},
		{Name: "no route to a pool", Status: checks.Skip,
			Reason: "no HTTPRoute sends to an InferencePool (a backendRef of group inference.networking.k8s.io, kind InferencePool): nothing shows a gateway routing to one"},
		{Name: "refs unresolved", Edit: inference(func(w *checkstest.World) {
			*inferenceRoute(w) = *checkstest.InferenceRoute("ml", "llama-route", "inference/gw", inferenceController, "llama", "True", "False")
		}), Status: checks.Fail,
			Reason: "none of 1 HTTPRoute to an InferencePool is accepted with its refs resolved: HTTPRoute ml/llama-route: inference/gw: ResolvedRefs is False ResolvedRefs"},
		{Name: "stale acceptance", Edit: inference(func(w *checkstest.World) { inferenceRoute(w).SetGeneration(3) }), Status: checks.Fail,
			Reason: "HTTPRoute ml/llama-route: inference/gw: Accepted is True for generation 1, the object is at 3"},
		{Name: "no implementation reports", Edit: inference(func(w *checkstest.World) { delete(inferenceRoute(w).Object, "status") }), Status: checks.Fail,
			Reason: "HTTPRoute ml/llama-route: no implementation reports on it (status.parents is empty)"},
		{Name: "pool missing", Edit: inference(func(w *checkstest.World) { w.Custom[checkstest.InferencePoolsGVR] = nil }), Status: checks.Fail,
			Reason: "HTTPRoute ml/llama-route: it sends to InferencePool ml/llama, which does not exist"},
		{Name: "pool API not served", Edit: inference(withoutInferenceCRDs), Status: checks.Fail,
			Reason: "HTTPRoute ml/llama-route: it sends to InferencePool ml/llama, but the InferencePool API is not served at inference.networking.k8s.io/v1"},
		{Name: "one of two accepted", Edit: inference(func(w *checkstest.World) {
			w.Gateways = append(w.Gateways, checkstest.InferenceRoute("ml", "mistral-route", "inference/gw", inferenceController, "llama", "False", "True"))
		}), Status: checks.Warn,
			Reason: "1 of 2 HTTPRoutes to an InferencePool accepted by every parent (HTTPRoute ml/llama-route, accepted by inference/gw (controller example.com/gateway-controller), sends to InferencePool ml/llama); not: HTTPRoute ml/mistral-route: inference/gw: Accepted is False Accepted"},
		{Name: "rejected by one of two gateways", Edit: inference(func(w *checkstest.World) {
			rt := inferenceRoute(w)
			parents, _, _ := unstructured.NestedSlice(rt.Object, "status", "parents")
			other := checkstest.InferenceRoute("ml", "llama-route", "inference/internal", inferenceController, "llama", "False", "True")
			more, _, _ := unstructured.NestedSlice(other.Object, "status", "parents")
			require.NoError(t, unstructured.SetNestedSlice(rt.Object, append(parents, more...), "status", "parents"))
		}), Status: checks.Warn,
			Reason: "no HTTPRoute to an InferencePool is accepted by every parent: HTTPRoute ml/llama-route, accepted by inference/gw (controller example.com/gateway-controller) but not by inference/internal: Accepted is False Accepted"},
	}), nil)
}
