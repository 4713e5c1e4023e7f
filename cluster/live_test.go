package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Every built-in resource is read through its typed client and comes back
// as its Go type, which is what the checks assert.
func TestLiveListBuiltins(t *testing.T) {
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "x"}}
	}
	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: meta("", "n1")},
		&corev1.Namespace{ObjectMeta: meta("", "ns1")},
		&corev1.Pod{ObjectMeta: meta("ns1", "p1")},
		&corev1.Service{ObjectMeta: meta("ns1", "s1")},
		&appsv1.Deployment{ObjectMeta: meta("ns1", "d1")},
		&appsv1.ReplicaSet{ObjectMeta: meta("ns1", "rs1")},
		&discoveryv1.EndpointSlice{ObjectMeta: meta("ns1", "es1")},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta("", "v1")},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta("", "m1")},
		&appsv1.DaemonSet{ObjectMeta: meta("ns1", "ds1")},
		&coordinationv1.Lease{ObjectMeta: meta("ns1", "l1")},
		&corev1.Event{ObjectMeta: meta("ns1", "e1")},
		// Elsewhere, or not matching the selector: never returned.
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns2", Name: "p2", Labels: map[string]string{"app": "x"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p3", Labels: map[string]string{"app": "y"}}},
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: meta("", "crd1")}
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion("serving.kserve.io/v1beta1")
	cr.SetKind("InferenceService")
	cr.SetNamespace("ns1")
	cr.SetName("isvc1")
	cr.SetLabels(map[string]string{"app": "x"})
	l := &Live{
		Kube:          kubefake.NewClientset(objs...),
		APIExtensions: apiextensionsfake.NewClientset(crd),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{isvcs.GVR: "InferenceServiceList"}, cr),
		Now: func() time.Time { return t0 },
	}
	tests := []struct {
		res  Resource
		name string
		want any
	}{
		{Nodes, "n1", &corev1.Node{}},
		{Namespaces, "ns1", &corev1.Namespace{}},
		{Pods, "p1", &corev1.Pod{}},
		{Services, "s1", &corev1.Service{}},
		{Deployments, "d1", &appsv1.Deployment{}},
		{ReplicaSets, "rs1", &appsv1.ReplicaSet{}},
		{EndpointSlices, "es1", &discoveryv1.EndpointSlice{}},
		{ValidatingWebhookConfigurations, "v1", &admissionregistrationv1.ValidatingWebhookConfiguration{}},
		{MutatingWebhookConfigurations, "m1", &admissionregistrationv1.MutatingWebhookConfiguration{}},
		{DaemonSets, "ds1", &appsv1.DaemonSet{}},
		{Leases, "l1", &coordinationv1.Lease{}},
		{Events, "e1", &corev1.Event{}},
		{CRDs, "crd1", &apiextensionsv1.CustomResourceDefinition{}},
		{isvcs, "isvc1", &unstructured.Unstructured{}},
	}
	for _, tc := range tests {
		t.Run(tc.res.String(), func(t *testing.T) {
			q := Query{Resource: tc.res, LabelSelector: "app=x"}
			if tc.res.Namespaced {
				q.Namespace = "ns1"
			}
			got, at, err := l.List(context.Background(), q)
			require.NoError(t, err)
			assert.Equal(t, t0, at)
			require.Len(t, got, 1)
			assert.IsType(t, tc.want, got[0])
			m, ok := got[0].(metav1.Object)
			require.True(t, ok)
			assert.Equal(t, tc.name, m.GetName())
		})
	}
}

// What no check reads is dropped as a list arrives: a pod's managed fields
// and last-applied annotation, a CRD's schemas, a node's images.
func TestLiveListTrims(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p1",
		Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{NodeName: "n1"}}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.demo.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Images:   []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320000}},
		Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}
	l := &Live{Kube: kubefake.NewClientset(pod, node), APIExtensions: apiextensionsfake.NewClientset(crd), Now: func() time.Time { return t0 }}

	got, _, err := l.List(context.Background(), Query{Resource: Nodes})
	require.NoError(t, err)
	require.Len(t, got, 1)
	n := got[0].(*corev1.Node)
	assert.Nil(t, n.Status.Images)
	assert.Equal(t, "8", n.Status.Capacity.Name("nvidia.com/gpu", resource.DecimalSI).String(), "what checks read stays")

	// Asked for whole (a user's check), a node keeps its images.
	got, _, err = l.List(context.Background(), Query{Resource: Nodes, Whole: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Len(t, got[0].(*corev1.Node).Status.Images, 1)

	got, _, err = l.List(context.Background(), Query{Resource: Pods, Namespace: "ns1"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	p := got[0].(*corev1.Pod)
	assert.Nil(t, p.ManagedFields)
	assert.Equal(t, map[string]string{"keep": "me"}, p.Annotations)
	assert.Equal(t, "n1", p.Spec.NodeName, "what checks read stays")

	got, _, err = l.List(context.Background(), Query{Resource: CRDs})
	require.NoError(t, err)
	require.Len(t, got, 1)
	v := got[0].(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0]
	assert.Nil(t, v.Schema)
	assert.True(t, v.Served)
}

// The pods of one node are kept as far as what they request of it: the
// same pods listed otherwise keep their spec and status.
func TestLiveListSlimsNodePods(t *testing.T) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	// What the checks read of a node's pods are the extended resources;
	// the native ones, in nearly every container, are dropped.
	withNative := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("1"),
		corev1.ResourceMemory: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("2Mi"), "kubernetes.io/batch-cpu": resource.MustParse("1")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p1", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "sa",
			Containers: []corev1.Container{{Name: "c", Image: "img", Env: []corev1.EnvVar{{Name: "K", Value: "V"}}, Resources: corev1.ResourceRequirements{Limits: withNative,
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			InitContainers: []corev1.Container{{Name: "i", Image: "img", Resources: corev1.ResourceRequirements{Requests: gpu}}},
			Overhead:       corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi")}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	l := &Live{Kube: kubefake.NewClientset(pod), Now: func() time.Time { return t0 }}

	got, _, err := l.List(context.Background(), Query{Resource: Pods, FieldSelector: NodeFieldSelector + "n1"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	p := got[0].(*corev1.Pod)
	assert.Equal(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p1", Labels: map[string]string{"app": "x"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}}},
		Spec: corev1.PodSpec{NodeName: "n1",
			Containers:     []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: gpu}}},
			InitContainers: []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: gpu}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}, p)

	got, _, err = l.List(context.Background(), Query{Resource: Pods, Namespace: "ns1"})
	require.NoError(t, err)
	assert.Equal(t, "img", got[0].(*corev1.Pod).Spec.Containers[0].Image, "pods listed otherwise are whole")
}

func TestLiveListSlimsWorkloadsAcrossTheCluster(t *testing.T) {
	replicas := int32(3)
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"llm-d.ai/role": "prefill"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "prefill", Labels: map[string]string{"app": "x"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: template}, Status: appsv1.DeploymentStatus{ReadyReplicas: 3}}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "decode"},
		Spec:   appsv1.StatefulSetSpec{Replicas: &replicas, Template: template, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "cache"}}}},
		Status: appsv1.StatefulSetStatus{ReadyReplicas: 2}}
	l := &Live{Kube: kubefake.NewClientset(dep, sts), Now: func() time.Time { return t0 }}
	slim := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"llm-d.ai/role": "prefill"}}}

	got, _, err := l.List(context.Background(), Query{Resource: Deployments})
	require.NoError(t, err)
	d := got[0].(*appsv1.Deployment)
	assert.Equal(t, slim, d.Spec.Template, "the template's labels only")
	assert.Equal(t, dep.ObjectMeta, d.ObjectMeta)
	assert.Equal(t, &replicas, d.Spec.Replicas)
	assert.Equal(t, int32(3), d.Status.ReadyReplicas)

	got, _, err = l.List(context.Background(), Query{Resource: StatefulSets})
	require.NoError(t, err)
	s := got[0].(*appsv1.StatefulSet)
	assert.Equal(t, slim, s.Spec.Template)
	assert.Nil(t, s.Spec.VolumeClaimTemplates)
	assert.Equal(t, int32(2), s.Status.ReadyReplicas)

	for _, q := range []Query{{Resource: Deployments, Namespace: "ns1"}, {Resource: Deployments, LabelSelector: "app=x"}} {
		got, _, err = l.List(context.Background(), q)
		require.NoError(t, err)
		assert.Equal(t, template, got[0].(*appsv1.Deployment).Spec.Template, "%s: workloads listed otherwise are whole", q)
	}
}

// Large lists come page by page and are joined.
func TestLiveListPages(t *testing.T) {
	kube := kubefake.NewClientset()
	var limits []int64
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).GetListOptions()
		limits = append(limits, opts.Limit)
		page := &corev1.PodList{}
		from := 0
		if opts.Continue != "" {
			_, err := fmt.Sscanf(opts.Continue, "from-%d", &from)
			require.NoError(t, err)
		}
		const total = 1234
		to := min(from+int(opts.Limit), total)
		for i := from; i < to; i++ {
			page.Items = append(page.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "big", Name: fmt.Sprintf("p-%04d", i)}})
		}
		if to < total {
			page.Continue = fmt.Sprintf("from-%d", to)
		}
		return true, page, nil
	})
	l := &Live{Kube: kube, Now: func() time.Time { return t0 }}
	got, _, err := l.List(context.Background(), Query{Resource: Pods, Namespace: "big"})
	require.NoError(t, err)
	require.Len(t, got, 1234)
	assert.Equal(t, "p-0000", got[0].(*corev1.Pod).Name)
	assert.Equal(t, "p-1233", got[1233].(*corev1.Pod).Name)
	assert.Equal(t, []int64{pageSize, pageSize, pageSize}, limits, "three pages of kubectl's chunk size")
}

func TestLiveListError(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	l := &Live{Kube: kube, Now: func() time.Time { return t0 }}
	_, at, err := l.List(context.Background(), Query{Resource: Pods, Namespace: "kserve", LabelSelector: "app=x"})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "the API error survives the wrapping")
	assert.Equal(t, "list pods.v1 in namespace kserve with labels app=x: pods is forbidden: no", err.Error())
	assert.Equal(t, t0, at)
}

func TestLiveInfoErrors(t *testing.T) {
	t.Run("no kube-system", func(t *testing.T) {
		l := &Live{Kube: kubefake.NewClientset(), Context: "c"}
		info, err := l.Info(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "get namespace kube-system")
		assert.Equal(t, "c", info.Context, "what is known is kept")
	})
	t.Run("no version", func(t *testing.T) {
		kube := kubefake.NewClientset()
		kube.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("connection refused")
		})
		_, err := (&Live{Kube: kube}).Info(context.Background())
		require.Error(t, err)
		assert.Equal(t, "server version: connection refused", err.Error())
	})
}

func TestParseTable(t *testing.T) {
	tb, err := parseTable([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1",` +
		`"columnDefinitions":[{"name":"Name","type":"string","format":"name"}],` +
		`"rows":[{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns",` +
		`"labels":{"gpu":"yes"},"managedFields":[{"manager":"kubelet","operation":"Update"}]}}}]}`))
	require.NoError(t, err)
	require.Len(t, tb.Rows, 1)
	require.NoError(t, decodeRows(tb))
	u, ok := tb.Rows[0].Object.Object.(*metav1.PartialObjectMetadata)
	require.True(t, ok, "%T", tb.Rows[0].Object.Object)
	assert.Equal(t, "ns", u.GetNamespace())
	assert.Equal(t, map[string]string{"gpu": "yes"}, u.GetLabels())
	assert.Nil(t, u.GetManagedFields(), "a row's metadata is trimmed as a list's objects are")
	assert.Nil(t, tb.Rows[0].Object.Raw, "and held once, decoded")
	assert.Equal(t, "a", rowName(tb.Rows[0]))

	_, err = parseTable([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server answered "PodList" where a Table was asked for`)

	_, err = parseTable([]byte(`<html>`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decode table")

	bad := &metav1.Table{Rows: []metav1.TableRow{{Object: runtime.RawExtension{Raw: []byte(`{"metadata":{}}`)}}}}
	err = decodeRows(bad)
	require.Error(t, err, "an object without a kind")
	assert.Contains(t, err.Error(), "decode row 0")
}

// parseTable decodes a page in one pass to what decoding it as a
// metav1.Table and then each row's object gives.
func TestParseTableAsTwoPasses(t *testing.T) {
	body := []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"next"},` +
		`"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"the name","priority":0},{"name":"Restarts","type":"integer","format":"","description":"","priority":1}],` +
		`"rows":[{"cells":["a",3],"conditions":[{"type":"Completed","status":"True"}],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",` +
		`"metadata":{"name":"a","namespace":"ns","uid":"u","creationTimestamp":"2026-11-29T21:03:39Z","labels":{"gpu":"yes"},` +
		`"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","keep":"me"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"o","controller":true}],` +
		`"managedFields":[{"manager":"kubelet","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{}}}}]}}},` +
		`{"cells":["b",0]}]}`)
	got, err := parseTable(body)
	require.NoError(t, err)
	var want metav1.Table
	require.NoError(t, json.Unmarshal(body, &want))
	require.NoError(t, decodeRows(&want))
	assert.Equal(t, &want, got)
	assert.Equal(t, map[string]string{"keep": "me"}, got.Rows[0].Object.Object.(*metav1.PartialObjectMetadata).Annotations)

	_, err = parseTable([]byte(`{"kind":"Table","rows":[{"cells":["a"],"object":{"metadata":{"name":"a"}}}]}`))
	assert.ErrorContains(t, err, "decode row 0: the object has no kind")

	var page tablePage
	require.NoError(t, json.Unmarshal(body, &page))
	assert.Equal(t, "a", page.Rows[0].Object.Metadata.Name)
	assert.Nil(t, page.Rows[0].Object.Metadata.ObjectMeta.ManagedFields, "managed fields passed over, never decoded")
}

// A row without its object is named by its first cell.
func TestRowName(t *testing.T) {
	assert.Equal(t, "a", rowName(metav1.TableRow{Cells: []any{"a", "b"}}))
	assert.Equal(t, "", rowName(metav1.TableRow{Cells: []any{int64(1)}}))
	assert.Equal(t, "", rowName(metav1.TableRow{}))
}

func TestStatusError(t *testing.T) {
	generic := errors.New("the server does not allow access to the requested resource (get nodes)")
	body := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes is forbidden: User \"auditor\" cannot list resource \"nodes\"","reason":"Forbidden","code":403}`)
	err := statusError(body, generic)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, err.Error(), `User "auditor" cannot list resource "nodes"`)

	assert.Same(t, generic, statusError([]byte("<html>"), generic))
	assert.Same(t, generic, statusError(nil, generic))
	assert.Same(t, generic, statusError([]byte(`{"kind":"Status"}`), generic), "a Status without a message says nothing more")
}
