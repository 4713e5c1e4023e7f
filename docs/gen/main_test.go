package main

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPagesUpToDate fails when a check's metadata or the catalog changed and
// the pages under docs/ were not regenerated, or a page of a removed check
// is left behind.
func TestPagesUpToDate(t *testing.T) {
	pages, err := render()
	require.NoError(t, err)
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join("..", name))
		require.NoError(t, err, "docs/%s is missing: run `go run ./docs/gen`", name)
		assert.Equal(t, want, string(got), "docs/%s is out of date: run `go run ./docs/gen`", name)
	}
	onDisk, err := filepath.Glob(filepath.Join("..", "checks", "*.md"))
	require.NoError(t, err)
	var stale []string
	for _, f := range onDisk {
		if _, ok := pages["checks/"+filepath.Base(f)]; !ok {
			stale = append(stale, f)
		}
	}
	sort.Strings(stale)
	assert.Empty(t, stale, "pages of checks that no longer exist: run `go run ./docs/gen`")
}

func TestEveryCheckHasAPage(t *testing.T) {
	pages, err := render()
	require.NoError(t, err)
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	for _, c := range builtin.Registry() {
		m := c.Meta()
		page, ok := pages["checks/"+m.ID+".md"]
		if assert.True(t, ok, "check %s has a page", m.ID) {
			assert.Contains(t, page, prose(m.Remediation))
			assert.Contains(t, pages["checks.md"], "(checks/"+m.ID+".md)")
		}
	}
	for _, r := range reqs {
		assert.Contains(t, pages["checks.md"], "### "+r.ID+"\n", "requirement %s has a section", r.ID)
	}
}
