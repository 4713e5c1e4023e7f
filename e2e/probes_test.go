//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/probe"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestProbesOnRig runs `aiconform check --probe`, the real binary, against
// the real KServe and KubeRay: their webhooks deny an invalid resource and
// admit a valid one, a canary of each is reconciled and collected, faults
// give the verdict and diagnosis they should, and interrupted runs leave
// nothing behind.
func TestProbesOnRig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 18*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	c := startOperatorRig(ctx, t, "probes", false)
	binDir, kserve, kuberay := c.BinDir, c.KServe, c.KubeRay
	kubeconfig := c.Kubeconfig()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	check := func(t *testing.T, id string, args ...string) (*report.Report, string, int) {
		t.Helper()
		return runCheck(ctx, t, aiconform, kubeconfig, id, args...)
	}
	run := func(t *testing.T, args ...string) (*report.Report, string) {
		t.Helper()
		rep, md, _ := check(t, "robust_controller", append([]string{"--probe"}, args...)...)
		return rep, md
	}

	t.Run("Pass", func(t *testing.T) {
		rep, md := run(t, "--probe-timeout", "2m")
		for _, op := range []string{"kserve", "kuberay", "kubeflow-trainer", "kubeflow-training", "kueue"} {
			answer := reportCheck(t, rep, "webhooks-answer", op)
			assert.Equal(t, "pass", answer.Status, "%s: %s", op, answer.Reason)
			assert.Contains(t, answer.Reason, "denied the invalid")
			canary := reportCheck(t, rep, "canary-reconciled", op)
			assert.Equal(t, "pass", canary.Status, "%s: %s", op, canary.Reason)
			require.NotNil(t, canary.Table, "%s: the canary's timeline", op)
			t.Logf("%s canary timeline:\n%s", op, timeline(canary.Table))
		}
		// The mutation KServe's defaulting webhook makes shows as a change.
		assert.Contains(t, md, "spec.predictor.model.modelFormat.name")
		assert.Contains(t, md, `admission webhook "inferenceservice.kserve-webhook-server.validator" denied the request`)
		assert.Contains(t, md, "every child kind present")
		// Kueue's canary is cluster-scoped: named after the run, released
		// by Kueue (its finalizer) once deleted.
		assert.Contains(t, md, "clusterqueue.kueue.x-k8s.io/aiconform-canary-"+rep.Run.Probe.RunID+" created")
		assert.Contains(t, md, "deletion waits on finalizers kueue.x-k8s.io/resource-in-use")
		// Kueue's webhook on TrainJobs is asked too, and admits what only
		// Trainer's denies.
		assert.Contains(t, reportCheck(t, rep, "webhooks-answer", "kubeflow-trainer").Reason, "validator.trainjob.trainer.kubeflow.org denied")
		rc := requirement(t, rep, "robust_controller")
		assert.Equal(t, "Implemented", rc.Status, rc.Conclusion)
		// The run's namespace must be gone before one of the same name is
		// made for the re-runs.
		assertNoLeftovers(ctx, t, cs, dyn)
		assertDryRunsReRun(ctx, t, binDir, kubeconfig, cs, rep)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// gang_scheduling on Kueue: the probe's gangs, the verdict without
	// probes, a queue Kueue cannot use, Kueue stopped, and the published
	// roles.
	t.Run("GangScheduling", func(t *testing.T) {
		gang := func(t *testing.T, args ...string) (*report.Report, string, int) {
			t.Helper()
			return check(t, "gang_scheduling", args...)
		}

		began := time.Now()
		rep, md, code := gang(t, "--probe", "--probe-timeout", "1m")
		t.Logf("check gang_scheduling --probe took %s", time.Since(began).Round(100*time.Millisecond))
		probed := reportCheck(t, rep, "gang-probe", "kueue")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "a gang of 3 pods was admitted whole")
		assert.Contains(t, probed.Reason, "a gang of 4, more than the quota, had none bound")
		require.NotNil(t, probed.Table)
		t.Logf("gang probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		v := requirement(t, rep, "gang_scheduling")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 0, code, v.Conclusion)
		assert.Contains(t, v.Conclusion, "Kueue meets it")
		// Its writes show as what kubectl would send, its own quota named
		// after the run.
		assert.Contains(t, md, "resourceflavor.kueue.x-k8s.io/aiconform-gang-"+rep.Run.Probe.RunID+" created")
		assert.Contains(t, md, "clusterqueue.kueue.x-k8s.io/aiconform-gang-"+rep.Run.Probe.RunID+" created")
		assert.Contains(t, md, "job.batch/aiconform-gang-exceeds created")
		// The rig has no queue of its own: Kueue works, but admits nothing
		// of the cluster's until an admin makes one.
		queues := reportCheck(t, rep, "gang-queues", "kueue")
		assert.Equal(t, "warn", queues.Status, queues.Reason)
		assertNoLeftovers(ctx, t, cs, dyn)

		// Read-only, nothing shows Kueue at work: not Implemented, and the
		// verdict says what would show it.
		rep, _, code = gang(t)
		v = requirement(t, rep, "gang_scheduling")
		assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 1, code)
		assert.Contains(t, v.Conclusion, "not shown at work")
		assert.Contains(t, v.Conclusion, "gang-probe: probes are off")

		// A queue naming a flavor that does not exist is inactive.
		broken := create(ctx, t, dyn, clusterQueueGVR, `apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-broken
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: no-such-flavor
      resources:
      - name: cpu
        nominalQuota: "1"
`)
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, _, _ = gang(t)
			return reportCheck(t, rep, "gang-queues", "kueue").Status == "fail", nil
		}))
		queues = reportCheck(t, rep, "gang-queues", "kueue")
		assert.Contains(t, queues.Reason, "ClusterQueue team-broken: Active=False (FlavorNotFound")
		require.NoError(t, dyn.Resource(clusterQueueGVR).Delete(ctx, broken.GetName(), metav1.DeleteOptions{}))

		// Kueue stopped: its webhooks do not answer, nothing is admitted.
		require.NoError(t, c.Kueue.Stop(ctx))
		rep, _, _ = gang(t, "--probe", "--probe-timeout", "20s")
		restart(ctx, t, c.Kueue)
		probed = reportCheck(t, rep, "gang-probe", "kueue")
		assert.Equal(t, "fail", probed.Status, probed.Reason)
		t.Logf("Kueue stopped: %s", probed.Reason)
		assert.NotEqual(t, "Implemented", requirement(t, rep, "gang_scheduling").Status)
		assertNoLeftovers(ctx, t, cs, dyn)

		// The published roles are enough for the gang probe; its pods run
		// the image of an air-gapped cluster's registry when told.
		// (Bindings are named after the role and the account: another
		// account name than LeastPrivilege's.)
		const as = "system:serviceaccount:gang-auditors:gang-prober"
		const mirror = "registry.example/mirror/pause:3.10"
		bindRoles(ctx, t, cs, "gang-auditors", "gang-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "gang-auditors", "gang-prober", "aiconform-prober.yaml")
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, _ = gang(t, "--as", as, "--probe", "--probe-timeout", "1m", "--probe-image", mirror)
			return reportCheck(t, rep, "gang-probe", "kueue").Status == "pass", nil
		}), "gang-probe with the published roles: %s", reportCheck(t, rep, "gang-probe", "kueue").Reason)
		assert.Contains(t, md, "image: "+mirror)
		assert.NotContains(t, md, "image: "+probe.DefaultImage)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// pod_autoscaling: the HPA probe on the rig's metrics adapter, the
	// verdict without probes, the adapter stopped, and the published roles.
	t.Run("PodAutoscaling", func(t *testing.T) {
		hpa := func(t *testing.T, args ...string) (*report.Report, string, int) {
			t.Helper()
			return check(t, "pod_autoscaling", args...)
		}

		began := time.Now()
		rep, md, code := hpa(t, "--probe", "--probe-timeout", "2m")
		t.Logf("check pod_autoscaling --probe took %s", time.Since(began).Round(100*time.Millisecond))
		apis := reportCheck(t, rep, "metrics-apis", "")
		assert.Equal(t, "warn", apis.Status, apis.Reason)
		assert.Contains(t, apis.Reason, "external.metrics.k8s.io served by an adapter of sigs.k8s.io/custom-metrics-apiserver (custom-metrics/custom-metrics-apiserver)")
		assert.Contains(t, apis.Reason, "metrics.k8s.io is not registered")
		probed := reportCheck(t, rep, "hpa-probe", "")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "an HPA on the external metric "+rig.MetricsAdapterExternalMetric)
		assert.Contains(t, probed.Reason, "scaled pods requesting nvidia.com/gpu from 1 to 2")
		require.NotNil(t, probed.Table)
		t.Logf("HPA probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		v := requirement(t, rep, "pod_autoscaling")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 0, code, v.Conclusion)
		// The metric as the API server returns it, and the writes as
		// kubectl would send them.
		assert.Contains(t, md, "kubectl get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/"+rep.Run.Probe.Namespace+"/"+rig.MetricsAdapterExternalMetric)
		assert.Contains(t, md, "horizontalpodautoscaler.autoscaling/aiconform-hpa created")
		assert.Contains(t, md, "horizontalpodautoscaler.autoscaling/aiconform-hpa patched")
		assertNoLeftovers(ctx, t, cs, dyn)

		// Read-only, nothing of the rig's own scales on a custom metric.
		rep, _, code = hpa(t)
		v = requirement(t, rep, "pod_autoscaling")
		assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 1, code)
		assert.Contains(t, v.Conclusion, "not shown at work")
		assert.Contains(t, v.Conclusion, "hpa-probe: probes are off")

		// The adapter stopped: the aggregator reports its APIServices
		// unavailable, and nothing can scale on its metrics.
		require.NoError(t, c.MetricsAdapter.Stop())
		require.NoError(t, c.MetricsAdapter.WaitUnavailable(ctx))
		rep, _, _ = hpa(t, "--probe", "--probe-timeout", "30s")
		require.NoError(t, c.MetricsAdapter.Start(ctx))
		require.NoError(t, c.MetricsAdapter.WaitAvailable(ctx))
		apis = reportCheck(t, rep, "metrics-apis", "")
		assert.Equal(t, "fail", apis.Status, apis.Reason)
		assert.Contains(t, apis.Reason, "not Available")
		// Neither metrics API is served and Available: the probe has
		// nothing to scale on, and the verdict is metrics-apis' alone.
		probed = reportCheck(t, rep, "hpa-probe", "")
		assert.Equal(t, "skip", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "neither custom.metrics.k8s.io nor external.metrics.k8s.io is served and Available")
		t.Logf("adapter stopped: %s; %s", apis.Reason, probed.Reason)
		assert.NotEqual(t, "Implemented", requirement(t, rep, "pod_autoscaling").Status)
		assertNoLeftovers(ctx, t, cs, dyn)

		// The published roles are enough for the HPA probe.
		const as = "system:serviceaccount:hpa-auditors:hpa-prober"
		bindRoles(ctx, t, cs, "hpa-auditors", "hpa-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "hpa-auditors", "hpa-prober", "aiconform-prober.yaml")
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, _, _ = hpa(t, "--as", as, "--probe", "--probe-timeout", "2m")
			return reportCheck(t, rep, "hpa-probe", "").Status == "pass", nil
		}), "hpa-probe with the published roles: %s", reportCheck(t, rep, "hpa-probe", "").Reason)
		assert.Equal(t, "warn", reportCheck(t, rep, "metrics-apis", "").Status)
		assert.Equal(t, "skip", reportCheck(t, rep, "hpas-active", "").Status)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// cluster_autoscaling on a rig without an autoscaler: not applicable,
	// saying what was looked for, read with the published reader role.
	t.Run("ClusterAutoscalingNotApplicable", func(t *testing.T) {
		bindRoles(ctx, t, cs, "ca-auditors", "ca-reader", "aiconform-reader.yaml")
		var rep *report.Report
		var code int
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, _, code = check(t, "cluster_autoscaling", "--as", "system:serviceaccount:ca-auditors:ca-reader")
			return requirement(t, rep, "cluster_autoscaling").Status == "N/A", nil
		}), "cluster_autoscaling: %s", requirement(t, rep, "cluster_autoscaling").Conclusion)
		v := requirement(t, rep, "cluster_autoscaling")
		assert.Equal(t, 0, code, v.Conclusion)
		assert.Contains(t, v.Conclusion, "no cluster autoscaler found (looked for Karpenter (CRD nodepools.karpenter.sh), cluster-autoscaler (its status ConfigMap cluster-autoscaler-status, in any namespace, and its Deployment, by its pod labels) and node groups of machinedeployments.cluster.x-k8s.io, machinepools.cluster.x-k8s.io, machinesets.machine.openshift.io, computeclasses.cloud.google.com)")
	})

	// cluster_autoscaling with Karpenter's kwok provider: the probe makes
	// it add a GPU node and watches the node go; read-only, nothing of the
	// cluster's own shows it at work; at its NodePool's limit it adds
	// none. The probe runs as the published roles. Karpenter stops at the end, so
	// that no later test's pending pod gets a node.
	t.Run("ClusterAutoscaling", func(t *testing.T) {
		step := time.Now()
		k, err := c.InstallKarpenter(ctx, rig.OperatorOptions{BinDir: binDir})
		require.NoError(t, err)
		t.Logf("Karpenter installed in %.1fs", time.Since(step).Seconds())
		defer func() { assert.NoError(t, k.Stop()) }()
		scaleUp := func(t *testing.T, timeout string, args ...string) (*report.Report, string, int) {
			t.Helper()
			return check(t, "cluster_autoscaling", append([]string{"--probe", "--probe-scale-up", "--probe-timeout", timeout}, args...)...)
		}

		// As the published roles allow, and no more.
		const as = "system:serviceaccount:ca-auditors:ca-prober"
		bindRoles(ctx, t, cs, "ca-auditors", "ca-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "ca-auditors", "ca-prober", "aiconform-prober.yaml")
		began := time.Now()
		var rep *report.Report
		var md string
		var code int
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, code = scaleUp(t, "2m", "--as", as)
			// A refusal before the roles are in force is quick, and
			// anything else the assertions below report.
			return !strings.Contains(reportCheck(t, rep, "scale-up-probe", "").Reason, "forbidden"), nil
		}))
		t.Logf("check cluster_autoscaling --probe --probe-scale-up took %s", time.Since(began).Round(100*time.Millisecond))
		probed := reportCheck(t, rep, "scale-up-probe", "")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "Karpenter (NodePool "+rig.KarpenterNodePool+") added node kwok-"+rig.KarpenterNodePool+"-")
		assert.Contains(t, probed.Reason, "(nvidia.com/gpu: 8)")
		assert.Contains(t, probed.Reason, "the node was removed")
		require.NotNil(t, probed.Table)
		t.Logf("scale-up probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		assert.Contains(t, timeline(probed.Table), "(the added node)")
		v := requirement(t, rep, "cluster_autoscaling")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Contains(t, v.Conclusion, "shown at work by scale-up-probe")
		assert.Equal(t, 0, code, v.Conclusion)
		assert.Contains(t, md, "pod/aiconform-scale-up-0 created")
		assert.Contains(t, md, "kubectl delete pods aiconform-scale-up-0 -n "+rep.Run.Probe.Namespace)
		assertNoLeftovers(ctx, t, cs, dyn)
		require.NoError(t, k.WaitNoNodeClaims(ctx))

		// Read-only: installed and able to grow, but its NodeClaims are gone.
		rep, _, code = check(t, "cluster_autoscaling")
		v = requirement(t, rep, "cluster_autoscaling")
		assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 1, code)
		assert.Contains(t, v.Conclusion, "not shown at work")
		assert.Contains(t, v.Conclusion, "scale-up-probe: probes are off")
		assert.Equal(t, "pass", reportCheck(t, rep, "accelerator-node-groups", "").Status)

		// At its limit: the read-only check warns, and the probe's pod
		// waits in vain.
		require.NoError(t, k.SetGPULimit(ctx, 0))
		rep, _, code = scaleUp(t, "20s")
		require.NoError(t, k.SetGPULimit(ctx, rig.KarpenterGPULimit))
		groups := reportCheck(t, rep, "accelerator-node-groups", "")
		assert.Equal(t, "warn", groups.Status, groups.Reason)
		assert.Contains(t, groups.Reason, "at its limit of nvidia.com/gpu=0")
		probed = reportCheck(t, rep, "scale-up-probe", "")
		assert.Equal(t, "fail", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "no node was added within 20s")
		t.Logf("at its limit: %s; %s", groups.Reason, probed.Reason)
		// Its health and detection pass; what it cannot do fails.
		assert.Equal(t, "Partially Implemented", requirement(t, rep, "cluster_autoscaling").Status)
		assert.Equal(t, 1, code)
		assertNoLeftovers(ctx, t, cs, dyn)
		require.NoError(t, k.WaitNoNodeClaims(ctx))
	})

	// dra_support: the rig's kube-apiserver serves resource.k8s.io/v1 and
	// its scheduler allocates from the GPU node's slice: the probe's claim
	// gets a device and its pod is bound there. Without a driver's slice,
	// nothing can be allocated. The probe runs as the published roles.
	t.Run("DRASupport", func(t *testing.T) {
		require.NoError(t, c.PublishDRADevices(ctx))
		defer func() { assert.NoError(t, c.WithdrawDRADevices(ctx)) }()
		const as = "system:serviceaccount:dra-auditors:dra-prober"
		bindRoles(ctx, t, cs, "dra-auditors", "dra-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "dra-auditors", "dra-prober", "aiconform-prober.yaml")
		var rep *report.Report
		var md string
		var code int
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, code = check(t, "dra_support", "--as", as, "--probe", "--probe-timeout", "1m")
			return !strings.Contains(reportCheck(t, rep, "dra-probe", "").Reason, "forbidden"), nil
		}))
		for _, id := range []string{"dra-apis", "dra-devices"} {
			r := reportCheck(t, rep, id, "")
			assert.Equal(t, "pass", r.Status, "%s: %s", id, r.Reason)
		}
		assert.Contains(t, reportCheck(t, rep, "dra-devices", "").Reason, "NVIDIA DRA Driver for GPUs (gpu.nvidia.com) publishes 8 devices on 1 node; DeviceClass gpu.nvidia.com selects them")
		probed := reportCheck(t, rep, "dra-probe", "")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "of pool "+rig.GPUNodeName+" (driver "+rig.DRADriver+"), and the pod bound to "+rig.GPUNodeName)
		assert.Contains(t, probed.Reason, "the claim was collected with the pod")
		require.NotNil(t, probed.Table)
		t.Logf("DRA probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		v := requirement(t, rep, "dra_support")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 0, code, v.Conclusion)
		assert.Contains(t, md, "resourceclaimtemplate.resource.k8s.io/aiconform-dra created")
		assertNoLeftovers(ctx, t, cs, dyn)

		// Read-only: served and published, but no claim of the cluster's
		// own shows DRA at work.
		rep, _, code = check(t, "dra_support")
		v = requirement(t, rep, "dra_support")
		assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
		assert.Contains(t, v.Conclusion, "not shown at work")
		assert.Equal(t, 1, code)

		// No driver publishes: nothing to allocate.
		require.NoError(t, c.WithdrawDRADevices(ctx))
		rep, _, _ = check(t, "dra_support", "--probe", "--probe-timeout", "30s")
		devices := reportCheck(t, rep, "dra-devices", "")
		assert.Equal(t, "fail", devices.Status, devices.Reason)
		assert.Contains(t, devices.Reason, "no DRA driver publishes devices")
		assert.Equal(t, "skip", reportCheck(t, rep, "dra-probe", "").Status)
		assert.Equal(t, "Partially Implemented", requirement(t, rep, "dra_support").Status)
	})

	// secure_accelerator_access: read-only, the GPU node's pods reach no
	// device around a request until a privileged pod of a user's own
	// lands there. The probe's three pods are placed on the GPU node with
	// their requests, as the published roles allow; kwok runs no
	// container, so they never end and print nothing, and the probe says
	// it could not judge (what containers print is judged on recorded
	// outputs in the unit tests).
	t.Run("SecureAcceleratorAccess", func(t *testing.T) {
		rep, _, _ := check(t, "secure_accelerator_access")
		mediated := reportCheck(t, rep, "device-access-mediated", "")
		require.Equal(t, "pass", mediated.Status, mediated.Reason)
		v := requirement(t, rep, "secure_accelerator_access")
		assert.Equal(t, "Not Implemented", v.Status, v.Conclusion)
		assert.Contains(t, v.Conclusion, "not shown at work")

		debug := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gpu-debug"},
			Spec: corev1.PodSpec{NodeName: rig.GPUNodeName, Containers: []corev1.Container{{Name: "shell", Image: "ubuntu:24.04",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		}
		_, err := cs.CoreV1().Pods("default").Create(ctx, debug, metav1.CreateOptions{})
		require.NoError(t, err)
		rep, _, _ = check(t, "device-access-mediated")
		mediated = reportCheck(t, rep, "device-access-mediated", "")
		assert.Equal(t, "fail", mediated.Status, mediated.Reason)
		assert.Contains(t, mediated.Reason, "pod default/gpu-debug container shell: privileged, with every device of the node")
		require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, "gpu-debug", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}))

		const as = "system:serviceaccount:sec-auditors:sec-prober"
		bindRoles(ctx, t, cs, "sec-auditors", "sec-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "sec-auditors", "sec-prober", "aiconform-prober.yaml")
		var probed report.Check
		var md string
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, _ = check(t, "secure_accelerator_access", "--as", as, "--probe", "--probe-timeout", "15s", "--probe-shell-image", "local/busybox:rig")
			probed = reportCheck(t, rep, "device-isolation-probe", "")
			return !strings.Contains(probed.Reason, "forbidden"), nil
		}))
		assert.Equal(t, "error", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "the probe's pods did not finish within 15s: pod aiconform-devices-a Running; pod aiconform-devices-b Running; pod aiconform-devices-none Running")
		require.NotNil(t, probed.Table)
		tl := timeline(probed.Table)
		for _, pod := range []string{"aiconform-devices-a", "aiconform-devices-b", "aiconform-devices-none"} {
			assert.Contains(t, tl, "pod "+pod+" bound to "+rig.GPUNodeName)
		}
		assert.Contains(t, md, "image: local/busybox:rig")
		assert.Contains(t, md, "nvidia.com/gpu: \"1\"")
		t.Logf("device isolation probe: %s\ntimeline:\n%s", probed.Reason, tl)
		v = requirement(t, rep, "secure_accelerator_access")
		assert.Equal(t, "Partially Implemented", v.Status, v.Conclusion)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// workload_sandboxing: with gVisor's RuntimeClass, the probe's two pods
	// are admitted, one in the class, and bound to one node, as the
	// published roles allow; kwok runs no container, so they never end and
	// the probe says it could not judge (what the kernels print is judged
	// on recorded outputs in the unit tests).
	t.Run("WorkloadSandboxing", func(t *testing.T) {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
		_, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, cs.NodeV1().RuntimeClasses().Delete(ctx, "gvisor", metav1.DeleteOptions{})) }()
		const as = "system:serviceaccount:sandbox-auditors:sandbox-prober"
		bindRoles(ctx, t, cs, "sandbox-auditors", "sandbox-prober", "aiconform-reader.yaml")
		bindRoles(ctx, t, cs, "sandbox-auditors", "sandbox-prober", "aiconform-prober.yaml")
		var rep *report.Report
		var md string
		var probed report.Check
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			rep, md, _ = check(t, "workload_sandboxing", "--as", as, "--probe", "--probe-timeout", "15s", "--probe-shell-image", "local/busybox:rig")
			probed = reportCheck(t, rep, "sandbox-probe", "")
			return !strings.Contains(probed.Reason, "forbidden"), nil
		}))
		found := reportCheck(t, rep, "sandbox-runtimes", "")
		assert.Equal(t, "pass", found.Status, found.Reason)
		assert.Contains(t, found.Reason, "RuntimeClass gvisor (gVisor, handler runsc) admits")
		assert.Equal(t, "error", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "the probe's pods did not finish within 15s: pod aiconform-sandboxed Running; pod aiconform-beside Running")
		require.NotNil(t, probed.Table)
		tl := timeline(probed.Table)
		bound := regexp.MustCompile(`pod (aiconform-\w+) bound to (\S+)`).FindAllStringSubmatch(tl, -1)
		require.Len(t, bound, 2, tl)
		assert.Equal(t, bound[0][2], bound[1][2], "both on one node: %s", tl)
		assert.Contains(t, md, "runtimeClassName: gvisor")
		t.Logf("sandbox probe: %s\ntimeline:\n%s", probed.Reason, tl)
		v := requirement(t, rep, "workload_sandboxing")
		assert.Equal(t, "Partially Implemented", v.Status, v.Conclusion)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// The read-only checks never judge the run's own canary: with one
	// InferenceService of the cluster's own reconciled, twenty runs in a
	// row give the same verdict, counting that one resource and never the
	// canary, though the canary is created and reconciled in each.
	t.Run("SameVerdictTwentyRuns", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "models", metav1.GetOptions{}); err != nil {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "models"}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		create(ctx, t, dyn, isvcGVR, sklearnIris)
		defer func() {
			assert.NoError(t, dyn.Resource(isvcGVR).Namespace("models").Delete(ctx, "sklearn-iris", metav1.DeleteOptions{}))
		}()
		waitConditions(ctx, t, dyn, isvcGVR, "models", "sklearn-iris", 3*time.Minute, "Ready")
		const runs = 20
		verdicts := map[string]int{}
		for i := range runs {
			rep, _ := run(t, "--operator", "kserve", "--probe-timeout", "2m")
			crs := reportCheck(t, rep, "crs-reconciled", "kserve")
			assert.Equal(t, "pass", crs.Status, "run %d: %s", i, crs.Reason)
			assert.Equal(t, "1 custom resource reconciled and Ready: InferenceService models/sklearn-iris", crs.Reason, "run %d", i)
			canary := reportCheck(t, rep, "canary-reconciled", "kserve")
			assert.Equal(t, "pass", canary.Status, "run %d: %s", i, canary.Reason)
			rc := requirement(t, rep, "robust_controller")
			verdicts[rc.Status+": "+crs.Status+" "+crs.Reason]++
		}
		t.Logf("verdicts of %d runs: %v", runs, verdicts)
		assert.Len(t, verdicts, 1, "every run gives the same verdict")
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("WebhookServerStopped", func(t *testing.T) {
		require.NoError(t, kserve.StopServer())
		defer restart(ctx, t, kserve)
		rep, md := run(t, "--operator", "kserve", "--probe-timeout", "30s")
		answer := reportCheck(t, rep, "webhooks-answer", "kserve")
		assert.Equal(t, "fail", answer.Status, answer.Reason)
		assert.Contains(t, answer.Reason, "cannot call the webhook")
		canary := reportCheck(t, rep, "canary-reconciled", "kserve")
		assert.Equal(t, "fail", canary.Status, canary.Reason)
		assert.Contains(t, strings.Join(canary.Details, "\n"), "webhook cannot be called")
		assert.Contains(t, md, "failed calling webhook")
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// A stopped controller: Stop unregisters the operator's webhooks first
	// (for Kueue, else every pod and Job of the rig would be refused), so
	// the canary is admitted and then nothing reconciles it.
	controllerStopped := func(t *testing.T, o *rig.Operator, kind, timeout, webhook string) {
		require.NoError(t, o.Stop(ctx))
		defer restart(ctx, t, o)
		rep, _ := run(t, "--operator", o.Name(), "--probe-timeout", timeout)
		canary := reportCheck(t, rep, "canary-reconciled", o.Name())
		assert.Equal(t, "fail", canary.Status, canary.Reason)
		assert.Contains(t, canary.Reason, kind+" was not reconciled within "+timeout)
		assert.Contains(t, strings.Join(canary.Details, "\n"), "the controller wrote no status")
		answer := reportCheck(t, rep, "webhooks-answer", o.Name())
		if webhook == "" {
			// Its profile requires no webhook (KubeRay's Helm chart has
			// none): with its configuration gone, that leg does not apply,
			// and the canary still shows the controller gone.
			assert.Equal(t, "skip", answer.Status, answer.Reason)
			assert.Contains(t, answer.Reason, "the webhook leg does not apply")
		} else {
			assert.Equal(t, "fail", answer.Status, answer.Reason)
			assert.Contains(t, answer.Reason, webhook+" of ")
			assert.Contains(t, answer.Reason, "is not registered")
		}
		assert.NotEqual(t, "Implemented", requirement(t, rep, "robust_controller").Status)
		assertNoLeftovers(ctx, t, cs, dyn)
	}
	t.Run("ControllerStopped", func(t *testing.T) {
		controllerStopped(t, kuberay, "RayCluster", "15s", "")
	})
	t.Run("KueueControllerStopped", func(t *testing.T) {
		// Its canary queue had no finalizer yet: the run deletes it on its
		// way out, which assertNoLeftovers sees.
		controllerStopped(t, c.Kueue, "ClusterQueue", "10s", "vclusterqueue.kb.io")
	})

	t.Run("TrainerWebhookServerStopped", func(t *testing.T) {
		require.NoError(t, c.Trainer.StopServer())
		defer restart(ctx, t, c.Trainer)
		rep, _ := run(t, "--operator", "kubeflow-trainer", "--probe-timeout", "30s")
		answer := reportCheck(t, rep, "webhooks-answer", "kubeflow-trainer")
		assert.Equal(t, "fail", answer.Status, answer.Reason)
		assert.Contains(t, answer.Reason, "cannot call the webhook")
		canary := reportCheck(t, rep, "canary-reconciled", "kubeflow-trainer")
		assert.Equal(t, "fail", canary.Status, canary.Reason)
		assert.Contains(t, strings.Join(canary.Details, "\n"), "webhook cannot be called")
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("TrainJobRuntimeMissing", func(t *testing.T) {
		// The built-in Trainer profile, with a canary naming a runtime the
		// cluster does not have.
		builtin, err := os.ReadFile(filepath.Join("..", "checks", "profiles", "kubeflow-trainer.yaml"))
		require.NoError(t, err)
		profile := filepath.Join(t.TempDir(), "trainer-no-runtime.yaml")
		missing := strings.ReplaceAll(string(builtin), "name: torch-distributed", "name: aiconform-no-such-runtime")
		require.NoError(t, os.WriteFile(profile, []byte(missing), 0o644))
		rep, _ := run(t, "--operator", "kubeflow-trainer", "--profile", profile, "--probe-timeout", "30s")
		canary := reportCheck(t, rep, "canary-reconciled", "kubeflow-trainer")
		assert.Equal(t, "fail", canary.Status, canary.Reason)
		details := strings.Join(canary.Details, "\n")
		assert.Contains(t, details, "the runtime the canary names does not exist")
		t.Logf("diagnosis:\n%s", details)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("CanaryUnschedulable", func(t *testing.T) {
		// The same KServe profile, with a canary asking for more GPUs than
		// the rig's GPU node has.
		profile := filepath.Join(t.TempDir(), "kserve-gpu.yaml")
		require.NoError(t, os.WriteFile(profile, []byte(hungryKServeProfile), 0o644))
		rep, _ := run(t, "--operator", "kserve", "--profile", profile, "--probe-timeout", "20s")
		canary := reportCheck(t, rep, "canary-reconciled", "kserve")
		assert.Equal(t, "fail", canary.Status, canary.Reason)
		details := strings.Join(canary.Details, "\n")
		assert.Contains(t, details, "insufficient nvidia.com/gpu")
		assert.Contains(t, details, "Pending")
		t.Logf("diagnosis:\n%s", details)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("LeastPrivilege", func(t *testing.T) {
		const as = "system:serviceaccount:probe-auditors:prober"
		bindRoles(ctx, t, cs, "probe-auditors", "prober", "aiconform-reader.yaml")
		// Read-only: the probes' writes are refused, which is an Error
		// naming the verb, never a Pass.
		rep, _ := run(t, "--operator", "kuberay", "--as", as, "--probe-timeout", "30s")
		canary := reportCheck(t, rep, "canary-reconciled", "kuberay")
		assert.Equal(t, "error", canary.Status, canary.Reason)
		assert.Contains(t, canary.Reason, "cannot create")
		bindRoles(ctx, t, cs, "probe-auditors", "prober", "aiconform-prober.yaml")
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			rep, _ = run(t, "--operator", "kuberay", "--as", as, "--probe-timeout", "30s")
			return reportCheck(t, rep, "canary-reconciled", "kuberay").Status == "pass", nil
		}))
		// The published roles cover every built-in probe.
		rep, _ = run(t, "--as", as, "--probe-timeout", "2m")
		for _, op := range []string{"kserve", "kuberay", "kubeflow-trainer", "kubeflow-training", "kueue"} {
			for _, id := range []string{"webhooks-answer", "canary-reconciled"} {
				r := reportCheck(t, rep, id, op)
				assert.Equal(t, "pass", r.Status, "%s %s with both published roles: %s", id, op, r.Reason)
			}
		}
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("Interrupted", func(t *testing.T) {
		// Interrupts spread over the length of a whole run land in every
		// phase: before the namespace, during the dry runs, the creates, the
		// watch and the wait for collection.
		args := []string{"check", "robust_controller", "--kubeconfig", kubeconfig, "--probe", "--probe-timeout", "1m"}
		began := time.Now()
		require.Contains(t, []int{0, 1}, runBinary(ctx, t, aiconform, args...).code)
		whole := time.Since(began)
		const runs = 20
		t.Logf("a whole run takes %s; %d runs interrupted at every %s of it", whole.Round(time.Millisecond), runs, (whole / runs).Round(time.Millisecond))
		codes := map[int]int{}
		for i := range runs {
			delay := time.Duration(i) * whole / runs
			res := interruptAfter(ctx, t, aiconform, delay, args...)
			codes[res.code]++
			switch {
			case !res.signalled:
				assert.Contains(t, []int{0, 1}, res.code, "run %d ended before its interrupt", i)
			case res.code == 130:
				assert.Contains(t, res.stderr, "interrupted", "run %d", i)
			case res.code == 0 || res.code == 1:
				// The signal came as the run was ending, after its cleanup:
				// nothing was left to stop.
				assert.Regexp(t, `namespace "aiconform-probe-\S+" deleted\n$`, res.stderr, "run %d ended with exit %d though interrupted", i, res.code)
			case res.code == -1:
				// Killed by the signal itself: it came before the handler
				// was installed, when nothing had been written yet.
				assert.NotContains(t, res.stderr, "probes: run", "run %d", i)
			default:
				t.Errorf("run %d interrupted after %s: exit %d; stderr:\n%s", i, delay, res.code, res.stderr)
			}
		}
		t.Logf("exit codes of %d interrupted runs: %v", runs, codes)
		assert.NotZero(t, codes[130], "no run was interrupted")
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("CleanupOfANamespaceHeldByAFinalizer", func(t *testing.T) {
		// The canary got KServe's finalizer, then both aiconform and KServe
		// died: the namespace cannot go until KServe is back, and cleanup
		// says what holds it rather than pretend it is gone.
		ns := killWhenCanaryHasFinalizer(ctx, t, dyn, aiconform, kubeconfig)
		require.NoError(t, kserve.Stop(ctx))
		res := runBinary(ctx, t, aiconform, "cleanup", "--kubeconfig", kubeconfig)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Contains(t, res.stdout, fmt.Sprintf("namespace %q deleted", ns))
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}))
		res = runBinary(ctx, t, aiconform, "cleanup", "--kubeconfig", kubeconfig)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Contains(t, res.stdout, fmt.Sprintf("namespace %q is being deleted since", ns))
		assert.Contains(t, res.stdout, "inferenceservice.finalizers")
		t.Logf("cleanup says: %s", strings.TrimSpace(res.stdout))
		restart(ctx, t, kserve)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	t.Run("CleanupAfterKill", func(t *testing.T) {
		// Kueue's canary is cluster-scoped, so no namespace deletion takes
		// it along; here it names a ResourceFlavor that does not exist, so
		// it stays inactive and is still there when the run is killed.
		builtin, err := os.ReadFile(filepath.Join("..", "checks", "profiles", "kueue.yaml"))
		require.NoError(t, err)
		stuck := strings.Replace(string(builtin), "      name: aiconform-canary\n    spec:\n      namespaceSelector: {}\n",
			"      name: aiconform-canary\n    spec:\n      namespaceSelector: {}\n      resourceGroups:\n      - coveredResources: [cpu]\n"+
				"        flavors:\n        - name: aiconform-no-such-flavor\n          resources:\n          - name: cpu\n            nominalQuota: \"1\"\n", 1)
		require.NotEqual(t, string(builtin), stuck, "the canary of the Kueue profile changed shape")
		profile := filepath.Join(t.TempDir(), "kueue-inactive.yaml")
		require.NoError(t, os.WriteFile(profile, []byte(stuck), 0o644))

		cmd := exec.CommandContext(ctx, aiconform, "check", "robust_controller", "--kubeconfig", kubeconfig, "--probe", "--probe-timeout", "1m",
			"--operator", "kserve,kueue", "--profile", profile)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		var ns, queue string
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			m := regexp.MustCompile(`run (\S+), namespace (aiconform-probe-\S+)`).FindStringSubmatch(stderr.String())
			if m == nil {
				return false, nil
			}
			ns, queue = m[2], "aiconform-canary-"+m[1]
			if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				return false, nil
			}
			_, err := dyn.Resource(clusterQueueGVR).Get(ctx, queue, metav1.GetOptions{})
			return err == nil, nil
		}))
		// SIGKILL: no cleanup can run.
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		_, err = cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err, "the killed run's namespace is left behind")
		_, err = dyn.Resource(clusterQueueGVR).Get(ctx, queue, metav1.GetOptions{})
		require.NoError(t, err, "and so is its cluster-scoped canary")

		res := runBinary(ctx, t, aiconform, "cleanup", "--kubeconfig", kubeconfig)
		require.Equal(t, 0, res.code, res.stderr)
		assert.Contains(t, res.stdout, fmt.Sprintf("namespace %q deleted", ns))
		assert.Contains(t, res.stdout, fmt.Sprintf("clusterqueue.kueue.x-k8s.io %q deleted", queue))
		assertNoLeftovers(ctx, t, cs, dyn)
		res = runBinary(ctx, t, aiconform, "cleanup", "--kubeconfig", kubeconfig)
		assert.Equal(t, 0, res.code)
		assert.Contains(t, res.stderr, "No probe leftovers found")
	})
}

// killWhenCanaryHasFinalizer runs a probe of KServe and kills it (SIGKILL:
// no cleanup) once KServe has put its finalizer on the canary. The canary
// asks for more GPUs than any node has, so it stays, with its finalizer,
// until the kill: a canary that gets Ready is gone again in a second, and
// on a loaded machine a poll can miss it.
func killWhenCanaryHasFinalizer(ctx context.Context, t *testing.T, dyn dynamic.Interface, bin, kubeconfig string) string {
	t.Helper()
	profile := filepath.Join(t.TempDir(), "kserve-gpu.yaml")
	require.NoError(t, os.WriteFile(profile, []byte(hungryKServeProfile), 0o644))
	cmd := exec.CommandContext(ctx, bin, "check", "robust_controller", "--kubeconfig", kubeconfig, "--operator", "kserve",
		"--profile", profile, "--probe", "--probe-timeout", "1m")
	require.NoError(t, cmd.Start())
	var ns string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := dyn.Resource(isvcGVR).List(ctx, metav1.ListOptions{LabelSelector: probe.RunLabel})
		if err != nil || len(list.Items) == 0 || len(list.Items[0].GetFinalizers()) == 0 {
			return false, nil
		}
		ns = list.Items[0].GetNamespace()
		return true, nil
	}))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	return ns
}

// hungryKServeProfile is the built-in KServe profile's identity with a
// canary that asks for 64 GPUs: its predictor pod can never be scheduled.
const hungryKServeProfile = `
name: kserve
title: KServe
groups: [serving.kserve.io]
crds: [inferenceservices.serving.kserve.io]
controller:
  namespace: kserve
  deployment: kserve-controller-manager
  selector: control-plane=kserve-controller-manager
resources:
  - crd: inferenceservices.serving.kserve.io
    readyConditions: [Ready]
    childLabel: serving.kserve.io/inferenceservice
    children: [Deployment, Service]
probe:
  canary: |
    apiVersion: serving.kserve.io/v1beta1
    kind: InferenceService
    metadata:
      name: sklearn-gpu
    spec:
      predictor:
        sklearn:
          storageUri: gs://kfserving-examples/models/sklearn/1.0/model
          resources:
            limits: {nvidia.com/gpu: "64"}
`

type binaryResult struct {
	code           int
	stdout, stderr string
	// signalled is false when the run ended before the signal was sent.
	signalled bool
}

// runCheck runs `aiconform check ID` and reads back its report and its
// exit code, which must be 0 or 1.
func runCheck(ctx context.Context, t *testing.T, bin, kubeconfig, id string, args ...string) (*report.Report, string, int) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"check", id, "--kubeconfig", kubeconfig, "--out", out}, args...)
	res := runBinary(ctx, t, bin, args...)
	require.Contains(t, []int{0, 1}, res.code, "exit code of %v; stderr:\n%s", args, res.stderr)
	rep, err := report.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	return rep, string(md), res.code
}

// buildAiconform builds the binary under test once per test.
func buildAiconform(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aiconform")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/aiconform").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func runBinary(ctx context.Context, t *testing.T, bin string, args ...string) binaryResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return binaryResult{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String()}
}

// interruptAfter starts the binary, sends it SIGINT after delay, and waits
// for it to finish its cleanup and exit.
func interruptAfter(ctx context.Context, t *testing.T, bin string, delay time.Duration, args ...string) binaryResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	signalled := false
	select {
	case err = <-done: // finished before the interrupt
	case <-time.After(delay):
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		signalled = true
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("no exit 2 minutes after SIGINT; stderr:\n%s", stderr.String())
		}
	}
	return binaryResult{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String(), signalled: signalled}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("run: %v", err)
	return -1
}

// assertNoLeftovers waits for every probe namespace to be gone, deletion
// included, and finds no canary anywhere.
func assertNoLeftovers(ctx context.Context, t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface) {
	t.Helper()
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ns := range nss.Items {
			if _, labelled := ns.Labels[probe.RunLabel]; labelled || strings.HasPrefix(ns.Name, probe.NamespacePrefix) {
				left = append(left, "namespace/"+ns.Name+" ("+string(ns.Status.Phase)+")")
			}
		}
		for _, gvr := range []schema.GroupVersionResource{isvcGVR, rayClusterGVR, trainJobGVR, pyTorchJobGVR, clusterQueueGVR, resourceFlavorGVR} {
			list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: probe.RunLabel})
			if apierrors.IsNotFound(err) {
				continue // a rig without that operator
			}
			if err != nil {
				return false, err
			}
			for _, u := range list.Items {
				left = append(left, gvr.Resource+"/"+u.GetNamespace()+"/"+u.GetName())
			}
		}
		return len(left) == 0, nil
	})
	assert.NoError(t, err, "left behind: %v", left)
}

// assertDryRunsReRun re-runs the dry-run evidence of a report with kubectl
// in a namespace of the same name, made for the purpose (cluster-wide for
// a cluster-scoped kind): each prints what the report says, but for the
// fields every create fills in anew.
func assertDryRunsReRun(ctx context.Context, t *testing.T, binDir, kubeconfig string, cs kubernetes.Interface, rep *report.Report) {
	t.Helper()
	n := 0
	var made []string
	defer func() {
		for _, ns := range made {
			assert.NoError(t, cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
		}
	}()
	for _, req := range rep.Requirements {
		for _, c := range req.Checks {
			for _, e := range c.Evidence {
				if !strings.Contains(e.Command, "--dry-run=server") {
					continue
				}
				// A cluster-scoped kind's dry run names no namespace.
				if m := regexp.MustCompile(`-n (\S+)`).FindStringSubmatch(e.Command); m != nil {
					made = append(made, ensureNamespace(ctx, t, cs, m[1])...)
				}
				got := framework.Kubectl(t, binDir, kubeconfig, "", e.Command)
				assert.Equal(t, withoutServerSet(e.Output), withoutServerSet(got), "%s (%s): `%s`", c.ID, c.Operator, e.Command)
				n++
			}
		}
	}
	require.NotZero(t, n, "no dry run in the report")
	t.Logf("%d dry runs re-run with kubectl", n)
}

var serverSetRE = regexp.MustCompile(`(?m)^\s*(uid|creationTimestamp|resourceVersion): .*$`)

func withoutServerSet(s string) string { return serverSetRE.ReplaceAllString(s, "") }

// ensureNamespace makes the namespace unless it exists, and returns its
// name when it made it.
func ensureNamespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) []string {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{probe.RunLabel: "e2e-rerun"}}}, metav1.CreateOptions{})
	if err != nil {
		return nil
	}
	return []string{name}
}

// bindRoles applies a published ClusterRole and binds it to a
// ServiceAccount, creating both as needed.
func bindRoles(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, sa, file string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "rbac", file))
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{}
	require.NoError(t, yaml.UnmarshalStrict(data, role))
	for _, rule := range role.Rules {
		assert.NotContains(t, rule.Resources, "secrets")
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{}); err != nil {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, _ = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	_, _ = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func reportCheck(t *testing.T, rep *report.Report, id, op string) report.Check {
	t.Helper()
	for _, req := range rep.Requirements {
		for _, c := range req.Checks {
			if c.ID == id && c.Operator == op {
				return c
			}
		}
	}
	t.Fatalf("no result of %s for %q in the report", id, op)
	return report.Check{}
}

func requirement(t *testing.T, rep *report.Report, id string) report.Requirement {
	t.Helper()
	for _, req := range rep.Requirements {
		if req.ID == id {
			return req
		}
	}
	t.Fatalf("no requirement %s in the report", id)
	return report.Requirement{}
}

func timeline(tb *report.Table) string {
	var b strings.Builder
	for _, r := range tb.Rows {
		fmt.Fprintf(&b, "  %s\n", strings.Join(r, "  "))
	}
	return b.String()
}
