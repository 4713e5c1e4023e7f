package accelerators

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// driverOut parses one of testdata's outputs, written in the formats the
// tools print: the kernel module's NVRM line, nvidia-smi's CSV without a
// header, amdgpu's version file, and BusyBox's errors.
func driverOut(t *testing.T, name string) driverOutput {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	require.NoError(t, err)
	return checks.CommandOutputs(string(b))
}

func TestDriverSeen(t *testing.T) {
	for _, tc := range []struct {
		file, vendor string
		want         []seenVersion
	}{
		{"nvidia-570", "NVIDIA", []seenVersion{{nvrmCommand, "570.124.06"}, {smiCommand, "570.124.06"}}},
		{"nvidia-open-550", "NVIDIA", []seenVersion{{nvrmCommand, "550.54.15"}}},
		{"nvidia-none", "NVIDIA", nil},
		{"nvidia-smi-failed", "NVIDIA", nil},
		{"amdgpu", "AMD", []seenVersion{{amdgpuCommand, "6.10.5"}}},
		{"amdgpu-none", "AMD", nil},
		{"no-shell", "NVIDIA", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			assert.Equal(t, tc.want, driverSeen(driverOut(t, tc.file), tc.vendor))
		})
	}
	none := driverOut(t, "nvidia-none")
	assert.Equal(t, "sh: nvidia-smi: not found", none[smiCommand])
	assert.Empty(t, driverOut(t, "no-shell"), "a runtime's complaint before any heading is no command's")
}

func TestJudgeDriver(t *testing.T) {
	node := checkstest.Node("gpu-node-1", corev1.ConditionTrue, nil)
	vendors, err := nodeLabels()
	require.NoError(t, err)
	nvidia, amd := vendors[0], vendors[1]
	gfd := driverTarget{node: node, res: "nvidia.com/gpu", vendor: nvidia, advertised: "570.124.06", from: "GPU Feature Discovery labels"}
	for _, tc := range []struct {
		name, file string
		edit       func(t *driverTarget)
		status     checks.Status
		reason     string
	}{
		{name: "as advertised", file: "nvidia-570", status: checks.Pass,
			reason: "on node gpu-node-1, the container holding one nvidia.com/gpu sees NVIDIA driver 570.124.06 (`cat /proc/driver/nvidia/version`), and the node advertises 570.124.06 (GPU Feature Discovery labels)"},
		{name: "as a DRA driver publishes it", file: "nvidia-570", edit: func(t *driverTarget) { t.from = draAttributeSource }, status: checks.Pass,
			reason: "and the node advertises 570.124.06 (DRA device attribute)"},
		{name: "stale labels", file: "nvidia-open-550", status: checks.Fail,
			reason: "sees NVIDIA driver 550.54.15 (`cat /proc/driver/nvidia/version`), but the node advertises 570.124.06 (GPU Feature Discovery labels)"},
		{name: "no driver", file: "nvidia-none", status: checks.Fail,
			reason: "on node gpu-node-1, the container holding one nvidia.com/gpu sees no NVIDIA driver: `cat /proc/driver/nvidia/version` printed \"cat: can't open '/proc/driver/nvidia/version': No such file or directory\"; `nvidia-smi --query-gpu=driver_version,name --format=csv,noheader` printed \"sh: nvidia-smi: not found\""},
		{name: "nvidia-smi without a driver", file: "nvidia-smi-failed", status: checks.Fail,
			reason: "printed \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{name: "nothing advertised", file: "nvidia-570", edit: func(t *driverTarget) { t.advertised, t.from = "", "GPU Feature Discovery labels" }, status: checks.Warn,
			reason: "sees NVIDIA driver 570.124.06 (`cat /proc/driver/nvidia/version`), but the node advertises no driver version (no DRA device attribute driverVersion, no GPU Feature Discovery label): nothing to compare it with"},
		{name: "no driver, nothing advertised", file: "nvidia-none", edit: func(t *driverTarget) { t.advertised = "" }, status: checks.Fail,
			reason: "sees no NVIDIA driver"},
		{name: "AMD as advertised", file: "amdgpu", edit: amdTarget(amd, "6.10.5"), status: checks.Pass,
			reason: "on node gpu-node-1, the container holding one amd.com/gpu sees AMD driver 6.10.5 (`cat /sys/module/amdgpu/version`), and the node advertises 6.10.5 (AMD GPU node labeller labels)"},
		{name: "AMD upgraded", file: "amdgpu", edit: amdTarget(amd, "6.8.5"), status: checks.Fail,
			reason: "sees AMD driver 6.10.5 (`cat /sys/module/amdgpu/version`), but the node advertises 6.8.5 (AMD GPU node labeller labels)"},
		{name: "AMD without a version file", file: "amdgpu-none", edit: amdTarget(amd, "6.10.5"), status: checks.Fail,
			reason: "sees no AMD driver: `cat /sys/module/amdgpu/version` printed \"cat: can't open '/sys/module/amdgpu/version': No such file or directory\""},
		{name: "no shell", file: "no-shell", status: checks.Error,
			reason: "printed none of the probe's commands: it did not run the script"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := gfd
			if tc.edit != nil {
				tc.edit(&target)
			}
			st, why := judgeDriver(driverOut(t, tc.file), target)
			assert.Equal(t, tc.status, st, why)
			assert.Contains(t, why, tc.reason)
		})
	}

	// Two readings of one container that disagree: two drivers at once.
	out := driverOut(t, "nvidia-570")
	out[smiCommand] = "550.54.15, NVIDIA H100 80GB HBM3"
	st, why := judgeDriver(out, gfd)
	assert.Equal(t, checks.Fail, st)
	assert.Contains(t, why, "sees two NVIDIA drivers: 570.124.06 by `cat /proc/driver/nvidia/version`, 550.54.15 by `nvidia-smi")
}

// amdTarget makes the target an AMD node advertising version.
func amdTarget(amd vendorLabels, version string) func(t *driverTarget) {
	return func(t *driverTarget) {
		t.res, t.vendor, t.advertised, t.from = "amd.com/gpu", amd, version, amd.Labeller+" labels"
	}
}

func TestDriverProbeSkipsWithoutProbes(t *testing.T) {
	r, err := DriverVersionProbe{}.Run(t.Context(), &checks.Env{Now: checkstest.FixedNow})
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)
	assert.Contains(t, r.Reason, "probes are off: --probe runs a pod holding one accelerator")
}

// The probe picks the GPU node as the device isolation probe would, and
// reads what it advertises as accelerator-drivers does.
func TestPlanDriver(t *testing.T) {
	plan := func(w *checkstest.World) (checks.Result, driverTarget, string, error) {
		var r checks.Result
		env := &checks.Env{Cluster: w.Serve().Cache(), Now: checkstest.FixedNow}
		target, skip, err := planDriver(t.Context(), env, &r)
		return r, target, skip, err
	}
	w := checkstest.NewWorld(t)
	r, target, skip, err := plan(w)
	require.NoError(t, err)
	require.Empty(t, skip)
	assert.Equal(t, "gpu-node-1", target.node.Name)
	assert.Equal(t, corev1.ResourceName("nvidia.com/gpu"), target.res)
	assert.Equal(t, "NVIDIA", target.vendor.Vendor)
	assert.Equal(t, "570.124.06", target.advertised)
	assert.Equal(t, "GPU Feature Discovery labels", target.from)
	var commands []string
	for _, step := range r.Evidence {
		commands = append(commands, step.Command)
	}
	assert.Contains(t, commands, "kubectl get nodes gpu-node-1 -L nvidia.com/cuda.driver-version.full -L nvidia.com/cuda.driver.major -L nvidia.com/cuda.driver.minor -L nvidia.com/cuda.driver.rev")

	// A DRA driver's word comes first, as in accelerator-drivers.
	w = checkstest.NewWorld(t)
	for i := range w.ResourceSlices[0].Spec.Devices {
		w.ResourceSlices[0].Spec.Devices[i].Attributes = map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"driverVersion": {VersionValue: ptr.To("580.65.06")}}
	}
	_, target, _, err = plan(w)
	require.NoError(t, err)
	assert.Equal(t, "580.65.06", target.advertised)
	assert.Equal(t, draAttributeSource, target.from)

	// An Intel GPU node: a vendor whose driver the probe does not read.
	w = checkstest.NewWorld(t)
	w.Nodes[1] = checkstest.Node("gpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"gpu.intel.com/i915": resource.MustParse("1")})
	_, _, skip, err = plan(w)
	require.NoError(t, err)
	assert.Contains(t, skip, "no Ready node offers an NVIDIA or AMD accelerator resource")

	// No accelerator node at all: skipped as accelerator-drivers is.
	w = checkstest.NewWorld(t)
	w.Nodes = w.Nodes[:1]
	r, _, _, err = plan(w)
	require.NoError(t, err)
	assert.Equal(t, checks.Skip, r.Status)

	// Every GPU in use.
	w = checkstest.NewWorld(t)
	w.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
	_, _, _, err = plan(w)
	assert.ErrorContains(t, err, "no Ready accelerator node has a nvidia.com/gpu free")
}

// The pod holds one accelerator, runs the vendor's commands as a user
// that is not root, within limits and a deadline, and tolerates the
// resource's taint.
func TestDriverPod(t *testing.T) {
	vendors, err := nodeLabels()
	require.NoError(t, err)
	node := checkstest.Node("gpu-node-1", corev1.ConditionTrue, nil)
	node.Labels = map[string]string{corev1.LabelHostname: "gpu-node-1"}
	pod := driverPod("busybox:1.37", driverTarget{node: node, res: "nvidia.com/gpu", vendor: vendors[0]}, time.Minute)
	assert.Equal(t, "probe", pod.Labels[DriverLabel])
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, driverHolder, c.Name)
	assert.Equal(t, []string{"sh", "-c", "echo '$ cat /proc/driver/nvidia/version'; cat /proc/driver/nvidia/version 2>&1; echo '$ nvidia-smi --query-gpu=driver_version,name --format=csv,noheader'; nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>&1; exit 0"}, c.Command)
	assert.Equal(t, "1", ptrQuantity(c.Resources.Limits, "nvidia.com/gpu"))
	assert.Equal(t, "1", ptrQuantity(c.Resources.Requests, "nvidia.com/gpu"))
	assert.NotEmpty(t, ptrQuantity(c.Resources.Limits, corev1.ResourceMemory))
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.NotNil(t, pod.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, map[string]string{corev1.LabelHostname: "gpu-node-1"}, pod.Spec.NodeSelector)
	assert.Equal(t, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}, pod.Spec.Tolerations)
}

// ptrQuantity is a quantity of a list as text, "" when it is missing.
func ptrQuantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return ""
	}
	return q.String()
}
