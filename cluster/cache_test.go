package cluster

import (
	"context"
	"errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// countingSource counts the queries it answers and, when gate is set,
// answers only once the gate opens.
type countingSource struct {
	lists, tables, raws atomic.Int32
	gate                chan struct{}
	// started is told of each fetch as it begins, with its context.
	started chan context.Context
	err     error
}

func (s *countingSource) wait(ctx context.Context) {
	if s.started != nil {
		s.started <- ctx
	}
	if s.gate != nil {
		<-s.gate
	}
}

func (s *countingSource) List(ctx context.Context, q Query) ([]runtime.Object, time.Time, error) {
	s.lists.Add(1)
	s.wait(ctx)
	if s.err != nil {
		return nil, t0, s.err
	}
	return []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: q.Key()}}}, t0, nil
}

func (s *countingSource) Table(ctx context.Context, q Query) (*metav1.Table, time.Time, error) {
	s.tables.Add(1)
	s.wait(ctx)
	return table(podCols, row("", q.Key(), nil)), t0, s.err
}

func (s *countingSource) Raw(ctx context.Context, path string) ([]byte, time.Time, error) {
	s.raws.Add(1)
	s.wait(ctx)
	return []byte("body of " + path), t0, s.err
}

func (s *countingSource) Info(context.Context) (Info, error) {
	return Info{ServerVersion: "v1.37.2"}, nil
}

func TestCacheAsksOncePerQuery(t *testing.T) {
	src := &countingSource{gate: make(chan struct{})}
	c := NewCache(src)
	q := Query{Resource: Pods, Namespace: "kserve"}

	const callers = 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([][]runtime.Object, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], _, errs[i] = c.List(context.Background(), q)
		}()
	}
	// All ask at once, while the answer is held back.
	close(start)
	close(src.gate)
	wg.Wait()

	assert.Equal(t, int32(1), src.lists.Load())
	for i := range callers {
		require.NoError(t, errs[i])
		require.Len(t, results[i], 1)
		assert.Same(t, results[0][0], results[i][0], "every caller shares the one answer")
	}

	// Later callers get the answer without asking again.
	_, at, err := c.List(context.Background(), q)
	require.NoError(t, err)
	assert.Equal(t, t0, at)
	assert.Equal(t, int32(1), src.lists.Load())
}

func TestCacheKeepsQueriesApart(t *testing.T) {
	src := &countingSource{}
	c := NewCache(src)
	ctx := context.Background()
	qs := []Query{
		{Resource: Pods},
		{Resource: Pods, Namespace: "kserve"},
		{Resource: Pods, Namespace: "kserve", LabelSelector: "app=ctl"},
		{Resource: Pods, Namespace: "kserve", FieldSelector: "spec.nodeName=n"},
		{Resource: Services, Namespace: "kserve"},
		{Resource: isvcs, Namespace: "kserve"},
	}
	for range 3 {
		for _, q := range qs {
			objs, _, err := c.List(ctx, q)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			assert.Equal(t, q.Key(), objs[0].(*corev1.Pod).Name, "the answer to its own query")
		}
	}
	assert.Equal(t, int32(len(qs)), src.lists.Load())
	assert.Equal(t, int32(0), src.tables.Load(), "a List is not a Table")

	// Tables are cached apart from Lists.
	for range 3 {
		tb, _, err := c.Table(ctx, qs[1])
		require.NoError(t, err)
		assert.Equal(t, qs[1].Key(), tb.Rows[0].Cells[0])
	}
	assert.Equal(t, int32(1), src.tables.Load())
}

func TestCacheSharesErrors(t *testing.T) {
	refused := errors.New("pods is forbidden")
	src := &countingSource{err: refused}
	c := NewCache(src)
	for range 3 {
		_, _, err := c.List(context.Background(), Query{Resource: Pods})
		assert.ErrorIs(t, err, refused)
	}
	assert.Equal(t, int32(1), src.lists.Load(), "a refusal is an answer: not asked again")
}

// A caller that gives up stops waiting; the read goes on for the others,
// and is not cancelled with the caller that started it.
func TestCacheCancelledCaller(t *testing.T) {
	src := &countingSource{gate: make(chan struct{}), started: make(chan context.Context, 1)}
	c := NewCache(src)
	q := Query{Resource: Nodes}

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error)
	go func() {
		_, _, err := c.List(ctx, q)
		first <- err
	}()
	fetchCtx := <-src.started

	second := make(chan []runtime.Object)
	go func() {
		objs, _, err := c.List(context.Background(), q)
		assert.NoError(t, err)
		second <- objs
	}()

	cancel()
	assert.ErrorIs(t, <-first, context.Canceled, "the cancelled caller stops waiting")
	assert.NoError(t, fetchCtx.Err(), "the fetch is not cancelled with the caller that started it")

	close(src.gate)
	objs := <-second
	require.Len(t, objs, 1)
	assert.Equal(t, int32(1), src.lists.Load())

	// The answer is kept for whoever asks next, the cancelled caller too.
	again, _, err := c.List(context.Background(), q)
	require.NoError(t, err)
	assert.Same(t, objs[0], again[0])
}

func TestCacheRecordingWaitsForReadsInFlight(t *testing.T) {
	src := &countingSource{gate: make(chan struct{}), started: make(chan context.Context, 2)}
	c := NewCache(src)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _, _ = c.List(ctx, Query{Resource: Nodes}) }()
	go func() { _, _, _ = c.Table(ctx, Query{Resource: Nodes}) }()
	<-src.started
	<-src.started
	cancel() // the callers are gone; their reads go on

	done := make(chan *Recording)
	go func() {
		rec, err := c.Recording(Info{ServerVersion: "v1.37.2"})
		assert.NoError(t, err)
		done <- rec
	}()
	close(src.gate)
	rec := <-done
	require.Len(t, rec.Lists, 1)
	require.Len(t, rec.Tables, 1)
	assert.Equal(t, "nodes.v1", rec.Lists[0].Resource)
	assert.Len(t, rec.Lists[0].Items, 1)
	assert.Equal(t, RecordingKind, rec.Kind)
	assert.Equal(t, RecordingAPIVersion, rec.APIVersion)
	assert.Equal(t, "v1.37.2", rec.Cluster.ServerVersion)
}

func TestCacheRecordingOrder(t *testing.T) {
	c := NewCache(&countingSource{})
	ctx := context.Background()
	for _, q := range []Query{{Resource: Services}, {Resource: Nodes}, {Resource: Pods, Namespace: "b"}, {Resource: Pods, Namespace: "a"}} {
		_, _, err := c.List(ctx, q)
		require.NoError(t, err)
	}
	rec, err := c.Recording(Info{})
	require.NoError(t, err)
	var got []string
	for _, l := range rec.Lists {
		got = append(got, l.Resource+"|"+l.Namespace)
	}
	assert.Equal(t, []string{"nodes.v1|", "pods.v1|a", "pods.v1|b", "services.v1|"}, got, "sorted by key, whatever the order read")
}

// A raw GET is made once per path and shared, and a recording replays its
// body, and its error, as the server gave them.
func TestCacheRawOnceAndRecorded(t *testing.T) {
	src := &countingSource{}
	c := NewCache(src)
	const path = "/api/v1/namespaces/gpu-operator/pods/nvidia-dcgm-exporter-x7k2p:9400/proxy/metrics"
	for range 3 {
		body, at, err := c.Raw(context.Background(), path)
		require.NoError(t, err)
		assert.Equal(t, "body of "+path, string(body))
		assert.Equal(t, t0, at)
	}
	assert.Equal(t, int32(1), src.raws.Load())

	failing := NewCache(&countingSource{err: apierrors.NewServiceUnavailable("error trying to reach service: dial tcp 10.250.0.2:9400: connect: connection refused")})
	_, _, err := failing.Raw(context.Background(), "/broken")
	require.Error(t, err)

	for _, cache := range []*Cache{c, failing} {
		rec, err := cache.Recording(Info{ServerVersion: "v1.37.2"})
		require.NoError(t, err)
		data, err := rec.Marshal()
		require.NoError(t, err)
		replayed, err := LoadRecording("rec", data)
		require.NoError(t, err)
		for _, r := range rec.Raws {
			body, at, err := replayed.Raw(context.Background(), r.Path)
			assert.Equal(t, r.Body, string(body))
			assert.True(t, at.Equal(t0), "captured at %s", at)
			if r.Error != nil {
				assert.True(t, apierrors.IsServiceUnavailable(err), "%v", err)
				assert.Contains(t, err.Error(), "connection refused")
			} else {
				assert.NoError(t, err)
			}
		}
	}
	_, _, err = failing.Raw(context.Background(), "/not-asked")
	require.Error(t, err)
	rec, err := NewCache(&countingSource{}).Recording(Info{})
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	replayed, err := LoadRecording("empty", data)
	require.NoError(t, err)
	_, _, err = replayed.Raw(context.Background(), path)
	assert.ErrorContains(t, err, "recording empty holds no answer to: get "+path)
}
