package cluster

import (
	"bytes"
	"context"
	appsv1 "k8s.io/api/apps/v1"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// A page of a node's pods packed, in protobuf or JSON, unpacks to the pods
// List gives, and says where the next page starts.
func TestReadPacked(t *testing.T) {
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	page := &corev1.PodList{Items: nodePodsCases(), ListMeta: metav1.ListMeta{Continue: "next", ResourceVersion: "42"}}
	want := settled(t, q, encodeList(t, &corev1.PodList{Items: nodePodsCases()})).(*corev1.PodList)

	var asJSON bytes.Buffer
	page.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	require.NoError(t, json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{}).Encode(page, &asJSON))
	for name, body := range map[string][]byte{"protobuf": encodeList(t, page), "JSON": asJSON.Bytes()} {
		t.Run(name, func(t *testing.T) {
			pk := &packedList{newObject: packedKind(q)}
			cont, err := readPacked(bytes.NewReader(body), q, pk)
			require.NoError(t, err)
			assert.Equal(t, "next", cont)
			got, err := pk.unpack()
			require.NoError(t, err)
			require.Len(t, got, len(want.Items))
			for i, o := range got {
				assert.Equal(t, &want.Items[i], o)
			}
		})
	}

	_, err := readPacked(bytes.NewReader(encodeList(t, &corev1.NodeList{})), q, &packedList{newObject: packedKind(q)})
	assert.ErrorContains(t, err, `the server answered a "NodeList"`)
	body := encodeList(t, page)
	_, err = readPacked(bytes.NewReader(body[:len(body)-10]), q, &packedList{newObject: packedKind(q)})
	assert.Error(t, err, "a truncated page")
}

// pack and unpack give back the objects they were given.
func TestPack(t *testing.T) {
	var objs []runtime.Object
	for _, p := range nodePodsCases() {
		objs = append(objs, &p)
	}
	newPod := packedKind(Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"})
	pk, err := pack(objs, newPod)
	require.NoError(t, err)
	got, err := pk.unpack()
	require.NoError(t, err)
	assert.Equal(t, roundTrip(t, nodePodsCases()), got)

	_, err = pack([]runtime.Object{&corev1.Node{}}, newPod)
	assert.ErrorContains(t, err, "a list of *v1.Pod holds a *v1.Node")

	empty, err := (*packedList)(nil).unpack()
	assert.NoError(t, err)
	assert.Empty(t, empty)
}

// The cache keeps the pods of a node packed, from a cluster whose reader
// cannot pack them itself (a Live on fake clients) too: each read decodes
// them, and a recording holds them as read.
func TestCachePacksNodePods(t *testing.T) {
	pods := nodePodsCases()
	src := &podsSource{pods: pods}
	c := NewCache(src)
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	first, second := listTwice(t, c, q)
	assert.Equal(t, 1, src.lists)
	assert.Equal(t, roundTrip(t, pods), first)
	assert.Equal(t, first, second)
	assert.NotSame(t, first[0], second[0], "each read decodes its own")
	kept := keptBy(c, q)
	assert.Nil(t, kept.objs, "kept packed")
	assert.NotNil(t, kept.packed)

	// Other pod lists are kept as they came.
	all, _, err := c.List(context.Background(), Query{Resource: Pods, Namespace: "gpu-operator"})
	require.NoError(t, err)
	again, _, err := c.List(context.Background(), Query{Resource: Pods, Namespace: "gpu-operator"})
	require.NoError(t, err)
	assert.Same(t, all[0], again[0])

	rec, err := c.Recording(Info{})
	require.NoError(t, err)
	replay, err := LoadRecording("rec", mustMarshal(t, rec))
	require.NoError(t, err)
	replayed, _, err := replay.List(context.Background(), q)
	require.NoError(t, err)
	require.Len(t, replayed, len(pods))
	assert.Equal(t, pods[0].Name, replayed[0].(*corev1.Pod).Name)
}

// podsSource answers every query with the same pods.
type podsSource struct {
	countingSource
	readerless
	pods  []corev1.Pod
	lists int
}

func (s *podsSource) List(context.Context, Query) ([]runtime.Object, time.Time, error) {
	s.lists++
	var out []runtime.Object
	for i := range s.pods {
		out = append(out, s.pods[i].DeepCopy())
	}
	return out, t0, nil
}

// roundTrip is pods as protobuf decodes them (timestamps in the local
// zone, empty maps nil).
func roundTrip(t *testing.T, pods []corev1.Pod) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, p := range pods {
		data, err := p.Marshal()
		require.NoError(t, err)
		var got corev1.Pod
		require.NoError(t, got.Unmarshal(data))
		out = append(out, &got)
	}
	return out
}

func mustMarshal(t *testing.T, rec *Recording) []byte {
	t.Helper()
	data, err := rec.Marshal()
	require.NoError(t, err)
	return data
}

// The Deployments of the whole cluster are kept packed too; those of one
// namespace, read by several checks, decoded.
func TestCachePacksWorkloadsAcrossTheCluster(t *testing.T) {
	src := &deploymentsSource{}
	c := NewCache(src)
	for _, tc := range []struct {
		q      Query
		packed bool
	}{{Query{Resource: Deployments}, true}, {Query{Resource: Deployments, Namespace: "ns"}, false}, {Query{Resource: StatefulSets}, false}} {
		got, _, err := c.List(context.Background(), tc.q)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "d", got[0].(*appsv1.Deployment).Name)
		kept := keptBy(c, tc.q)
		assert.Equal(t, tc.packed, kept.packed != nil, "%s packed", tc.q)
	}
}

// deploymentsSource answers every query with one Deployment: for a list
// of StatefulSets, the wrong kind, which the cache keeps as it came.
type deploymentsSource struct {
	countingSource
	readerless
}

func (s *deploymentsSource) List(context.Context, Query) ([]runtime.Object, time.Time, error) {
	return []runtime.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns"}}}, t0, nil
}

// An in-memory source's objects are kept as they came, packed kinds too:
// the source holds them anyway.
func TestCacheKeepsInMemoryObjects(t *testing.T) {
	src := &countingSource{}
	c := NewCache(src)
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	first, second := listTwice(t, c, q)
	require.Len(t, first, 1)
	assert.Same(t, first[0], second[0])
	kept := keptBy(c, q)
	assert.Nil(t, kept.packed)
}

// readerless makes a source a cluster's whose reader cannot pack (a Live
// on fake clients): the cache packs what it lists.
type readerless struct{}

func (readerless) packList(context.Context, Query) (*packedList, time.Time, error) {
	return nil, t0, errNotPacked
}

// keptBy is what the cache keeps of q's answer.
func keptBy(c *Cache, q Query) listed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lists[q.Key()].val
}

// listTwice reads q from the cache twice.
func listTwice(t *testing.T, c *Cache, q Query) (first, second []runtime.Object) {
	t.Helper()
	first, _, err := c.List(context.Background(), q)
	require.NoError(t, err)
	second, _, err = c.List(context.Background(), q)
	require.NoError(t, err)
	return first, second
}
