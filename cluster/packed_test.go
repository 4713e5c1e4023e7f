package cluster

import (
	"bytes"
	"context"
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
			pk := &packedPods{}
			cont, err := readPacked(bytes.NewReader(body), pk)
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

	_, err := readPacked(bytes.NewReader(encodeList(t, &corev1.NodeList{})), &packedPods{})
	assert.ErrorContains(t, err, `the server answered a "NodeList"`)
	body := encodeList(t, page)
	_, err = readPacked(bytes.NewReader(body[:len(body)-10]), &packedPods{})
	assert.Error(t, err, "a truncated page")
}

// packPods and unpack give back the pods they were given, each its own.
func TestPackPods(t *testing.T) {
	var objs []runtime.Object
	for _, p := range nodePodsCases() {
		objs = append(objs, &p)
	}
	pk, err := packPods(objs)
	require.NoError(t, err)
	got, err := pk.unpack()
	require.NoError(t, err)
	assert.Equal(t, roundTrip(t, nodePodsCases()), got)

	_, err = packPods([]runtime.Object{&corev1.Node{}})
	assert.ErrorContains(t, err, "a list of pods holds a *v1.Node")

	empty, err := (*packedPods)(nil).unpack()
	assert.NoError(t, err)
	assert.Empty(t, empty)
}

// The cache keeps the pods of a node packed, from any source: reads while
// another holds its decoding share it, and a recording holds them as read.
func TestCachePacksNodePods(t *testing.T) {
	pods := nodePodsCases()
	src := &podsSource{pods: pods}
	c := NewCache(src)
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	first, _, err := c.List(context.Background(), q)
	require.NoError(t, err)
	second, _, err := c.List(context.Background(), q)
	require.NoError(t, err)
	assert.Equal(t, 1, src.lists)
	assert.Equal(t, roundTrip(t, pods), first)
	for i := range first {
		assert.Same(t, first[i], second[i], "one decoding while a reader holds it")
	}
	c.mu.Lock()
	kept := c.lists[q.Key()].val
	c.mu.Unlock()
	assert.Nil(t, kept.objs, "kept packed")
	assert.NotNil(t, kept.pods)

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
