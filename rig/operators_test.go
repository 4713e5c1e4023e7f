package rig

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rig reads CRDs and webhooks from the module version it names; the
// binary comes from the tools module's pin. Both must be the same release.
func TestOperatorVersionsMatchToolsModules(t *testing.T) {
	for _, tc := range []struct {
		toolsDir, module, version string
	}{
		{"kserve", KServeModule, KServeVersion},
		{"kuberay", KubeRayModule, KubeRayVersion},
		{"trainer", TrainerModule, TrainerVersion},
		{"trainer", JobSetModule, JobSetVersion},
		{"training-operator", TrainingOperatorModule, TrainingOperatorVersion},
		{"kueue", KueueModule, KueueVersion},
	} {
		t.Run(tc.toolsDir, func(t *testing.T) {
			path := filepath.Join("..", "tools", tc.toolsDir, "go.mod")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			// A require line, in a block or not; go.mod has no other form.
			re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(tc.module) + `\s+(v\S+)`)
			m := re.FindSubmatch(data)
			require.NotNil(t, m, "%s not required in %s", tc.module, path)
			assert.Equal(t, tc.version, string(m[1]), "%s in %s", tc.module, path)
		})
	}
}

func TestOperatorSpecsSelectTheirOwnPods(t *testing.T) {
	for _, s := range []operatorSpec{kserveSpec(), kubeRaySpec(), jobSetSpec(), trainerSpec(), trainingOperatorSpec(), kueueSpec()} {
		t.Run(s.name, func(t *testing.T) {
			for k, v := range s.selector {
				assert.Equal(t, v, s.labels[k], "selector label %s must be on the pods", k)
			}
		})
	}
}
