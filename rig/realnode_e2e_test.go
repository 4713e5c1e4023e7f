//go:build e2e

package rig

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// realNodeContainer runs image's command, asking for gpus of the node's
// stand-in accelerators.
func realNodeContainer(name, image string, gpus int64, command ...string) corev1.Container {
	c := corev1.Container{
		Name: name, Image: image, Command: command,
		// Never: the node has the rig's images and reaches no registry.
		ImagePullPolicy: corev1.PullNever,
	}
	if gpus > 0 {
		c.Resources.Limits = corev1.ResourceList{GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return c
}

// realNodePod runs image's command once on real node 1, tolerating its
// taint, and returns the pod once it has ended.
func realNodePod(t *testing.T, cs kubernetes.Interface, ns, name, image string, command ...string) *corev1.Pod {
	t.Helper()
	return realNodePodOf(t, cs, ns, name, realNodeContainer("main", image, 0, command...))
}

// realNodePodSpec is a pod of containers, run once on real node 1.
func realNodePodSpec(ns, name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector:  map[string]string{corev1.LabelHostname: RealNodeName(1)},
			Tolerations:   []corev1.Toleration{{Key: RealNodeTaint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    containers,
		},
	}
}

// realNodePodOf runs containers once on real node 1 and returns the pod
// once it has ended.
func realNodePodOf(t *testing.T, cs kubernetes.Interface, ns, name string, containers ...corev1.Container) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	_, err := cs.CoreV1().Pods(ns).Create(ctx, realNodePodSpec(ns, name, containers...), metav1.CreateOptions{})
	require.NoError(t, err)
	var got *corev1.Pod
	require.Eventually(t, func() bool {
		got, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed)
	}, 60*time.Second, 250*time.Millisecond, "pod %s ends", name)
	return got
}

// TestRealNode runs containers built from the project's sources on the
// rig's real node, and reads what they printed through the API server, as
// `kubectl logs` does: the API server dials the kubelet at the node's
// address, through the egress proxy and the node's own proxy.
func TestRealNode(t *testing.T) {
	if len(shared.state.RealNodes) == 0 {
		t.Skip("the attached rig has no real node (make cluster-up RIG_UP_FLAGS=--real-nodes=1)")
	}
	cs := clientset(t, shared)
	ctx := context.Background()
	name := RealNodeName(1)

	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, nodeReady(node), "%s Ready", name)
	assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: RealNodeIP(1).String()})
	assert.Contains(t, node.Spec.Taints, RealNodeTaint)
	assert.Equal(t, "true", node.Labels[RealNodeLabel])
	assert.Equal(t, "containerd://1.6.20", strings.SplitN(node.Status.NodeInfo.ContainerRuntimeVersion, "~", 2)[0])
	assert.Equal(t, "v1.37.2", node.Status.NodeInfo.KubeletVersion)

	var uts syscall.Utsname
	require.NoError(t, syscall.Uname(&uts))
	var release strings.Builder
	for _, c := range uts.Release {
		if c == 0 {
			break
		}
		release.WriteByte(byte(c))
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)

	ns := testNamespace(t, cs, nil)
	t.Run("a program of the project's runs to completion", func(t *testing.T) {
		pod := realNodePod(t, cs, ns, "nodeinfo", NodeInfoImage)
		require.Equal(t, corev1.PodSucceeded, pod.Status.Phase, "%+v", pod.Status)
		assert.True(t, RealNodePodCIDR(1).Contains(mustAddr(t, pod.Status.PodIP)), "pod IP %s in %s", pod.Status.PodIP, RealNodePodCIDR(1))
		logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err, "logs through the API server")
		// runc shares the machine's kernel: the container reports this
		// machine's kernel and boot.
		assert.Contains(t, string(logs), "kernel: "+release.String()+"\n")
		assert.Contains(t, string(logs), "boot_id: "+string(bytes.TrimSpace(bootID))+"\n")
		// No accelerator was asked for: the container has the default
		// devices only.
		assert.Contains(t, string(logs), "device: /dev/null 1:3\n")
		assert.NotContains(t, string(logs), "nvidia")
	})
	t.Run("the shell image runs a script", func(t *testing.T) {
		pod := realNodePod(t, cs, ns, "shell", ShellImage, "sh", "-c", "echo '$ uname -r'; uname -r; ls -l /dev/null")
		require.Equal(t, corev1.PodSucceeded, pod.Status.Phase, "%+v", pod.Status)
		logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		assert.Contains(t, string(logs), "$ uname -r\n"+release.String()+"\n")
		assert.Regexp(t, `(?m)^crw-rw-rw-\s+1 .* 1,\s+3 .* /dev/null$`, string(logs))
	})
	t.Run("a failing program fails its pod", func(t *testing.T) {
		pod := realNodePod(t, cs, ns, "fails", ShellImage, "sh", "-c", "echo no; exit 3")
		require.Equal(t, corev1.PodFailed, pod.Status.Phase)
		require.Len(t, pod.Status.ContainerStatuses, 1)
		require.NotNil(t, pod.Status.ContainerStatuses[0].State.Terminated)
		assert.EqualValues(t, 3, pod.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	})

	t.Run("the device plugin gives a container exactly its devices", func(t *testing.T) {
		// The kubelet, not the rig, decides: a container sees the device
		// nodes the stand-in plugin allocated it, through the device-plugin
		// API, and nothing else.
		gpus := func(pod *corev1.Pod, container string) []string {
			t.Helper()
			logs, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
			require.NoError(t, err)
			return gpuDeviceLines(string(logs))
		}
		// Pod a keeps its device while b runs: a third container holds
		// it open after the other two have printed what they see.
		a := realNodePodSpec(ns, "gpu-a",
			realNodeContainer("holder", NodeInfoImage, 1),
			realNodeContainer("bystander", NodeInfoImage, 0),
			realNodeContainer("keeper", PauseImage, 0))
		_, err := cs.CoreV1().Pods(ns).Create(ctx, a, metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			a, err = cs.CoreV1().Pods(ns).Get(ctx, a.Name, metav1.GetOptions{})
			done := 0
			for _, c := range a.Status.ContainerStatuses {
				if (c.Name == "holder" || c.Name == "bystander") && c.State.Terminated != nil && c.State.Terminated.ExitCode == 0 {
					done++
				}
			}
			return err == nil && done == 2
		}, 60*time.Second, 250*time.Millisecond, "pod gpu-a's holder and bystander end")
		b := realNodePodOf(t, cs, ns, "gpu-b", realNodeContainer("holder", NodeInfoImage, 2))
		require.Equal(t, corev1.PodSucceeded, b.Status.Phase, "%+v", b.Status)
		require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, a.Name, metav1.DeleteOptions{}))
		holderA, bystander, holderB := gpus(a, "holder"), gpus(a, "bystander"), gpus(b, "holder")
		assert.Len(t, holderA, 1, "one asked, one seen: %v", holderA)
		assert.Empty(t, bystander, "none asked, none seen")
		assert.Len(t, holderB, 2, "two asked, two seen: %v", holderB)
		for _, d := range holderA {
			assert.NotContains(t, holderB, d, "pods run at the same time get different devices")
		}
	})

	// The API server reached the kubelet through the node's own door, and
	// nothing of it was refused.
	egress, err := os.ReadFile(shared.EgressLog())
	require.NoError(t, err)
	assert.Contains(t, string(egress), fmt.Sprintf("ALLOWED target=%s:10250 via=unix:", RealNodeIP(1)))
	nodeLog, err := os.ReadFile(filepath.Join(shared.Dir(), "nodes", name, "logs", name+"-net-proxy.log"))
	require.NoError(t, err)
	assert.Contains(t, string(nodeLog), fmt.Sprintf("ALLOWED target=%s:10250", RealNodeIP(1)))
	assert.NotContains(t, string(nodeLog), egressRefusedMarker)
}

// gpuDeviceLines are nodeinfo's lines of the stand-in accelerators.
func gpuDeviceLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "device: /dev/nvidia") && strings.Contains(l, fmt.Sprintf(" %d:", gpuMajor)) {
			lines = append(lines, l)
		}
	}
	return lines
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	require.NoError(t, err)
	return a
}

// leftovers are the processes still running that name one of the real
// nodes' containerd sockets (their shims) or run inside their namespaces.
func leftovers(c *Cluster) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		cmdline, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, n := range c.state.RealNodes {
			if bytes.Contains(cmdline, []byte(n.Containerd)) || bytes.Contains(cmdline, []byte(n.Dir)) {
				out = append(out, fmt.Sprintf("%s: %s", filepath.Base(filepath.Dir(f)), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
			}
		}
	}
	return out
}

// TestFixedPortOperatorOwnsItsPort installs KubeRay, whose webhook port is
// fixed (9443), while something else on the machine holds that port: the
// operator runs in a network namespace of its own, its webhook is reached
// through a free loopback port, and it answers.
func TestFixedPortOperatorOwnsItsPort(t *testing.T) {
	ctx := context.Background()
	// Held here, unless another process of the machine holds it already,
	// which is the case this guards against anyway.
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", kubeRayWebhookPort)); err == nil {
		t.Cleanup(func() { _ = ln.Close() })
	}
	kr, err := shared.InstallKubeRay(ctx, OperatorOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, kr.Stop(ctx)) })

	require.NotEmpty(t, kr.Webhooks())
	for _, w := range kr.Webhooks() {
		assert.NotContains(t, w.URL, fmt.Sprintf(":%d/", kubeRayWebhookPort), "the machine's 9443 is not the operator's")
	}
	assert.NotEqual(t, readlinkNet(os.Getpid()), readlinkNet(kr.PID()), "a network namespace of its own")

	// Its webhook answers: a RayCluster with two worker groups of one name
	// is denied by it.
	cs := clientset(t, shared)
	body := []byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"dup"},"spec":{
		"headGroupSpec":{"rayStartParams":{},"template":{"spec":{"containers":[{"name":"head","image":"rayproject/ray:2.9.0"}]}}},
		"workerGroupSpecs":[
			{"groupName":"g","replicas":1,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"w","image":"rayproject/ray:2.9.0"}]}}},
			{"groupName":"g","replicas":1,"rayStartParams":{},"template":{"spec":{"containers":[{"name":"w","image":"rayproject/ray:2.9.0"}]}}}]}}`)
	err = cs.Discovery().RESTClient().Post().AbsPath("/apis/ray.io/v1/namespaces/default/rayclusters").Param("dryRun", "All").
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "worker group names must be unique")
}

// readlinkNet names the network namespace of a process ("" if gone).
func readlinkNet(pid int) string {
	l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	return l
}
