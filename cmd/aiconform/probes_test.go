package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func TestProbeFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a recording cannot be probed", []string{"check", "all", "--fixture", "demo", "--probe"}, "--probe writes to a live cluster"},
		{"a probe needs time", []string{"check", "all", "--fixture", "demo", "--probe-timeout", "0s"}, "--probe-timeout must be positive"},
		{"build takes the same flags", []string{"submission", "build", "--template", "t", "--metadata", "m", "--out", "o", "--fixture", "demo", "--probe"}, "--probe writes to a live cluster"},
		{"cleanup takes no arguments", []string{"cleanup", "x"}, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

func probeNamespace(name, run string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	if run != "" {
		u.SetLabels(map[string]string{probe.RunLabel: run})
	}
	return u
}

func TestCleanup(t *testing.T) {
	cq := schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ClusterQueue"}
	cqs := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	canary := &unstructured.Unstructured{}
	canary.SetGroupVersionKind(cq)
	canary.SetName("aiconform-canary-a")
	canary.SetLabels(map[string]string{probe.RunLabel: "a"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{probe.Namespaces: "NamespaceList", cqs: "ClusterQueueList"},
		probeNamespace("aiconform-probe-a", "a"), probeNamespace("aiconform-probe-b", "b"), probeNamespace("models", ""), canary)
	// The cluster serves Kueue's ClusterQueue, cluster-scoped, and no other
	// probe kind.
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(cq, meta.RESTScopeRoot)
	cleanup := func(run string) (string, string) {
		var out, errOut bytes.Buffer
		o := &CleanupOptions{RunID: run, dynamic: dyn, mapper: mapper, now: fixedClock, streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}}
		require.NoError(t, o.Run(context.Background()))
		return out.String(), errOut.String()
	}
	out, _ := cleanup("a")
	assert.Equal(t, "clusterqueue.kueue.x-k8s.io \"aiconform-canary-a\" deleted\nnamespace \"aiconform-probe-a\" deleted\n", out,
		"one run's, its cluster-scoped canary included, as kubectl delete says it")
	out, _ = cleanup("")
	assert.Equal(t, "namespace \"aiconform-probe-b\" deleted\n", out)
	out, errOut := cleanup("")
	assert.Empty(t, out)
	assert.Equal(t, "No probe leftovers found (label aiconform.io/run).\n", errOut)
	list, err := dyn.Resource(probe.Namespaces).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "models", list.Items[0].GetName(), "an unlabelled namespace is never touched")
}

func TestCleanupFlags(t *testing.T) {
	var got *CleanupOptions
	cmd := NewCmdCleanup(genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, func(o *CleanupOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--run", "20261130-000000-abcd", "--context", "prod"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "20261130-000000-abcd", got.RunID)
	assert.Equal(t, "prod", got.ConfigFlags.Overrides.CurrentContext)
	assert.True(t, strings.HasPrefix(cmd.Short, "Delete what --probe runs left behind"))
}

func TestInterruptedIsExit130(t *testing.T) {
	// A signal cancels the run's context: whatever that cuts short (here
	// the first read) exits 130, never 3 as if the cluster were down.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := runContext(ctx, false, []string{"check", "all", "--kubeconfig", "testdata/unreachable.kubeconfig"}, streams, fixedClock)
	assert.Equal(t, exitInterrupted, code, errOut.String())
	assert.Contains(t, errOut.String(), "interrupted")
}

func TestListSaysWhichChecksWrite(t *testing.T) {
	code, out, _ := run(t, "list")
	require.Equal(t, 0, code)
	probes := map[string]bool{"webhooks-answer": true, "canary-reconciled": true, "gang-probe": true, "hpa-probe": true, "scale-up-probe": true, "dra-probe": true}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasSuffix(fields[1], "_controller") && !strings.HasSuffix(fields[1], "_allocatable") && !strings.HasSuffix(fields[1], "_scheduling") && !strings.HasSuffix(fields[1], "_autoscaling") && fields[1] != "dra_support" {
			continue
		}
		if strings.Contains(fields[0], "-") {
			seen++
			assert.Equal(t, probes[fields[0]], fields[2] == "--probe", "%s", line)
		}
	}
	assert.Greater(t, seen, 10, "the checks table")
	assert.Regexp(t, `(?m)^kserve\s+robust_controller\s+webhook,canary\s`, out)
	assert.Regexp(t, `(?m)^kueue\s+robust_controller,gang_scheduling\s+webhook,canary,gang\s`, out)
	assert.Regexp(t, `(?m)^scale-up-probe\s+cluster_autoscaling\s+--probe --probe-scale-up\s`, out)
	assert.Regexp(t, `(?m)^robust_controller\s+MUST\s+operator\s+8\s`, out)
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), 180, "list fits a wide terminal: %s", line)
	}

	code, out, _ = run(t, "list", "-o", "wide")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^kserve\s+serving\.kserve\.io\s+kserve/kserve-controller-manager\s+robust_controller\s+webhook,canary\s`, out)
	assert.Regexp(t, `(?m)^scale-up-probe\s+cluster_autoscaling\s+false\s+--probe --probe-scale-up\s`, out)
	assert.Contains(t, out, "crds-established,controller-ready,")
}

func TestDescribeCleanup(t *testing.T) {
	assert.Equal(t, `namespace "aiconform-probe-a" deleted`, describeCleanup(probe.Leftover{Resource: "namespace", Name: "aiconform-probe-a"}, fixedClock()))
	stuck := probe.Leftover{Resource: "namespace", Name: "aiconform-probe-b", Terminating: true, Since: fixedClock().Add(-2 * time.Hour),
		Waiting: "Some content in the namespace has finalizers remaining: inferenceservice.finalizers in 1 resource instances"}
	assert.Equal(t, `namespace "aiconform-probe-b" is being deleted since 2026-11-29T10:00:00Z (2h0m0s ago): Some content in the namespace has finalizers remaining: inferenceservice.finalizers in 1 resource instances (finalizers are removed by the operator that set them, once it runs)`,
		describeCleanup(stuck, fixedClock()))
}

// failingMapper stands for discovery that cannot answer for a group (an
// aggregated API down, say).
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(gk schema.GroupKind, _ ...string) (*meta.RESTMapping, error) {
	return nil, fmt.Errorf("unable to retrieve the complete list of server APIs: %s: stale GroupVersion discovery", gk.Group)
}

func TestCleanupWhenDiscoveryFails(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{probe.Namespaces: "NamespaceList"}, probeNamespace("aiconform-probe-a", "a"))
	var out, errOut bytes.Buffer
	o := &CleanupOptions{dynamic: dyn, mapper: failingMapper{meta.NewDefaultRESTMapper(nil)}, now: fixedClock,
		streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}}
	require.NoError(t, o.Run(context.Background()))
	assert.Equal(t, "namespace \"aiconform-probe-a\" deleted\n", out.String(), "the namespaces are deleted all the same")
	assert.Contains(t, errOut.String(), "Warning: not looked for leftovers of ClusterQueue.kueue.x-k8s.io: ")
}
