//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

var podGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}

// TestGangProbeCoscheduling runs the gang probe through a second gang
// scheduler besides Kueue: scheduler-plugins' Coscheduling, its scheduler
// and controller real processes on the rig, and no Kueue. The gang whose
// PodGroup's members all exist is bound whole; the one whose PodGroup
// needs one member more than its Job makes gets no pod; nothing is left.
func TestGangProbeCoscheduling(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	binDir := framework.RigBin(t)
	for _, b := range []string{"scheduler-plugins-scheduler", "scheduler-plugins-controller"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			t.Fatalf("no %s in %s: run `tools/build %s` first", b, binDir, b)
		}
	}
	aiconform := buildAiconform(t)
	c := startRig(ctx, t, "coscheduling", binDir)
	began := time.Now()
	sp, err := c.InstallSchedulerPlugins(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}})
	require.NoError(t, err)
	t.Logf("scheduler-plugins installed in %.1fs: controller pid %d, scheduler pid %d", time.Since(began).Seconds(), sp.PID(), sp.SchedulerPID())
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)

	began = time.Now()
	// The gang scheduler alone: the requirement's controller checks,
	// shared with robust_controller, run for it too.
	rep, md, code := runCheck(ctx, t, aiconform, c.Kubeconfig(), "gang_scheduling", "--operator", "coscheduling", "--probe", "--probe-timeout", "1m")
	t.Logf("check gang_scheduling --probe took %s", time.Since(began).Round(100*time.Millisecond))
	shipped := statuses(rep, "")
	probed := reportCheck(t, rep, "gang-probe", "coscheduling")
	require.Equal(t, "pass", probed.Status, probed.Reason)
	require.NotNil(t, probed.Table)
	t.Logf("gang probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
	assert.Contains(t, probed.Reason, "a gang of 3 pods was admitted whole")
	assert.Contains(t, probed.Reason, "a gang of 4, whose Coscheduling PodGroup needs 5 members, had none bound")
	assert.Contains(t, probed.Reason, "status.phase=Pending", "what the waiting gang's PodGroup said")
	assert.Contains(t, md, "podgroup.scheduling.x-k8s.io/aiconform-gang-fits created")
	assert.Contains(t, md, "job.batch/aiconform-gang-exceeds created")
	// The controller writes Running once minMember pods run, Finished once
	// they succeeded; kwok's pods of a Job can finish before it looks.
	assert.Regexp(t, `podgroup aiconform-gang-fits \(fits\): status\.phase=(Running|Finished)`, timeline(probed.Table))
	ready := reportCheck(t, rep, "controller-ready", "coscheduling")
	assert.Equal(t, "pass", ready.Status, ready.Reason)
	assert.Equal(t, "skip", reportCheck(t, rep, "controller-lease", "coscheduling").Status, "the chart's controller elects no leader")
	v := requirement(t, rep, "gang_scheduling")
	assert.Equal(t, "Implemented", v.Status, v.Conclusion)
	assert.Contains(t, v.Conclusion, "Coscheduling (scheduler-plugins) meets it")
	assert.Equal(t, 0, code, v.Conclusion)

	assertNoLeftovers(ctx, t, cs, dyn)
	groups, err := dyn.Resource(podGroupGVR).List(ctx, metav1.ListOptions{LabelSelector: probe.RunLabel})
	require.NoError(t, err)
	assert.Empty(t, groups.Items, "the probe's PodGroups")
	jobs, err := cs.BatchV1().Jobs("").List(ctx, metav1.ListOptions{LabelSelector: probe.RunLabel})
	require.NoError(t, err)
	assert.Empty(t, jobs.Items, "the probe's Jobs")

	// The published roles are enough for it: the prober role creates and
	// deletes the PodGroups.
	const as = "system:serviceaccount:cosched-auditors:cosched-prober"
	bindRoles(ctx, t, cs, "cosched-auditors", "cosched-prober", "aiconform-reader.yaml")
	bindRoles(ctx, t, cs, "cosched-auditors", "cosched-prober", "aiconform-prober.yaml")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		rep, _, _ = runCheck(ctx, t, aiconform, c.Kubeconfig(), "gang_scheduling", "--as", as, "--probe", "--probe-timeout", "1m")
		return reportCheck(t, rep, "gang-probe", "coscheduling").Status == "pass", nil
	}), "gang-probe with the published roles: %s", reportCheck(t, rep, "gang-probe", "coscheduling").Reason)
	assertNoLeftovers(ctx, t, cs, dyn)

	// Installed elsewhere, as the chart installs it into its release's
	// namespace (issue 35): the same verdict and check statuses, and
	// controller-ready says where it found the controller.
	require.NoError(t, sp.Uninstall(ctx))
	const release = "sched-release"
	sp, err = c.InstallSchedulerPlugins(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}, Namespace: release})
	require.NoError(t, err)
	moved, _, _ := runCheck(ctx, t, aiconform, c.Kubeconfig(), "gang_scheduling", "--operator", "coscheduling", "--probe", "--probe-timeout", "1m")
	assert.Equal(t, shipped, statuses(moved, ""), "verdict and check statuses once installed in %s", release)
	assert.Contains(t, reportCheck(t, moved, "controller-ready", "coscheduling").Reason, "Deployment "+release+"/scheduler-plugins-controller")
	assertNoLeftovers(ctx, t, cs, dyn)
	require.NoError(t, sp.Stop(ctx))
}
