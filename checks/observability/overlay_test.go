package observability_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/observability"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An overlay of exporters.yaml teaches accelerator-metrics a platform's
// own exporter: docs/examples/data, the example docs/extending.md walks
// through. Not parallel: the overlay is the process's.
func TestAcceleratorMetricsLearnsAnExporterFromAnOverlay(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.ExtraDaemonSets[0].Spec.Template.Spec.Containers[0].Image = "registry.example/acme/gpu-telemetry:2.1"
	var lines []string
	for i := range 8 {
		lines = append(lines,
			fmt.Sprintf(`acme_gpu_busy_percent{device="%d"} 3`, i),
			fmt.Sprintf(`acme_gpu_memory_used_bytes{device="%d"} 1024`, i))
	}
	w.Raw[checkstest.DCGMPath] = strings.Join(lines, "\n") + "\n"
	run := func() checks.Result {
		env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
		r, err := observability.AcceleratorMetrics{}.Run(context.Background(), env)
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, checks.Fail, run().Status, "built in, aiconform does not know the exporter")

	origins, err := checks.SetDataOverlay("../../docs/examples/data")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = checks.SetDataOverlay("") })
	assert.Equal(t, []checks.DataOrigin{{File: "exporters.yaml", Entry: "Acme GPU Telemetry", Source: "../../docs/examples/data/exporters.yaml"}}, origins)
	r := run()
	assert.Equal(t, checks.Pass, r.Status, r.Reason)
	assert.Equal(t, "Acme GPU Telemetry serves utilization and memory for each of 8 accelerators on 1 accelerator node (its exporters have no temperature, power or interconnect metrics)", r.Reason)
}

// An overlay's mistake is told at its own line when the overlay is set,
// before any check reads it.
func TestOverlayMistakeIsAnError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "exporters.yaml"), []byte("- name: Acme\n  imagse: [x]\n"), 0o644))
	_, err := checks.SetDataOverlay(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "exporters.yaml")+`: line 2: unknown key "imagse"; did you mean "images"?`)

	require.NoError(t, os.Rename(filepath.Join(dir, "exporters.yaml"), filepath.Join(dir, "exporter.yaml")))
	_, err = checks.SetDataOverlay(dir)
	assert.ErrorContains(t, err, "no data file of aiconform is named exporter.yaml (did you mean exporters.yaml?)")
}
