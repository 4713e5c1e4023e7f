package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestVersion: the text and the JSON say the same, and the catalog digest
// is the one a report of the same build carries.
func TestVersion(t *testing.T) {
	code, text, errOut := run(t, "version")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := run(t, "version", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var v versionInfo
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, "aiconform", v.Name)
	assert.NotEmpty(t, v.Version)
	assert.Equal(t, runtime.Version(), v.GoVersion)
	assert.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, v.Platform)
	assert.True(t, strings.HasPrefix(v.CatalogDigest, "sha256:"), v.CatalogDigest)
	assert.True(t, strings.HasPrefix(text, "aiconform "+v.Version+"\n"), text)
	assert.Contains(t, text, "catalog: "+v.CatalogDigest+"\n")
	assert.Contains(t, text, "go:      "+v.GoVersion)

	// The digest a run with the built-in profiles writes into its report.
	code, out, errOut = run(t, "check", "robust_controller", "--fixture", "demo", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Tool struct {
			CatalogDigest string `json:"catalogDigest"`
		} `json:"tool"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, v.CatalogDigest, rep.Tool.CatalogDigest)

	code, _, errOut = run(t, "version", "-o", "yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--output must be json")
}

// Run as kubectl-aiconform, the binary is kubectl's plugin: its help and
// examples say `kubectl aiconform`; under its own name they do not.
func TestKubectlPlugin(t *testing.T) {
	assert.True(t, isPlugin("/usr/local/bin/kubectl-aiconform"))
	assert.True(t, isPlugin("kubectl-aiconform.exe"), "the Windows binary")
	assert.False(t, isPlugin("/usr/local/bin/aiconform"))

	help := func(plugin bool, args ...string) string {
		var out, errOut bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		require.Equal(t, 0, runContext(context.Background(), plugin, args, streams, fixedClock), errOut.String())
		return out.String()
	}
	got := help(true, "check", "--help")
	assert.Contains(t, got, "kubectl aiconform check all | ID... [flags]")
	assert.Contains(t, got, "  kubectl aiconform check all --out r/")
	assert.NotContains(t, got, "\n  aiconform ")
	got = help(false, "check", "--help")
	assert.Contains(t, got, "  aiconform check all --out r/")
	assert.NotContains(t, got, "kubectl aiconform")
}

// The memory budget of a run (bench/README.md) has no room for kubectl's
// command packages and the kustomize that cli-runtime's genericclioptions
// brings with them: 27 MiB of every run's RSS before anything is read. The
// flags, custom columns and error texts are aiconform's own; nothing may
// link those modules again.
func TestBinaryLinksNoKubectlOrKustomize(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	require.True(t, slices.ContainsFunc(info.Deps, func(d *debug.Module) bool { return d.Path == "k8s.io/client-go" }), "the build info lists the modules linked")
	for _, d := range info.Deps {
		assert.False(t, strings.HasPrefix(d.Path, "k8s.io/kubectl") || strings.HasPrefix(d.Path, "sigs.k8s.io/kustomize"), "linked: %s", d.Path)
	}
}
