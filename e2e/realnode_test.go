//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestProbesOnRealNode runs aiconform's printing probes, the real binary,
// where their containers really run: on the rig's real node, with the
// images named by --probe-shell-image, the accelerators handed out by a
// device plugin through the kubelet, and the output read back through the
// API server. Unlike on kwok, the probes judge here.
func TestProbesOnRealNode(t *testing.T) {
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
}
