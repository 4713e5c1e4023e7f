package probe

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	widgetGVK = schema.GroupVersionKind{Group: "demo.example.com", Version: "v1", Kind: "Widget"}
	widgetGVR = schema.GroupVersionResource{Group: "demo.example.com", Version: "v1", Resource: "widgets"}
	// poolGVK is a cluster-scoped kind, as Kueue's ClusterQueue is.
	poolGVK = schema.GroupVersionKind{Group: "demo.example.com", Version: "v1", Kind: "Pool"}
	poolGVR = schema.GroupVersionResource{Group: "demo.example.com", Version: "v1", Resource: "pools"}
)

func newSession(t *testing.T, objs ...runtime.Object) (*Session, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		Namespaces: "NamespaceList", widgetGVR: "WidgetList", poolGVR: "PoolList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	mapper.Add(poolGVK, meta.RESTScopeRoot)
	return NewSession(dyn, mapper, "20270102-030405-abcd", time.Minute), dyn
}

func widget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetName(name)
	return u
}

func namespace(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func TestNewRunID(t *testing.T) {
	id := NewRunID(time.Date(2027, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	assert.Regexp(t, regexp.MustCompile(`^20270102-020405-[0-9a-f]{4}$`), id, "UTC, then random hex")
	assert.LessOrEqual(t, len(NamespacePrefix+id), 63, "a namespace name is a DNS label")
}

func TestSessionWritesInItsNamespace(t *testing.T) {
	ctx := context.Background()
	s, dyn := newSession(t)
	assert.Equal(t, "aiconform-probe-20270102-030405-abcd", s.Namespace)

	created, err := s.EnsureNamespace(ctx)
	require.NoError(t, err)
	assert.True(t, created)
	created, err = s.EnsureNamespace(ctx)
	require.NoError(t, err)
	assert.False(t, created, "the namespace is made once per run")
	ns, err := dyn.Resource(Namespaces).Get(ctx, s.Namespace, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, s.RunID, ns.GetLabels()[RunLabel])

	m, err := s.Mapping(widgetGVK)
	require.NoError(t, err)
	w := widget("w1")
	w.SetNamespace("elsewhere")
	s.Label(w, m)
	assert.Equal(t, "", w.GetNamespace(), "objects go to the run's namespace only")
	assert.Equal(t, "w1", w.GetName(), "the namespace keeps runs apart")
	assert.Equal(t, s.RunID, w.GetLabels()[RunLabel])
	assert.Equal(t, s.Namespace, s.NamespaceOf(m))

	_, err = s.DryRun(ctx, m, w)
	require.NoError(t, err)
	// The fake stores dry runs too; a real server would not.
	_, err = s.Create(ctx, m, widget("w2"))
	require.NoError(t, err)
	var creates []clienttesting.CreateActionImpl
	for _, a := range dyn.Actions() {
		if c, ok := a.(clienttesting.CreateActionImpl); ok && c.GetResource() == widgetGVR {
			creates = append(creates, c)
		}
	}
	require.Len(t, creates, 2)
	assert.Equal(t, []string{metav1.DryRunAll}, creates[0].CreateOptions.DryRun, "the first is a dry run")
	assert.Empty(t, creates[1].CreateOptions.DryRun)
	for _, c := range creates {
		assert.Equal(t, s.Namespace, c.GetNamespace())
	}
}

func TestCloseRefusesWritesAndDeletesTheNamespace(t *testing.T) {
	ctx := context.Background()
	s, dyn := newSession(t, namespace("aiconform-probe-other", map[string]string{RunLabel: "other"}))
	_, err := s.EnsureNamespace(ctx)
	require.NoError(t, err)

	deleted, err := s.Close(ctx)
	require.NoError(t, err)
	assert.Equal(t, []Leftover{{Resource: "namespace", Name: s.Namespace}}, deleted, "only this run's namespace")
	_, err = dyn.Resource(Namespaces).Get(ctx, s.Namespace, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = dyn.Resource(Namespaces).Get(ctx, "aiconform-probe-other", metav1.GetOptions{})
	assert.NoError(t, err, "another run's namespace stays")

	m, err := s.Mapping(widgetGVK)
	require.NoError(t, err)
	_, err = s.Create(ctx, m, widget("late"))
	assert.True(t, errors.Is(err, ErrClosed), "a check left behind cannot write after cleanup: %v", err)
	_, err = s.EnsureNamespace(ctx)
	assert.True(t, errors.Is(err, ErrClosed))

	deleted, err = s.Close(ctx)
	require.NoError(t, err, "closing twice is harmless")
	assert.Empty(t, deleted)
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	objs := []runtime.Object{
		namespace("aiconform-probe-a", map[string]string{RunLabel: "a"}),
		namespace("aiconform-probe-b", map[string]string{RunLabel: "b"}),
		namespace("models", nil),
	}
	_, dyn := newSession(t, objs...)
	deleted, err := Cleanup(ctx, dyn, "b", nil)
	require.NoError(t, err)
	assert.Equal(t, []Leftover{{Resource: "namespace", Name: "aiconform-probe-b"}}, deleted)

	deleted, err = Cleanup(ctx, dyn, "", nil)
	require.NoError(t, err)
	assert.Equal(t, []Leftover{{Resource: "namespace", Name: "aiconform-probe-a"}}, deleted, "every run's, and nothing unlabelled")
	_, err = dyn.Resource(Namespaces).Get(ctx, "models", metav1.GetOptions{})
	assert.NoError(t, err)

	_, dyn = newSession(t, objs...)
	dyn.PrependReactor("list", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New("no"))
	})
	_, err = Cleanup(ctx, dyn, "", nil)
	assert.ErrorContains(t, err, "list namespaces -l aiconform.io/run")
}

func TestCleanupReportsWhatHoldsATerminatingNamespace(t *testing.T) {
	since := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	stuck := namespace("aiconform-probe-c", map[string]string{RunLabel: "c"})
	stuck.SetDeletionTimestamp(&metav1.Time{Time: since})
	stuck.Object["status"] = map[string]any{"phase": "Terminating", "conditions": []any{
		map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "False"},
		map[string]any{"type": "NamespaceContentRemaining", "status": "True", "message": "Some resources are remaining: inferenceservices.serving.kserve.io has 1 resource instances"},
		map[string]any{"type": "NamespaceFinalizersRemaining", "status": "True", "message": "Some content in the namespace has finalizers remaining: inferenceservice.finalizers in 1 resource instances"},
	}}
	_, dyn := newSession(t, stuck)
	got, err := Cleanup(context.Background(), dyn, "", nil)
	require.NoError(t, err)
	assert.Equal(t, []Leftover{{Resource: "namespace", Name: "aiconform-probe-c", Terminating: true, Since: since,
		Waiting: "Some resources are remaining: inferenceservices.serving.kserve.io has 1 resource instances; Some content in the namespace has finalizers remaining: inferenceservice.finalizers in 1 resource instances"}}, got)
	for _, a := range dyn.Actions() {
		assert.NotEqual(t, "delete", a.GetVerb(), "a namespace being deleted is not deleted again")
	}
}

func pool(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(poolGVK)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func TestClusterScopedObjectsAreNamedAfterTheRunAndDeleted(t *testing.T) {
	ctx := context.Background()
	other := pool("canary-other", map[string]string{RunLabel: "other"})
	held := pool("canary-held", map[string]string{RunLabel: "held"})
	since := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	held.SetDeletionTimestamp(&metav1.Time{Time: since})
	held.SetFinalizers([]string{"demo.example.com/in-use"})
	s, dyn := newSession(t, other, held, pool("users-pool", nil))
	m, err := s.Mapping(poolGVK)
	require.NoError(t, err)

	p := pool("canary", nil)
	s.Label(p, m)
	assert.Equal(t, "canary-"+s.RunID, p.GetName(), "no namespace keeps two runs' cluster-scoped canaries apart")
	assert.Equal(t, "", s.NamespaceOf(m))
	_, err = s.Create(ctx, m, p)
	require.NoError(t, err)
	got, err := dyn.Resource(poolGVR).Get(ctx, p.GetName(), metav1.GetOptions{})
	require.NoError(t, err, "created cluster-wide, not in the run's namespace")
	assert.Equal(t, s.RunID, got.GetLabels()[RunLabel])

	deleted, err := s.Close(ctx)
	require.NoError(t, err)
	assert.Equal(t, []Leftover{{Resource: "pool.demo.example.com", Name: p.GetName()}}, deleted,
		"Close deletes the run's cluster-scoped objects, and no other run's")
	_, err = dyn.Resource(poolGVR).Get(ctx, p.GetName(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	deleted, err = Cleanup(ctx, dyn, "", []schema.GroupVersionResource{poolGVR})
	require.NoError(t, err)
	assert.ElementsMatch(t, []Leftover{
		{Resource: "pool.demo.example.com", Name: "canary-other"},
		{Resource: "pool.demo.example.com", Name: "canary-held", Terminating: true, Since: since, Waiting: "finalizers demo.example.com/in-use"},
	}, deleted, "cleanup finds every run's, by label, and says what holds one being deleted")
	_, err = dyn.Resource(poolGVR).Get(ctx, "users-pool", metav1.GetOptions{})
	assert.NoError(t, err, "an unlabelled object is never touched")
}

func TestUntil(t *testing.T) {
	events := make(chan Event, 3)
	for _, tag := range []string{"a", "b", "c"} {
		events <- Event{Tag: tag}
	}
	var seen []string
	apply := func(e Event) { seen = append(seen, e.Tag) }
	assert.True(t, Until(context.Background(), events, apply, func() bool { return len(seen) == 2 }))
	assert.Equal(t, []string{"a", "b"}, seen, "no event is taken once done holds")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, Until(ctx, make(chan Event), apply, func() bool { return false }), "an ended context ends the wait")
}
