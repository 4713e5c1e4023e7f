package plugin

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiscover(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("names and modes differ on Windows")
	}
	first, second, empty := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir, name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), mode))
		return p
	}
	labels := write(first, "aiconform-check-node-labels", 0o755)
	write(first, "aiconform-check-not-executable", 0o644)
	write(first, "aiconform-check-Upper", 0o755)
	write(first, "aiconform-check-", 0o755)
	write(first, "kubectl-foo", 0o755)
	require.NoError(t, os.Mkdir(filepath.Join(first, "aiconform-check-a-directory"), 0o755))
	shadowed := write(second, "aiconform-check-node-labels", 0o755)
	gateway := write(second, "aiconform-check-gateway", 0o755)
	linked := filepath.Join(second, "aiconform-check-linked")
	require.NoError(t, os.Symlink(labels, linked))
	write(empty, "aiconform-check-relative", 0o755)

	path := strings.Join([]string{
		filepath.Join(t.TempDir(), "missing"), first, "", "relative/dir", first + "/", second,
	}, string(os.PathListSeparator))
	t.Chdir(empty) // "" and "relative/dir" would find aiconform-check-relative here
	found, shadows := Discover(path)
	assert.Equal(t, []Spec{
		{Name: "gateway", Path: gateway, Source: "PATH"},
		{Name: "linked", Path: linked, Source: "PATH"},
		{Name: "node-labels", Path: labels, Source: "PATH"},
	}, found)
	assert.Equal(t, []Spec{{Name: "node-labels", Path: shadowed, Source: "PATH"}}, shadows,
		"the same directory twice shadows nothing; another one's plugin of the same name does")
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"node-labels": true, "gpu2": true, "": false, "-x": false, "x-": false, "Node": false, "a_b": false, "a.b": false,
	} {
		assert.Equal(t, ok, ValidName(name), name)
	}
}

func TestMeta(t *testing.T) {
	m := New(Spec{Name: "node-labels", Path: "/usr/local/bin/aiconform-check-node-labels", Requirement: "gpu_nodes", Source: "PATH"}, Conn{}).Meta()
	assert.Equal(t, "plugin-node-labels", m.ID)
	assert.Equal(t, "Plugin node-labels", m.Title)
	assert.Equal(t, "gpu_nodes", m.Requirement)
	assert.Contains(t, m.Description, "A check of the user's own: plugin node-labels (/usr/local/bin/aiconform-check-node-labels), declared in PATH.")
	assert.NotEmpty(t, m.Remediation)

	m = New(Spec{Name: "x", ID: "gpu-labels", Title: "GPU nodes are labelled"}, Conn{}).Meta()
	assert.Equal(t, "gpu-labels", m.ID)
	assert.Equal(t, "GPU nodes are labelled", m.Title)
}
