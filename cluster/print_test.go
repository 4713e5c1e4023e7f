package cluster

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestGetCommand(t *testing.T) {
	tests := []struct {
		name string
		get  Get
		want string
	}{
		{"cluster-scoped", Get{Resources: []Resource{Nodes}}, "kubectl get nodes"},
		{"namespace", Get{Resources: []Resource{Pods}, Namespace: "kserve"}, "kubectl get pods -n kserve"},
		{"-n is dropped for cluster-scoped resources", Get{Resources: []Resource{CRDs}, Namespace: "kserve"}, "kubectl get crd"},
		{"-n kept when any resource is namespaced", Get{Resources: []Resource{Nodes, Pods}, Namespace: "kserve"}, "kubectl get nodes,pods -n kserve"},
		{"all namespaces", Get{Resources: []Resource{Pods}, AllNamespaces: true}, "kubectl get pods -A"},
		{"-A wins over -n", Get{Resources: []Resource{Pods}, Namespace: "kserve", AllNamespaces: true}, "kubectl get pods -A"},
		{"several resources", Get{Resources: []Resource{Deployments, Services, Pods}, Namespace: "models"}, "kubectl get deploy,svc,pods -n models"},
		{"custom resource", Get{Resources: []Resource{isvcs}, AllNamespaces: true}, "kubectl get inferenceservices.serving.kserve.io -A"},
		{"label selector", Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "control-plane=kserve-controller-manager"},
			"kubectl get pods -n kserve -l control-plane=kserve-controller-manager"},
		{"label selector with a slash and a comma", Get{Resources: []Resource{Pods}, LabelSelector: "app.kubernetes.io/name=x,tier=web"},
			"kubectl get pods -A -l app.kubernetes.io/name=x,tier=web"},
		{"set-based selector is quoted", Get{Resources: []Resource{Pods}, LabelSelector: "env in (prod,staging)"},
			"kubectl get pods -A -l 'env in (prod,staging)'"},
		{"negation is quoted", Get{Resources: []Resource{Pods}, LabelSelector: "!canary"}, "kubectl get pods -A -l '!canary'"},
		{"inequality is quoted", Get{Resources: []Resource{Pods}, LabelSelector: "tier!=web"}, "kubectl get pods -A -l 'tier!=web'"},
		{"field selector", Get{Resources: []Resource{Pods}, AllNamespaces: true, FieldSelector: "spec.nodeName=gpu-node-1"},
			"kubectl get pods -A --field-selector spec.nodeName=gpu-node-1"},
		{"label and field selectors", Get{Resources: []Resource{Pods}, Namespace: "ray", LabelSelector: "ray.io/cluster=mini", FieldSelector: "status.phase=Running"},
			"kubectl get pods -n ray -l ray.io/cluster=mini --field-selector status.phase=Running"},
		{"label columns", Get{Resources: []Resource{Pods}, Namespace: "ray", LabelColumns: []string{"ray.io/cluster", "ray.io/node-type"}},
			"kubectl get pods -n ray -L ray.io/cluster -L ray.io/node-type"},
		{"wide", Get{Resources: []Resource{Deployments, Pods}, Namespace: "kserve", LabelSelector: "app=x", Wide: true},
			"kubectl get deploy,pods -n kserve -l app=x -o wide"},
		{"custom columns are quoted", Get{Resources: []Resource{Nodes}, Names: []string{"gpu-node-1"},
			Columns: `NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu`},
			`kubectl get nodes gpu-node-1 -o 'custom-columns=NAME:.metadata.name,GPU:.status.allocatable.nvidia\.com/gpu'`},
		{"custom columns win over wide", Get{Resources: []Resource{Nodes}, Columns: "NAME:.metadata.name", Wide: true},
			"kubectl get nodes -o custom-columns=NAME:.metadata.name"},
		{"names", Get{Resources: []Resource{CRDs}, Names: []string{"b.example.com", "a.example.com"}},
			"kubectl get crd b.example.com a.example.com"},
		{"names in a namespace", Get{Resources: []Resource{Pods}, Namespace: "kserve", Names: []string{"p-1"}, Wide: true},
			"kubectl get pods p-1 -n kserve -o wide"},
		{"grep", Get{Resources: []Resource{ValidatingWebhookConfigurations, MutatingWebhookConfigurations}, Grep: `/(inferenceservice\.serving\.kserve\.io|x) `},
			`kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations | grep -E '/(inferenceservice\.serving\.kserve\.io|x) '`},
		{"grep with a quote", Get{Resources: []Resource{Pods}, Grep: "it's"}, `kubectl get pods -A | grep -E 'it'\''s'`},
		{"grep of a plain word", Get{Resources: []Resource{Pods}, Grep: "Running"}, `kubectl get pods -A | grep -E Running`},
		{"namespace needing quotes", Get{Resources: []Resource{Pods}, Namespace: "a b"}, "kubectl get pods -n 'a b'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.get.Command())
		})
	}
}

// A namespaced resource with no namespace is listed in every namespace
// (Queries leaves Namespace empty), so the command must say -A: without it
// kubectl lists only the kubeconfig's current namespace.
func TestGetCommandWithoutNamespace(t *testing.T) {
	g := Get{Resources: []Resource{Pods}, LabelSelector: "app=x"}
	require.Empty(t, g.Queries()[0].Namespace)
	assert.Equal(t, "kubectl get pods -A -l app=x", g.Command())
}

func TestGrepAny(t *testing.T) {
	assert.Equal(t, `a\.b|c\*|\(d\)`, GrepAny("a.b", "c*", "(d)"))
	assert.Equal(t, "", GrepAny())
}

func TestGetQueries(t *testing.T) {
	g := Get{Resources: []Resource{Nodes, Pods, isvcs}, Namespace: "ns", LabelSelector: "a=b", FieldSelector: "f=g"}
	assert.Equal(t, []Query{
		{Resource: Nodes, LabelSelector: "a=b", FieldSelector: "f=g"},
		{Resource: Pods, Namespace: "ns", LabelSelector: "a=b", FieldSelector: "f=g"},
		{Resource: isvcs, Namespace: "ns", LabelSelector: "a=b", FieldSelector: "f=g"},
	}, g.Queries())
	g.AllNamespaces = true
	for _, q := range g.Queries() {
		assert.Empty(t, q.Namespace, "-A lists every namespace")
	}
}

var (
	crdCols  = []metav1.TableColumnDefinition{col("Name", 0), col("Created At", 0)}
	podCols  = []metav1.TableColumnDefinition{col("Name", 0), col("Ready", 0), col("Status", 0), col("Node", 1)}
	depCols  = []metav1.TableColumnDefinition{col("Name", 0), col("Ready", 0), col("Images", 1)}
	nodeCols = []metav1.TableColumnDefinition{col("Name", 0), col("Status", 0)}
)

func crdTable() *metav1.Table {
	return table(crdCols,
		row("", "a.example.com", nil, "2026-11-29T22:03:26Z"),
		row("", "bb.example.com", nil, "2026-11-29T22:03:27Z"),
		row("", "c.example.com", nil, "2026-11-29T22:03:28Z"),
	)
}

func TestPrint(t *testing.T) {
	pods := Query{Resource: Pods, Namespace: "kserve", LabelSelector: "app=ctl"}
	deps := Query{Resource: Deployments, Namespace: "kserve", LabelSelector: "app=ctl"}
	podTable := table(podCols,
		row("kserve", "ctl-6j7zb", map[string]string{"app": "ctl", "tier": "control"}, "2/2", "Running", "cpu-node-1"),
		row("kserve", "ctl-x9p2q", map[string]string{"app": "ctl"}, "0/2", "CrashLoopBackOff", "cpu-node-2"),
	)
	depTable := table(depCols, row("kserve", "ctl", nil, "1/1", "kserve/ctl:v1"))
	empty := func(cols []metav1.TableColumnDefinition) *metav1.Table { return table(cols) }

	tests := []struct {
		name    string
		answers []answer
		get     Get
		want    string
	}{
		{
			name:    "names in the order asked, a missing one NotFound",
			answers: []answer{{q: Query{Resource: CRDs}, t: crdTable()}},
			get:     Get{Resources: []Resource{CRDs}, Names: []string{"c.example.com", "x.example.com", "a.example.com"}},
			want: "" +
				"NAME            CREATED AT\n" +
				"c.example.com   2026-11-29T22:03:28Z\n" +
				"a.example.com   2026-11-29T22:03:26Z\n" +
				`Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "x.example.com" not found` + "\n",
		},
		{
			name:    "every name missing",
			answers: []answer{{q: Query{Resource: CRDs}, t: crdTable()}},
			get:     Get{Resources: []Resource{CRDs}, Names: []string{"x.example.com"}},
			want:    `Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "x.example.com" not found` + "\n",
		},
		{
			name:    "a missing pod names the core resource",
			answers: []answer{{q: Query{Resource: Pods, Namespace: "kserve"}, t: podTable}},
			get:     Get{Resources: []Resource{Pods}, Namespace: "kserve", Names: []string{"nope"}},
			want:    `Error from server (NotFound): pods "nope" not found` + "\n",
		},
		{
			name:    "all rows",
			answers: []answer{{q: Query{Resource: CRDs}, t: crdTable()}},
			get:     Get{Resources: []Resource{CRDs}},
			want: "" +
				"NAME             CREATED AT\n" +
				"a.example.com    2026-11-29T22:03:26Z\n" +
				"bb.example.com   2026-11-29T22:03:27Z\n" +
				"c.example.com    2026-11-29T22:03:28Z\n",
		},
		{
			// Column widths restart with each type, as kubectl's printer does.
			name:    "two resource types: kind prefixes and one blank line between",
			answers: []answer{{q: deps, t: depTable}, {q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Deployments, Pods}, Namespace: "kserve", LabelSelector: "app=ctl"},
			want: "" +
				"NAME                  READY\n" +
				"deployment.apps/ctl   1/1\n" +
				"\n" +
				"NAME            READY   STATUS\n" +
				"pod/ctl-6j7zb   2/2     Running\n" +
				"pod/ctl-x9p2q   0/2     CrashLoopBackOff\n",
		},
		{
			name:    "an empty second type prints nothing",
			answers: []answer{{q: deps, t: depTable}, {q: pods, t: empty(podCols)}},
			get:     Get{Resources: []Resource{Deployments, Pods}, Namespace: "kserve", LabelSelector: "app=ctl"},
			want: "" +
				"NAME                  READY\n" +
				"deployment.apps/ctl   1/1\n",
		},
		{
			name:    "an empty first type leaves no blank line",
			answers: []answer{{q: deps, t: empty(depCols)}, {q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Deployments, Pods}, Namespace: "kserve", LabelSelector: "app=ctl"},
			want: "" +
				"NAME            READY   STATUS\n" +
				"pod/ctl-6j7zb   2/2     Running\n" +
				"pod/ctl-x9p2q   0/2     CrashLoopBackOff\n",
		},
		{
			name: "an empty middle type leaves one blank line",
			answers: []answer{{q: deps, t: depTable}, {q: pods, t: empty(podCols)},
				{q: Query{Resource: Services, Namespace: "kserve", LabelSelector: "app=ctl"}, t: table(nodeCols, row("kserve", "ctl", nil, "ClusterIP"))}},
			get: Get{Resources: []Resource{Deployments, Pods, Services}, Namespace: "kserve", LabelSelector: "app=ctl"},
			want: "" +
				"NAME                  READY\n" +
				"deployment.apps/ctl   1/1\n" +
				"\n" +
				"NAME          STATUS\n" +
				"service/ctl   ClusterIP\n",
		},
		{
			name:    "nothing in the namespace",
			answers: []answer{{q: deps, t: empty(depCols)}, {q: pods, t: empty(podCols)}},
			get:     Get{Resources: []Resource{Deployments, Pods}, Namespace: "kserve", LabelSelector: "app=ctl"},
			want:    "No resources found in kserve namespace.\n",
		},
		{
			name:    "nothing in any namespace",
			answers: []answer{{q: Query{Resource: Pods}, t: empty(podCols)}},
			get:     Get{Resources: []Resource{Pods}, AllNamespaces: true},
			want:    "No resources found\n",
		},
		{
			name:    "nothing cluster-scoped",
			answers: []answer{{q: Query{Resource: Nodes}, t: empty(nodeCols)}},
			get:     Get{Resources: []Resource{Nodes}},
			want:    "No resources found\n",
		},
		{
			name:    "all namespaces adds a NAMESPACE column",
			answers: []answer{{q: Query{Resource: Pods}, t: table(podCols, row("kserve", "a", nil, "1/1", "Running", "n1"), row("models", "bb", nil, "1/1", "Running", "n2"))}},
			get:     Get{Resources: []Resource{Pods}, AllNamespaces: true},
			want: "" +
				"NAMESPACE   NAME   READY   STATUS\n" +
				"kserve      a      1/1     Running\n" +
				"models      bb     1/1     Running\n",
		},
		{
			name:    "all namespaces, a cluster-scoped type has no NAMESPACE column",
			answers: []answer{{q: Query{Resource: Nodes}, t: table(nodeCols, row("", "n1", nil, "Ready"))}, {q: Query{Resource: Pods}, t: table(podCols, row("kserve", "a", nil, "1/1", "Running", "n1"))}},
			get:     Get{Resources: []Resource{Nodes, Pods}, AllNamespaces: true},
			want: "" +
				"NAME      STATUS\n" +
				"node/n1   Ready\n" +
				"\n" +
				"NAMESPACE   NAME    READY   STATUS\n" +
				"kserve      pod/a   1/1     Running\n",
		},
		{
			name:    "wide columns only with -o wide",
			answers: []answer{{q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "app=ctl", Wide: true},
			want: "" +
				"NAME        READY   STATUS             NODE\n" +
				"ctl-6j7zb   2/2     Running            cpu-node-1\n" +
				"ctl-x9p2q   0/2     CrashLoopBackOff   cpu-node-2\n",
		},
		{
			name:    "label columns",
			answers: []answer{{q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "app=ctl", LabelColumns: []string{"tier"}},
			want: "" +
				"NAME        READY   STATUS             TIER\n" +
				"ctl-6j7zb   2/2     Running            control\n" +
				"ctl-x9p2q   0/2     CrashLoopBackOff   \n",
		},
		{
			name:    "grep keeps matching lines only",
			answers: []answer{{q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "app=ctl", Grep: "Crash|NAME"},
			want: "" +
				"NAME        READY   STATUS\n" +
				"ctl-x9p2q   0/2     CrashLoopBackOff\n",
		},
		{
			name:    "grep matching nothing prints nothing",
			answers: []answer{{q: pods, t: podTable}},
			get:     Get{Resources: []Resource{Pods}, Namespace: "kserve", LabelSelector: "app=ctl", Grep: "Evicted"},
			want:    "",
		},
		{
			name: "grep across types keeps the kind prefixes",
			answers: []answer{
				{q: Query{Resource: ValidatingWebhookConfigurations}, t: table(crdCols, row("", "kserve.io", nil, "1"), row("", "other", nil, "1"))},
				{q: Query{Resource: MutatingWebhookConfigurations}, t: table(crdCols, row("", "kserve.io", nil, "2"))},
			},
			get: Get{Resources: []Resource{ValidatingWebhookConfigurations, MutatingWebhookConfigurations}, Grep: "/(" + GrepAny("kserve.io") + ") "},
			want: "" +
				"validatingwebhookconfiguration.admissionregistration.k8s.io/kserve.io   1\n" +
				"mutatingwebhookconfiguration.admissionregistration.k8s.io/kserve.io   2\n",
		},
		{
			name:    "a custom resource",
			answers: []answer{{q: Query{Resource: isvcs}, t: table([]metav1.TableColumnDefinition{col("Name", 0), col("Ready", 0)}, row("models", "sklearn-iris", nil, "True"))}},
			get:     Get{Resources: []Resource{isvcs}, AllNamespaces: true},
			want: "" +
				"NAMESPACE   NAME           READY\n" +
				"models      sklearn-iris   True\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := replay(t, tc.answers...)
			out, at, err := c.Print(context.Background(), tc.get)
			require.NoError(t, err)
			assert.Equal(t, tc.want, out)
			assert.Equal(t, t0, at)
			// The cached Tables are shared: printing again prints the same.
			again, _, err := c.Print(context.Background(), tc.get)
			require.NoError(t, err)
			assert.Equal(t, out, again)
		})
	}
}

func TestPrintCapturedAtIsTheNewestTable(t *testing.T) {
	later := t0.Add(90 * time.Second)
	c := replay(t,
		answer{q: Query{Resource: Deployments, Namespace: "ns"}, t: table(depCols), at: t0},
		answer{q: Query{Resource: Pods, Namespace: "ns"}, t: table(podCols), at: later},
	)
	_, at, err := c.Print(context.Background(), Get{Resources: []Resource{Deployments, Pods}, Namespace: "ns"})
	require.NoError(t, err)
	assert.Equal(t, later, at)
}

func TestPrintErrors(t *testing.T) {
	refused := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "",
		errors.New(`User "auditor" cannot list resource "nodes" in API group "" at the cluster scope`))
	c := replay(t,
		answer{q: Query{Resource: Nodes}, err: refused},
		answer{q: Query{Resource: CRDs}, t: crdTable()},
		answer{q: Query{Resource: Pods, Namespace: "ml"}, err: apierrors.NewUnauthorized("Unauthorized")},
	)
	ctx := context.Background()

	// kubectl 1.32 prints a 401 as `error: You must be logged in to the
	// server (MESSAGE)`, for a get as for a create (seen against a server
	// answering 401): one wording for reads and probes' writes.
	t.Run("unauthorized", func(t *testing.T) {
		out, _, err := c.Print(ctx, Get{Resources: []Resource{Pods}, Namespace: "ml"})
		require.Error(t, err)
		assert.Equal(t, "error: You must be logged in to the server (Unauthorized)\n", out)
	})

	t.Run("refused", func(t *testing.T) {
		out, at, err := c.Print(ctx, Get{Resources: []Resource{Nodes}})
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err))
		assert.Equal(t, t0, at, "a refusal is evidence too, captured when it was")
		assert.Equal(t, `Error from server (Forbidden): nodes is forbidden: User "auditor" cannot list resource "nodes" in API group "" at the cluster scope`+"\n", out)
	})
	t.Run("not recorded", func(t *testing.T) {
		out, _, err := c.Print(ctx, Get{Resources: []Resource{Pods}, Namespace: "x"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "recording test holds no answer to: list pods.v1 in namespace x")
		assert.Contains(t, err.Error(), "aiconform snapshot")
		assert.Empty(t, out, "no kubectl output is made up for a query never asked")
	})
	t.Run("names with several types", func(t *testing.T) {
		_, _, err := c.Print(ctx, Get{Resources: []Resource{CRDs, Nodes}, Names: []string{"a"}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "names need exactly one resource type")
	})
	t.Run("bad grep", func(t *testing.T) {
		_, _, err := c.Print(ctx, Get{Resources: []Resource{CRDs}, Grep: "(unclosed"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `grep -E "(unclosed"`)
	})
}

// listSource answers Lists from memory, for custom columns, which kubectl
// prints client side from the objects.
type listSource struct {
	objs map[string][]runtime.Object
	at   time.Time
}

func (s listSource) Raw(_ context.Context, path string) ([]byte, time.Time, error) {
	return nil, s.at, fmt.Errorf("GET %s: not served", path)
}

func (s listSource) List(_ context.Context, q Query) ([]runtime.Object, time.Time, error) {
	objs, ok := s.objs[q.Key()]
	if !ok {
		return nil, time.Time{}, apierrors.NewForbidden(schema.GroupResource{Resource: q.Resource.GVR.Resource}, "", errors.New("no"))
	}
	return objs, s.at, nil
}

func (s listSource) Table(context.Context, Query) (*metav1.Table, time.Time, error) {
	return nil, time.Time{}, errors.New("no tables here")
}

func (s listSource) Info(context.Context) (Info, error) { return Info{}, nil }

func TestPrintCustomColumns(t *testing.T) {
	gpuNode := func(name, gpus string) runtime.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if gpus != "" {
			n.Status.Capacity = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
			n.Status.Allocatable = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
		}
		return n
	}
	src := listSource{at: t0, objs: map[string][]runtime.Object{
		Query{Resource: Nodes}.Key(): {gpuNode("cpu-node-1", ""), gpuNode("gpu-node-1", "8")},
	}}
	c := NewCache(src)
	cols := `NAME:.metadata.name,GPU_ALLOCATABLE:.status.allocatable.nvidia\.com/gpu`

	out, at, err := c.Print(context.Background(), Get{Resources: []Resource{Nodes}, Names: []string{"gpu-node-1", "gone", "cpu-node-1"}, Columns: cols})
	require.NoError(t, err)
	assert.Equal(t, t0, at)
	assert.Equal(t, ""+
		"NAME         GPU_ALLOCATABLE\n"+
		"gpu-node-1   8\n"+
		"cpu-node-1   <none>\n"+
		`Error from server (NotFound): nodes "gone" not found`+"\n", out)

	out, _, err = c.Print(context.Background(), Get{Resources: []Resource{Nodes}, Names: []string{"gone"}, Columns: cols})
	require.NoError(t, err)
	assert.Equal(t, `Error from server (NotFound): nodes "gone" not found`+"\n", out)

	// kubectl prints an empty list's header, and its header before the
	// errors of several names none of which is found.
	empty := NewCache(listSource{at: t0, objs: map[string][]runtime.Object{Query{Resource: Nodes}.Key(): nil}})
	out, _, err = empty.Print(context.Background(), Get{Resources: []Resource{Nodes}, Columns: cols})
	require.NoError(t, err)
	assert.Equal(t, "NAME   GPU_ALLOCATABLE\n", out)
	out, _, err = c.Print(context.Background(), Get{Resources: []Resource{Nodes}, Names: []string{"gone", "lost"}, Columns: cols})
	require.NoError(t, err)
	assert.Equal(t, "NAME   GPU_ALLOCATABLE\n"+`Error from server (NotFound): nodes "gone" not found`+"\n"+`Error from server (NotFound): nodes "lost" not found`+"\n", out)

	// A pipe through grep filters custom columns too; kubectl's errors go
	// to standard error, past the pipe.
	out, _, err = c.Print(context.Background(), Get{Resources: []Resource{Nodes}, Names: []string{"gpu-node-1", "gone", "cpu-node-1"}, Columns: cols, Grep: "NAME|gpu"})
	require.NoError(t, err)
	assert.Equal(t, "NAME         GPU_ALLOCATABLE\ngpu-node-1   8\n"+`Error from server (NotFound): nodes "gone" not found`+"\n", out)

	_, _, err = c.Print(context.Background(), Get{Resources: []Resource{Nodes}, Columns: "NAME"})
	require.Error(t, err, "a spec without a path")

	out, _, err = c.Print(context.Background(), Get{Resources: []Resource{Pods}, Columns: cols})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err))
	assert.Contains(t, out, "Error from server (Forbidden): pods is forbidden")
}

// Custom columns of custom resources leave the shared objects as they are:
// two checks print them at once.
func TestPrintCustomColumnsLeavesObjectsAlone(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "llm", "namespace": "serve"}}}
	c := NewCache(listSource{at: t0, objs: map[string][]runtime.Object{Query{Resource: isvcs}.Key(): {u}}})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			out, _, err := c.Print(context.Background(), Get{Resources: []Resource{isvcs}, AllNamespaces: true, Columns: "NAME:.metadata.name,KIND:.kind"})
			assert.NoError(t, err)
			assert.Contains(t, out, "llm    InferenceService")
		})
	}
	wg.Wait()
	assert.Equal(t, map[string]any{"metadata": map[string]any{"name": "llm", "namespace": "serve"}}, u.Object, "kind and apiVersion not written into the shared object")
}

// nameServer answers Tables as the API server does: a field selector on
// metadata.name lets only the object of that name through. It keeps the
// keys it was asked, in order.
type nameServer struct {
	listSource
	tables map[string]*metav1.Table
	err    error
	asked  []string
}

func (s *nameServer) Table(_ context.Context, q Query) (*metav1.Table, time.Time, error) {
	s.asked = append(s.asked, q.Key())
	if s.err != nil {
		return nil, t0, s.err
	}
	name, all, named := q.named()
	t, ok := s.tables[all.Key()]
	if !ok {
		return nil, t0, fmt.Errorf("no table of %s", all)
	}
	if !named {
		return t, t0, nil
	}
	one := table(t.ColumnDefinitions)
	for _, r := range t.Rows {
		if rowName(r) == name {
			one.Rows = append(one.Rows, r)
		}
	}
	return one, t0, nil
}

// A few names are read one by one, never the whole list, and print what
// picking them from the list printed; a run recorded that way replays,
// and a recording of the list (made before) still answers them.
func TestPrintReadsFewNamesAlone(t *testing.T) {
	ctx := context.Background()
	crds := Query{Resource: CRDs}
	g := Get{Resources: []Resource{CRDs}, Names: []string{"c.example.com", "x.example.com", "a.example.com", "c.example.com"}}
	src := &nameServer{tables: map[string]*metav1.Table{crds.Key(): crdTable()}}
	c := NewCache(src)

	out, at, err := c.Print(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, t0, at)
	assert.Equal(t, ""+
		"NAME            CREATED AT\n"+
		"c.example.com   2026-11-29T22:03:28Z\n"+
		"a.example.com   2026-11-29T22:03:26Z\n"+
		"c.example.com   2026-11-29T22:03:28Z\n"+
		`Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "x.example.com" not found`+"\n", out)
	assert.Equal(t, []string{crds.Named("c.example.com").Key(), crds.Named("x.example.com").Key(), crds.Named("a.example.com").Key()}, src.asked)

	fromList, _, err := replay(t, answer{q: crds, t: crdTable()}).Print(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, fromList, out, "a recording of the whole list")

	rec, err := c.Recording(Info{ServerVersion: "v1.37.2", RecordedAt: t0})
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	loaded, err := LoadRecording("test", data)
	require.NoError(t, err)
	again, _, err := NewCache(loaded).Print(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, out, again, "a recording of the reads by name")

	many := make([]string, maxNamedReads+1)
	for i := range many {
		many[i] = fmt.Sprintf("crd-%d.example.com", i)
	}
	src.asked = nil
	_, _, err = NewCache(src).Print(ctx, Get{Resources: []Resource{CRDs}, Names: many})
	require.NoError(t, err)
	assert.Equal(t, []string{crds.Key()}, src.asked, "more names than are read alone: one LIST")
}

// A refused read by name prints what the refused LIST printed.
func TestPrintNamesRefused(t *testing.T) {
	ctx := context.Background()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "", errors.New(`User "auditor" cannot list resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`))
	g := Get{Resources: []Resource{CRDs}, Names: []string{"a.example.com"}}

	out, _, err := NewCache(&nameServer{err: forbidden}).Print(ctx, g)
	require.Error(t, err)
	fromList, _, listErr := replay(t, answer{q: Query{Resource: CRDs}, err: forbidden}).Print(ctx, g)
	require.Error(t, listErr)
	assert.Equal(t, fromList, out)
	assert.Contains(t, out, "Error from server (Forbidden)")
}
