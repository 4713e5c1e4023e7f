package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const eksContext = "arn:aws:eks:eu-west-1:111122223333:cluster/prod"

// Several contexts, none reachable: each is an error of its own cluster,
// in its column and on stderr, and the run ends with exit 3.
func TestContextsUnreachable(t *testing.T) {
	for name, sel := range map[string][]string{
		"listed": {"--context", "staging," + eksContext},
		"all":    {"--all-contexts"},
	} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"check", "robust_controller", "--kubeconfig", "testdata/two-unreachable.kubeconfig", "--request-timeout", "5s", "--out", out}, sel...)
			code, stdout, stderr := run(t, args...)
			assert.Equal(t, 3, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			require.Len(t, lines, 2, stdout)
			header := strings.Fields(lines[0])
			assert.Equal(t, "REQUIREMENT", header[0])
			assert.ElementsMatch(t, []string{"STAGING", strings.ToUpper(eksContext)}, header[2:])
			assert.True(t, strings.HasPrefix(lines[1], "(verdict)"), lines[1])
			assert.Equal(t, 2, strings.Count(lines[1], "error: cannot reach the cluster"), lines[1])
			assert.Contains(t, stderr, "staging: error: cannot reach the cluster")
			assert.Contains(t, stderr, eksContext+": error: cannot reach the cluster")
			assert.Contains(t, stderr, "aiconform: no cluster could be reached: ")
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			assert.Empty(t, entries, "no report where no cluster answered")
		})
	}
}

func TestContextDir(t *testing.T) {
	assert.Equal(t, filepath.Join("r", "arn_aws_eks_eu-west-1_111122223333_cluster_prod"), contextDir("r", eksContext))
	assert.Equal(t, filepath.Join("r", "kind-dev"), contextDir("r", "kind-dev"))
	assert.Equal(t, filepath.Join("r", "_"), contextDir("r", ".."), "never the parent")
}

func TestContextsUsage(t *testing.T) {
	kc := "testdata/two-unreachable.kubeconfig"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"--context", "staging," + eksContext}, "2 contexts make 2 reports: name their directory with --out DIR"},
		{"one report format", []string{"--context", "staging," + eksContext, "--out", "x", "-o", "json"}, "-o json prints one report"},
		{"both selections", []string{"--context", "staging", "--all-contexts", "--out", "x"}, "--all-contexts and --context both say which clusters"},
		{"empty name", []string{"--context", "staging,,b", "--out", "x"}, `an empty context name`},
		{"named twice", []string{"--context", "staging,staging", "--out", "x"}, "staging is named twice"},
		{"a recording", []string{"--context", "staging," + eksContext, "--out", "x", "--fixture", "demo"}, "--fixture is a recording of one cluster; it takes no contexts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"check", "all", "--kubeconfig", kc}, tt.args...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
}
