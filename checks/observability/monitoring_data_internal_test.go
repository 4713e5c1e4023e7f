package observability

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every system of monitoring.yaml can be found, and what it says of its
// scrape configurations and collectors is what the checks can read.
func TestMonitoringData(t *testing.T) {
	data, err := loadMonitoring()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, sys := range data.Systems {
		t.Run(sys.Name, func(t *testing.T) {
			assert.False(t, names[sys.Name], "named twice")
			names[sys.Name] = true
			assert.True(t, len(sys.CRDs) > 0 || len(sys.Servers) > 0 || len(sys.Collectors) > 0, "nothing finds it")
			for _, k := range sys.Scrapes {
				assert.Contains(t, sys.CRDs, k.CRD, "a scrape configuration's CRD is one that shows the system installed")
				assert.Contains(t, []string{"pods", "services"}, k.Selects, k.CRD)
				if k.Endpoints == "" {
					assert.Empty(t, k.EndpointsHint, k.CRD)
				}
			}
			states := []*objectState{}
			for _, k := range sys.Scrapes {
				states = append(states, k.State)
			}
			for _, k := range sys.Instances {
				assert.Contains(t, sys.CRDs, k.CRD, "an instance's CRD is one that shows the system installed")
				states = append(states, k.State)
			}
			for _, st := range states {
				if st != nil {
					assert.NotEmpty(t, st.Path)
					assert.NotEmpty(t, st.Bad, "a state with no bad value says nothing")
				}
			}
			for _, c := range sys.Collectors {
				assert.Contains(t, collectorKinds, c.Kind)
				assert.NotEmpty(t, c.Labels, "a collector selected by no label is every workload")
			}
			if len(sys.Servers) > 0 {
				assert.NotEmpty(t, sys.Ports, "a server's port")
			}
			if len(sys.Servers) == 0 && len(sys.Collectors)+len(sys.Scrapes) > 0 {
				assert.NotEmpty(t, sys.KeepsTargets, "a collector without servers says where its targets are kept")
			}
		})
	}
	// The collectors the task names are known.
	for _, want := range []string{"Google Cloud Managed Service for Prometheus", "VictoriaMetrics Operator", "Azure Monitor managed service for Prometheus"} {
		assert.True(t, slices.ContainsFunc(data.Systems, func(s monitoringSystem) bool { return s.Name == want }), want)
	}
}

// A target of a pool vmagent's operator names was discovered in the
// cluster though vmagent reports no discovered labels; a pool of another
// system's naming is not.
func TestDiscoveredPool(t *testing.T) {
	data, err := loadMonitoring()
	require.NoError(t, err)
	vm := data.system("VictoriaMetrics Operator")
	up := func(pool string) target {
		var tg target
		tg.ScrapePool, tg.Health = pool, "up"
		return tg
	}
	set := judgeTargets([]target{up("podScrape/llm/vllm/0"), up("static/node")}, data.Workloads, vm)
	assert.Equal(t, 1, set.discoveredUp)
	assert.Equal(t, "podScrape/llm/vllm/0", set.discoveredPool)
	set = judgeTargets([]target{up("podScrape/llm/vllm/0")}, data.Workloads, data.system("Prometheus"))
	assert.Equal(t, 0, set.discoveredUp)
}
