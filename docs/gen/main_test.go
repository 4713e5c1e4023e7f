package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/config"
	"github.com/aiconform/aiconform/plugin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPagesUpToDate fails when a check's metadata or the catalog changed and
// the pages under docs/ were not regenerated, or a page of a removed check
// is left behind.
func TestPagesUpToDate(t *testing.T) {
	pages, err := render(checks.Extensions{})
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
	pages, err := render(checks.Extensions{})
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

// TestEverySolutionProven fails when a solution the checks recognise has
// no entry in proven.yaml, or an entry names no recognised solution (one
// renamed or removed from its data file).
func TestEverySolutionProven(t *testing.T) {
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	sols, err := solutions(builtin.Registry(), reqs)
	require.NoError(t, err)
	proof, err := loadProven()
	require.NoError(t, err)
	for req, rows := range sols {
		for _, s := range rows {
			_, ok := proof[req][s.Name]
			assert.True(t, ok, "proven.yaml has no entry for %s under %s", s.Name, req)
		}
	}
	for req, entries := range proof {
		for name := range entries {
			found := slices.ContainsFunc(sols[req], func(s checks.Solution) bool { return s.Name == name })
			assert.True(t, found, "proven.yaml: %s under %s is no solution the checks recognise", name, req)
		}
	}
}

// TestSolutionsJudgedByTheirRequirement fails when a row names a check the
// catalog does not list under the row's requirement, or a row is
// undescribed.
func TestSolutionsJudgedByTheirRequirement(t *testing.T) {
	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	sols, err := solutions(builtin.Registry(), reqs)
	require.NoError(t, err)
	for _, r := range reqs {
		for _, s := range sols[r.ID] {
			assert.NotEmpty(t, s.Detected, "%s: %s says not how it is detected", r.ID, s.Name)
			require.NotEmpty(t, s.Checks, "%s: %s names no check", r.ID, s.Name)
			for _, id := range s.Checks {
				assert.Contains(t, r.Checks, id, "%s: %s is judged by %s, not among the requirement's checks", r.ID, s.Name, id)
			}
		}
	}
	// Every profile is a row of each requirement it carries.
	ps, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	for _, p := range ps {
		carries := p.Carries
		if len(carries) == 0 {
			carries = []string{"robust_controller"}
		}
		for _, req := range carries {
			assert.True(t, slices.ContainsFunc(sols[req], func(s checks.Solution) bool { return s.Name == p.Title }), "profile %s under %s", p.Name, req)
		}
	}
}

func TestLoadProvenRejects(t *testing.T) {
	saved := provenYAML
	t.Cleanup(func() { provenYAML = saved })
	for name, data := range map[string]string{
		"an unknown kind of proof": "gang_scheduling:\n  Kueue: {by: a hunch, test: x}\n",
		"no test":                  "gang_scheduling:\n  Kueue: {by: rig (e2e)}\n",
		"a test, yet not proven":   "gang_scheduling:\n  Kueue: {by: not proven, test: x}\n",
		"an unknown field":         "gang_scheduling:\n  Kueue: {by: rig (e2e), test: x, when: now}\n",
	} {
		provenYAML = []byte(data)
		_, err := loadProven()
		assert.Error(t, err, name)
	}
}

// With a config, the pages show the user's requirements and checks beside
// the built-in ones: a platform's own reference.
func TestRenderWithTheUsersChecks(t *testing.T) {
	c, err := config.Parse(filepath.Join(t.TempDir(), "aiconform.yaml"), []byte("checks: ["+mustAbs(t, "../examples/checks.yaml")+"]\n"))
	require.NoError(t, err)
	ext, err := c.Extensions(plugin.Conn{}, true, "")
	require.NoError(t, err)
	pages, err := render(ext)
	require.NoError(t, err)
	assert.Contains(t, pages["checks.md"], "| [accelerator_ownership](#accelerator_ownership) | MUST | user | user | [accelerator-nodes-owned](checks/accelerator-nodes-owned.md) |")
	assert.Contains(t, pages["checks.md"], "[inference-namespaces-have-contact](checks/inference-namespaces-have-contact.md)")
	assert.Contains(t, pages["checks/accelerator-nodes-owned.md"], "# accelerator-nodes-owned")
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}
