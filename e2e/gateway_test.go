//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ai_inference against a real Gateway API implementation: Traefik, as a
// process, accepts the rig's GatewayClass, programs a Gateway and reports
// on an HTTPRoute that splits a model's traffic 80/20 on a header match;
// the read-only auditor's checks judge what it wrote, and what it writes
// once a backend is gone.
func TestGatewayOnRig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir := framework.RigBin(t)
	if _, err := os.Stat(filepath.Join(binDir, "traefik")); err != nil {
		t.Fatalf("no traefik in %s: run `make tools` first", binDir)
	}
	c := startRig(ctx, t, "gateway", binDir)
	began := time.Now()
	gw, err := c.InstallGateway(ctx, rig.OperatorOptions{BinDir: binDir, Progress: testLogWriter{t}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, gw.Stop()) })
	t.Logf("Gateway API %s and Traefik %s installed, GatewayClass %s accepted, in %.1fs", rig.GatewayAPIVersion, rig.TraefikVersion, rig.GatewayClassName, time.Since(began).Seconds())

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	const ns = "models"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, name := range []string{"llm-stable", "llm-canary"} {
		backend(ctx, t, cs, ns, name)
	}
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
  - matches: [{headers: [{name: x-model, value: llama-3}]}]
    backendRefs:
    - {name: llm-stable, port: 80, weight: 80}
    - {name: llm-canary, port: 80, weight: 20}
`, ns))
	began = time.Now()
	waitConditions(ctx, t, dyn, rig.GatewaysGVR, ns, "inference", time.Minute, "Accepted", "Programmed")
	waitRoute(ctx, t, dyn, ns, "llm", "ResolvedRefs", "True")
	t.Logf("Gateway programmed and route accepted with its refs resolved in %.1fs", time.Since(began).Seconds())

	const as = "system:serviceaccount:gw-auditors:gw-reader"
	bindRoles(ctx, t, cs, "gw-auditors", "gw-reader", "aiconform-reader.yaml")
	var out checks.Outcome
	var v checks.Verdict
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var verdicts []checks.Verdict
		out, verdicts = runChecks(ctx, t, c.Kubeconfig(), as)
		v = verdictOf(t, verdicts, "ai_inference")
		// RBAC takes a moment to see a new binding.
		return result(t, out, "gateway-api-crds", "").Status != checks.Error, nil
	}))
	assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	crds := result(t, out, "gateway-api-crds", "")
	assert.Equal(t, fmt.Sprintf("Gateway API %s, standard channel: GatewayClass, Gateway and HTTPRoute served at v1", rig.GatewayAPIVersion), crds.Reason)
	programmed := result(t, out, "gateways-programmed", "")
	assert.Equal(t, checks.Pass, programmed.Status, programmed.Reason)
	assert.Equal(t, "1 Gateway programmed: Gateway models/inference (class traefik, controller traefik.io/gateway-controller) at 127.0.0.1", programmed.Reason)
	routes := result(t, out, "httproutes-accepted", "")
	assert.Equal(t, checks.Pass, routes.Status, routes.Reason)
	assert.Equal(t, "HTTPRoute models/llm, accepted by models/inference (controller traefik.io/gateway-controller), splits by weight 80/20 and matches header x-model", routes.Reason)
	framework.AssertEvidenceReRuns(t, binDir, c.Kubeconfig(), as, out)
	// The same cluster as one of two contexts, the other unreachable.
	assertSeveralContexts(ctx, t, c.Kubeconfig(), "ai_inference", "Implemented")

	// The canary Service is deleted: Traefik keeps the route accepted but
	// cannot resolve its refs, and nothing then shows the split.
	require.NoError(t, cs.CoreV1().Services(ns).Delete(ctx, "llm-canary", metav1.DeleteOptions{}))
	waitRoute(ctx, t, dyn, ns, "llm", "ResolvedRefs", "False")
	out, verdicts := runChecks(ctx, t, c.Kubeconfig(), as)
	v = verdictOf(t, verdicts, "ai_inference")
	// The API is served and the gateway programmed: partly.
	assert.Equal(t, checks.PartiallyImplemented, v.Status, v.Conclusion)
	routes = result(t, out, "httproutes-accepted", "")
	assert.Equal(t, checks.Fail, routes.Status, routes.Reason)
	assert.Contains(t, routes.Reason, "none of 1 HTTPRoute is accepted with its refs resolved: HTTPRoute models/llm: models/inference: ResolvedRefs is False BackendNotFound")
	t.Logf("after the canary Service was deleted: %s", routes.Reason)
}

// backend is a Deployment of one pod and its Service on port 80: the rig's
// kube-controller-manager and kwok give it a Running pod and an
// EndpointSlice, as a model server has.
func backend(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "local/model-server:rig",
					Ports: []corev1.ContainerPort{{ContainerPort: 8000}}}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8000)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitRoute waits until the implementation reports the route's condition
// t with status for its current generation.
func waitRoute(ctx context.Context, t *testing.T, dyn dynamic.Interface, ns, name, typ, status string) {
	t.Helper()
	last := "never read"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(rig.HTTPRoutesGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		parents, _, _ := unstructured.NestedSlice(u.Object, "status", "parents")
		last = fmt.Sprint(parents)
		for _, p := range parents {
			pm, _ := p.(map[string]any)
			conds, _, _ := unstructured.NestedSlice(pm, "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				observed, _, _ := unstructured.NestedInt64(cm, "observedGeneration")
				if cm["type"] == typ && cm["status"] == status && observed == u.GetGeneration() {
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(t, err, "HTTPRoute %s/%s %s=%s; parents: %s", ns, name, typ, status, last)
}
