//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// operatorRig is a full rig with the real KServe and KubeRay, and maybe
// Kubeflow Trainer (with JobSet), the Kubeflow Training Operator and Kueue,
// installed and running; stopped when the test ends (its logs kept if the
// test failed). The operators not installed are nil.
type operatorRig struct {
	*rig.Cluster
	KServe, KubeRay, Trainer, JobSet, TrainingOperator, Kueue *rig.Operator
	// MetricsAdapter serves the custom and external metrics APIs.
	MetricsAdapter *rig.MetricsAdapter
	BinDir         string
}

// startOperatorRig starts a full rig with KServe and KubeRay, and with all
// the training and queueing operators too (Trainer with JobSet, the
// Training Operator, Kueue) unless servingOnly: tests of the first two
// need not wait for the other four.
func startOperatorRig(ctx context.Context, t *testing.T, name string, servingOnly bool) *operatorRig {
	t.Helper()
	began := time.Now()
	binDir := framework.RigBin(t)
	for _, b := range []string{"kserve-manager", "kuberay-operator", "trainer-controller-manager", "jobset-controller", "training-operator", "kueue", "metrics-adapter", "karpenter-kwok"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatalf("no %s in %s: run `make tools` first", b, binDir)
		}
	}
	c := startRig(ctx, t, name, binDir)
	t.Logf("rig ready after %.1fs", time.Since(began).Seconds())
	opts := rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}}
	step := time.Now()
	kserve, err := c.InstallKServe(ctx, opts)
	require.NoError(t, err)
	t.Logf("KServe installed in %.1fs; webhooks: %v; not served, not registered: %v", time.Since(step).Seconds(), kserve.Webhooks(), kserve.SkippedWebhooks())
	step = time.Now()
	kuberay, err := c.InstallKubeRay(ctx, opts)
	require.NoError(t, err)
	t.Logf("KubeRay installed in %.1fs; webhooks: %v; not served, not registered: %v", time.Since(step).Seconds(), kuberay.Webhooks(), kuberay.SkippedWebhooks())
	if servingOnly {
		return &operatorRig{Cluster: c, KServe: kserve, KubeRay: kuberay, BinDir: binDir}
	}
	step = time.Now()
	trainer, jobset, err := c.InstallTrainer(ctx, opts)
	require.NoError(t, err)
	t.Logf("JobSet and Trainer installed in %.1fs; webhooks: %v %v", time.Since(step).Seconds(), jobset.Webhooks(), trainer.Webhooks())
	step = time.Now()
	training, err := c.InstallTrainingOperator(ctx, opts)
	require.NoError(t, err)
	t.Logf("Training Operator installed in %.1fs; webhooks: %v", time.Since(step).Seconds(), training.Webhooks())
	step = time.Now()
	adapter, err := c.InstallMetricsAdapter(ctx, opts)
	require.NoError(t, err)
	t.Logf("metrics adapter installed in %.1fs; APIServices %v Available", time.Since(step).Seconds(), adapter.APIServices())
	// Last, as its installers say: its webhooks see every other operator's
	// jobs.
	step = time.Now()
	kueue, err := c.InstallKueue(ctx, opts)
	require.NoError(t, err)
	t.Logf("Kueue installed in %.1fs; %d webhooks; not served, not registered: %v", time.Since(step).Seconds(), len(kueue.Webhooks()), kueue.SkippedWebhooks())
	return &operatorRig{Cluster: c, KServe: kserve, KubeRay: kuberay, Trainer: trainer, JobSet: jobset, TrainingOperator: training, Kueue: kueue, MetricsAdapter: adapter, BinDir: binDir}
}

// startRig starts a full rig of binDir's binaries, stopped when the test
// ends; its logs are kept if the test failed.
func startRig(ctx context.Context, t *testing.T, name, binDir string) *rig.Cluster {
	t.Helper()
	return startRigWith(ctx, t, name, rig.Options{BinDir: binDir})
}

// startRigWith is startRig with more options (real nodes).
func startRigWith(ctx context.Context, t *testing.T, name string, opts rig.Options) *rig.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "aiconform-"+name+"-")
	require.NoError(t, err)
	opts.Dir, opts.Progress = dir, testLogWriter{t}
	c, err := rig.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Stop())
		if t.Failed() {
			t.Logf("rig logs kept in %s", filepath.Join(dir, "logs"))
		} else {
			_ = os.RemoveAll(dir)
		}
	})
	return c
}

// restart starts a stopped operator again and waits until it leads, so
// that what follows sees it reconcile.
func restart(ctx context.Context, t *testing.T, o *rig.Operator) {
	t.Helper()
	require.NoError(t, o.Start(ctx))
	if o.Lease() == "" {
		return // it elects no leader (Trainer v2.0): serving is all there is
	}
	_, err := o.WaitLeader(ctx)
	require.NoError(t, err)
}
