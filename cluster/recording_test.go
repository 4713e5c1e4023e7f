package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var managed = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}}

// liveCluster is a Live reading client-go's fakes, with a Tables func
// answering from tables (the fakes cannot render Tables themselves).
type liveCluster struct {
	live   *Live
	kube   *kubefake.Clientset
	tables map[string]*metav1.Table
}

func newLiveCluster(t *testing.T) *liveCluster {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kserve", Name: "ctl-6j7zb", UID: "uid-pod",
			Labels:            map[string]string{"app": "ctl"},
			Annotations:       map[string]string{lastApplied: `{"kind":"Pod"}`, "keep.example.com/me": "yes"},
			ManagedFields:     managed,
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Spec: corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "manager", Image: "kserve/ctl:v1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}},
	}
	onlyLastApplied := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kserve", Name: "ctl-x9p2q",
		Labels: map[string]string{"app": "ctl"}, Annotations: map[string]string{lastApplied: "{}"}}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kserve", Name: "other", Labels: map[string]string{"app": "other"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "5138e7f7-9e48-41d6-a39e-838817e25523"}}

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "inferenceservices.serving.kserve.io", ManagedFields: managed,
			Annotations: map[string]string{lastApplied: "{}"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "serving.kserve.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "inferenceservices", Kind: "InferenceService"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Description: strings.Repeat("a very long schema ", 100)}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"}},
			}},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{CABundle: []byte("ca")}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
	}

	isvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1",
		"kind":       "InferenceService",
		"metadata": map[string]any{
			"namespace": "models", "name": "sklearn-iris", "uid": "uid-isvc", "generation": int64(1),
			"annotations":   map[string]any{lastApplied: "{}"},
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}}

	kube := kubefake.NewClientset(pod, onlyLastApplied, other, ns)
	kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
			errors.New(`User "auditor" cannot list resource "nodes" in API group "" at the cluster scope`))
	})
	lc := &liveCluster{kube: kube, tables: map[string]*metav1.Table{}}
	lc.live = &Live{
		Kube:          kube,
		APIExtensions: apiextensionsfake.NewClientset(crd),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{isvcs.GVR: "InferenceServiceList"}, isvc),
		Tables: func(_ context.Context, q Query) (*metav1.Table, error) {
			if q.Resource == Nodes {
				return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
			}
			if t, ok := lc.tables[q.Key()]; ok {
				return t, nil
			}
			return nil, errors.New("connection refused")
		},
		Context: "demo",
		Server:  "https://demo.example:6443",
		Now:     func() time.Time { return t0 },
	}
	return lc
}

func TestLiveInfo(t *testing.T) {
	info, err := newLiveCluster(t).live.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Info{Live: true, Context: "demo", Server: "https://demo.example:6443", ServerVersion: "v1.37.2",
		ClusterID: "5138e7f7-9e48-41d6-a39e-838817e25523"}, info)
}

func TestLiveTableWithoutRenderer(t *testing.T) {
	l := newLiveCluster(t).live
	l.Tables = nil
	_, at, err := l.Table(context.Background(), Query{Resource: Pods})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot render server-side Tables")
	assert.Equal(t, t0, at)
}

// Record a run against a live cluster, write it, load it back: the replay
// answers what the live cluster answered.
func TestRecordingRoundTrip(t *testing.T) {
	lc := newLiveCluster(t)
	ctx := context.Background()
	pods := Query{Resource: Pods, Namespace: "kserve", LabelSelector: "app=ctl"}
	crds := Query{Resource: CRDs}
	crs := Query{Resource: isvcs}
	nodes := Query{Resource: Nodes}
	broken := Query{Resource: Services, Namespace: "kserve"}
	podTable := table(podCols,
		row("kserve", "ctl-6j7zb", map[string]string{"app": "ctl"}, "1/1", "Running", "gpu-node-1"),
		row("kserve", "ctl-x9p2q", map[string]string{"app": "ctl"}, "0/1", "Pending", ""),
	)
	// A row's object comes as the server sends it, raw, and is decoded
	// as kubectl would.
	podTable.Rows[0].Object.Object.(*metav1.PartialObjectMetadata).ManagedFields = managed
	lc.tables[pods.Key()] = podTable

	live := NewCache(lc.live)
	livePods, _, err := live.List(ctx, pods)
	require.NoError(t, err)
	require.Len(t, livePods, 2)
	liveCRDs, _, err := live.List(ctx, crds)
	require.NoError(t, err)
	liveCRs, _, err := live.List(ctx, crs)
	require.NoError(t, err)
	_, _, nodesErr := live.List(ctx, nodes)
	require.Error(t, nodesErr)
	_, _, err = live.Table(ctx, pods)
	require.NoError(t, err)
	_, _, err = live.Table(ctx, nodes)
	require.Error(t, err)
	_, _, err = live.Table(ctx, broken)
	require.Error(t, err)

	info, err := live.Info(ctx)
	require.NoError(t, err)
	info.RecordedAt = t0
	rec, err := live.Recording(info)
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	// Built-in kinds are written with their type, so they load typed.
	assert.Contains(t, string(data), "kind: Pod\n")
	assert.NotContains(t, string(data), lastApplied)
	assert.NotContains(t, string(data), "managedFields")
	assert.NotContains(t, string(data), "a very long schema")

	replayed, err := LoadRecording("round-trip", data)
	require.NoError(t, err)
	c := NewCache(replayed)

	t.Run("info", func(t *testing.T) {
		got, err := c.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, Info{Live: false, Source: "round-trip", Context: "demo", Server: "https://demo.example:6443",
			ServerVersion: "v1.37.2", ClusterID: "5138e7f7-9e48-41d6-a39e-838817e25523", RecordedAt: t0}, got)
	})
	t.Run("typed built-ins", func(t *testing.T) {
		got, at, err := c.List(ctx, pods)
		require.NoError(t, err)
		assert.Equal(t, t0, at)
		require.Len(t, got, 2)
		for i, o := range got {
			p, ok := o.(*corev1.Pod)
			require.True(t, ok, "%T", o)
			// As a live typed list gives them: no TypeMeta on items.
			assert.Empty(t, p.APIVersion)
			assert.Empty(t, p.Kind)
			assert.Empty(t, p.ManagedFields)
			assert.NotContains(t, p.Annotations, lastApplied)

			want := livePods[i].(*corev1.Pod).DeepCopy()
			want.ManagedFields = nil
			delete(want.Annotations, lastApplied)
			if len(want.Annotations) == 0 {
				want.Annotations = nil
			}
			assert.True(t, equality.Semantic.DeepEqual(want, p), "pod %d:\nwant %+v\ngot  %+v", i, want, p)
		}
		assert.Equal(t, map[string]string{"keep.example.com/me": "yes"}, got[0].(*corev1.Pod).Annotations, "other annotations stay")
		assert.Nil(t, got[1].(*corev1.Pod).Annotations, "an emptied annotation map is dropped")
		q := got[0].(*corev1.Pod).Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		assert.Equal(t, "1", q.String())
	})
	t.Run("CRDs lose their schemas only", func(t *testing.T) {
		got, _, err := c.List(ctx, crds)
		require.NoError(t, err)
		require.Len(t, got, 1)
		crd, ok := got[0].(*apiextensionsv1.CustomResourceDefinition)
		require.True(t, ok, "%T", got[0])
		assert.Nil(t, crd.Spec.Versions[0].Schema)
		assert.Nil(t, crd.Spec.Conversion.Webhook.ClientConfig)
		assert.Empty(t, crd.ManagedFields)
		assert.Nil(t, crd.Annotations)

		want := liveCRDs[0].(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
		want.ManagedFields, want.Annotations = nil, nil
		want.Spec.Versions[0].Schema = nil
		want.Spec.Conversion.Webhook.ClientConfig = nil
		assert.True(t, equality.Semantic.DeepEqual(want, crd), "want %+v\ngot  %+v", want, crd)
		// A live source drops them as the list arrives: a run holds what a
		// recording of it holds.
		assert.Nil(t, liveCRDs[0].(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0].Schema)
	})
	t.Run("custom resources stay unstructured", func(t *testing.T) {
		got, _, err := c.List(ctx, crs)
		require.NoError(t, err)
		require.Len(t, got, 1)
		u, ok := got[0].(*unstructured.Unstructured)
		require.True(t, ok, "%T", got[0])
		assert.Equal(t, "InferenceService", u.GetKind())
		assert.Equal(t, "serving.kserve.io/v1beta1", u.GetAPIVersion())
		assert.Empty(t, u.GetManagedFields())
		assert.Nil(t, u.GetAnnotations())

		want := liveCRs[0].(*unstructured.Unstructured).DeepCopy()
		want.SetManagedFields(nil)
		want.SetAnnotations(nil)
		assert.Equal(t, want.Object, u.Object)
	})
	t.Run("errors", func(t *testing.T) {
		_, at, err := c.List(ctx, nodes)
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Equal(t, t0, at, "a refusal keeps its time")
		assert.Equal(t, apierrors.ReasonForError(nodesErr), apierrors.ReasonForError(err))
		assert.Contains(t, err.Error(), `User "auditor" cannot list resource "nodes"`)

		_, _, err = c.Table(ctx, nodes)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)

		// An error that is not the server's keeps its message.
		_, _, err = c.Table(ctx, broken)
		require.Error(t, err)
		assert.False(t, apierrors.IsForbidden(err))
		assert.Contains(t, err.Error(), "connection refused")
	})
	t.Run("tables", func(t *testing.T) {
		got, at, err := c.Table(ctx, pods)
		require.NoError(t, err)
		assert.Equal(t, t0, at)
		assert.Equal(t, podTable.ColumnDefinitions, got.ColumnDefinitions)
		require.Len(t, got.Rows, 2)
		for i, r := range got.Rows {
			assert.Equal(t, podTable.Rows[i].Cells, r.Cells)
			u, ok := r.Object.Object.(*metav1.PartialObjectMetadata)
			require.True(t, ok, "%T", r.Object.Object)
			assert.Equal(t, "kserve", u.GetNamespace())
			assert.Equal(t, map[string]string{"app": "ctl"}, u.GetLabels())
			assert.Empty(t, u.GetManagedFields())
		}
		// The recorded Table prints as the live one does.
		g := Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "app=ctl", Wide: true}
		liveOut, _, err := live.Print(ctx, g)
		require.NoError(t, err)
		replayOut, _, err := c.Print(ctx, g)
		require.NoError(t, err)
		assert.Equal(t, liveOut, replayOut)
	})
	t.Run("a query never recorded", func(t *testing.T) {
		q := Query{Resource: Pods, Namespace: "elsewhere"}
		_, _, err := c.List(ctx, q)
		require.Error(t, err)
		assert.Equal(t, "recording round-trip holds no answer to: list pods.v1 in namespace elsewhere (record it again with `aiconform snapshot`)", err.Error())
		_, _, err = c.Table(ctx, Query{Resource: Pods, Namespace: "kserve"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "record it again")
	})
	t.Run("recording a replay gives the same recording", func(t *testing.T) {
		again := NewCache(replayed)
		for _, q := range []Query{pods, crds, crs, nodes} {
			_, _, _ = again.List(ctx, q)
		}
		for _, q := range []Query{pods, nodes} {
			_, _, _ = again.Table(ctx, q)
		}
		rec2, err := again.Recording(info)
		require.NoError(t, err)
		rec1 := *rec
		rec1.Tables = nil
		for _, tb := range rec.Tables {
			if tb.Resource != broken.Resource.String() {
				rec1.Tables = append(rec1.Tables, tb)
			}
		}
		want, err := rec1.Marshal()
		require.NoError(t, err)
		got, err := rec2.Marshal()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	})
	t.Run("the compact JSON form loads to the same recording", func(t *testing.T) {
		compact, err := rec.MarshalCompact()
		require.NoError(t, err)
		require.Equal(t, byte('{'), compact[0])
		fromJSON, err := LoadRecording("round-trip", compact)
		require.NoError(t, err)
		a, err := fromJSON.Marshal()
		require.NoError(t, err)
		b, err := replayed.Marshal()
		require.NoError(t, err)
		assert.Equal(t, string(b), string(a))
	})
}

func TestLoadRecordingRejects(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		err  string
	}{
		{"wrong kind", "apiVersion: aiconform.io/v1alpha1\nkind: List\ncluster: {live: true}\n",
			`recording bad: apiVersion "aiconform.io/v1alpha1" kind "List", want aiconform.io/v1alpha1 ClusterRecording`},
		{"wrong apiVersion", "apiVersion: v1\nkind: ClusterRecording\ncluster: {live: true}\n",
			`recording bad: apiVersion "v1" kind "ClusterRecording"`},
		{"nothing", "", `recording bad: apiVersion "" kind ""`},
		{"YAML syntax error", "apiVersion: aiconform.io/v1alpha1\nkind: [ClusterRecording\n", "recording bad: "},
		{"unknown field", "apiVersion: aiconform.io/v1alpha1\nkind: ClusterRecording\ncluster: {live: true}\nextra: 1\n",
			`recording bad: `},
		{"bad resource", "apiVersion: aiconform.io/v1alpha1\nkind: ClusterRecording\ncluster: {}\nlists:\n- resource: pods\n  kind: Pod\n  arg: pods\n  capturedAt: null\n  items: []\n",
			`recording bad: lists[0]: resource "pods": want resource.version[.group]`},
		{"bad table resource", "apiVersion: aiconform.io/v1alpha1\nkind: ClusterRecording\ncluster: {}\ntables:\n- resource: .v1\n  kind: Pod\n  arg: pods\n  capturedAt: null\n",
			`recording bad: tables[0]: resource ".v1"`},
		{"item without a kind", "apiVersion: aiconform.io/v1alpha1\nkind: ClusterRecording\ncluster: {}\nlists:\n- resource: pods.v1\n  kind: Pod\n  arg: pods\n  capturedAt: null\n  items:\n  - metadata: {name: x}\n",
			"recording bad: lists[0] (pods.v1) items[0]: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadRecording("bad", []byte(tc.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestParseResource(t *testing.T) {
	for _, r := range []Resource{Nodes, Pods, Deployments, CRDs, EndpointSlices, isvcs} {
		gvr, err := ParseResource(r.String())
		require.NoError(t, err, r.String())
		assert.Equal(t, r.GVR, gvr)
	}
	assert.Equal(t, "deployments.v1.apps", Deployments.String())
	assert.Equal(t, "pods.v1", Pods.String())
	for _, bad := range []string{"", "pods", "pods.", ".v1"} {
		_, err := ParseResource(bad)
		assert.Error(t, err, bad)
	}
}

func TestQueryString(t *testing.T) {
	q := Query{Resource: Pods, Namespace: "ns", LabelSelector: "a=b", FieldSelector: "spec.nodeName=n"}
	assert.Equal(t, "pods.v1 in namespace ns with labels a=b with fields spec.nodeName=n", q.String())
	assert.Equal(t, "nodes.v1", Query{Resource: Nodes}.String())
	assert.NotEqual(t, q.Key(), Query{Resource: Pods, Namespace: "ns", LabelSelector: "a=b"}.Key())
}

// A recorded list says what was asked, of what, and when.
func TestRecordedListHeader(t *testing.T) {
	lc := newLiveCluster(t)
	c := NewCache(lc.live)
	_, _, err := c.List(context.Background(), Query{Resource: Pods})
	require.NoError(t, err)
	rec, err := c.Recording(Info{Live: true})
	require.NoError(t, err)
	require.Len(t, rec.Lists, 1)
	assert.Len(t, rec.Lists[0].Items, 3)
	assert.Equal(t, "pods.v1", rec.Lists[0].Resource)
	assert.Equal(t, "Pod", rec.Lists[0].Kind)
	assert.Equal(t, "pods", rec.Lists[0].Arg)
	assert.True(t, rec.Lists[0].Namespaced)
	assert.Equal(t, t0, rec.Lists[0].CapturedAt)
	assert.Nil(t, rec.Lists[0].Error)
}

// The shipped fixtures load, with built-in kinds typed and custom
// resources unstructured.
func TestFixturesLoad(t *testing.T) {
	names, err := fixtures.RecordedNames()
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, err := fixtures.Recorded(name)
			require.NoError(t, err)
			rec, err := LoadRecording(name, data)
			require.NoError(t, err)
			assert.False(t, rec.Cluster.Live)
			assert.Equal(t, name, rec.Cluster.Source)
			assert.False(t, rec.Cluster.RecordedAt.IsZero())
			require.NotEmpty(t, rec.Lists)
			for _, l := range rec.Lists {
				q, err := l.query()
				require.NoError(t, err)
				objs, _, err := rec.List(context.Background(), q)
				if l.Error != nil {
					assert.Error(t, err, q.String())
					continue
				}
				require.NoError(t, err, q.String())
				for _, o := range objs {
					_, custom := o.(*unstructured.Unstructured)
					assert.Equal(t, !scheme.Recognizes(q.Resource.GVR.GroupVersion().WithKind(q.Resource.Kind)), custom, "%s: %T", q, o)
				}
			}
		})
	}
}

// A whole query is recorded apart, whole, and replayed as it was read: a
// user's check reads from a recording what it read from the cluster.
func TestRecordingKeepsWholeQueries(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Images:   []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320000}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}}}
	ctx := context.Background()
	live := NewCache(&Live{Kube: kubefake.NewClientset(node), Now: func() time.Time { return t0 }})
	_, _, err := live.List(ctx, Query{Resource: Nodes})
	require.NoError(t, err)
	_, _, err = live.List(ctx, Query{Resource: Nodes, Whole: true})
	require.NoError(t, err)
	rec, err := live.Recording(Info{RecordedAt: t0})
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(data), "whole: true")
	replay, err := LoadRecording("r.yaml", data)
	require.NoError(t, err)

	got, _, err := replay.List(ctx, Query{Resource: Nodes, Whole: true})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "v1.37.2", got[0].(*corev1.Node).Status.NodeInfo.KubeletVersion)
	got, _, err = replay.List(ctx, Query{Resource: Nodes})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Empty(t, got[0].(*corev1.Node).Status.NodeInfo)
}
