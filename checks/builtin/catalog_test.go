package builtin_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids(cs []checks.Check) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Meta().ID)
	}
	return out
}

func reqIDs(rs []checks.Requirement) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestSelect(t *testing.T) {
	registry := builtin.Registry()
	reqs := catalog(t)
	tests := []struct {
		name   string
		ids    []string
		reqs   []string
		checks []string
	}{
		{
			name:   "all",
			ids:    []string{"all"},
			reqs:   []string{"robust_controller", "gpu_nodes_allocatable", "dra_support", "driver_runtime_management", "gpu_sharing", "virtualized_accelerator", "ai_inference", "advanced_inference_ingress", "high_performance_networking", "disaggregated_inference", "gang_scheduling", "pod_autoscaling", "cluster_autoscaling", "accelerator_metrics", "ai_service_metrics", "secure_accelerator_access", "workload_sandboxing"},
			checks: []string{"crds-established", "controller-ready", "controller-lease", "webhooks-served", "crs-reconciled", "crs-events", "webhooks-answer", "canary-reconciled", "gpu-allocatable", "gpu-device-plugin", "dra-apis", "dra-devices", "dra-claims-allocated", "dra-probe", "accelerator-drivers", "driver-version-probe", "gpu-sharing", "gpu-sharing-probe", "vgpu-exposed", "gateway-api-crds", "gateways-programmed", "httproutes-accepted", "route-probe", "inference-extension-crds", "inference-pools-ready", "inference-routes-accepted", "network-devices", "multi-network", "disaggregated-serving", "gang-queues", "gangs-admitted", "gang-probe", "metrics-apis", "hpas-active", "hpa-probe", "autoscaler-found", "accelerator-node-groups", "accelerator-scale-ups", "scale-up-probe", "accelerator-metrics", "monitoring-system", "monitoring-targets", "monitoring-probe", "accelerator-load-probe", "device-access-mediated", "device-isolation-probe", "sandbox-runtimes", "sandbox-probe"},
		},
		{
			name:   "a requirement runs its checks",
			ids:    []string{"robust_controller"},
			reqs:   []string{"robust_controller"},
			checks: []string{"crds-established", "controller-ready", "controller-lease", "webhooks-served", "crs-reconciled", "crs-events", "webhooks-answer", "canary-reconciled"},
		},
		{
			name:   "a check reports its requirement",
			ids:    []string{"gpu-allocatable"},
			reqs:   []string{"gpu_nodes_allocatable"},
			checks: []string{"gpu-allocatable"},
		},
		{
			name:   "one check of a requirement",
			ids:    []string{"webhooks-served"},
			reqs:   []string{"robust_controller"},
			checks: []string{"webhooks-served"},
		},
		{
			name:   "catalog and registry order, whatever the order asked",
			ids:    []string{"gpu-allocatable", "crs-reconciled", "crds-established"},
			reqs:   []string{"robust_controller", "gpu_nodes_allocatable"},
			checks: []string{"crds-established", "crs-reconciled", "gpu-allocatable"},
		},
		{
			name:   "duplicates collapse",
			ids:    []string{"controller-ready", "robust_controller", "controller-ready"},
			reqs:   []string{"robust_controller"},
			checks: []string{"crds-established", "controller-ready", "controller-lease", "webhooks-served", "crs-reconciled", "crs-events", "webhooks-answer", "canary-reconciled"},
		},
		{
			name:   "all with more",
			ids:    []string{"all", "gpu-allocatable"},
			reqs:   []string{"robust_controller", "gpu_nodes_allocatable", "dra_support", "driver_runtime_management", "gpu_sharing", "virtualized_accelerator", "ai_inference", "advanced_inference_ingress", "high_performance_networking", "disaggregated_inference", "gang_scheduling", "pod_autoscaling", "cluster_autoscaling", "accelerator_metrics", "ai_service_metrics", "secure_accelerator_access", "workload_sandboxing"},
			checks: []string{"crds-established", "controller-ready", "controller-lease", "webhooks-served", "crs-reconciled", "crs-events", "webhooks-answer", "canary-reconciled", "gpu-allocatable", "gpu-device-plugin", "dra-apis", "dra-devices", "dra-claims-allocated", "dra-probe", "accelerator-drivers", "driver-version-probe", "gpu-sharing", "gpu-sharing-probe", "vgpu-exposed", "gateway-api-crds", "gateways-programmed", "httproutes-accepted", "route-probe", "inference-extension-crds", "inference-pools-ready", "inference-routes-accepted", "network-devices", "multi-network", "disaggregated-serving", "gang-queues", "gangs-admitted", "gang-probe", "metrics-apis", "hpas-active", "hpa-probe", "autoscaler-found", "accelerator-node-groups", "accelerator-scale-ups", "scale-up-probe", "accelerator-metrics", "monitoring-system", "monitoring-targets", "monitoring-probe", "accelerator-load-probe", "device-access-mediated", "device-isolation-probe", "sandbox-runtimes", "sandbox-probe"},
		},
		{
			// The controller's health serves both requirements; only the
			// gang checks are gang_scheduling's own.
			name:   "a requirement that shares checks",
			ids:    []string{"gang_scheduling"},
			reqs:   []string{"gang_scheduling"},
			checks: []string{"controller-ready", "controller-lease", "gang-queues", "gangs-admitted", "gang-probe"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := checks.Select(tc.ids, reqs, registry)
			require.NoError(t, err)
			assert.Equal(t, tc.reqs, reqIDs(sel.Requirements))
			assert.Equal(t, tc.checks, ids(sel.Checks))
		})
	}
	// Selecting must not reorder or grow the catalog it was given.
	assert.Equal(t, []string{"robust_controller", "gpu_nodes_allocatable", "dra_support", "driver_runtime_management", "gpu_sharing", "virtualized_accelerator", "ai_inference", "advanced_inference_ingress", "high_performance_networking", "disaggregated_inference", "gang_scheduling", "pod_autoscaling", "cluster_autoscaling", "accelerator_metrics", "ai_service_metrics", "secure_accelerator_access", "workload_sandboxing"}, reqIDs(reqs))
}

func TestSelectUnknownID(t *testing.T) {
	tests := []struct {
		id      string
		nearest string
	}{
		{"robust_controler", "robust_controller"},
		{"webhook-served", "webhooks-served"},
		{"gpu-alocatable", "gpu-allocatable"},
		{"crd-established", "crds-established"},
		{"Robust_Controller", "robust_controller"},
		{"gpu_nodes_alocatable", "gpu_nodes_allocatable"},
		{"xyz", ""},
		{"kserve", ""},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			_, err := checks.Select([]string{"all", tc.id}, catalog(t), builtin.Registry())
			require.Error(t, err)
			var unknown *checks.UnknownIDError
			require.True(t, errors.As(err, &unknown), "%T", err)
			assert.Equal(t, tc.id, unknown.ID)
			assert.Equal(t, tc.nearest, unknown.Nearest)
			assert.Contains(t, err.Error(), `unknown requirement or check "`+tc.id+`"`)
			assert.Contains(t, err.Error(), "`aiconform list` shows them all")
			if tc.nearest != "" {
				assert.Contains(t, err.Error(), `(did you mean "`+tc.nearest+`"?)`)
			} else {
				assert.NotContains(t, err.Error(), "did you mean")
			}
		})
	}
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestRegistry(t *testing.T) {
	registry := builtin.Registry()
	reqs := catalog(t)
	byID := map[string]checks.Requirement{}
	for _, r := range reqs {
		byID[r.ID] = r
	}
	seen := map[string]bool{}
	for _, c := range registry {
		m := c.Meta()
		t.Run(m.ID, func(t *testing.T) {
			assert.False(t, seen[m.ID], "duplicate check id")
			seen[m.ID] = true
			assert.Regexp(t, kebab, m.ID)
			assert.NotEmpty(t, m.Title)
			assert.NotEmpty(t, m.Description)
			assert.NotEmpty(t, m.Remediation)
			req, ok := byID[m.Requirement]
			require.True(t, ok, "requirement %q is not in the catalog", m.Requirement)
			assert.Contains(t, req.Checks, m.ID, "requirement %s does not list the check", req.ID)
			assert.Equal(t, req.PerOperator, m.PerOperator, "a per-operator requirement has per-operator checks")
		})
	}
}

func TestCatalog(t *testing.T) {
	reqs := catalog(t)
	require.NotEmpty(t, reqs)
	seen := map[string]bool{}
	for _, r := range reqs {
		t.Run(r.ID, func(t *testing.T) {
			assert.False(t, seen[r.ID], "duplicate requirement id")
			seen[r.ID] = true
			assert.Regexp(t, `^[a-z0-9]+(_[a-z0-9]+)*$`, r.ID)
			assert.NotEmpty(t, r.Title)
			assert.NotEmpty(t, r.Category)
			assert.NotEmpty(t, r.Program)
			assert.Contains(t, []checks.Level{checks.Must, checks.Should}, r.Level)
			assert.NotEmpty(t, r.Checks)
		})
	}
	robust := reqs[0]
	assert.Equal(t, "robust_controller", robust.ID)
	assert.True(t, robust.PerOperator)
	assert.Equal(t, checks.Must, robust.Level)

	t.Run("a check the registry lacks", func(t *testing.T) {
		_, err := checks.Catalog(builtin.Registry()[:1])
		require.Error(t, err)
		assert.Contains(t, err.Error(), `requirement robust_controller names unknown check "controller-ready"`)
	})
}

func TestCatalogDigest(t *testing.T) {
	registry := builtin.Registry()
	profiles, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	a, err := checks.CatalogDigest(registry, profiles)
	require.NoError(t, err)
	b, err := checks.CatalogDigest(registry, profiles)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the same rules give the same digest")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, a)

	changed := *profiles[0]
	changed.Controller.Selector = "app=other"
	c, err := checks.CatalogDigest(registry, append([]*checks.Profile{&changed}, profiles[1:]...))
	require.NoError(t, err)
	assert.NotEqual(t, a, c, "a changed profile changes the digest")
	d, err := checks.CatalogDigest(registry[1:], profiles)
	require.NoError(t, err)
	assert.NotEqual(t, a, d, "a check less changes the digest")
}

// DataFiles, what an overlay may hold, is every data file under checks/
// (the catalog and the profiles are not data of that kind), and each is
// registered by the package that embeds it.
func TestDataFilesAreAllListed(t *testing.T) {
	var onDisk []string
	require.NoError(t, filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "profiles" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".yaml") && d.Name() != "catalog.yaml" {
			onDisk = append(onDisk, d.Name())
		}
		return nil
	}))
	assert.ElementsMatch(t, onDisk, checks.DataFiles)
	// Setting an overlay of every file checks each is registered.
	dir := t.TempDir()
	for _, name := range checks.DataFiles {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	_, err := checks.SetDataOverlay(dir)
	require.NoError(t, err)
	_, err = checks.SetDataOverlay("")
	require.NoError(t, err)
}
