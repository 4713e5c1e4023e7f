//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestGatewayOnRealNode runs Traefik inside the real node's namespaces,
// where it carries real traffic: a client pod on the node sends requests
// to the Gateway's address, and Traefik routes them to two backend pods
// (BusyBox's httpd) as an HTTPRoute says: a header match to the canary
// only, the rest split 80/20 by weight. What each request reached is read
// back from the client's log through the API server. Traefik then stops
// and starts again in the same node, on the same ports, and routes again;
// once the rig stops, nothing runs in the node's network any more.
func TestGatewayOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	testBegan := time.Now()
	binDir := framework.RigBin(t)
	if _, err := os.Stat(filepath.Join(binDir, "traefik")); err != nil {
		t.Fatalf("no traefik in %s: run `make tools` first", binDir)
	}
	c := startRigWith(ctx, t, "gwnode", rig.Options{BinDir: binDir, RealNodes: 1})
	began := time.Now()
	gw, err := c.InstallGatewayOnNode(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}}, 1)
	// No Stop of its own: the rig's stops it, as the end shows.
	require.NoError(t, err)
	t.Logf("Traefik %s installed in %s's namespaces, GatewayClass %s accepted, in %.1fs", rig.TraefikVersion, rig.RealNodeName(1), rig.GatewayClassName, time.Since(began).Seconds())
	// The pods' gateway on their bridge: they have no route to the
	// node's own address.
	require.Equal(t, rig.RealNodePodCIDR(1).Addr().Next().String(), gw.Address())
	holder := c.PIDs()[rig.RealNodeName(1)+"-net"]
	require.NotZero(t, holder, "the node's holder: %v", c.PIDs())
	nodeNet := nsLink(holder, "net")
	require.NotEmpty(t, nodeNet)
	assertInNode(t, gw.PID(), holder)

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	const ns = "gw-node"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"llm-stable", "llm-canary"} {
		httpBackend(ctx, t, cs, ns, name)
	}
	began = time.Now()
	create(ctx, t, dyn, rig.GatewaysGVR, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {namespace: %s, name: inference}
spec:
  gatewayClassName: %s
  listeners:
  - {name: web, protocol: HTTP, port: %d}
`, ns, rig.GatewayClassName, gw.ListenerPort()))
	create(ctx, t, dyn, rig.HTTPRoutesGVR, fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {namespace: %s, name: llm}
spec:
  parentRefs: [{name: inference}]
  rules:
  - matches: [{headers: [{name: x-probe, value: canary}]}]
    backendRefs:
    - {name: llm-canary, port: 80}
  - backendRefs:
    - {name: llm-stable, port: 80, weight: 80}
    - {name: llm-canary, port: 80, weight: 20}
`, ns))
	programmed := waitConditions(ctx, t, dyn, rig.GatewaysGVR, ns, "inference", time.Minute, "Accepted", "Programmed")
	t.Logf("Gateway Programmed %.1fs after it was created", time.Since(began).Seconds())
	waitRoute(ctx, t, dyn, ns, "llm", "Accepted", "True")
	waitRoute(ctx, t, dyn, ns, "llm", "ResolvedRefs", "True")
	t.Logf("HTTPRoute Accepted with its refs resolved %.1fs after the Gateway was created", time.Since(began).Seconds())
	addrs, _, _ := unstructured.NestedSlice(programmed.Object, "status", "addresses")
	require.Len(t, addrs, 1)
	assert.Equal(t, gw.Address(), addrs[0].(map[string]any)["value"], "the Gateway's status says where pods reach it")
	// Traefik routes to ready endpoints only: a split counted while one
	// backend is not ready yet would be all the other's.
	for _, name := range []string{"llm-stable", "llm-canary"} {
		waitPod(ctx, t, cs, ns, name, func(p *corev1.Pod) bool { return runningReady(*p) })
		waitReadyEndpoint(ctx, t, cs, ns, name)
	}

	// The client, on the node, as a probe's pod would be: 100 plain
	// requests and 20 with the header, once the Gateway answers at all.
	url := fmt.Sprintf("http://%s:%d/", gw.Address(), gw.ListenerPort())
	began = time.Now()
	out := runClient(ctx, t, cs, ns, "client", fmt.Sprintf(`url=%s
read t0 _ < /proc/uptime
n=0
until /bin/busybox wget -q -O /dev/null --header 'x-probe: canary' "$url" 2>/dev/null &&
  /bin/busybox wget -q -O /dev/null "$url" 2>/dev/null; do
  n=$((n+1)); [ $n -ge 60 ] && echo "never answered" && exit 1; sleep 1
done
read t1 _ < /proc/uptime
for i in $(/bin/busybox seq 100); do echo "plain $(/bin/busybox wget -q -O - "$url" 2>/dev/null || echo error)"; done
for i in $(/bin/busybox seq 20); do echo "header $(/bin/busybox wget -q -O - --header 'x-probe: canary' "$url" 2>/dev/null || echo error)"; done
read t2 _ < /proc/uptime
echo "times $t0 $t1 $t2 $n"
`, url))
	t.Logf("client pod done %.1fs after it was created", time.Since(began).Seconds())
	got := map[string]map[string]int{"plain": {}, "header": {}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, answer, _ := strings.Cut(line, " ")
		if kind == "times" {
			f := strings.Fields(answer)
			require.Len(t, f, 4, line)
			t0, t1, t2 := seconds(t, f[0]), seconds(t, f[1]), seconds(t, f[2])
			t.Logf("in the client: first answer %.2fs after it started (%s failed attempts before), 120 requests in %.2fs", t1-t0, f[3], t2-t1)
			continue
		}
		require.Contains(t, got, kind, "client's line %q; log:\n%s", line, out)
		got[kind][answer]++
	}
	t.Logf("plain requests reached %v; with x-probe: canary, %v", got["plain"], got["header"])
	assert.Equal(t, 100, got["plain"]["llm-stable"]+got["plain"]["llm-canary"], "every plain request reached a backend: %v", got["plain"])
	assert.InDelta(t, 80, got["plain"]["llm-stable"], 10, "weight 80: %v", got["plain"])
	assert.InDelta(t, 20, got["plain"]["llm-canary"], 10, "weight 20: %v", got["plain"])
	assert.Equal(t, map[string]int{"llm-canary": 20}, got["header"], "the header match reaches the canary only")

	// Stopped and started again: the same node, the same ports, and the
	// routes served again, reached here through the API server's node
	// proxy (the machine has no route to the node's address).
	port := gw.ListenerPort()
	old := gw.PID()
	require.NoError(t, gw.Stop())
	assert.NoDirExists(t, fmt.Sprintf("/proc/%d", old), "Traefik stopped")
	began = time.Now()
	require.NoError(t, gw.Start(ctx))
	assert.Equal(t, port, gw.ListenerPort())
	assertInNode(t, gw.PID(), holder)
	proxied := fmt.Sprintf("/api/v1/nodes/http:%s:%d/proxy/", rig.RealNodeName(1), port)
	var answer []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		answer, err = cs.CoreV1().RESTClient().Get().AbsPath(proxied).SetHeader("x-probe", "canary").DoRaw(ctx)
		return err == nil, nil
	})
	require.NoError(t, err, "%s after Traefik restarted: %v: %s", proxied, err, answer)
	assert.Equal(t, "llm-canary", strings.TrimSpace(string(answer)))
	t.Logf("Traefik restarted in the node and routing again in %.1fs", time.Since(began).Seconds())

	// Nothing of the node's network outlives the rig: not Traefik, not
	// any other process in the namespace.
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
	t.Logf("whole test %.1fs", time.Since(testBegan).Seconds())
}

// onRealNode puts a pod on the real node: its label selects it, and the
// accelerator taint it carries is tolerated.
func onRealNode(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{rig.RealNodeLabel: "true"}
	spec.Tolerations = []corev1.Toleration{{Key: rig.RealNodeTaint.Key, Operator: corev1.TolerationOpExists}}
}

// httpBackend is a pod on the real node whose BusyBox httpd answers its
// own name on 8080, ready once it does, and its Service on port 80.
func httpBackend(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "httpd", Image: rig.ShellImage, ImagePullPolicy: corev1.PullNever,
				// The image runs as nobody; the emptyDir is writable to all.
				Command: []string{"/bin/sh", "-c", fmt.Sprintf("echo %s > /www/index.html && exec /bin/busybox httpd -f -p 8080 -h /www", name)},
				Ports:   []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "www", MountPath: "/www"}},
			}},
			Volumes: []corev1.Volume{{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	onRealNode(&pod.Spec)
	_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// runClient runs script in a pod of the shell image on the real node until
// it succeeds, and returns its log, read through the API server.
func runClient(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name, script string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			// BusyBox's wget has no timeout here: a request that hangs
			// ends the pod, not the test's patience.
			ActiveDeadlineSeconds: ptr.To[int64](150),
			Containers: []corev1.Container{{
				Name: "client", Image: rig.ShellImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
	onRealNode(&pod.Spec)
	_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	done := waitPod(ctx, t, cs, ns, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, "client pod %s: %s; log:\n%s", done.Status.Phase, done.Status.Message, logs)
	return string(logs)
}

// waitPod waits until the pod is as ok says, and returns it as last read.
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		p, err = cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && ok(p), nil
	})
	status := "never read"
	if p != nil {
		status = fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	require.NoError(t, err, "pod %s/%s: %s", ns, name, status)
	return p
}

// waitReadyEndpoint waits until the Service's EndpointSlices have a ready
// endpoint: what Traefik routes to.
func waitReadyEndpoint(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, service string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, nil
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(t, err, "Service %s/%s: no ready endpoint", ns, service)
}

// assertInNode asserts that pid runs in the network and mount namespaces
// of the node's holder.
func assertInNode(t *testing.T, pid, holder int) {
	t.Helper()
	for _, ns := range []string{"net", "mnt"} {
		assert.Equal(t, nsLink(holder, ns), nsLink(pid, ns), "pid %d in the node's %s namespace", pid, ns)
		assert.NotEqual(t, nsLink(os.Getpid(), ns), nsLink(pid, ns), "pid %d in the machine's %s namespace", pid, ns)
	}
}

// nsLink names a process's namespace of kind ns ("" if it is gone).
func nsLink(pid int, ns string) string {
	l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	return l
}

// seconds parses a number of seconds of /proc/uptime.
func seconds(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}
