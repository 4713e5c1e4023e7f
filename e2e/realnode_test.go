//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// TestOnRealNode runs aiconform where containers really run, on the rig's
// real node: its printing probes, the real binary, with the images named
// by --probe-shell-image, the accelerators handed out by a device plugin
// through the kubelet, and the output read back through the API server
// (unlike on kwok, the probes judge here); and aiconform itself as the Job
// of docs/deploy, in-cluster, as its ServiceAccount.
func TestOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	c := startRigWith(ctx, t, "realnode", rig.Options{BinDir: framework.RigBin(t), RealNodes: 1})
	kubeconfig := c.Kubeconfig()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	node := rig.RealNodeName(1)

	// The kwok GPU node runs no container: cordoned, it leaves the real
	// node as the one accelerator node a probe can use.
	_, err = cs.CoreV1().Nodes().Patch(ctx, rig.GPUNodeName, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// secure_accelerator_access: the program's test plan, passed for real
	// on the stand-in device plugin's devices.
	t.Run("SecureAcceleratorAccess", func(t *testing.T) {
		rep, md, code := runCheck(ctx, t, aiconform, kubeconfig, "secure_accelerator_access",
			"--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
		probed := reportCheck(t, rep, "device-isolation-probe", "")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, node)
		// What the containers printed is in the evidence, as BusyBox's ls
		// lists the device nodes the kubelet gave them.
		assert.Regexp(t, `crw-rw-rw-\s+1 \S+\s+\S+\s+195,\s+\d /dev/nvidia\d|nvidia\d`, md)
		assert.Contains(t, md, "image: "+rig.ShellImage)
		v := requirement(t, rep, "secure_accelerator_access")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 0, code)
		t.Logf("device isolation probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// workload_sandboxing: a RuntimeClass named as gVisor's whose handler
	// is plain runc on the real node. Its pod runs on the node's own
	// kernel, and the probe says so.
	t.Run("WorkloadSandboxingInNameOnly", func(t *testing.T) {
		rc := &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: rig.FakeSandboxHandler,
			Scheduling: &nodev1.Scheduling{
				NodeSelector: map[string]string{rig.RealNodeLabel: "true"},
				Tolerations:  []corev1.Toleration{{Key: rig.RealNodeTaint.Key, Operator: corev1.TolerationOpExists}},
			},
		}
		_, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
		require.NoError(t, err)
		defer func() { assert.NoError(t, cs.NodeV1().RuntimeClasses().Delete(ctx, rc.Name, metav1.DeleteOptions{})) }()
		rep, _, code := runCheck(ctx, t, aiconform, kubeconfig, "workload_sandboxing",
			"--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
		probed := reportCheck(t, rep, "sandbox-probe", "")
		require.Equal(t, "fail", probed.Status, probed.Reason)
		assert.Contains(t, probed.Reason, "on node "+node+", in RuntimeClass gvisor")
		t.Logf("sandbox probe: %s", probed.Reason)
		// A SHOULD that fails is a verdict, not an error: exit 0 or 1 as
		// the requirement's level says, never 2.
		assert.Contains(t, []int{0, 1}, code)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// driver_runtime_management: the stand-in GPUs are device nodes of
	// NVIDIA's major that no driver answers. The container holding one
	// finds neither the kernel module's version file nor nvidia-smi, and
	// the probe fails it for that, as BusyBox words it.
	t.Run("DriverVersionWithoutDriver", func(t *testing.T) {
		rep, _, code := runCheck(ctx, t, aiconform, kubeconfig, "driver_runtime_management",
			"--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
		probed := reportCheck(t, rep, "driver-version-probe", "")
		require.Equal(t, "fail", probed.Status, probed.Reason)
		assert.Equal(t, "on node "+node+", the container holding one nvidia.com/gpu sees no NVIDIA driver: "+
			"`cat /proc/driver/nvidia/version` printed \"cat: can't open '/proc/driver/nvidia/version': No such file or directory\"; "+
			"`nvidia-smi --query-gpu=driver_version,name --format=csv,noheader` printed \"sh: nvidia-smi: not found\"", probed.Reason)
		t.Logf("driver version probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		// A SHOULD that fails: exit 0 or 1, never 2.
		assert.Contains(t, []int{0, 1}, code)
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// gpu_sharing: the stand-in device plugin time-slices its 4 devices 2
	// ways (replica IDs <device>::<n>, each replica given its device's node
	// and named in NVIDIA_VISIBLE_DEVICES), and the node says so in GPU
	// Feature Discovery's labels. With 8 shares free on a node of 4 GPUs
	// the probe runs 5 pods, which the real scheduler binds and the kubelet
	// gives replicas: two must hold replicas of one device. nvidia-smi is
	// not in the image, so the plugin's IDs are what the probe compares.
	t.Run("GPUSharingTimeSliced", func(t *testing.T) {
		sharePlugin(ctx, t, cs, node, 2)
		labels := `{"metadata":{"labels":{"nvidia.com/gpu.count":"%d","nvidia.com/gpu.sharing-strategy":"time-slicing","nvidia.com/gpu.replicas":"2"}}}`
		_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, fmt.Appendf(nil, labels, rig.RealNodeGPUs), metav1.PatchOptions{})
		require.NoError(t, err)
		defer func() {
			unlabel := `{"metadata":{"labels":{"nvidia.com/gpu.count":null,"nvidia.com/gpu.sharing-strategy":null,"nvidia.com/gpu.replicas":null}}}`
			_, err := cs.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(unlabel), metav1.PatchOptions{})
			assert.NoError(t, err)
			sharePlugin(ctx, t, cs, node, 1)
		}()
		rep, md, code := runCheck(ctx, t, aiconform, kubeconfig, "gpu_sharing",
			"--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
		probed := reportCheck(t, rep, "gpu-sharing-probe", "")
		require.Equal(t, "pass", probed.Status, probed.Reason)
		assert.Regexp(t, `^pods aiconform-share-[a-e] and aiconform-share-[a-e], on node `+node+`, each holding one nvidia.com/gpu \(time-slicing, 2 replicas per GPU\), are bound to the same GPU rig-nvidia\d \(aiconform-share-[a-e]: rig-nvidia\d::[01]; aiconform-share-[a-e]: rig-nvidia\d::[01]\), as NVIDIA_VISIBLE_DEVICES shows \(5 pods on a node of 4 GPUs: two had to share one\)$`, probed.Reason)
		// The evidence holds the pods sent and what each printed.
		assert.Contains(t, md, "name: aiconform-share-e")
		assert.Regexp(t, `rig-nvidia\d::[01]`, md)
		assert.Contains(t, md, "sh: nvidia-smi: not found")
		v := requirement(t, rep, "gpu_sharing")
		assert.Equal(t, "Implemented", v.Status, v.Conclusion)
		assert.Equal(t, 0, code)
		t.Logf("GPU sharing probe: %s\ntimeline:\n%s", probed.Reason, timeline(probed.Table))
		assertNoLeftovers(ctx, t, cs, dyn)
	})

	// docs/deploy's Job, as written but for what the rig needs: the rig's
	// image of aiconform, and the API server reached from the node's own
	// network (no kube-proxy on the rig makes the kubernetes Service's
	// address lead anywhere). The ServiceAccount token and the CA are
	// the kubelet's; there is no kubeconfig.
	t.Run("InClusterJob", func(t *testing.T) {
		binDir := framework.RigBin(t)
		out := framework.Kubectl(t, binDir, kubeconfig, "", "kubectl apply -f ../docs/rbac/aiconform-reader.yaml -f ../docs/deploy/serviceaccount.yaml")
		require.Contains(t, out, "serviceaccount/aiconform created", out)
		data, err := os.ReadFile("../docs/deploy/job.yaml")
		require.NoError(t, err)
		job := &batchv1.Job{}
		require.NoError(t, yaml.UnmarshalStrict(data, job))
		api, err := netip.ParseAddrPort(strings.TrimPrefix(c.Server(), "https://"))
		require.NoError(t, err)
		pod := &job.Spec.Template.Spec
		pod.HostNetwork = true
		pod.NodeSelector = map[string]string{rig.RealNodeLabel: "true"}
		pod.Tolerations = []corev1.Toleration{{Key: rig.RealNodeTaint.Key, Operator: corev1.TolerationOpExists}}
		ctr := &pod.Containers[0]
		ctr.Image, ctr.ImagePullPolicy = rig.AiconformImage, corev1.PullNever
		ctr.Env = append(ctr.Env,
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: api.Addr().String()},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(api.Port())})
		_, err = cs.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{})
		require.NoError(t, err)

		// A rig without operators meets no MUST of robust_controller: the
		// binary exits 1, and the Job fails at once by its pod failure
		// policy, not retried.
		var done *batchv1.Job
		require.Eventually(t, func() bool {
			done, err = cs.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
			return err == nil && (jobCondition(done, batchv1.JobFailed) != nil || jobCondition(done, batchv1.JobComplete) != nil)
		}, 3*time.Minute, time.Second, "Job %s/%s ends", job.Namespace, job.Name)
		failed := jobCondition(done, batchv1.JobFailed)
		require.NotNil(t, failed, "%+v", done.Status)
		assert.Equal(t, batchv1.JobReasonPodFailurePolicy, failed.Reason, failed.Message)
		assert.EqualValues(t, 1, done.Status.Failed, "not retried")

		pods, err := cs.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1)
		p := pods.Items[0]
		assert.Equal(t, node, p.Spec.NodeName)
		logs, err := cs.CoreV1().Pods(job.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		// The log merges stdout and stderr line by line, in the order the
		// runtime read them: what aiconform said on stderr ("aiconform: a
		// must requirement is not met") may fall between the report's
		// lines. The report's lines are indented JSON: they start with a
		// brace or a space, and no stderr line does.
		var stdout []byte
		for _, line := range bytes.SplitAfter(logs, []byte("\n")) {
			if len(line) > 0 && (line[0] == '{' || line[0] == '}' || line[0] == ' ') {
				stdout = append(stdout, line...)
			}
		}
		var rep report.Report
		require.NoError(t, json.Unmarshal(stdout, &rep), "the Job's log:\n%s", logs)
		assert.True(t, rep.Run.Cluster.Live)
		assert.Equal(t, c.Server(), rep.Run.Cluster.Server, "in-cluster: the address the pod was given, no kubeconfig")
		assert.False(t, rep.Summary.Passed)
		assert.NotEmpty(t, rep.Requirements)
		// The read-only role is enough: nothing it ran was refused.
		checked := 0
		for _, req := range rep.Requirements {
			for _, ch := range req.Checks {
				checked++
				assert.NotContains(t, strings.ToLower(ch.Reason), "forbidden", "%s/%s", req.ID, ch.ID)
			}
		}
		t.Logf("in-cluster Job: %d requirements, %d checks, passed=%v", len(rep.Requirements), checked, rep.Summary.Passed)
	})
}

// sharePlugin runs the rig's stand-in device plugin with replicas shares
// of each device, and waits until node advertises that many GPUs and the
// plugin's pod is Ready.
func sharePlugin(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string, replicas int) {
	t.Helper()
	dss := cs.AppsV1().DaemonSets(rig.DevicePluginNamespace)
	ds, err := dss.Get(ctx, rig.GPUPluginDaemonSet, metav1.GetOptions{})
	require.NoError(t, err)
	c := &ds.Spec.Template.Spec.Containers[0]
	var args []string
	for i := 0; i < len(c.Args); i++ {
		if c.Args[i] == "--replicas" {
			i++
			continue
		}
		args = append(args, c.Args[i])
	}
	if replicas > 1 {
		args = append(args, "--replicas", fmt.Sprint(replicas))
	}
	c.Args = args
	_, err = dss.Update(ctx, ds, metav1.UpdateOptions{})
	require.NoError(t, err)
	want := int64(rig.RealNodeGPUs * replicas)
	require.Eventually(t, func() bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		got := n.Status.Allocatable[rig.GPUResource]
		d, err := dss.Get(ctx, rig.GPUPluginDaemonSet, metav1.GetOptions{})
		return err == nil && got.Value() == want && d.Status.ObservedGeneration == d.Generation &&
			d.Status.UpdatedNumberScheduled == d.Status.DesiredNumberScheduled && d.Status.NumberReady == d.Status.DesiredNumberScheduled
	}, 2*time.Minute, 200*time.Millisecond, "%s advertises %d %s", node, want, rig.GPUResource)
}

// jobCondition is the Job's condition of type ct when it is True.
func jobCondition(j *batchv1.Job, ct batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range j.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}
