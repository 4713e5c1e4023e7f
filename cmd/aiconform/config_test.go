package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeConfig writes an aiconform.yaml into a directory of its own.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aiconform.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestConfigSkipsARequirementWithItsReason(t *testing.T) {
	cfg := writeConfig(t, `run: [cluster_autoscaling, gpu_nodes_allocatable, gpu-device-plugin]
skip:
  - id: cluster_autoscaling
    reason: bare metal, a fixed pool of nodes
  - id: gpu-device-plugin
    reason: the node image runs it
`)
	code, stdout, stderr := run(t, "check", "--fixture", "demo", "--config", cfg, "-o", "json")
	require.Equal(t, 0, code, stderr)
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("../../docs/report.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(doc))
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Requirements, 2)
	ca := rep.Requirements[1]
	if ca.ID != "cluster_autoscaling" {
		ca = rep.Requirements[0]
	}
	assert.Equal(t, "cluster_autoscaling", ca.ID)
	assert.Equal(t, "Skipped", ca.Status)
	assert.Equal(t, "skip", ca.Result)
	assert.Equal(t, "skipped by aiconform.yaml:3: bare metal, a fixed pool of nodes", ca.Conclusion)
	assert.Empty(t, ca.Checks, "a skipped requirement's checks do not run")

	var plugin *report.Check
	for _, r := range rep.Requirements {
		for i, c := range r.Checks {
			if c.ID == "gpu-device-plugin" {
				plugin = &r.Checks[i]
			}
		}
	}
	require.NotNil(t, plugin, "a skipped check is in the report, saying so")
	assert.Equal(t, "skip", plugin.Status)
	assert.Equal(t, "skipped by aiconform.yaml:5: the node image runs it", plugin.Reason)
	assert.Empty(t, plugin.Evidence)
	assert.Contains(t, rep.Tool.CatalogDigest, "+extensions:sha256:", "the digest says the run had extensions")
}

func TestConfigFlagsOverrideTheFile(t *testing.T) {
	// The demo fails a MUST without --probe; failOn and run come from the
	// file.
	cfg := writeConfig(t, "run: [secure_accelerator_access]\nfailOn: should\n")
	code, _, _ := run(t, "check", "--fixture", "demo", "--config", cfg)
	assert.Equal(t, 1, code)
	// An id on the command line wins over run:.
	code, stdout, stderr := run(t, "check", "gpu_nodes_allocatable", "--fixture", "demo", "--config", cfg)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "gpu_nodes_allocatable")
	assert.NotContains(t, stdout, "secure_accelerator_access")

	// A timeout of the file, a flag that overrides it.
	cfg = writeConfig(t, "run: [all]\ntimeout: 0s\nconcurrency: 0\nprobe:\n  image: ''\n")
	code, _, stderr = run(t, "check", "--fixture", "demo", "--config", cfg, "--probe-image", "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--probe-image must name an image")
}

func TestConfigMistakesAreUsageErrors(t *testing.T) {
	for name, tt := range map[string]struct{ body, want string }{
		"unknown key":  {"run: [all]\nprobes:\n  enabled: true\n", `aiconform.yaml:2: unknown key "probes"; did you mean "probe"?`},
		"skip unknown": {"run: [all]\nskip:\n  - id: robust_controler\n    reason: x\n", `aiconform.yaml:3: skip robust_controler: no requirement or check has that id; did you mean "robust_controller"?`},
		"no reason":    {"run: [all]\nskip:\n  - id: dra_support\n", "aiconform.yaml:3: skip dra_support: give the reason the report shows"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := writeConfig(t, tt.body)
			code, _, stderr := run(t, "check", "--fixture", "demo", "--config", cfg)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, tt.want)
		})
	}
	code, _, stderr := run(t, "check", "all", "--fixture", "demo", "--config", filepath.Join(t.TempDir(), "none.yaml"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--config: stat ")
}

func TestSubmissionBuildRefusesSkips(t *testing.T) {
	cfg := writeConfig(t, "skip:\n  - id: cluster_autoscaling\n    reason: bare metal\n")
	code, _, stderr := run(t, "submission", "build", "--fixture", "demo", "--config", cfg,
		"--template", "x", "--metadata", "y", "--out", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "a submission states every requirement of its checklist, and the config skips cluster_autoscaling (aiconform.yaml:2)")
}

func TestListSaysWhereTheUsersEntriesCameFrom(t *testing.T) {
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "exporter.yaml"), nil, 0o644))
	cfg := writeConfig(t, "data: "+bad+"\nskip:\n  - id: dra_support\n    reason: no DRA driver yet\n")
	// A data: that is not a directory of data files is a usage error.
	code, _, stderr := run(t, "list", "--config", cfg)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--data: "+bad+": no data file of aiconform is named exporter.yaml (did you mean exporters.yaml?)")

	code, stdout, stderr := run(t, "list", "--config", cfg, "--data", "../../docs/examples/data")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "skip                   dra_support          aiconform.yaml:3: no DRA driver yet\n")
	assert.Contains(t, stdout, "exporters.yaml entry   Acme GPU Telemetry   ../../docs/examples/data/exporters.yaml (added)\n")

	// The overlay is the run's only: a run without it lists none.
	code, stdout, _ = run(t, "list")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "THE USER'S")
}

// The user's checks and plugins, as the config names them: a mistake in a
// file of checks is exit 2 at its line; a plugin named but not on PATH is
// exit 2; a plugin in a run on a recording is an Error, not a verdict on
// whatever cluster the kubeconfig names.
func TestConfigChecksAndPlugins(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(`apiVersion: aiconform.io/v1alpha1
kind: Checks
checks:
- id: nodes-labelled
  title: Nodes are labelled
  requirement: gpu_nodes_allocatable
  description: d
  remediation: r
  read: {apiVersion: v1, kind: Node}
  expression: "object.metadata.labels.size() >"
  message: m
`), 0o644))
	cfg := filepath.Join(dir, "aiconform.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("checks: [bad.yaml]\n"), 0o644))
	code, _, stderr := run(t, "check", "all", "--fixture", "demo", "--config", cfg)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, filepath.Join(dir, "bad.yaml")+":10:")

	cfg = writeConfig(t, "plugins:\n  - name: no-such-thing\n    requirement: gpu_nodes_allocatable\n")
	code, _, stderr = run(t, "check", "all", "--fixture", "demo", "--config", cfg)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "aiconform.yaml:2: plugin no-such-thing: no aiconform-check-no-such-thing on PATH; give its path")

	cfg = writeConfig(t, "plugins:\n  - name: labels\n    path: /bin/true\n    requirement: gpu_nodes_allocatable\n")
	code, stdout, stderr := run(t, "check", "gpu_nodes_allocatable", "--fixture", "demo", "--config", cfg, "-o", "json")
	assert.Equal(t, 1, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	req := rep.Requirements[0]
	require.Len(t, req.Checks, 3)
	assert.Equal(t, "plugin-labels", req.Checks[2].ID)
	assert.Equal(t, "error", req.Checks[2].Status)
	assert.Equal(t, "a plugin judges a live cluster, and this run reads a recording", req.Checks[2].Reason)
	assert.Contains(t, req.Conclusion, "[judged with the user's checks plugin-labels besides aiconform's]")
}

// A plugin found on PATH is listed, and runs only once the config names
// it.
func TestListNamesPluginsOnPath(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "aiconform-check-pools"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code, stdout, stderr := run(t, "list")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "plugin, not run   pools   "+filepath.Join(dir, "aiconform-check-pools")+" (name it under plugins: in aiconform.yaml, with its requirement)")

	cfg := writeConfig(t, "plugins:\n  - name: pools\n    requirement: gpu_nodes_allocatable\n")
	code, stdout, stderr = run(t, "list", "--config", cfg)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "not run")
	assert.Contains(t, stdout, "check        plugin-pools   aiconform.yaml:2\n")
}

// docs/examples/aiconform.yaml, as docs/extending.md shows it.
func TestExampleConfig(t *testing.T) {
	code, stdout, stderr := run(t, "check", "--fixture", "demo", "--config", "../../docs/examples/aiconform.yaml", "-o", "json")
	require.Contains(t, []int{0, 1}, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	var ids []string
	for _, r := range rep.Requirements {
		ids = append(ids, r.ID)
		if r.ID == "cluster_autoscaling" {
			assert.Equal(t, "Skipped", r.Status)
			assert.Equal(t, "skipped by aiconform.yaml:8: bare metal, a fixed pool of nodes; capacity is planned by hand", r.Conclusion)
		}
	}
	assert.Contains(t, ids, "accelerator_ownership", "the example's own requirement is in the report")
	code, stdout, _ = run(t, "list", "--config", "../../docs/examples/aiconform.yaml")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "exporters.yaml entry   Acme GPU Telemetry")
}
