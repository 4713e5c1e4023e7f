package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/plugin"
)

var fixedNow = time.Date(2026, 12, 7, 6, 52, 0, 0, time.UTC)

// fakeCluster serves /api/v1/nodes on 127.0.0.1, one node a page when
// asked for pages, filtered by the label selector as the API server does,
// and writes a kubeconfig pointing at it.
func fakeCluster(t *testing.T, nodes ...corev1.Node) (kubeconfig string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/nodes" {
			http.NotFound(w, r)
			return
		}
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var picked []corev1.Node
		for _, n := range nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				picked = append(picked, n)
			}
		}
		list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: []corev1.Node{}}
		start := 0
		fmt.Sscan(r.URL.Query().Get("continue"), &start)
		if start < len(picked) {
			list.Items = picked[start : start+1]
			if start+1 < len(picked) && r.URL.Query().Get("limit") != "" {
				list.Continue = fmt.Sprint(start + 1)
			} else {
				list.Items = picked[start:]
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return writeKubeconfig(t, srv.URL)
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q}
users:
- name: fake
  user: {}
contexts:
- name: fake
  context: {cluster: fake, user: fake}
- name: other
  context: {cluster: nowhere, user: fake}
current-context: other
`, server)), 0o600))
	return p
}

func labelled(name string, l map[string]string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// requestFor is what aiconform would send, for the fake's kubeconfig.
func requestFor(kubeconfig string) string {
	return fmt.Sprintf(`{"apiVersion":"aiconform.io/plugin/v1","runID":"20261207-065200-abcd","check":"plugin-node-labels",`+
		`"kubeconfig":%q,"context":"fake","probe":false,"timeoutSeconds":30,"deadline":"2099-01-01T00:00:00Z"}`, kubeconfig)
}

func runPlugin(t *testing.T, stdin string, args ...string) (answer, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut, func() time.Time { return fixedNow })
	var a answer
	if code == 0 {
		dec := json.NewDecoder(&out)
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&a), out.String())
	}
	return a, code, errOut.String()
}

func TestVerdicts(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no kubectl: the plugin's own summary
	kc := fakeCluster(t,
		labelled("gpu-1", map[string]string{"pool": "gpu", "accelerator": "h100"}),
		labelled("gpu-2", map[string]string{"pool": "gpu"}),
		labelled("cpu-1", map[string]string{"pool": "cpu", "accelerator": "none"}),
	)
	tests := []struct {
		name    string
		args    []string
		status  string
		reason  string
		details []string
	}{
		{"every node has it", []string{"pool"}, "pass", "all 3 nodes carry pool", nil},
		{"one lacks it", []string{"accelerator"}, "fail", "1 of 3 nodes do not carry accelerator", []string{"node gpu-2 has no label accelerator"}},
		{"a value", []string{"pool=gpu"}, "fail", "1 of 3 nodes do not carry pool=gpu", []string{"node cpu-1 has pool=cpu, not gpu"}},
		{"selected nodes", []string{"-selector", "pool=gpu", "pool=gpu"}, "pass", "all 2 nodes carry pool=gpu", nil},
		{"no node selected", []string{"-selector", "pool=tpu", "pool"}, "skip", "no node matches pool=tpu", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, code, stderr := runPlugin(t, requestFor(kc), tt.args...)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, apiVersion, a.APIVersion)
			assert.Equal(t, tt.status, a.Status)
			assert.Equal(t, tt.reason, a.Reason)
			assert.Equal(t, tt.details, a.Details)
			require.Len(t, a.Evidence, 1)
			assert.Equal(t, "2026-12-07T06:52:00Z", a.Evidence[0].CapturedAt)
			assert.Contains(t, a.Evidence[0].Note, "kubectl is not on PATH")
		})
	}

	a, _, _ := runPlugin(t, requestFor(kc), "accelerator")
	assert.Equal(t, evidence{
		Command:    "GET /api/v1/nodes",
		Output:     "NODE    ACCELERATOR\ncpu-1   none\ngpu-1   h100\ngpu-2   <none>\n",
		CapturedAt: "2026-12-07T06:52:00Z",
		Note:       "kubectl is not on PATH: the plugin's own summary of the API's answer, not a command's output; `kubectl get nodes -L accelerator` shows the same nodes",
	}, a.Evidence[0])
}

// TestKubectlEvidence puts a kubectl on PATH that says how it was called:
// the evidence is what it printed, under the command a person re-runs.
func TestKubectlEvidence(t *testing.T) {
	kc := fakeCluster(t, labelled("gpu-1", map[string]string{"pool": "gpu"}))
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "kubectl"), []byte("#!/bin/sh\necho \"kubectl $*\"\n"), 0o755))
	t.Setenv("PATH", bin)
	a, code, stderr := runPlugin(t, requestFor(kc), "-selector", "pool", "pool")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "pass", a.Status)
	assert.Equal(t, evidence{
		Command:    "kubectl get nodes -L pool -l pool",
		Output:     "kubectl get nodes -L pool -l pool --kubeconfig " + kc + " --context fake\n",
		CapturedAt: "2026-12-07T06:52:00Z",
	}, a.Evidence[0])
}

func TestCannotJudge(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	a, code, _ := runPlugin(t, requestFor(writeKubeconfig(t, srv.URL)), "pool")
	require.Equal(t, 0, code)
	assert.Equal(t, "error", a.Status)
	assert.Contains(t, a.Reason, "list nodes: ")
	assert.Empty(t, a.Evidence)

	_, code, stderr := runPlugin(t, `{"apiVersion":"aiconform.io/plugin/v2"}`, "pool")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "this plugin speaks aiconform.io/plugin/v1")
	_, code, _ = runPlugin(t, requestFor("x"))
	assert.Equal(t, 2, code, "no label given")
}

// TestThroughAiconform is docs/extending.md's worked example: the plugin
// built as a user would, found on PATH, run by package plugin as a check.
func TestThroughAiconform(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the example with")
	}
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", filepath.Join(bin, "aiconform-check-node-labels"), ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	kc := fakeCluster(t,
		labelled("gpu-1", map[string]string{"example.com/pool": "gpu"}),
		labelled("gpu-2", nil),
	)
	t.Setenv("PATH", bin)
	found, shadowed := plugin.Discover(os.Getenv("PATH"))
	require.Len(t, found, 1)
	assert.Empty(t, shadowed)
	spec := found[0]
	spec.Args, spec.Requirement, spec.Timeout = []string{"example.com/pool"}, "gpu_nodes", 30*time.Second

	res, err := plugin.New(spec, plugin.Conn{Kubeconfig: kc, Context: "fake"}).
		Run(context.Background(), &checks.Env{Now: func() time.Time { return fixedNow }})
	require.NoError(t, err)
	assert.Equal(t, "plugin-node-labels", res.Check.ID)
	assert.Equal(t, checks.Fail, res.Status, res.Reason)
	assert.Equal(t, "1 of 2 nodes do not carry example.com/pool", res.Reason)
	assert.Equal(t, []string{"node gpu-2 has no label example.com/pool"}, res.Details)
	require.Len(t, res.Evidence, 1)
	assert.Equal(t, "GET /api/v1/nodes", res.Evidence[0].Command)
	assert.True(t, strings.HasPrefix(res.Evidence[0].Note, "printed by plugin node-labels, not captured by aiconform: kubectl is not on PATH"), res.Evidence[0].Note)
}
