//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/report"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// assertSeveralContexts runs the binary against two contexts of one
// kubeconfig: the rig's, and one whose server does not answer. The rig
// gets its report and its column; the other is an error of its own, and
// the run, not met on one cluster, ends with exit 1.
func assertSeveralContexts(ctx context.Context, t *testing.T, kubeconfig, requirement, want string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	rigContext := cfg.CurrentContext
	user := cfg.Contexts[rigContext].AuthInfo
	cfg.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	cfg.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: user}
	two := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, two))

	out := t.TempDir()
	res := runBinary(ctx, t, buildAiconform(t), "check", requirement, "--kubeconfig", two, "--context", rigContext+",gone",
		"--request-timeout", "10s", "--out", out)
	assert.Equal(t, 1, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	// The rig's context name is safe in a path: its directory is the name.
	rep, err := report.ReadFile(filepath.Join(out, rigContext, "report.json"))
	require.NoError(t, err, res.stderr)
	require.Len(t, rep.Requirements, 1)
	assert.Equal(t, want, rep.Requirements[0].Status)
	assert.Equal(t, rigContext, rep.Run.Cluster.Context)

	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 3, res.stdout)
	assert.Equal(t, []string{"REQUIREMENT", "LEVEL", strings.ToUpper(rigContext), "GONE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{requirement, "MUST", want, "-"}, strings.Fields(lines[1]))
	assert.Contains(t, lines[2], "error: cannot reach the cluster")
	assert.Contains(t, res.stderr, "gone: error: cannot reach the cluster")
	t.Logf("two contexts, one unreachable:\n%s", res.stdout)
}
