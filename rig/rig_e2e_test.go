//go:build e2e

package rig

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
)

// shared is the full rig every test in this file uses: started once by
// TestMain, or the one `make cluster-up` left running when
// AICONFORM_RIG_DIR points at its directory.
var shared *Cluster

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx := context.Background()
	if dir := os.Getenv("AICONFORM_RIG_DIR"); dir != "" {
		c, err := Attach(ctx, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "attach rig:", err)
			return 1
		}
		shared = c
		return m.Run()
	}
	began := time.Now()
	// With a real node beside the kwok ones (realnode_e2e_test.go).
	c, err := Start(ctx, Options{Progress: os.Stderr, RealNodes: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start rig:", err)
		return 1
	}
	shared = c
	fmt.Fprintf(os.Stderr, "rig ready in %.1fs (dir %s)\n", time.Since(began).Seconds(), c.Dir())
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop rig:", err)
		if code == 0 {
			code = 1
		}
	}
	// Stopping the rig stops the real node's containers too: no shim, no
	// process of its namespaces outlives it.
	if left := leftovers(c); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes of the real node left running:\n%s\n", strings.Join(left, "\n"))
		if code == 0 {
			code = 1
		}
	}
	if code == 0 {
		_ = os.RemoveAll(c.Dir())
	} else {
		fmt.Fprintln(os.Stderr, "rig logs kept in", c.Dir())
	}
	return code
}

func clientset(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return cs
}

// testNamespace creates a namespace deleted at the end of the test.
func testNamespace(t *testing.T, cs kubernetes.Interface, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "rig-e2e-" + rand.String(6),
		Labels: labels,
	}}
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func TestControlPlaneServes(t *testing.T) {
	cs := clientset(t, shared)
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))
	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)
	assert.True(t, strings.HasPrefix(shared.Server(), "https://127.0.0.1:"), shared.Server())
}

func TestNodes(t *testing.T) {
	cs := clientset(t, shared)
	ctx := context.Background()

	gpu, err := cs.CoreV1().Nodes().Get(ctx, GPUNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, nodeReady(gpu), "GPU node Ready")
	want := resource.MustParse("8")
	got := gpu.Status.Allocatable[GPUResource]
	assert.Zero(t, want.Cmp(got), "allocatable %s = %s", GPUResource, got.String())
	got = gpu.Status.Capacity[GPUResource]
	assert.Zero(t, want.Cmp(got), "capacity %s = %s", GPUResource, got.String())
	for _, l := range []string{"nvidia.com/gpu.present", "nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory", "nvidia.com/gpu.family"} {
		assert.NotEmpty(t, gpu.Labels[l], "label %s", l)
	}
	assert.Equal(t, "true", gpu.Labels["nvidia.com/gpu.present"])
	assert.Equal(t, NodeAnnotationValue, gpu.Annotations[NodeAnnotation])

	cpu, err := cs.CoreV1().Nodes().Get(ctx, CPUNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, nodeReady(cpu), "CPU node Ready")
	_, hasGPU := cpu.Status.Allocatable[GPUResource]
	assert.False(t, hasGPU, "CPU node advertises no GPU")

	for _, n := range []*corev1.Node{gpu, cpu} {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				assert.True(t, strings.HasPrefix(a.Address, "127.0.10."), "%s InternalIP %s", n.Name, a.Address)
			}
		}
	}
}

func TestDeploymentGetsRunningPod(t *testing.T) {
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		nodes     []string // where the scheduler may put the pod
	}{
		{name: "plain", nodes: []string{GPUNodeName, CPUNodeName}},
		{
			// The scheduler honours the extended resource: only the GPU
			// node has it.
			name:      "gpu",
			resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: resource.MustParse("2")}},
			nodes:     []string{GPUNodeName},
		},
	}
	cs := clientset(t, shared)
	ctx := context.Background()
	ns := testNamespace(t, cs, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh namespace has no "default" ServiceAccount until kcm
			// makes one; the ReplicaSet controller retries, so no wait here.
			labels := map[string]string{"app": tt.name}
			dep := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: tt.name},
				Spec: appsv1.DeploymentSpec{
					Replicas: new(int32(1)),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: tt.resources,
						}}},
					},
				},
			}
			_, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
			require.NoError(t, err)

			var pod corev1.Pod
			require.Eventually(t, func() bool {
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + tt.name})
				if err != nil || len(pods.Items) != 1 {
					return false
				}
				pod = pods.Items[0]
				return pod.Status.Phase == corev1.PodRunning && podReady(&pod)
			}, 60*time.Second, 250*time.Millisecond, "pod of the Deployment Running and Ready")
			assert.Contains(t, tt.nodes, pod.Spec.NodeName)

			require.Eventually(t, func() bool {
				d, err := cs.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
				return err == nil && d.Status.AvailableReplicas == 1
			}, 30*time.Second, 250*time.Millisecond, "Deployment available")
		})
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestServiceWebhookRefusedByEgressProxy is the required proof that the API
// server's cluster traffic cannot leave loopback: a Service-backed webhook
// resolves to a 10.96.x ClusterIP, the API server asks the egress proxy
// for it, the proxy refuses and logs it, and the intercepted create fails.
func TestServiceWebhookRefusedByEgressProxy(t *testing.T) {
	cs := clientset(t, shared)
	ctx := context.Background()
	// Only this namespace is intercepted, so a failure here cannot leak
	// into other tests sharing the rig.
	probe := map[string]string{"rig-e2e/egress-probe": rand.String(8)}
	ns := testNamespace(t, cs, probe)

	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "webhook"},
			Ports:    []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(svc.Spec.ClusterIP, "10.96."), "ClusterIP %s", svc.Spec.ClusterIP)
	target := svc.Spec.ClusterIP + ":443"

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-egress-probe"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "egress-probe.rig.aiconform.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svc.Name, Path: new("/validate")},
				CABundle: shared.CACert(),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
				},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: probe},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          new(int32(5)),
		}},
	}
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{})
	require.NoError(t, err)
	// failurePolicy Fail: remove the configuration before anything else.
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})

	// The API server picks the configuration up from an informer, so the
	// first creates may pass before the webhook is in force.
	var createErr error
	require.Eventually(t, func() bool {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}
		_, createErr = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return createErr != nil
	}, 30*time.Second, 200*time.Millisecond, "a create intercepted by the webhook fails")
	assert.Contains(t, createErr.Error(), "failed calling webhook")
	assert.Contains(t, createErr.Error(), "egress-probe.rig.aiconform.io")
	t.Logf("intercepted create refused: %v", createErr)

	refusals, err := shared.EgressRefusals()
	require.NoError(t, err)
	found := false
	for _, line := range refusals {
		if strings.Contains(line, "target="+target+" ") {
			found = true
			t.Logf("egress proxy: %s", line)
		}
	}
	assert.True(t, found, "egress proxy log refuses %s; refusals: %q", target, refusals)

	// Nothing was ever let through to a non-loopback address: what was let
	// through went to loopback, or to a virtual address by way of a
	// loopback listener or a real node's own proxy.
	log, err := os.ReadFile(shared.EgressLog())
	require.NoError(t, err)
	allowed := regexp.MustCompile(`ALLOWED target=(127\.\S+|10\.250\.\S+ via=(127\.|unix:)\S+)$`)
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "ALLOWED") {
			assert.Regexp(t, allowed, line, "allowed egress must be loopback")
		}
	}
}

// TestControlPlaneOnly checks the bare etcd + kube-apiserver rig: statuses
// written by hand stay as written, since no controller runs.
func TestControlPlaneOnly(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rig-bare-")
	require.NoError(t, err)
	c, err := Start(ctx, Options{Dir: dir, ControlPlaneOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.Stop())
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	assert.Len(t, c.PIDs(), 2, "etcd and kube-apiserver only: %v", c.PIDs())

	cs := clientset(t, c)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, nodes.Items)

	require.NoError(t, CreateNodes(ctx, cs))
	n, err := cs.CoreV1().Nodes().Get(ctx, GPUNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "WrittenByHand",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	// Long enough for a node lifecycle controller or kwok to have
	// rewritten it, were one running.
	time.Sleep(2 * time.Second)
	n, err = cs.CoreV1().Nodes().Get(ctx, GPUNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, n.Status.Conditions, 1)
	assert.Equal(t, "WrittenByHand", n.Status.Conditions[0].Reason)
}
