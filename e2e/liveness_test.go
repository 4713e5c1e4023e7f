//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/accelerators"
	"github.com/aiconform/aiconform/checks/operator"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestLivenessOnRig runs the real KServe and KubeRay with leader election
// on, as their releases do: each process holds its Lease under an identity
// that names its controller pod, so controller-lease passes for both; the
// rig's stand-in device plugin passes gpu-device-plugin. Stopping a process
// leaves its pod Running but its Lease unrenewed: controller-lease passes
// until the lease duration is over and fails from then on, and passes
// again once the process is back and leads.
func TestLivenessOnRig(t *testing.T) {
	t.Parallel()
	began := time.Now()
	host := rig.PodHostname()
	require.NotEmpty(t, host, "this machine's hostname cannot be a pod's; the Leases' holders could name no pod")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := startOperatorRig(ctx, t, "liveness", true)
	binDir, kserve, kuberay := c.BinDir, c.KServe, c.KubeRay
	operators := []*rig.Operator{kserve, kuberay}

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	kubeconfig := c.Kubeconfig()

	t.Run("LeasesHeldByControllerPods", func(t *testing.T) {
		out := runLiveness(ctx, t, kubeconfig)
		for _, op := range operators {
			lease, err := cs.CoordinationV1().Leases(op.Namespace()).Get(ctx, op.Lease(), metav1.GetOptions{})
			require.NoError(t, err)
			require.NotNil(t, lease.Spec.HolderIdentity)
			assert.True(t, strings.HasPrefix(*lease.Spec.HolderIdentity, host+"_"), "the process's identity: %s", *lease.Spec.HolderIdentity)
			pods, err := cs.CoreV1().Pods(op.Namespace()).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, pods.Items, 1)
			assert.Equal(t, host, pods.Items[0].Spec.Hostname, "the controller pod has the process's hostname")

			r := result(t, out, "controller-lease", op.Name())
			assert.Equal(t, checks.Pass, r.Status, "%s: %s", op.Name(), r.Reason)
			assert.Contains(t, r.Reason, "held by controller pod "+pods.Items[0].Name+" (holder "+*lease.Spec.HolderIdentity+")")
			t.Logf("controller-lease for %s: %s", op.Name(), r.Reason)
		}
		dp := result(t, out, "gpu-device-plugin", "")
		assert.Equal(t, checks.Pass, dp.Status, dp.Reason)
		assert.Contains(t, dp.Reason, "DaemonSet kube-system/nvidia-device-plugin-daemonset")
		framework.AssertEvidenceReRuns(t, binDir, kubeconfig, "", out)
	})

	t.Run("StoppedOperatorsLeasesGoStale", func(t *testing.T) {
		stopped := map[string]time.Time{}
		for _, op := range operators {
			require.NoError(t, op.Stop(ctx))
			stopped[op.Name()] = time.Now()
		}
		// When each Lease expires: its last renewal plus its duration. No
		// renewal comes after the process is gone.
		expiry := map[string]time.Time{}
		for _, op := range operators {
			lease, err := cs.CoordinationV1().Leases(op.Namespace()).Get(ctx, op.Lease(), metav1.GetOptions{})
			require.NoError(t, err)
			require.NotNil(t, lease.Spec.RenewTime)
			require.NotNil(t, lease.Spec.LeaseDurationSeconds)
			expiry[op.Name()] = lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
			t.Logf("%s stopped; its Lease was last renewed %s before, expires %s after the stop",
				op.Name(), stopped[op.Name()].Sub(lease.Spec.RenewTime.Time).Round(time.Millisecond), expiry[op.Name()].Sub(stopped[op.Name()]).Round(time.Millisecond))
		}
		latest := expiry[kserve.Name()]
		if expiry[kuberay.Name()].After(latest) {
			latest = expiry[kuberay.Name()]
		}
		// Poll the check: a run that ended before a Lease expired must
		// pass, one that began after must fail. Judged at its own clock, a
		// run spanning the expiry may say either.
		failed := map[string]checks.Result{}
		polls := 0
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Until(latest)+30*time.Second, true, func(ctx context.Context) (bool, error) {
			from := time.Now()
			out := runLiveness(ctx, t, kubeconfig)
			to := time.Now()
			polls++
			for _, op := range operators {
				r := result(t, out, "controller-lease", op.Name())
				exp := expiry[op.Name()]
				switch {
				case to.Before(exp):
					assert.Equal(t, checks.Pass, r.Status, "%s, %s before its Lease expired: %s", op.Name(), exp.Sub(to), r.Reason)
				case from.After(exp):
					assert.Equal(t, checks.Fail, r.Status, "%s, %s after its Lease expired: %s", op.Name(), from.Sub(exp), r.Reason)
					if _, seen := failed[op.Name()]; !seen && r.Status == checks.Fail {
						failed[op.Name()] = r
						t.Logf("controller-lease for %s failed %.1fs after the process stopped: %s", op.Name(), to.Sub(stopped[op.Name()]).Seconds(), r.Reason)
					}
				}
			}
			return len(failed) == len(operators), nil
		})
		require.NoError(t, err, "controller-lease did not fail for every stopped operator after its Lease expired (%d polls)", polls)
		for _, op := range operators {
			r := failed[op.Name()]
			assert.Contains(t, r.Reason, "Lease "+op.Namespace()+"/"+op.Lease()+" is stale: last renewed at ")
			assert.Contains(t, r.Reason, " by "+host+"_")
			assert.Contains(t, r.Reason, "with a lease duration of 15s: the leader stopped renewing")
		}

		// The report says so: neither operator meets robust_controller.
		out, verdicts := runChecks(ctx, t, kubeconfig, "")
		for _, op := range operators {
			assertNotMet(t, out, verdicts, op.Name(), "controller-lease")
			// Its pod still looks fine: only the Lease shows the process gone.
			assert.Equal(t, checks.Pass, result(t, out, "controller-ready", op.Name()).Status)
		}

		// Back: each process takes its Lease again and the check passes. A
		// new run waits a whole lease duration first, even for a Lease long
		// expired: client-go times a holder from when it first saw it, not
		// from its renewTime. Both wait at once.
		restarted := time.Now()
		for _, op := range operators {
			require.NoError(t, op.Start(ctx))
		}
		for _, op := range operators {
			holder, err := op.WaitLeader(ctx)
			require.NoError(t, err)
			t.Logf("%s leads again %.1fs after the restarts began, as %s", op.Name(), time.Since(restarted).Seconds(), holder)
		}
		out = runLiveness(ctx, t, kubeconfig)
		for _, op := range operators {
			r := result(t, out, "controller-lease", op.Name())
			assert.Equal(t, checks.Pass, r.Status, "%s: %s", op.Name(), r.Reason)
		}
	})
	t.Logf("test ran %.1fs", time.Since(began).Seconds())
}

// runLiveness runs the read-only liveness checks alone, as the admin, on
// a fresh cache: controller-lease for every profile, gpu-device-plugin.
func runLiveness(ctx context.Context, t *testing.T, kubeconfig string) checks.Outcome {
	t.Helper()
	live, err := cluster.NewLiveFor(kubeconfig, "", time.Now)
	require.NoError(t, err)
	profiles, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	return checks.Run(ctx, cluster.NewCache(live), profiles, checks.Selection{Checks: []checks.Check{operator.ControllerLease{}, accelerators.GPUDevicePlugin{}}},
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute}, time.Now)
}
