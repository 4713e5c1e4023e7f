package networking_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/networking"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// llmd is llm-d's P/D layout in namespace llm: a prefill and a decode
// Deployment of one model, an InferencePool selecting both, and a route to
// the pool.
func llmd(prefillReady, decodeReady int32) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		labels := func(role string) map[string]string {
			return map[string]string{"app": "llama", "llm-d.ai/inference-serving": "true", "llm-d.ai/role": role}
		}
		w.Deployments = append(w.Deployments,
			checkstest.RoleDeployment("llm", "llama-prefill", labels("prefill"), 4, prefillReady),
			checkstest.RoleDeployment("llm", "llama-decode", labels("decode"), 1, decodeReady))
		w.CRDs = append(w.CRDs, checkstest.ServedCRD(checkstest.InferencePoolsGVR, "InferencePool"))
		addCustom(w, checkstest.InferencePoolsGVR, checkstest.DisaggPool("llm", "llama", map[string]string{"llm-d.ai/inference-serving": "true"}))
		w.Gateways = append(w.Gateways, checkstest.PoolRoute("llm", "llama", "inference/gw", "InferencePool", "llama"))
	}
}

// on runs each case on the world as base leaves it: without what of
// NewWorld's the cases bring themselves.
func on(base func(w *checkstest.World), cases []checkstest.Case) []checkstest.Case {
	for i, tc := range cases {
		edit := tc.Edit
		cases[i].Edit = func(w *checkstest.World) {
			base(w)
			if edit != nil {
				edit(w)
			}
		}
	}
	return cases
}

func addCustom(w *checkstest.World, gvr schema.GroupVersionResource, objs ...*unstructured.Unstructured) {
	if w.Custom == nil {
		w.Custom = map[schema.GroupVersionResource][]*unstructured.Unstructured{}
	}
	w.Custom[gvr] = append(w.Custom[gvr], objs...)
}

// dynamo is a DynamoGraphDeployment's workloads as its operator writes
// them for v1alpha1 components: a frontend, and prefill and decode workers.
func dynamo(graph string, roles ...string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		labels := func(kind, sub string) map[string]string {
			l := map[string]string{"nvidia.com/dynamo-graph-deployment-name": graph, "nvidia.com/dynamo-component-type": kind}
			if sub != "" {
				l["nvidia.com/dynamo-sub-component-type"] = sub
			}
			return l
		}
		w.Deployments = append(w.Deployments, checkstest.RoleDeployment("dynamo", graph+"-frontend", labels("frontend", ""), 1, 1))
		for _, role := range roles {
			w.Deployments = append(w.Deployments, checkstest.RoleDeployment("dynamo", graph+"-vllm"+role+"worker", labels("worker", role), 2, 2))
		}
	}
}

// rbg is an SGLang RoleBasedGroup: prefill as LeaderWorkerSet groups,
// decode as a StatefulSet, a Service selecting the decode pods and a route
// to it.
func rbg(w *checkstest.World) {
	labels := func(role string) map[string]string {
		return map[string]string{"rolebasedgroup.workloads.x-k8s.io/name": "sglang-pd", "rolebasedgroup.workloads.x-k8s.io/role": role}
	}
	w.CRDs = append(w.CRDs, checkstest.ServedCRD(checkstest.LeaderWorkerSetsGVR, "LeaderWorkerSet"))
	addCustom(w, checkstest.LeaderWorkerSetsGVR, checkstest.LeaderWorkerSet("sgl", "sglang-pd-prefill", labels("prefill"), 2, 2))
	w.StatefulSets = append(w.StatefulSets, checkstest.RoleStatefulSet("sgl", "sglang-pd-decode", labels("decode"), 1, 1))
	w.Services = append(w.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "sgl", Name: "sglang-pd-decode"},
		Spec: corev1.ServiceSpec{Selector: labels("decode"), Ports: []corev1.ServicePort{{Name: "http", Port: 8000}}}})
	w.Gateways = append(w.Gateways, checkstest.PoolRoute("sgl", "sglang", "inference/gw", "Service", "sglang-pd-decode"))
}

// llmisvc is a KServe LLMInferenceService of two prefill replicas and one
// decode replica, and the Deployments it owns, which carry llm-d's labels.
func llmisvc(prefillReady string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.CRDs = append(w.CRDs, checkstest.ServedCRD(checkstest.LLMInferenceServicesGVR, "LLMInferenceService"))
		addCustom(w, checkstest.LLMInferenceServicesGVR, checkstest.LLMInferenceService("kserve", "qwen", 1, "True", checkstest.Ptr[int64](2), prefillReady))
		for _, role := range []string{"prefill", "decode"} {
			d := checkstest.RoleDeployment("kserve", "qwen-kserve-"+role, map[string]string{"llm-d.ai/role": role}, 1, 1)
			d.OwnerReferences = checkstest.Owner("LLMInferenceService", "qwen", "uid-qwen")
			w.Deployments = append(w.Deployments, d)
		}
	}
}

func TestDisaggregatedServing(t *testing.T) {
	const lookedFor = "no serving stack runs prefill and decode as separate components: no Deployment, StatefulSet or LeaderWorkerSet of one stack carries both phases in llm-d.ai/role (llm-d), nvidia.com/dynamo-sub-component-type or nvidia.com/dynamo-component-type (NVIDIA Dynamo), rolebasedgroup.workloads.x-k8s.io/role (RoleBasedGroup), and no KServe LLMInferenceService declares both"
	checkstest.RunCases(t, networking.DisaggregatedServing{}, on(checkstest.WithoutInferenceExtension, []checkstest.Case{
		{Name: "llm-d behind an InferencePool", Edit: llmd(4, 1), Status: checks.Pass,
			Reason: "llm-d stack in namespace llm (prefill: Deployment llm/llama-prefill 4/4 ready; decode: Deployment llm/llama-decode 1/1 ready), in front: HTTPRoute llm/llama -> InferencePool llm/llama"},
		{Name: "llm-d pool without a route", Edit: func(w *checkstest.World) {
			llmd(4, 1)(w)
			w.Gateways = w.Gateways[:len(w.Gateways)-1]
		}, Status: checks.Pass, Reason: "in front: InferencePool llm/llama (no HTTPRoute points at it)"},
		{Name: "NVIDIA Dynamo graph, nothing in front", Edit: dynamo("qwen", "prefill", "decode"), Status: checks.Pass,
			Reason:  "NVIDIA Dynamo stack dynamo/qwen (prefill: Deployment dynamo/qwen-vllmprefillworker 2/2 ready; decode: Deployment dynamo/qwen-vllmdecodeworker 2/2 ready)",
			Details: []string{"nothing in front of NVIDIA Dynamo stack dynamo/qwen: no InferencePool selects its components and no HTTPRoute points at them"}},
		{Name: "Dynamo v1beta1 components", Edit: func(w *checkstest.World) {
			for _, role := range []string{"prefill", "decode"} {
				w.Deployments = append(w.Deployments, checkstest.RoleDeployment("dynamo", "qwen-"+role,
					map[string]string{"nvidia.com/dynamo-graph-deployment-name": "qwen", "nvidia.com/dynamo-component-type": role}, 1, 1))
			}
		}, Status: checks.Pass, Reason: "NVIDIA Dynamo stack dynamo/qwen (prefill: Deployment dynamo/qwen-prefill 1/1 ready; decode: Deployment dynamo/qwen-decode 1/1 ready)"},
		{Name: "RoleBasedGroup of a LeaderWorkerSet and a StatefulSet", Edit: rbg, Status: checks.Pass,
			Reason: "RoleBasedGroup stack sgl/sglang-pd (prefill: LeaderWorkerSet sgl/sglang-pd-prefill 2/2 ready; decode: StatefulSet sgl/sglang-pd-decode 1/1 ready), in front: HTTPRoute sgl/sglang -> Service sgl/sglang-pd-decode"},
		{Name: "KServe LLMInferenceService with prefill", Edit: llmisvc("True"), Status: checks.Pass,
			Reason: "LLMInferenceService kserve/qwen (prefill: 2 replicas, PrefillWorkloadReady True; decode: 1 replica, MainWorkloadReady True)"},
		{Name: "decode not ready", Edit: llmd(4, 0), Status: checks.Warn,
			Reason: "llm-d stack in namespace llm has no ready decode (prefill: Deployment llm/llama-prefill 4/4 ready; decode: Deployment llm/llama-decode 0/1 ready)"},
		{Name: "prefill scaled to zero", Edit: func(w *checkstest.World) {
			llmd(4, 1)(w)
			n := len(w.Deployments)
			w.Deployments[n-2].Spec.Replicas = checkstest.Ptr[int32](0)
			w.Deployments[n-2].Status.ReadyReplicas = 0
		}, Status: checks.Warn, Reason: "has no ready prefill (prefill: Deployment llm/llama-prefill scaled to 0;"},
		{Name: "LLMInferenceService prefill not ready", Edit: llmisvc("False"), Status: checks.Warn,
			Reason: "LLMInferenceService kserve/qwen has no ready prefill (prefill: 2 replicas, PrefillWorkloadReady False;"},
		{Name: "one ready stack, one not", Edit: func(w *checkstest.World) {
			llmd(4, 1)(w)
			llmisvc("False")(w)
		}, Status: checks.Pass, Reason: "llm-d stack in namespace llm",
			Details: []string{"LLMInferenceService kserve/qwen has no ready prefill (prefill: 2 replicas, PrefillWorkloadReady False; decode: 1 replica, MainWorkloadReady True)"}},
		{Name: "nothing disaggregated", Status: checks.Fail, Reason: lookedFor},
		{Name: "llm-d decode only", Edit: func(w *checkstest.World) {
			w.Deployments = append(w.Deployments, checkstest.RoleDeployment("llm", "llama", map[string]string{"llm-d.ai/role": "decode"}, 2, 2))
		}, Status: checks.Fail, Reason: lookedFor,
			Details: []string{"llm-d stack in namespace llm has decode only (prefill: ; decode: Deployment llm/llama 2/2 ready): not disaggregated"}},
		{Name: "servers of both phases are not disaggregated", Edit: func(w *checkstest.World) {
			w.Deployments = append(w.Deployments, checkstest.RoleDeployment("llm", "llama", map[string]string{"llm-d.ai/role": "both"}, 2, 2))
		}, Status: checks.Fail, Reason: lookedFor},
		{Name: "an LLMInferenceService without prefill", Edit: func(w *checkstest.World) {
			w.CRDs = append(w.CRDs, checkstest.ServedCRD(checkstest.LLMInferenceServicesGVR, "LLMInferenceService"))
			addCustom(w, checkstest.LLMInferenceServicesGVR, checkstest.LLMInferenceService("kserve", "qwen", 1, "True", nil, ""))
		}, Status: checks.Fail, Reason: lookedFor},
		{Name: "two Dynamo graphs of one phase each", Edit: func(w *checkstest.World) {
			dynamo("a", "prefill")(w)
			dynamo("b", "decode")(w)
		}, Status: checks.Fail, Reason: lookedFor,
			Details: []string{"NVIDIA Dynamo stack dynamo/a has prefill only (prefill: Deployment dynamo/a-vllmprefillworker 2/2 ready; decode: ): not disaggregated"}},
	}), nil)
}

// A read the cluster refuses is an Error: the check could not look.
func TestDisaggregatedServingForbidden(t *testing.T) {
	for _, res := range []struct{ group, resource string }{{"apps", "deployments"}, {"apps", "statefulsets"}} {
		t.Run(res.resource, func(t *testing.T) {
			// The world's own llm-d stack is there to read.
			f := checkstest.NewWorld(t).Serve()
			f.Kube.PrependReactor("list", res.resource, checkstest.Forbidden(res.group, res.resource))
			r := checkstest.Result(t, f.Run([]checks.Check{networking.DisaggregatedServing{}}, nil), "disaggregated-serving", "")
			assert.Equal(t, checks.Error, r.Status, r.Reason)
			assert.Contains(t, r.Reason, "forbidden")
		})
	}
	t.Run("leaderworkersets", func(t *testing.T) {
		w := checkstest.NewWorld(t)
		rbg(w)
		f := w.Serve()
		f.Dyn.PrependReactor("list", "leaderworkersets", checkstest.Forbidden("leaderworkerset.x-k8s.io", "leaderworkersets"))
		r := checkstest.Result(t, f.Run([]checks.Check{networking.DisaggregatedServing{}}, nil), "disaggregated-serving", "")
		assert.Equal(t, checks.Error, r.Status, r.Reason)
	})
}
