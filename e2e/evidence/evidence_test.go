//go:build e2e

package evidence

import (
	"context"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/fixtures/scenarios"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEvidenceReRuns is the promise of every report: each block's command,
// run with kubectl on the same cluster, prints the block's output (AGE
// aside). It runs every check live on each scenario, then runs every
// evidence command with the rig's kubectl and compares.
func TestEvidenceReRuns(t *testing.T) {
	mods, err := scenarios.OperatorModules()
	require.NoError(t, err)
	binDir := framework.RigBin(t)
	for _, sc := range scenarios.All() {
		t.Run(sc.Name, func(t *testing.T) {
			// Each scenario has a control plane of its own; two at a time
			// keep both cores busy while one waits on CRDs.
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c, err := scenarios.Start(ctx, t.TempDir(), binDir, sc)
			require.NoError(t, err)
			defer c.Stop()
			require.NoError(t, scenarios.Build(ctx, c.RESTConfig(), mods, sc))

			kubeconfig := c.Kubeconfig()
			out := framework.Audit(ctx, t, kubeconfig, sc.As).Outcome

			framework.AssertEvidenceReRuns(t, binDir, kubeconfig, sc.As, out)

			// The scenario's fault shows on the real API server as it does
			// in its recording: never a Pass.
			want, ok := faults[sc.Name]
			require.True(t, ok, "scenario %s has no expected verdict here", sc.Name)
			got := "none"
			for _, r := range out.Results {
				if r.Check.ID == want.check && r.Operator == want.operator {
					got = string(r.Status)
					assert.Equal(t, want.status, r.Status, "%s/%s on %s: %s", want.check, want.operator, sc.Name, r.Reason)
				}
			}
			require.NotEqual(t, "none", got, "no result for %s/%s", want.check, want.operator)
		})
	}
}

// faults is the verdict each scenario is about.
var faults = map[string]struct {
	check, operator string
	status          checks.Status
}{
	"demo":                  {"crs-reconciled", "kserve", checks.Pass},
	"controller-crashloop":  {"controller-ready", "kserve", checks.Fail},
	"webhook-no-endpoints":  {"webhooks-served", "kserve", checks.Fail},
	"cr-unknown":            {"crs-reconciled", "kserve", checks.Fail},
	"gpu-notready":          {"gpu-allocatable", "", checks.Fail},
	"no-operator":           {"crds-established", "kserve", checks.Skip},
	"crd-missing":           {"crds-established", "kserve", checks.Fail},
	"forbidden-nodes":       {"gpu-allocatable", "", checks.Error},
	"lease-stale":           {"controller-lease", "kserve", checks.Fail},
	"device-plugin-missing": {"gpu-device-plugin", "", checks.Fail},
	"kustomize-installs":    {"crs-reconciled", "kubeflow-trainer", checks.Pass},
	"kuberay-helm":          {"controller-ready", "kuberay", checks.Pass},
	"kueue-webhook-down":    {"webhooks-served", "kueue", checks.Fail},
	"metrics-adapter-down":  {"metrics-apis", "", checks.Fail},
	"cluster-autoscaler":    {"accelerator-scale-ups", "", checks.Pass},
	"dra-driver-gone":       {"dra-claims-allocated", "", checks.Skip},
	"gpu-debug-pod":         {"device-access-mediated", "", checks.Fail},
	"gpu-time-slicing":      {"gpu-sharing", "", checks.Pass},
	"gvisor-sandbox":        {"sandbox-runtimes", "", checks.Pass},
	"gateway-backend-gone":  {"httproutes-accepted", "", checks.Fail},
	"gpu-metrics-missing":   {"accelerator-metrics", "", checks.Fail},
	"model-metrics-down":    {"monitoring-targets", "", checks.Warn},
	"inference-picker-down": {"inference-pools-ready", "", checks.Fail},
	"gke-tpu":               {"monitoring-targets", "", checks.Pass},
	"baremetal-volcano":     {"gangs-admitted", "volcano", checks.Pass},
	"eks-neuron":            {"autoscaler-found", "", checks.Pass},
	"openshift-ai":          {"accelerator-scale-ups", "", checks.Pass},
	"aks-kaito":             {"crs-reconciled", "kaito", checks.Pass},
	"eks-gpu":               {"accelerator-scale-ups", "", checks.Pass},
	"gke-gpu":               {"gpu-sharing", "", checks.Pass},
	"cce-ascend":            {"accelerator-metrics", "", checks.Pass},
	"gke-tpu-only":          {"accelerator-metrics", "", checks.Pass},
	"eks-trainium-only":     {"accelerator-metrics", "", checks.Pass},
}
