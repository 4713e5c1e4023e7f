package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChecksMDUpToDate fails when a check's metadata or the catalog changed
// and docs/checks.md was not regenerated.
func TestChecksMDUpToDate(t *testing.T) {
	var got bytes.Buffer
	require.NoError(t, render(&got))
	want, err := os.ReadFile(filepath.Join("..", "checks.md"))
	require.NoError(t, err, "docs/checks.md is missing: run `go run ./docs/gen`")
	assert.Equal(t, string(want), got.String(), "docs/checks.md is out of date: run `go run ./docs/gen`")
}

func TestRenderNamesEveryCheckAndRequirement(t *testing.T) {
	var got bytes.Buffer
	require.NoError(t, render(&got))
	registry := checks.Registry()
	reqs, err := checks.Catalog(registry)
	require.NoError(t, err)
	for _, c := range registry {
		m := c.Meta()
		assert.Contains(t, got.String(), "### "+m.ID+"\n", "check %s has a section", m.ID)
		assert.Contains(t, got.String(), m.Remediation, "check %s shows its remediation", m.ID)
	}
	for _, r := range reqs {
		assert.Contains(t, got.String(), "### "+r.ID+"\n", "requirement %s has a section", r.ID)
	}
}
