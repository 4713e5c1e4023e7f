//go:build e2e

package rig

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A process launched as KServe is sees the service account namespace file
// a pod has, and nothing outside it changes.
func TestPodNamespaceLauncher(t *testing.T) {
	_, err := os.Stat(serviceAccountNamespaceFile)
	require.True(t, os.IsNotExist(err), "this machine has %s itself; the test would prove nothing", serviceAccountNamespaceFile)
	o := &Operator{spec: operatorSpec{binary: "cat", namespace: "kserve"}, binary: "/bin/cat", dir: t.TempDir()}
	exe, args, err := o.podNamespaceLauncher([]string{serviceAccountNamespaceFile, "/run/.."})
	require.NoError(t, err)
	out, err := exec.Command(exe, args...).CombinedOutput()
	// cat prints the file, then fails on the directory: the arguments
	// reach the binary in order.
	assert.Error(t, err)
	assert.Equal(t, "kserve/bin/cat: /run/..: Is a directory\n", string(out))
	_, err = os.Stat(serviceAccountNamespaceFile)
	assert.True(t, os.IsNotExist(err), "the file must exist for the process only")
}

// The full rig runs the device plugin's stand-in on the GPU node, Ready.
func TestDevicePluginRunsOnGPUNode(t *testing.T) {
	cs := clientset(t, shared)
	ds, err := cs.AppsV1().DaemonSets(DevicePluginNamespace).Get(context.Background(), DevicePluginDaemonSet, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), ds.Status.NumberReady)
	pods, err := cs.CoreV1().Pods(DevicePluginNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "name=nvidia-device-plugin-ds"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 1)
	p := pods.Items[0]
	assert.Equal(t, GPUNodeName, p.Spec.NodeName)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Equal(t, ds.UID, metav1.GetControllerOf(&p).UID)
}
