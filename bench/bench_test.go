package bench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiconform/aiconform/audit"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	productionOnce sync.Once
	productionObjs *Objects
	productionErr  error
)

// production is the 2,000-node, 50,000-pod cluster, generated once per
// test binary (about a second).
func production(tb testing.TB) *Objects {
	tb.Helper()
	productionOnce.Do(func() { productionObjs, productionErr = Cluster(Production, time.Now()) })
	require.NoError(tb, productionErr)
	return productionObjs
}

// assertHealthy: KServe and KubeRay pass every check, the GPU nodes are
// allocatable, the model servers' HPAs scale, and so every requirement is
// met.
func assertHealthy(t *testing.T, r audit.Result) {
	t.Helper()
	seen := map[string]bool{}
	for _, res := range r.Outcome.Results {
		switch {
		case res.Check.Probe:
			// Probes write to the cluster; a benchmark run never does.
			assert.Equal(t, checks.Skip, res.Status, "%s %s: %s", res.Check.ID, res.Operator, res.Reason)
		case res.Check.ID == "gpu-sharing" || res.Check.ID == "vgpu-exposed":
			// SHOULDs its GPU nodes do not implement: whole GPUs, not
			// virtualized.
			assert.Equal(t, checks.Fail, res.Status, "%s: %s", res.Check.ID, res.Reason)
			seen[res.Check.ID+"/"+res.Operator] = true
		case res.Operator == "kserve" || res.Operator == "kuberay" || res.Operator == "kueue" || res.Operator == "":
			assert.Equal(t, checks.Pass, res.Status, "%s %s: %s", res.Check.ID, res.Operator, res.Reason)
			seen[res.Check.ID+"/"+res.Operator] = true
		case res.Operator != "":
			assert.Equal(t, checks.Skip, res.Status, "%s %s: %s", res.Check.ID, res.Operator, res.Reason)
		}
	}
	assert.Len(t, seen, 47, "six read-only checks for each of three operators, Kueue's two gang checks, and the twenty-seven cluster-wide read-only checks: %v", seen)
	for _, v := range r.Verdicts {
		if v.Requirement.ID == "gpu_sharing" || v.Requirement.ID == "virtualized_accelerator" {
			assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
			continue
		}
		if v.Requirement.ID == "secure_accelerator_access" || v.Requirement.ID == "workload_sandboxing" {
			// Only a probe shows them, and a benchmark never writes.
			assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
			assert.Contains(t, v.Conclusion, "not shown at work")
			assert.Contains(t, v.Conclusion, "probes are off")
			continue
		}
		assert.Equal(t, checks.Implemented, v.Status, "%s: %s", v.Requirement.ID, v.Conclusion)
	}
	assert.False(t, r.Report.Summary.Passed, "secure_accelerator_access is not shown without a probe")
}

func TestCheckAllReadsEachQueryOnce(t *testing.T) {
	objs := production(t)
	require.Len(t, objs.Nodes, 2000)
	require.Len(t, objs.Pods, 50000+11, "the bulk and the operators' eleven pods")
	names := map[string]bool{}
	for _, p := range objs.Pods {
		key := p.Namespace + "/" + p.Name
		require.False(t, names[key], "two pods named %s", key)
		names[key] = true
	}
	src := NewSource(objs)

	r, err := CheckAll(context.Background(), src)
	require.NoError(t, err)
	assertHealthy(t, r)

	calls := src.Calls()
	for key, n := range calls.Lists {
		assert.Equal(t, 1, n, "LIST %s", key)
	}
	for key, n := range calls.Tables {
		assert.Equal(t, 1, n, "Table %s", key)
	}
	perNode := 0
	for key, q := range calls.Queries {
		if q.Resource.GVR != cluster.Pods.GVR {
			continue
		}
		// A pod LIST is of one namespace or of one node: the API server
		// answers either from an index of its cache. Across the cluster, a
		// label selector still makes it filter every pod.
		assert.True(t, q.Namespace != "" || strings.HasPrefix(q.FieldSelector, "spec.nodeName="), "a cluster-wide pod LIST: %s", key)
		if _, ok := calls.Lists[key]; ok && q.FieldSelector != "" {
			perNode++
		}
	}
	assert.Equal(t, Production.GPUNodes, perNode, "one LIST of pods per GPU node, by spec.nodeName")
	exporters, prometheus := 0, 0
	for path, n := range calls.Raws {
		assert.Equal(t, 1, n, "GET %s", path)
		if strings.HasPrefix(path, strings.TrimSuffix(PrometheusTargetsPath, "api/v1/targets")) {
			prometheus++
		} else {
			exporters++
		}
	}
	assert.Equal(t, Production.GPUNodes, exporters, "one GET of an exporter's metrics per GPU node")
	// All its targets, one scrape pool for the evidence, and the query of
	// the exporters' series, which this recorded server does not answer.
	assert.Equal(t, 3, prometheus, "GETs of the Prometheus server's API")
	t.Logf("%d LISTs, %d Tables and %d GETs in %d distinct queries", Total(calls.Lists), Total(calls.Tables), Total(calls.Raws), len(calls.Queries))
}

func TestSourceFilters(t *testing.T) {
	src := NewSource(production(t))
	ctx := context.Background()
	list := func(q cluster.Query) int {
		objs, _, err := src.List(ctx, q)
		require.NoError(t, err, q.String())
		return len(objs)
	}
	assert.Equal(t, Production.PodsPerNode+3, list(cluster.Query{Resource: cluster.Pods, FieldSelector: "spec.nodeName=gpu-node-0001"}), "its pods, the Ray worker and llm-d's prefill and decode servers")
	assert.Equal(t, 1, list(cluster.Query{Resource: cluster.Pods, Namespace: "kserve", LabelSelector: "control-plane=kserve-controller-manager"}))
	assert.Equal(t, 1, list(cluster.Query{Resource: cluster.Pods, LabelSelector: "serving.kserve.io/inferenceservice"}))
	assert.Equal(t, 2, list(cluster.Query{Resource: cluster.Pods, LabelSelector: "ray.io/cluster"}))
	assert.Equal(t, 1, list(cluster.Query{Resource: cluster.Nodes, FieldSelector: "metadata.name=cpu-node-1500"}))
	assert.Equal(t, 2, list(cluster.Query{Resource: cluster.Pods, Namespace: "models", FieldSelector: "spec.nodeName=gpu-node-0001"}), "llm-d's prefill and decode servers")
	assert.Equal(t, 0, list(cluster.Query{Resource: cluster.Pods, Namespace: "kserve", FieldSelector: "spec.nodeName=gpu-node-0001"}))

	_, _, err := src.List(ctx, cluster.Query{Resource: cluster.Pods, FieldSelector: "spec.containers=x"})
	assert.ErrorContains(t, err, "field label not supported")

	tab, _, err := src.Table(ctx, cluster.Query{Resource: cluster.Nodes})
	require.NoError(t, err)
	assert.Len(t, tab.Rows, 2000)
	out, _, err := cluster.NewCache(src).Print(ctx, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: "kserve", Wide: true})
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^kserve-controller-manager-\S+\s+2/2\s+Running\s+0\s+\S+\s+10\.\S+\s+cpu-node-0001\s`, out)
}

// TestReplayRecording: a run recorded from the source and replayed gives
// the same verdicts, on a cluster small enough to be quick.
func TestReplayRecording(t *testing.T) {
	objs, err := Cluster(Size{Nodes: 40, GPUNodes: 10, PodsPerNode: 25, Namespaces: 20}, time.Now())
	require.NoError(t, err)
	ctx := context.Background()
	profiles, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	cache := cluster.NewCache(NewSource(objs))
	info, err := cache.Info(ctx)
	require.NoError(t, err)
	rec, err := checks.Record(ctx, cache, info, profiles, builtin.Registry(), time.Minute, time.Now)
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	loaded, err := cluster.LoadRecording("synthetic", data)
	require.NoError(t, err)
	r, err := CheckAll(ctx, loaded)
	require.NoError(t, err)
	assertHealthy(t, r)
}

func BenchmarkCheckAll(b *testing.B) {
	src := NewSource(production(b))
	ctx := context.Background()
	src.Reset()
	b.ReportAllocs()
	runs := 0
	for b.Loop() {
		if _, err := CheckAll(ctx, src); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	calls := src.Calls()
	b.ReportMetric(float64(Total(calls.Lists))/float64(runs), "lists/op")
	b.ReportMetric(float64(Total(calls.Tables))/float64(runs), "tables/op")
}

// BenchmarkScale runs check all on the production cluster and on one five
// times its size (10,000 nodes, 2,500 of them GPU nodes, 250,000 pods, 1,000
// namespaces), alternately in each iteration, and reports the large run's
// time and allocations as multiples of the small one's: the budget is at
// most 5 (linear in the cluster), measured side by side so that a busy
// machine slows both. Both clusters' objects live in this process (about
// 1.9 GB), as a real run's do not: a collection of them costs about as
// much as a run of the large cluster, and whichever run it lands in moves
// the ratio (3.8 to 6.4 over runs of 3 iterations on a busy machine);
// -benchtime 8x spreads it.
func BenchmarkScale(b *testing.B) {
	small := NewSource(production(b))
	large5, err := Cluster(Size{Nodes: 5 * Production.Nodes, GPUNodes: 5 * Production.GPUNodes,
		PodsPerNode: Production.PodsPerNode, Namespaces: 5 * Production.Namespaces}, time.Now())
	require.NoError(b, err)
	large := NewSource(large5)
	ctx := context.Background()
	measure := func(src *Source) (time.Duration, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if _, err := CheckAll(ctx, src); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed, after.TotalAlloc - before.TotalAlloc
	}
	var smallTime, largeTime time.Duration
	var smallAlloc, largeAlloc uint64
	for b.Loop() {
		t, a := measure(small)
		smallTime, smallAlloc = smallTime+t, smallAlloc+a
		t, a = measure(large)
		largeTime, largeAlloc = largeTime+t, largeAlloc+a
	}
	b.ReportMetric(largeTime.Seconds()/smallTime.Seconds(), "x-time")
	b.ReportMetric(float64(largeAlloc)/float64(smallAlloc), "x-alloc")
	b.ReportMetric(float64(smallAlloc)/float64(b.N)/1e6, "MB-alloc-2000")
	b.ReportMetric(float64(largeAlloc)/float64(b.N)/1e6, "MB-alloc-10000")
}

// BenchmarkReplayRecording is `check all --fixture` on a recording of the
// production cluster: what the checks read, recorded once, then per run
// parsed and replayed ("load+run"), or replayed from one parse ("run").
func BenchmarkReplayRecording(b *testing.B) {
	src := NewSource(production(b))
	ctx := context.Background()
	profiles, err := checks.BuiltinProfiles()
	require.NoError(b, err)
	cache := cluster.NewCache(src)
	info, err := cache.Info(ctx)
	require.NoError(b, err)
	rec, err := checks.Record(ctx, cache, info, profiles, builtin.Registry(), time.Minute, time.Now)
	require.NoError(b, err)
	// A snapshot of this size is written as JSON (`--out FILE.json`); YAML
	// is measured beside it to show why.
	var data []byte
	for _, format := range []struct {
		name    string
		marshal func() ([]byte, error)
	}{{"yaml", rec.Marshal}, {"json", rec.MarshalCompact}} {
		start := time.Now()
		encoded, err := format.marshal()
		require.NoError(b, err)
		marshal := time.Since(start)
		data = encoded
		b.Run("load+run/"+format.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				loaded, err := cluster.LoadRecording("synthetic", encoded)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := CheckAll(ctx, loaded); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(encoded))/1e6, "MB-recording")
			b.ReportMetric(float64(len(rec.Lists)), "lists-recorded")
			b.ReportMetric(marshal.Seconds(), "s-to-marshal")
		})
	}
	b.Run("run", func(b *testing.B) {
		loaded, err := cluster.LoadRecording("synthetic", data)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CheckAll(ctx, loaded); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func ExampleSource() {
	objs, _ := Cluster(Size{Nodes: 4, GPUNodes: 1, PodsPerNode: 6, Namespaces: 6}, time.Now())
	src := NewSource(objs)
	pods, _, _ := src.List(context.Background(), cluster.Query{Resource: cluster.Pods, FieldSelector: "spec.nodeName=gpu-node-0001"})
	fmt.Println(len(pods), "pods on gpu-node-0001")
	// Output: 9 pods on gpu-node-0001
}
