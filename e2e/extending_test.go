//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// What a user adds without a release, on the rig, as docs/extending.md
// shows it: a config file that skips a requirement with a reason, the
// example declarative checks (one of the user's own requirement, one
// added to ai_inference), a check of a kind the cluster does not serve,
// the example plugin built from the repository, and the example data
// overlay. Each runs against the real API server: the declarative checks'
// discovery and LISTs, the plugin's own client.
func TestExtensionsOnRig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir := framework.RigBin(t)
	c := startRig(ctx, t, "extend", binDir)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	aiconform := buildAiconform(t)
	pluginBin := filepath.Join(t.TempDir(), "aiconform-check-node-labels")
	out, err := exec.Command("go", "build", "-o", pluginBin, "../examples/aiconform-check-node-labels").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	examples, err := filepath.Abs("../docs/examples")
	require.NoError(t, err)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "widgets.yaml"), []byte(`apiVersion: aiconform.io/v1alpha1
kind: Checks
checks:
- id: widgets-ready
  title: Widgets are ready
  requirement: accelerator_ownership
  description: Every Widget is ready.
  remediation: Install the widget operator.
  read: {apiVersion: example.com/v1, kind: Widget}
  expression: "true"
  message: never
`), 0o644))
	cfg := filepath.Join(dir, "aiconform.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`run: [gpu_nodes_allocatable, accelerator_ownership, cluster_autoscaling]
skip:
  - id: cluster_autoscaling
    reason: the rig has a fixed pair of nodes
data: `+filepath.Join(examples, "data")+`
checks: [`+filepath.Join(examples, "checks.yaml")+`, widgets.yaml]
plugins:
  - name: node-labels
    path: `+pluginBin+`
    args: [example.com/owner-team]
    requirement: accelerator_ownership
    timeout: 30s
`), 0o644))

	run := func() *report.Report {
		t.Helper()
		res := runBinary(ctx, t, aiconform, "check", "--config", cfg, "--kubeconfig", c.Kubeconfig(), "--out", dir)
		require.Contains(t, []int{0, 1}, res.code, res.stderr)
		rep, err := report.ReadFile(filepath.Join(dir, "report.json"))
		require.NoError(t, err)
		return rep
	}
	rep := run()
	assert.Contains(t, rep.Tool.CatalogDigest, "+extensions:sha256:")
	ca := requirement(t, rep, "cluster_autoscaling")
	assert.Equal(t, "Skipped", ca.Status)
	assert.Equal(t, "skipped by aiconform.yaml:3: the rig has a fixed pair of nodes", ca.Conclusion)

	owned := reportCheck(t, rep, "accelerator-nodes-owned", "")
	assert.Equal(t, "fail", owned.Status, owned.Reason)
	assert.Contains(t, strings.Join(owned.Details, "\n"), rig.GPUNodeName)
	require.NotEmpty(t, owned.Evidence)
	assert.True(t, strings.HasPrefix(owned.Evidence[0].Command, "kubectl get nodes"), owned.Evidence[0].Command)
	labels := reportCheck(t, rep, "plugin-node-labels", "")
	assert.Equal(t, "fail", labels.Status, labels.Reason)
	widgets := reportCheck(t, rep, "widgets-ready", "")
	assert.Equal(t, "error", widgets.Status)
	assert.Contains(t, widgets.Reason, "example.com/v1")
	t.Logf("a kind not served: %s", widgets.Reason)
	own := requirement(t, rep, "accelerator_ownership")
	assert.Equal(t, "user", own.Program)

	// The owner labels its nodes: the user's checks pass on the same run
	// of the same config.
	for _, n := range []string{rig.GPUNodeName, rig.CPUNodeName} {
		_, err := cs.CoreV1().Nodes().Patch(ctx, n, types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/owner-team":"ml-platform"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	rep = run()
	owned = reportCheck(t, rep, "accelerator-nodes-owned", "")
	assert.Equal(t, "pass", owned.Status, owned.Reason)
	labels = reportCheck(t, rep, "plugin-node-labels", "")
	assert.Equal(t, "pass", labels.Status, labels.Reason)
	require.NotEmpty(t, labels.Evidence)
	assert.Contains(t, labels.Evidence[0].Note, "printed by plugin node-labels")
	t.Logf("plugin: %s: %s", labels.Status, labels.Reason)
	gpu := requirement(t, rep, "gpu_nodes_allocatable")
	assert.Equal(t, "Implemented", gpu.Status, gpu.Conclusion)
}
