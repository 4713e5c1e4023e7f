//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestRouteProbeOnRealNode runs ai_inference's route probe where its
// requests really travel: Traefik, the rig's Gateway API implementation,
// runs in the real node's network and mount namespaces, the probe's
// backends and client are BusyBox pods there, and the client's count of
// answers is read back through the API server. First the cluster's Gateway
// admits routes of its own namespace only, so the probe makes a Gateway of
// its own; then it admits routes from every namespace, and the probe's
// route attaches to its listener; then Traefik stops and starts again in
// the same node, on the same port, and the probe passes again. Once the
// rig stops, nothing runs in the node's network any more. As the
// published reader and prober roles allow.
func TestRouteProbeOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	binDir := framework.RigBin(t)
	c := startRigWith(ctx, t, "routeprobe", rig.Options{BinDir: binDir, RealNodes: 1})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	// No Stop of its own: the rig's stops it, as the end shows.
	gw, err := c.InstallGatewayOnNode(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}}, 1)
	require.NoError(t, err)
	// The pods' gateway on their bridge: they have no route to the node's
	// own address.
	require.Equal(t, rig.RealNodePodCIDR(1).Addr().Next().String(), gw.Address())
	holder := c.PIDs()[rig.RealNodeName(1)+"-net"]
	require.NotZero(t, holder, "the node's holder: %v", c.PIDs())
	nodeNet := nsLink(holder, "net")
	assertInNode(t, gw.PID(), holder)
	onlyRealNodeSchedulable(ctx, t, cs, rig.RealNodeName(1))

	// The cluster's own Gateway: programmed, on Traefik's entrypoint.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	shared := create(ctx, t, dyn, rig.GatewaysGVR, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {namespace: infra, name: shared}
spec:
  gatewayClassName: %s
  listeners:
  - {name: web, protocol: HTTP, port: %d}
`, rig.GatewayClassName, gw.ListenerPort()))
	programmed := waitConditions(ctx, t, dyn, rig.GatewaysGVR, "infra", shared.GetName(), time.Minute, "Programmed")
	addrs, _, _ := unstructured.NestedSlice(programmed.Object, "status", "addresses")
	require.Len(t, addrs, 1)
	assert.Equal(t, gw.Address(), addrs[0].(map[string]any)["value"], "the Gateway's status says where pods reach it")

	const as = "system:serviceaccount:route-auditors:route-prober"
	bindRoles(ctx, t, cs, "route-auditors", "route-prober", "aiconform-reader.yaml")
	bindRoles(ctx, t, cs, "route-auditors", "route-prober", "aiconform-prober.yaml")
	probeRoute := func(t *testing.T) (report.Check, string) {
		var rep *report.Report
		var md string
		var probed report.Check
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			began := time.Now()
			rep, md, _ = runCheck(ctx, t, aiconform, c.Kubeconfig(), "ai_inference",
				"--as", as, "--probe", "--probe-timeout", "1m", "--probe-shell-image", rig.ShellImage)
			probed = reportCheck(t, rep, "route-probe", "")
			t.Logf("route probe: %s in %.1fs: %s", probed.Status, time.Since(began).Seconds(), probed.Reason)
			return !strings.Contains(probed.Reason, "forbidden"), nil
		}))
		require.Equal(t, "pass", probed.Status, probed.Reason)
		t.Logf("timeline:\n%s", timeline(probed.Table))
		assert.Equal(t, "Implemented", requirement(t, rep, "ai_inference").Status)
		assertNoLeftovers(ctx, t, cs, dyn)
		return probed, md
	}

	t.Run("its own Gateway", func(t *testing.T) {
		probed, md := probeRoute(t)
		assert.Contains(t, probed.Reason, "through the probe's Gateway aiconform-probe-")
		assert.Contains(t, probed.Reason, fmt.Sprintf("at %s:%d", gw.Address(), gw.ListenerPort()))
		assert.Contains(t, probed.Reason, "all 20 requests with x-aiconform-route: canary reached aiconform-canary")
		assert.Contains(t, md, "kind: Gateway")
		assert.Contains(t, md, "image: "+rig.ShellImage)
		assert.Contains(t, md, "split ")
	})
	t.Run("a listener that admits every namespace", func(t *testing.T) {
		patch := []byte(`{"spec":{"listeners":[{"name":"web","protocol":"HTTP","port":` + fmt.Sprint(gw.ListenerPort()) + `,"allowedRoutes":{"namespaces":{"from":"All"}}}]}}`)
		_, err := dyn.Resource(rig.GatewaysGVR).Namespace("infra").Patch(ctx, "shared", types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
		waitConditions(ctx, t, dyn, rig.GatewaysGVR, "infra", "shared", time.Minute, "Programmed")
		probed, md := probeRoute(t)
		assert.Contains(t, probed.Reason, "through listener web of Gateway infra/shared (class traefik")
		assert.NotContains(t, md, "kind: Gateway\n")
	})
	t.Run("after Traefik restarts", func(t *testing.T) {
		port, old := gw.ListenerPort(), gw.PID()
		require.NoError(t, gw.Stop())
		assert.NoDirExists(t, fmt.Sprintf("/proc/%d", old), "Traefik stopped")
		require.NoError(t, gw.Start(ctx))
		assert.Equal(t, port, gw.ListenerPort())
		assertInNode(t, gw.PID(), holder)
		probeRoute(t)
	})

	// Nothing of the node's network outlives the rig: not Traefik, not any
	// other process in the namespace.
	traefik := gw.PID()
	require.NoError(t, c.Stop())
	assert.NoDirExists(t, fmt.Sprintf("/proc/%d", traefik), "Traefik outlived the rig")
	var left []string
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if nsLink(pid, "net") == nodeNet {
			cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			left = append(left, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	assert.Empty(t, left, "processes left in the node's network namespace %s", nodeNet)
}

// assertInNode asserts that pid runs in the network and mount namespaces
// of the node's holder, not in the machine's.
func assertInNode(t *testing.T, pid, holder int) {
	t.Helper()
	for _, ns := range []string{"net", "mnt"} {
		assert.Equal(t, nsLink(holder, ns), nsLink(pid, ns), "pid %d in the node's %s namespace", pid, ns)
		assert.NotEqual(t, nsLink(os.Getpid(), ns), nsLink(pid, ns), "pid %d in the machine's %s namespace", pid, ns)
	}
}

// nsLink names the namespace of kind ns (net, mnt) process pid is in; ""
// once it is gone.
func nsLink(pid int, ns string) string {
	l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	return l
}

// onlyRealNodeSchedulable cordons every kwok node, where no container
// runs, and lifts the rig's taint from the real node: a probe's pods,
// which ask for no accelerator and tolerate nothing, land there.
func onlyRealNodeSchedulable(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string) {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, n := range nodes.Items {
		patch := []byte(`{"spec":{"unschedulable":true}}`)
		if n.Name == node {
			var kept []corev1.Taint
			for _, taint := range n.Spec.Taints {
				if taint.Key != rig.RealNodeTaint.Key {
					kept = append(kept, taint)
				}
			}
			patch, err = json.Marshal(map[string]any{"spec": map[string]any{"taints": kept}})
			require.NoError(t, err)
		}
		_, err = cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
}
