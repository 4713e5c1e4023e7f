package declarative_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/declarative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

const examplePath = "../docs/examples/checks.yaml"

// catalog is the built-in catalog, which files name requirements of.
func catalog(t testing.TB) []checks.Requirement {
	t.Helper()
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	return reqs
}

// discovery is the body of GET /api/v1 or /apis/GROUP/VERSION serving
// resources, as `kubectl get --raw` prints it.
func discovery(t testing.TB, gv string, resources ...metav1.APIResource) string {
	t.Helper()
	b, err := json.Marshal(metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv, APIResources: resources,
	})
	require.NoError(t, err)
	return string(b)
}

// served is the world's discovery: core nodes (with their status
// subresource, also of kind Node), namespaces and pods, and widgets.
func served(t testing.TB, w *checkstest.World) {
	if w.Raw == nil {
		w.Raw = map[string]string{}
	}
	w.Raw["/api/v1"] = discovery(t, "v1",
		metav1.APIResource{Name: "nodes/status", Kind: "Node"},
		metav1.APIResource{Name: "nodes", Kind: "Node", Verbs: metav1.Verbs{"get", "list"}},
		metav1.APIResource{Name: "namespaces", Kind: "Namespace", Verbs: metav1.Verbs{"get", "list"}},
		metav1.APIResource{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}})
	w.Raw["/apis/"+checkstest.WidgetGroup+"/v1"] = discovery(t, checkstest.WidgetGroup+"/v1",
		metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}})
}

func load(t testing.TB, name string, data string) *declarative.File {
	t.Helper()
	f, err := declarative.Load(name, []byte(data), catalog(t))
	require.NoError(t, err)
	return f
}

func loadExample(t testing.TB) *declarative.File {
	t.Helper()
	data, err := os.ReadFile(examplePath)
	require.NoError(t, err)
	return load(t, examplePath, string(data))
}

// run runs f's checks on the healthy world after edit, and after serve on
// the fake cluster it serves (its reactors, objects of kinds World has no
// field for).
func run(t testing.TB, f *declarative.File, edit func(w *checkstest.World), serve func(fc *checkstest.FakeCluster)) checks.Outcome {
	t.Helper()
	w := checkstest.NewWorld(t)
	served(t, w)
	if edit != nil {
		edit(w)
	}
	fc := w.Serve()
	if serve != nil {
		serve(fc)
	}
	return fc.Run(f.Checks(), nil)
}

func namespace(t testing.TB, fc *checkstest.FakeCluster, name string, labels, annotations map[string]string) {
	t.Helper()
	require.NoError(t, fc.Kube.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}))
}

var inference = map[string]string{"example.com/workload": "inference"}

func TestExampleLoads(t *testing.T) {
	f := loadExample(t)
	assert.Equal(t, examplePath, f.Name())
	reqs := f.Requirements()
	require.Len(t, reqs, 1)
	assert.Equal(t, checks.Requirement{ID: "accelerator_ownership", Title: "Every accelerator node names the team that owns it",
		Level: checks.Must, Category: "user", Program: checks.UserProgram, Checks: []string{"accelerator-nodes-owned"}}, reqs[0])
	var ids []string
	for _, c := range f.Checks() {
		m := c.Meta()
		ids = append(ids, m.ID)
		assert.NotEmpty(t, m.Title)
		assert.NotEmpty(t, m.Remediation)
		// The description carries the read and the expressions, which the
		// catalog digest hashes.
		assert.Contains(t, m.Description, "Declarative check: reads")
	}
	assert.Equal(t, []string{"accelerator-nodes-owned", "inference-namespaces-have-contact"}, ids)
	assert.Equal(t, "ai_inference", f.Checks()[1].Meta().Requirement)
	assert.Contains(t, f.Checks()[1].Meta().Description, "the list must satisfy `objects.size() > 0`; otherwise warn.")
}

// TestExtend: a file's checks and requirements are what checks.Extend
// takes, a user's requirement gaining its checks, and a checklist
// requirement naming the user's check among its own.
func TestExtend(t *testing.T) {
	f := loadExample(t)
	assert.Equal(t, map[string]string{
		"accelerator_ownership":             examplePath + ":10",
		"accelerator-nodes-owned":           examplePath + ":17",
		"inference-namespaces-have-contact": examplePath + ":43",
	}, f.Origin())
	reqs, registry, err := checks.Extend(catalog(t), builtin.Registry(), f.Extensions())
	require.NoError(t, err)
	assert.Len(t, registry, len(builtin.Registry())+2)
	var own, inference checks.Requirement
	for _, r := range reqs {
		switch r.ID {
		case "accelerator_ownership":
			own = r
		case "ai_inference":
			inference = r
		}
	}
	assert.Equal(t, []string{"accelerator-nodes-owned"}, own.Checks)
	assert.Equal(t, checks.UserProgram, own.Program)
	assert.Equal(t, []string{"inference-namespaces-have-contact"}, inference.UserChecks)
	assert.Contains(t, inference.Checks, "inference-namespaces-have-contact")
}

// TestNoCatalog: without the catalog, a requirement the file does not
// declare is left for checks.Extend to judge.
func TestNoCatalog(t *testing.T) {
	data := strings.Replace(oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: \"true\"\n"), "gpu_nodes_allocatable", "gpu_node_allocatable", 1)
	f, err := declarative.Load("x.yaml", []byte(data), nil)
	require.NoError(t, err)
	_, _, err = checks.Extend(catalog(t), builtin.Registry(), f.Extensions())
	assert.ErrorContains(t, err, `x.yaml:4: check my-check names requirement "gpu_node_allocatable", which is neither the checklist's nor declared; did you mean "gpu_nodes_allocatable"?`)
}

func TestExampleRuns(t *testing.T) {
	f := loadExample(t)
	owned := func(w *checkstest.World) {
		for _, n := range w.Nodes {
			n.Labels = map[string]string{"example.com/owner-team": "ml-platform"}
		}
	}
	cases := []struct {
		name    string
		edit    func(w *checkstest.World)
		serve   func(fc *checkstest.FakeCluster)
		id      string
		status  checks.Status
		reason  string
		details []string
	}{
		{name: "owned nodes pass", edit: owned, id: "accelerator-nodes-owned", status: checks.Pass,
			reason: "all 2 Node v1 objects satisfy the expression"},
		{name: "an accelerator node without owner fails", id: "accelerator-nodes-owned", status: checks.Fail,
			reason:  "1 of 2 Node v1 objects fail: has nvidia.com/gpu but no example.com/owner-team label",
			details: []string{"node/gpu-node-1: has nvidia.com/gpu but no example.com/owner-team label"}},
		{name: "annotated inference namespaces pass", id: "inference-namespaces-have-contact", status: checks.Pass,
			serve: func(fc *checkstest.FakeCluster) {
				namespace(t, fc, "serving", inference, map[string]string{"example.com/on-call": "ml-sre"})
				namespace(t, fc, "batch", nil, nil)
			},
			reason: "all 1 Namespace v1 objects satisfy the expression"},
		{name: "a namespace without contact warns", id: "inference-namespaces-have-contact", status: checks.Warn,
			serve: func(fc *checkstest.FakeCluster) {
				namespace(t, fc, "serving", inference, map[string]string{"example.com/on-call": "ml-sre"})
				namespace(t, fc, "llm", inference, map[string]string{"example.com/on-call": ""})
				namespace(t, fc, "batch", nil, nil)
			},
			reason:  "1 of 2 Namespace v1 objects fail: names no on-call contact (annotation example.com/on-call)",
			details: []string{"namespace/llm: names no on-call contact (annotation example.com/on-call)"}},
		{name: "no inference namespace warns by the list", id: "inference-namespaces-have-contact", status: checks.Warn,
			serve:  func(fc *checkstest.FakeCluster) { namespace(t, fc, "batch", nil, nil) },
			reason: "no namespace is labelled example.com/workload=inference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := checkstest.Result(t, run(t, f, tc.edit, tc.serve), tc.id, "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Equal(t, tc.reason, r.Reason)
			assert.Equal(t, tc.details, r.Details)
		})
	}
}

// TestEvidence: the evidence is the kubectl command of the read, with the
// fake's answer (the fakes render no Tables) and the run's clock.
func TestEvidence(t *testing.T) {
	f := loadExample(t)
	out := run(t, f, nil, nil)
	r := checkstest.Result(t, out, "inference-namespaces-have-contact", "")
	require.Len(t, r.Evidence, 1)
	assert.Equal(t, "kubectl get namespaces -l example.com/workload=inference", r.Evidence[0].Command)
	assert.Equal(t, checkstest.Clock, r.Evidence[0].CapturedAt)
	assert.Equal(t, "the objects inference-namespaces-have-contact judges", r.Evidence[0].Note)
}

// TestEvidenceOfALongList: of a long list, the evidence shows the failing
// objects' rows, not every object's.
func TestEvidenceOfALongList(t *testing.T) {
	f := loadExample(t)
	many := func(w *checkstest.World) {
		for i := range 24 {
			n := checkstest.Node(fmt.Sprintf("cpu-node-%02d", i+2), corev1.ConditionTrue, nil)
			w.Nodes = append(w.Nodes, n)
		}
		w.Nodes = append(w.Nodes, checkstest.Node("gpu-node-2", corev1.ConditionTrue, checkstest.GPUs("4")))
	}
	r := checkstest.Result(t, run(t, f, many, nil), "accelerator-nodes-owned", "")
	assert.Equal(t, checks.Fail, r.Status, r.Reason)
	assert.Equal(t, "2 of 27 Node v1 objects fail: has nvidia.com/gpu but no example.com/owner-team label", r.Reason)
	require.Len(t, r.Evidence, 1)
	assert.Equal(t, `kubectl get nodes | grep -E '^NAME|(^| )(gpu-node-1|gpu-node-2)( |$)'`, r.Evidence[0].Command)
	assert.Equal(t, "the 2 objects of 27 that fail", r.Evidence[0].Note)
}

// nodesTable is the server's Table of nodes, as `kubectl get nodes` receives it.
func nodesTable(t testing.TB, nodes []*corev1.Node) *metav1.Table {
	t.Helper()
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"}, {Name: "Status", Type: "string"}}}
	for _, n := range nodes {
		raw, err := json.Marshal(metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
		require.NoError(t, err)
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{n.Name, "Ready"}, Object: runtime.RawExtension{Raw: raw}})
	}
	return table
}

// TestEvidenceFromTables: replayed from a recording that holds the
// server's Tables, the evidence is what kubectl prints, with when it was
// captured: of a long list with failures, the header and the failing rows.
func TestEvidenceFromTables(t *testing.T) {
	f := loadExample(t)
	for _, size := range []int{2, 27} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			w := checkstest.NewWorld(t)
			served(t, w)
			for i := range size - 3 {
				w.Nodes = append(w.Nodes, checkstest.Node(fmt.Sprintf("cpu-node-%02d", i+2), corev1.ConditionTrue, nil))
			}
			if size > 2 {
				w.Nodes = append(w.Nodes, checkstest.Node("gpu-node-2", corev1.ConditionTrue, checkstest.GPUs("4")))
			}
			require.Len(t, w.Nodes, size)
			cache := w.Serve().Cache()
			opts := checks.RunOptions{Concurrency: 1, Timeout: time.Minute, JudgeAt: checkstest.FixedNow}
			checks.Run(context.Background(), cache, nil, checks.Selection{Checks: f.Checks()[:1]}, opts, checkstest.FixedNow)
			rec, err := cache.Recording(cluster.Info{RecordedAt: checkstest.Clock})
			require.NoError(t, err)
			captured := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			require.Len(t, rec.Tables, 1, "the fakes' Table of nodes, which they cannot render")
			rec.Tables[0].Error, rec.Tables[0].CapturedAt = nil, captured
			rec.Tables[0].Table = nodesTable(t, w.Nodes)
			data, err := rec.Marshal()
			require.NoError(t, err)
			replay, err := cluster.LoadRecording("replay", data)
			require.NoError(t, err)
			out := checks.Run(context.Background(), cluster.NewCache(replay), nil, checks.Selection{Checks: f.Checks()[:1]}, opts, checkstest.FixedNow)
			r := checkstest.Result(t, out, "accelerator-nodes-owned", "")
			assert.Equal(t, checks.Fail, r.Status, r.Reason)
			require.Len(t, r.Evidence, 1)
			step := r.Evidence[0]
			assert.Equal(t, captured, step.CapturedAt)
			lines := strings.Split(strings.TrimSpace(step.Output), "\n")
			if size == 2 {
				assert.Equal(t, "kubectl get nodes", step.Command)
				assert.Len(t, lines, 3, step.Output)
				return
			}
			// Padded for the longest name of the whole list (cpu-node-02),
			// as kubectl's output is before the pipe greps it.
			assert.Equal(t, []string{"NAME          STATUS", "gpu-node-1    Ready", "gpu-node-2    Ready"}, lines)
		})
	}
}

const header = "apiVersion: aiconform.io/v1alpha1\nkind: Checks\n"

// oneCheck is a file of one check under gpu_nodes_allocatable with the
// given read and expressions (YAML lines, indented as a check's keys).
func oneCheck(body string) string {
	return header + `checks:
- id: my-check
  title: My check
  requirement: gpu_nodes_allocatable
  description: Something of mine.
  remediation: Fix it.
` + body
}

func TestRun(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		serve  func(fc *checkstest.FakeCluster)
		status checks.Status
		reason string
		detail string
	}{
		{name: "custom resources are read unstructured", status: checks.Pass,
			body: `  read: {apiVersion: demo.example.com/v1, kind: Widget, namespace: apps}
  expression: object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && object.kind == 'Widget'
`, reason: "all 1 Widget demo.example.com/v1 objects satisfy the expression"},
		{name: "typed objects carry apiVersion and kind", status: checks.Pass,
			body: `  read: {apiVersion: v1, kind: Node}
  expression: object.apiVersion == 'v1' && object.kind == 'Node'
`, reason: "all 2 Node v1 objects satisfy the expression"},
		{name: "a default message quotes the expression", status: checks.Fail,
			body: `  read: {apiVersion: v1, kind: Node}
  expression: object.metadata.name.startsWith('cpu-')
`, reason: "1 of 2 Node v1 objects fail: does not satisfy object.metadata.name.startsWith('cpu-')",
			detail: "node/gpu-node-1: does not satisfy object.metadata.name.startsWith('cpu-')"},
		{name: "a failing messageExpression falls back to message", status: checks.Fail,
			body: `  read: {apiVersion: v1, kind: Node}
  expression: "false"
  message: is not wanted
  messageExpression: object.metadata.labels['absent']
`, detail: "node/cpu-node-1: is not wanted (messageExpression: no such key: absent)"},
		{name: "a list expression alone", status: checks.Fail,
			body: `  read: {apiVersion: v1, kind: Node}
  listExpression: objects.size() >= 3
`, reason: "the list does not satisfy listExpression objects.size() >= 3"},
		{name: "no object and no list expression is not applicable", status: checks.Skip,
			body: `  read: {apiVersion: v1, kind: Pod, namespace: nowhere}
  expression: "true"
`, reason: "no Pod v1 object matched the read (pods.v1 in namespace nowhere): nothing to judge"},
		{name: "a group version the cluster does not serve", status: checks.Error,
			body: `  read: {apiVersion: serving.kserve.io/v1beta1, kind: InferenceService}
  expression: "true"
`, reason: "the cluster does not serve kind InferenceService: it serves no API group version serving.kserve.io/v1beta1"},
		{name: "a kind the group version does not hold", status: checks.Error,
			body: `  read: {apiVersion: v1, kind: Widget}
  expression: "true"
`, reason: "the cluster does not serve kind Widget in v1 (it serves Node, Namespace, Pod)"},
		{name: "a forbidden list", status: checks.Error,
			serve: func(fc *checkstest.FakeCluster) {
				fc.Kube.PrependReactor("list", "nodes", checkstest.Forbidden("", "nodes"))
			},
			body: `  read: {apiVersion: v1, kind: Node}
  expression: "true"
`, reason: `list nodes.v1: nodes is forbidden: User "auditor" cannot list resource "nodes"`},
		{name: "a list past its deadline", status: checks.Error,
			serve: func(fc *checkstest.FakeCluster) {
				fc.Kube.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewTimeoutError("the server was too slow", 1)
				})
			},
			body: `  read: {apiVersion: v1, kind: Node}
  expression: "true"
`, reason: "list nodes.v1: Timeout: the server was too slow"},
		{name: "a forbidden discovery", status: checks.Error,
			serve: func(fc *checkstest.FakeCluster) {
				fc.Get = func(path string) ([]byte, error) {
					return nil, apierrors.NewForbidden(schema.GroupResource{}, path, fmt.Errorf("User %q cannot get path %q", "auditor", path))
				}
			},
			body: `  read: {apiVersion: v1, kind: Node}
  expression: "true"
`, reason: "read which resources the cluster serves in v1: forbidden"},
		{name: "a cluster-scoped kind in a namespace", status: checks.Error,
			body: `  read: {apiVersion: v1, kind: Node, namespace: apps}
  expression: "true"
`, reason: `Node is not namespaced: read.namespace "apps" has no meaning for it`},
		{name: "a dyn expression that is not a bool", status: checks.Error,
			body: `  read: {apiVersion: v1, kind: Node}
  expression: object.metadata.name
`, reason: "2 of 2 Node v1 objects could not be judged: node/cpu-node-1: expression returned a string, not a bool"},
		{name: "a missing key is an error, not a failure", status: checks.Error,
			body: `  read: {apiVersion: v1, kind: Node}
  expression: object.metadata.labels['team'] == 'a'
`, reason: "could not be judged: node/cpu-node-1: expression: no such key: team"},
		{name: "a runaway expression stops at the cost limit", status: checks.Error,
			body: `  read: {apiVersion: v1, kind: Node, fieldSelector: metadata.name=cpu-node-1}
  expression: >-
    [0,1,2,3,4,5,6,7,8,9].all(a, [0,1,2,3,4,5,6,7,8,9].all(b, [0,1,2,3,4,5,6,7,8,9].all(c,
    [0,1,2,3,4,5,6,7,8,9].all(d, [0,1,2,3,4,5,6,7,8,9].all(e, [0,1,2,3,4,5,6,7,8,9].all(f, a + b + c + d + e + f >= 0))))))
`, reason: "cost limit exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := load(t, "mine.yaml", oneCheck(tc.body))
			r := checkstest.Result(t, run(t, f, nil, tc.serve), "my-check", "")
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
			if tc.detail != "" {
				assert.Contains(t, r.Details, tc.detail)
			}
		})
	}
}

// TestReplay: a run's reads, discovery included, are in its recording,
// and the recording replays the same verdicts.
func TestReplay(t *testing.T) {
	f := loadExample(t)
	w := checkstest.NewWorld(t)
	served(t, w)
	fc := w.Serve()
	namespace(t, fc, "llm", inference, nil)
	cache := fc.Cache()
	opts := checks.RunOptions{Concurrency: 2, Timeout: time.Minute, JudgeAt: checkstest.FixedNow}
	live := checks.Run(context.Background(), cache, nil, checks.Selection{Checks: f.Checks()}, opts, checkstest.FixedNow)
	rec, err := cache.Recording(cluster.Info{RecordedAt: checkstest.Clock})
	require.NoError(t, err)
	var paths []string
	for _, r := range rec.Raws {
		paths = append(paths, r.Path)
	}
	assert.Equal(t, []string{"/api/v1"}, paths)
	data, err := rec.Marshal()
	require.NoError(t, err)
	replay, err := cluster.LoadRecording("replay", data)
	require.NoError(t, err)
	again := checks.Run(context.Background(), cluster.NewCache(replay), nil, checks.Selection{Checks: f.Checks()}, opts, checkstest.FixedNow)
	require.Len(t, again.Results, len(live.Results))
	for i := range live.Results {
		assert.Equal(t, live.Results[i].Status, again.Results[i].Status)
		assert.Equal(t, live.Results[i].Reason, again.Results[i].Reason)
		assert.Equal(t, live.Results[i].Details, again.Results[i].Details)
	}
	assert.Equal(t, checks.Fail, live.Results[0].Status, live.Results[0].Reason)
	assert.Equal(t, checks.Warn, live.Results[1].Status, live.Results[1].Reason)
}

// TestRecordingWithoutDiscovery: a recording made before the check
// existed holds no discovery of its kind, which is Error, never Pass.
func TestRecordingWithoutDiscovery(t *testing.T) {
	f := loadExample(t)
	rec, err := cluster.LoadRecording("old.yaml", []byte("apiVersion: "+cluster.RecordingAPIVersion+"\nkind: "+cluster.RecordingKind+"\ncluster: {}\n"))
	require.NoError(t, err)
	out := checks.Run(context.Background(), cluster.NewCache(rec), nil, checks.Selection{Checks: f.Checks()}, checks.RunOptions{Concurrency: 1, Timeout: time.Minute}, checkstest.FixedNow)
	for _, r := range out.Results {
		assert.Equal(t, checks.Error, r.Status, r.Check.ID)
		assert.Contains(t, r.Reason, "read which resources the cluster serves in v1: recording old.yaml holds no answer to: get /api/v1", r.Check.ID)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name string
		file string
		// want are the lines of the error, each file:line:column: message.
		want []string
	}{
		{name: "an unknown key names the nearest",
			file: oneCheck("  read: {apiVersion: v1, kind: Node}\n  expresion: \"true\"\n"),
			want: []string{
				`x.yaml:10:3: check: unknown key "expresion" (did you mean "expression"?)`,
				`x.yaml:4:3: check my-check: missing expression (each object) or listExpression (the list): give one or both`,
			}},
		{name: "an unknown key of read",
			file: oneCheck("  read: {apiVersion: v1, kind: Node, labelSelectors: a=b}\n  expression: \"true\"\n"),
			want: []string{`x.yaml:9:38: read: unknown key "labelSelectors" (did you mean "labelSelector"?)`}},
		{name: "a CEL expression that does not compile",
			file: oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: object.metadata.name ==\n"),
			want: []string{"x.yaml:10:15: expression does not compile:\nERROR: <input>:1:24: Syntax error: mismatched input '<EOF>'"}},
		{name: "a list variable in an object's expression",
			file: oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: objects.size() > 0\n"),
			want: []string{"x.yaml:10:15: expression does not compile:\nERROR: <input>:1:1: undeclared reference to 'objects'"}},
		{name: "an expression that is not a bool",
			file: oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: \"'yes'\"\n"),
			want: []string{"x.yaml:10:15: expression: want a bool, got a string"}},
		{name: "a message expression that is not a string",
			file: oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: \"true\"\n  messageExpression: \"1 + 2\"\n"),
			want: []string{"x.yaml:11:22: messageExpression: want a string, got a int"}},
		{name: "missing fields",
			file: header + "checks:\n- id: my-check\n  title: t\n  requirement: gpu_nodes_allocatable\n  read: {kind: Node}\n  expression: \"true\"\n",
			want: []string{
				"x.yaml:4:3: check: missing description",
				"x.yaml:4:3: check: missing remediation",
				"x.yaml:7:9: read: missing apiVersion",
			}},
		{name: "a requirement neither the checklist's nor the file's",
			file: strings.Replace(oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: \"true\"\n"), "gpu_nodes_allocatable", "gpu_node_allocatable", 1),
			want: []string{`x.yaml:6:16: requirement "gpu_node_allocatable" is neither the checklist's nor the file's (did you mean "gpu_nodes_allocatable"?)`}},
		{name: "values out of range",
			file: oneCheck("  read: {apiVersion: v1, kind: Node, labelSelector: 'a b c'}\n  expression: \"true\"\n  onFailure: error\n"),
			want: []string{
				`x.yaml:11:14: onFailure "error": want fail or warn`,
				`x.yaml:9:53: labelSelector "a b c": `,
			}},
		{name: "a check with a requirement's id",
			file: header + `requirements:
- {id: mine, title: Mine, level: MUST}
checks:
- id: mine
  title: t
  requirement: mine
  description: d
  remediation: r
  read: {apiVersion: v1, kind: Node}
  expression: "true"
`,
			want: []string{"x.yaml:6:3: check mine has the id of a requirement"}},
		{name: "a built-in check's id",
			file: strings.Replace(oneCheck("  read: {apiVersion: v1, kind: Node}\n  expression: \"true\"\n"), "my-check", "device-access-mediated", 1),
			want: []string{"x.yaml:4:3: check device-access-mediated is a built-in check's id: choose another"}},
		{name: "requirements of the file's own",
			file: header + `requirements:
- {id: gang_scheduling, title: Mine, level: MUST}
- {id: Unused, title: Mine, level: MAY}
- {id: unused, title: Unused, level: SHOULD}
checks:
- id: My_Check
  title: t
  requirement: unused
  description: d
  remediation: r
  read: {apiVersion: v1, kind: Node}
  expression: "true"
`,
			want: []string{
				"x.yaml:4:3: requirement gang_scheduling is the checklist's: name it from a check instead of declaring it",
				`x.yaml:5:8: requirement id "Unused": want snake_case`,
				`x.yaml:5:36: level "MAY": want MUST or SHOULD`,
				`x.yaml:8:7: check id "My_Check": want kebab-case`,
				"x.yaml:6:3: requirement unused: no check names it, so it could never be met",
			}},
		{name: "another version of the format",
			file: "apiVersion: aiconform.io/v2\nkind: Check\nchecks: []\n",
			want: []string{
				`x.yaml:1:13: apiVersion "aiconform.io/v2": want aiconform.io/v1alpha1`,
				`x.yaml:2:7: kind "Check": want Checks`,
				"x.yaml:3:9: checks: the file declares no check",
			}},
		{name: "not YAML", file: "checks: [\n", want: []string{"x.yaml: yaml: line 1: did not find expected node content"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := declarative.Load("x.yaml", []byte(tc.file), catalog(t))
			require.Error(t, err)
			var p *declarative.Problem
			assert.ErrorAs(t, err, &p, "a user's mistake, which the CLI maps to exit 2")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestDocLoads: the file docs/extending.md shows is a valid one, with the
// example's checks and requirements, so the page cannot drift from the
// format.
func TestDocLoads(t *testing.T) {
	page, err := os.ReadFile("../docs/extending.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(page), "\n## Declarative checks\n")
	require.True(t, ok, "docs/extending.md has no Declarative checks section")
	_, block, ok := strings.Cut(section, "```yaml\n"+header)
	require.True(t, ok, "the section shows no file")
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	doc := load(t, "extending.md", header+block)
	example := loadExample(t)
	assert.Equal(t, example.Requirements(), doc.Requirements())
	var want, got []string
	for _, c := range example.Checks() {
		want = append(want, c.Meta().ID+" "+c.Meta().Requirement)
	}
	for _, c := range doc.Checks() {
		got = append(got, c.Meta().ID+" "+c.Meta().Requirement)
	}
	assert.Equal(t, want, got)
}

// A user's expression may read what no built-in check does (a node's
// system info): the check reads its objects whole, and sees it.
func TestReadsWholeObjects(t *testing.T) {
	f := load(t, "mine.yaml", oneCheck(`  read: {apiVersion: v1, kind: Node}
  expression: object.status.nodeInfo.kubeletVersion.startsWith('v1.37')
`))
	out := run(t, f, func(w *checkstest.World) {
		for _, n := range w.Nodes {
			n.Status.NodeInfo.KubeletVersion = "v1.37.2"
		}
	}, nil)
	r := checkstest.Result(t, out, "my-check", "")
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
}
