package checkstest

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The resources of disaggregated serving: LeaderWorkerSets, KServe's
// LLMInferenceServices and the Inference Extension's InferencePools.
var (
	LeaderWorkerSetsGVR     = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	LLMInferenceServicesGVR = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "llminferenceservices"}
)

// ServedCRD is an established, namespaced CRD serving gvr as kind, at its
// version only.
func ServedCRD(gvr schema.GroupVersionResource, kind string) *apiextensionsv1.CustomResourceDefinition {
	crd := EstablishedCRD(gvr.Resource, kind)
	crd.Name, crd.Spec.Group = gvr.Resource+"."+gvr.Group, gvr.Group
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvr.Version, Served: true, Storage: true}}
	return crd
}

// RoleDeployment is a Deployment whose pod template carries labels, with
// ready of desired replicas ready.
func RoleDeployment(namespace, name string, labels map[string]string, desired, ready int32) *appsv1.Deployment {
	d := AvailableDeployment(namespace, name, nil, "vllm/vllm-openai:v0.11.0")
	d.UID = types.UID("uid-" + name)
	d.Spec.Replicas = Ptr(desired)
	d.Spec.Template.Labels = labels
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = desired, ready, ready
	return d
}

// RoleStatefulSet is RoleDeployment's StatefulSet.
func RoleStatefulSet(namespace, name string, labels map[string]string, desired, ready int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec: appsv1.StatefulSetSpec{Replicas: Ptr(desired), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "lmsysorg/sglang:v0.5.0"}}},
		}},
		Status: appsv1.StatefulSetStatus{Replicas: desired, ReadyReplicas: ready},
	}
}

// LeaderWorkerSet is a LeaderWorkerSet of desired groups, ready of them
// ready, whose leader and worker templates carry labels.
func LeaderWorkerSet(namespace, name string, labels map[string]string, desired, ready int64) *unstructured.Unstructured {
	tmpl := map[string]any{"metadata": map[string]any{"labels": stringsToAny(labels)}}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"replicas": desired, "leaderWorkerTemplate": map[string]any{
			"size": int64(2), "leaderTemplate": tmpl, "workerTemplate": tmpl,
		}},
		"status": map[string]any{"replicas": desired, "readyReplicas": ready},
	}}
	u.SetAPIVersion(LeaderWorkerSetsGVR.GroupVersion().String())
	u.SetKind("LeaderWorkerSet")
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	return u
}

// LLMInferenceService is a KServe LLMInferenceService of decode replicas
// whose MainWorkloadReady is mainReady; prefill, when not nil, is its
// prefill section's replicas, with PrefillWorkloadReady prefillReady ("" for
// no condition).
func LLMInferenceService(namespace, name string, decode int64, mainReady string, prefill *int64, prefillReady string) *unstructured.Unstructured {
	spec := map[string]any{"model": map[string]any{"uri": "hf://Qwen/Qwen3-0.6B"}, "replicas": decode}
	if prefill != nil {
		spec["prefill"] = map[string]any{"replicas": *prefill}
	}
	conds := []any{map[string]any{"type": "MainWorkloadReady", "status": mainReady, "reason": ""}}
	if prefillReady != "" {
		conds = append(conds, map[string]any{"type": "PrefillWorkloadReady", "status": prefillReady, "reason": ""})
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec, "status": map[string]any{"conditions": conds}}}
	u.SetAPIVersion(LLMInferenceServicesGVR.GroupVersion().String())
	u.SetKind("LLMInferenceService")
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	return u
}

// DisaggPool is an InferencePool at v1 selecting pods by matchLabels.
func DisaggPool(namespace, name string, matchLabels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"selector":          map[string]any{"matchLabels": stringsToAny(matchLabels)},
		"targetPorts":       []any{map[string]any{"number": int64(8000)}},
		"endpointPickerRef": map[string]any{"name": name + "-epp", "port": map[string]any{"number": int64(9002)}},
	}}}
	u.SetAPIVersion(InferencePoolsGVR.GroupVersion().String())
	u.SetKind("InferencePool")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// PoolRoute is an HTTPRoute of gateway (namespace/name), accepted, whose
// one rule sends everything to a backend of kind (InferencePool or
// Service) called backend.
func PoolRoute(namespace, name, gateway, kind, backend string) *unstructured.Unstructured {
	rt := HTTPRoute(namespace, name, gateway, "example.com/gateway-controller", "True", "True", []int64{1}, "")
	ref := map[string]any{"name": backend, "port": int64(8000)}
	if kind == "InferencePool" {
		ref["group"], ref["kind"] = InferencePoolsGVR.Group, kind
	}
	rt.Object["spec"].(map[string]any)["rules"] = []any{map[string]any{"backendRefs": []any{ref}}}
	return rt
}

func stringsToAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
