package cluster

import (
	"context"
	"errors"
	"maps"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Cache answers each distinct query once per run and shares the answer with
// every check that asks, so a cluster of thousands of nodes is listed once,
// not once per check. Errors are shared too: a Forbidden list stays Forbidden
// for everyone.
type Cache struct {
	src Source
	// whole makes every List a whole query (see WholeObjects).
	whole bool

	mu     sync.Mutex
	lists  map[string]*entry[Query, listed]
	tables map[string]*entry[Query, *metav1.Table]
	raws   map[string]*entry[string, []byte]
	// workloads are those made of the lists of Deployments and
	// StatefulSets (Workloads), by resource.
	workloads map[string]*entry[Resource, []*Workload]
}

// entry is one read: its key (a query, a path), and once done, its answer.
type entry[K, T any] struct {
	q    K
	done chan struct{}
	val  T
	at   time.Time
	err  error
}

// NewCache wraps src.
func NewCache(src Source) *Cache {
	return &Cache{
		src:    src,
		lists:  map[string]*entry[Query, listed]{},
		tables: map[string]*entry[Query, *metav1.Table]{},
		raws:   map[string]*entry[string, []byte]{},

		workloads: map[string]*entry[Resource, []*Workload]{},
	}
}

// Info passes through to the source.
func (c *Cache) Info(ctx context.Context) (Info, error) { return c.src.Info(ctx) }

// List returns the objects of q. Callers must not modify them: they are
// shared.
func (c *Cache) List(ctx context.Context, q Query) ([]runtime.Object, time.Time, error) {
	l, at, err := c.listed(ctx, q)
	if err != nil {
		return l.objs, at, err
	}
	objs, err := l.objects()
	return objs, at, err
}

// listed is q's answer as the cache keeps it, read once (whole, in a
// WholeObjects cache).
func (c *Cache) listed(ctx context.Context, q Query) (listed, time.Time, error) {
	if c.whole {
		q.Whole = true
	}
	return once(ctx, &c.mu, c.lists, q.Key(), q, c.fetchList)
}

// listed is a LIST's answer as the cache keeps it: its objects, or them
// packed (packedKind).
type listed struct {
	objs   []runtime.Object
	packed *packedList
}

// objects are the objects of the answer.
func (l listed) objects() ([]runtime.Object, error) {
	if l.packed != nil {
		return l.packed.unpack()
	}
	return l.objs, nil
}

// packer is a source that reads a list packed, without decoding its
// objects; errNotPacked says it cannot for this query.
type packer interface {
	packList(ctx context.Context, q Query) (*packedList, time.Time, error)
}

var errNotPacked = errors.New("not read packed")

// fetchList asks the source. What packedKind says is kept packed is, from
// a cluster (a packer): read packed when its reader can, else packed here.
// An in-memory source (a recording, bench's) holds its objects whatever
// the cache does: packing them would only add an encoding, and a decoding
// at each read (2.6 times the allocations of BenchmarkScale).
func (c *Cache) fetchList(ctx context.Context, q Query) (listed, time.Time, error) {
	newObject := packedKind(q)
	p, ok := c.src.(packer)
	if !ok || newObject == nil {
		objs, at, err := c.src.List(ctx, q)
		return listed{objs: objs}, at, err
	}
	pk, at, err := p.packList(ctx, q)
	if !errors.Is(err, errNotPacked) {
		return listed{packed: pk}, at, err
	}
	objs, at, err := c.src.List(ctx, q)
	if err != nil {
		return listed{objs: objs}, at, err
	}
	pk, perr := pack(objs, newObject)
	if perr != nil {
		// Not the scheme's objects (a source's mistake): kept as they
		// came, which costs memory, not truth.
		return listed{objs: objs}, at, nil
	}
	return listed{packed: pk}, at, nil
}

// Table returns the server's Table for q. Callers must not modify it; Print
// copies it before decorating.
func (c *Cache) Table(ctx context.Context, q Query) (*metav1.Table, time.Time, error) {
	return once(ctx, &c.mu, c.tables, q.Key(), q, c.src.Table)
}

// Raw returns the body of a GET of path on the API server. Callers must
// not modify it.
func (c *Cache) Raw(ctx context.Context, path string) ([]byte, time.Time, error) {
	return once(ctx, &c.mu, c.raws, path, path, c.src.Raw)
}

// once runs fetch for the first caller of a key and makes later callers wait
// for its answer. The fetch is detached from the first caller's cancellation,
// because a check that times out must not fail the read for the others; each
// caller still stops waiting when its own context ends.
func once[K, T any](ctx context.Context, mu *sync.Mutex, m map[string]*entry[K, T], key string, q K,
	fetch func(context.Context, K) (T, time.Time, error)) (T, time.Time, error) {
	mu.Lock()
	e, ok := m[key]
	if !ok {
		e = &entry[K, T]{q: q, done: make(chan struct{})}
		m[key] = e
		go func() {
			defer close(e.done)
			e.val, e.at, e.err = fetch(context.WithoutCancel(ctx), q)
		}()
	}
	mu.Unlock()
	select {
	case <-e.done:
		return e.val, e.at, e.err
	case <-ctx.Done():
		var zero T
		return zero, time.Time{}, ctx.Err()
	}
}

// Recording returns everything the run has read so far, in a stable order,
// ready to be saved as a fixture that replays this run.
func (c *Cache) Recording(info Info) (*Recording, error) {
	// Take the entries under the lock, wait for them outside it: a read
	// still in flight must not block every other use of the cache.
	c.mu.Lock()
	lists := maps.Clone(c.lists)
	tables := maps.Clone(c.tables)
	raws := maps.Clone(c.raws)
	c.mu.Unlock()
	r := &Recording{APIVersion: RecordingAPIVersion, Kind: RecordingKind, Cluster: info}
	for _, key := range sortedKeys(lists) {
		e := lists[key]
		<-e.done
		objs, err := e.val.objects()
		if err != nil {
			return nil, err
		}
		l, err := recordList(e.q, objs, e.at, e.err)
		if err != nil {
			return nil, err
		}
		r.Lists = append(r.Lists, l)
	}
	for _, key := range sortedKeys(tables) {
		e := tables[key]
		<-e.done
		r.Tables = append(r.Tables, recordTable(e.q, e.val, e.at, e.err))
	}
	for _, key := range sortedKeys(raws) {
		e := raws[key]
		<-e.done
		r.Raws = append(r.Raws, recordRaw(e.q, e.val, e.at, e.err))
	}
	return r, nil
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Fresh is an empty cache over the same source: for reads that must see
// the cluster as it is now, after a probe changed it.
func (c *Cache) Fresh() *Cache {
	f := NewCache(c.src)
	f.whole = c.whole
	return f
}

// WholeObjects is an empty cache over the same source whose every List
// reads whole (Query.Whole): what a test compares a run against, so that
// a check reading a field the cache drops gives itself away by judging
// otherwise. A run never uses it: it would hold the cluster's objects
// whole.
func (c *Cache) WholeObjects() *Cache {
	f := NewCache(c.src)
	f.whole = true
	return f
}
