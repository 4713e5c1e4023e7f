package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	f, err := Parse("/repo/ci/aiconform.yaml", []byte(`
run: [all]
failOn: should
timeout: 90s
probe:
  enabled: true
  timeout: 2m
  image: registry.example/pause:3.10
redact:
  enabled: true
  key: keys/redact.key
skip:
  - id: cluster_autoscaling
    reason: bare metal, fixed node pool
checks: [checks.yaml]
plugins:
  - name: node-labels
    path: ./bin/aiconform-check-node-labels
    requirement: gpu_nodes_allocatable
  - name: gateway
    requirement: internal_gateway
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"all"}, f.Run)
	assert.Equal(t, "should", f.FailOn)
	assert.Equal(t, 90*time.Second, f.Timeout)
	assert.True(t, *f.Probe.Enabled)
	assert.Nil(t, f.Probe.ScaleUp)
	assert.Equal(t, 2*time.Minute, f.Probe.Timeout)
	assert.Equal(t, "/repo/ci/keys/redact.key", f.Redact.Key)
	assert.Equal(t, []string{"/repo/ci/checks.yaml"}, f.Checks)
	assert.Equal(t, []Skip{{ID: "cluster_autoscaling", Reason: "bare metal, fixed node pool", Source: "aiconform.yaml:13"}}, f.Skip)
	assert.Equal(t, "/repo/ci/bin/aiconform-check-node-labels", f.Plugins[0].Path)
	assert.Equal(t, "aiconform.yaml:17", f.Plugins[0].Source)
	// A bare name is looked for on PATH.
	assert.Equal(t, "", f.Plugins[1].Path)
}

func TestParseErrors(t *testing.T) {
	for name, tt := range map[string]struct{ in, want string }{
		"unknown key":        {"failon: must\n", `c.yaml:1: unknown key "failon"; did you mean "failOn"?`},
		"nested unknown key": {"probe:\n  enabled: true\n  timout: 1m\n", `c.yaml:3: unknown key "timout"; did you mean "timeout"?`},
		"in a list":          {"skip:\n  - id: x\n    reason: y\n  - id: z\n    raeson: w\n", `c.yaml:5: unknown key "raeson"; did you mean "reason"?`},
		"far from any":       {"colour: red\n", `c.yaml:1: unknown key "colour"; known keys: checks, concurrency, data, failOn, operators, plugins, probe, profiles, redact, run, skip, timeout`},
		"bad level":          {"failOn: may\n", `c.yaml:1: failOn "may": want must or should`},
		"bad duration":       {"timeout: soon\n", "c.yaml:1: cannot unmarshal !!str `soon` into time.Duration"},
		"skip with no why":   {"skip:\n  - id: dra_support\n", "c.yaml:2: skip dra_support: give the reason the report shows"},
		"skip twice":         {"skip:\n  - {id: a, reason: b}\n  - {id: a, reason: c}\n", "c.yaml:3: skip a: named twice"},
		"plugin without req": {"plugins:\n  - name: x\n", "c.yaml:2: plugin x: name the requirement it belongs to"},
		"mapping for a list": {"run:\n  all: true\n", "c.yaml:2: a mapping where a list belongs"},
		"not YAML":           {"run: [all\n", "c.yaml:1: did not find expected ',' or ']'"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.in))
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestParseEmpty(t *testing.T) {
	f, err := Parse("c.yaml", nil)
	require.NoError(t, err)
	assert.Equal(t, &File{Path: "c.yaml"}, f)
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	p, err := Find("", dir)
	require.NoError(t, err)
	assert.Equal(t, "", p, "no file, no config")

	require.NoError(t, os.WriteFile(filepath.Join(dir, DefaultName), []byte("run: [all]\n"), 0o644))
	p, err = Find("", dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, DefaultName), p)

	_, err = Find(filepath.Join(dir, "missing.yaml"), dir)
	assert.ErrorContains(t, err, "--config: ")
}
