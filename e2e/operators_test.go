//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/e2e/framework"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

var (
	isvcGVR           = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}
	rayClusterGVR     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	trainJobGVR       = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	pyTorchJobGVR     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	clusterQueueGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	resourceFlavorGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
)

// sklearnIris is the InferenceService of the KServe install guide
// (shared/seeds/004): the sklearn iris model, in the short predictor.sklearn
// form that KServe's mutating webhook rewrites into predictor.model.
const sklearnIris = `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata:
  name: sklearn-iris
  namespace: models
spec:
  predictor:
    sklearn:
      storageUri: gs://kfserving-examples/models/sklearn/1.0/model
`

// rayClusterYAML is a small RayCluster: a head and one worker.
func rayClusterYAML(name string) string {
	return fmt.Sprintf(`
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: %s
  namespace: ray
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
            limits: {cpu: "1", memory: 2Gi}
  workerGroupSpecs:
  - groupName: workers
    replicas: 1
    minReplicas: 1
    maxReplicas: 1
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          resources:
            requests: {cpu: "1", memory: 2Gi}
            limits: {cpu: "1", memory: 2Gi}
`, name)
}

// TestOperatorsOnRig runs the real KServe and KubeRay on one full rig:
// their custom resources reconcile into owned, Running children; aiconform's
// checks find robust_controller met by both; and faults of each operator
// turn its verdict to fail or error, never pass.
func TestOperatorsOnRig(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := startOperatorRig(ctx, t, "operators", true)
	binDir, kserve, kuberay := c.BinDir, c.KServe, c.KubeRay
	require.Len(t, kuberay.Webhooks(), 1, "KubeRay serves the RayCluster webhook only")
	assert.Equal(t, "vraycluster.kb.io", kuberay.Webhooks()[0].Name)

	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	for _, ns := range []string{"models", "ray"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// Both CRs reconcile concurrently; the subtests then wait for each.
	isvcCreated := time.Now()
	isvc := create(ctx, t, dyn, isvcGVR, sklearnIris)
	rcCreated := time.Now()
	rc := create(ctx, t, dyn, rayClusterGVR, rayClusterYAML("raycluster-mini"))

	t.Run("InferenceServiceReady", func(t *testing.T) {
		u := waitConditions(ctx, t, dyn, isvcGVR, "models", "sklearn-iris", 3*time.Minute, "Ready")
		t.Logf("InferenceService sklearn-iris Ready %.1fs after create", time.Since(isvcCreated).Seconds())
		format, _, _ := unstructured.NestedString(u.Object, "spec", "predictor", "model", "modelFormat", "name")
		assert.Equal(t, "sklearn", format, "KServe's mutating webhook rewrites predictor.sklearn into predictor.model")

		dep, err := cs.AppsV1().Deployments("models").Get(ctx, "sklearn-iris-predictor", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, ownedBy(dep, isvc.GetUID()), "predictor Deployment owned by the InferenceService")
		svc, err := cs.CoreV1().Services("models").Get(ctx, "sklearn-iris-predictor", metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, ownedBy(svc, isvc.GetUID()), "predictor Service owned by the InferenceService")
		pods := podsOf(ctx, t, cs, "models", "serving.kserve.io/inferenceservice=sklearn-iris")
		require.NotEmpty(t, pods)
		rss, err := cs.AppsV1().ReplicaSets("models").List(ctx, metav1.ListOptions{LabelSelector: "serving.kserve.io/inferenceservice=sklearn-iris"})
		require.NoError(t, err)
		for _, p := range pods {
			assert.True(t, ownedThrough(p, dep, rss.Items), "pod %s owned through the predictor Deployment", p.Name)
			assert.True(t, runningReady(p), "pod %s Running and Ready", p.Name)
			var inits []string
			for _, ic := range p.Spec.InitContainers {
				inits = append(inits, ic.Name)
			}
			assert.Contains(t, inits, "storage-initializer", "KServe's pod webhook injects the storage initializer")
		}
	})

	t.Run("RayClusterReady", func(t *testing.T) {
		waitConditions(ctx, t, dyn, rayClusterGVR, "ray", "raycluster-mini", 2*time.Minute, "HeadPodReady", "RayClusterProvisioned")
		t.Logf("RayCluster raycluster-mini HeadPodReady and RayClusterProvisioned %.1fs after create", time.Since(rcCreated).Seconds())
		pods := podsOf(ctx, t, cs, "ray", "ray.io/cluster=raycluster-mini")
		nodeTypes := map[string]int{}
		for _, p := range pods {
			nodeTypes[p.Labels["ray.io/node-type"]]++
			assert.True(t, ownedBy(&p, rc.GetUID()), "pod %s owned by the RayCluster", p.Name)
			assert.True(t, runningReady(p), "pod %s Running and Ready", p.Name)
		}
		assert.Equal(t, map[string]int{"head": 1, "worker": 1}, nodeTypes)
	})

	kubeconfig := c.Kubeconfig()
	t.Run("ChecksPass", func(t *testing.T) {
		out, verdicts := runChecks(ctx, t, kubeconfig, "")
		robust := verdictOf(t, verdicts, "robust_controller")
		assert.Equal(t, checks.Implemented, robust.Status, "robust_controller: %s", robust.Conclusion)
		for _, op := range []string{"kserve", "kuberay"} {
			v := operatorVerdict(t, robust, op)
			assert.Contains(t, []checks.Status{checks.Pass, checks.Warn}, v.Verdict, "%s: %s", op, v.Reason)
		}
		// Webhooks reached by URL have no Service whose endpoints could
		// show they are served: warn is the honest verdict until the check
		// probes them.
		for _, op := range []string{"kserve", "kuberay"} {
			r := result(t, out, "webhooks-served", op)
			assert.Contains(t, []checks.Status{checks.Pass, checks.Warn}, r.Status, "webhooks-served for %s: %s", op, r.Reason)
			t.Logf("webhooks-served for %s: %s: %s", op, r.Status, r.Reason)
		}

		framework.AssertEvidenceReRuns(t, binDir, kubeconfig, "", out)

		gpu := result(t, out, "gpu-allocatable", "")
		assert.Equal(t, checks.Pass, gpu.Status, gpu.Reason)
		require.NotNil(t, gpu.Table)
		col := map[string]int{}
		for i, h := range gpu.Table.Header {
			col[h] = i
		}
		found := false
		for _, row := range gpu.Table.Rows {
			if row[col["NODE"]] == rig.GPUNodeName && row[col["RESOURCE"]] == string(rig.GPUResource) {
				found = true
				assert.Equal(t, strconv.Itoa(rig.GPUCount), row[col["ALLOCATABLE"]])
			}
		}
		assert.True(t, found, "GPU node %s in the table %v", rig.GPUNodeName, gpu.Table.Rows)
		if t.Failed() {
			logResults(t, out)
		}
	})

	t.Run("ReadOnlyServiceAccount", func(t *testing.T) {
		// The published read-only ClusterRole is enough for every check...
		data, err := os.ReadFile(filepath.Join("..", "docs", "rbac", "aiconform-reader.yaml"))
		require.NoError(t, err)
		role := &rbacv1.ClusterRole{}
		require.NoError(t, yaml.UnmarshalStrict(data, role))
		for _, rule := range role.Rules {
			assert.NotContains(t, rule.Resources, "secrets")
			if slices.ContainsFunc(rule.Resources, func(r string) bool { return strings.HasSuffix(r, "/proxy") }) {
				// A proxy's GETs, and none of its other verbs.
				assert.Equal(t, []string{"get"}, rule.Verbs)
				continue
			}
			assert.ElementsMatch(t, []string{"get", "list", "watch"}, rule.Verbs)
		}
		roles := cs.RbacV1().ClusterRoles()
		_, err = roles.Create(ctx, role, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "aiconform-audit"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.CoreV1().ServiceAccounts("aiconform-audit").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "auditor"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "aiconform-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "aiconform-audit", Name: "auditor"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		const as = "system:serviceaccount:aiconform-audit:auditor"
		out, verdicts := runChecks(ctx, t, kubeconfig, as)
		for _, v := range verdicts {
			switch v.Requirement.ID {
			case "gang_scheduling":
				// This rig runs the serving operators only: no gang scheduler.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Equal(t, "no gang scheduler was found (looked for: Coscheduling (scheduler-plugins), Kueue, Volcano)", v.Conclusion)
				continue
			case "pod_autoscaling":
				// ...and no metrics adapter.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "metrics-apis: neither custom.metrics.k8s.io nor external.metrics.k8s.io is registered")
				continue
			case "cluster_autoscaling":
				// ...and no autoscaler: read, and found absent.
				assert.Equal(t, checks.NotApplicable, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "no cluster autoscaler found")
				continue
			case "dra_support":
				// ...and no DRA driver: the API is read, and nothing is
				// published in it.
				assert.Equal(t, checks.PartiallyImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "dra-devices: no DRA driver publishes devices")
				continue
			case "gpu_sharing", "virtualized_accelerator":
				// ...whole GPUs, not shared, not virtualized: SHOULDs
				// read, and found not implemented.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "none of 1 accelerator node exposes")
				continue
			case "accelerator_metrics":
				// ...and no accelerator metrics exporter.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "no accelerator metrics exporter runs")
				continue
			case "ai_inference":
				// ...and no Gateway API (TestGatewayOnRig runs Traefik).
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "gateway-api-crds: the Gateway API is not installed")
				continue
			case "ai_service_metrics":
				// ...and no monitoring system (TestAcceleratorMetricsOnRig
				// runs Prometheus).
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "monitoring-system: no monitoring system")
				continue
			case "advanced_inference_ingress", "high_performance_networking", "disaggregated_inference":
				// ...and none of the Inference Extension, network devices
				// or a disaggregated serving stack: the fixtures have them.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Regexp(t, "inference-extension-crds: the Gateway API Inference Extension is not installed|network-devices: no network device is exposed|disaggregated-serving: no serving stack runs prefill and decode", v.Conclusion)
				continue
			case "workload_sandboxing":
				// ...and no sandbox runtime.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "sandbox-runtimes: no RuntimeClass names a sandbox's handler")
				continue
			case "secure_accelerator_access":
				// Read-only: no pod reaches a device around a request, but
				// what a container sees only the probe shows.
				assert.Equal(t, checks.NotImplemented, v.Status, v.Conclusion)
				assert.Contains(t, v.Conclusion, "not shown at work: device-isolation-probe: probes are off")
				continue
			}
			assert.Equal(t, checks.Implemented, v.Status, "%s as the read-only auditor: %s", v.Requirement.ID, v.Conclusion)
		}
		framework.AssertEvidenceReRuns(t, binDir, kubeconfig, as, out)

		// ...and a read it may not make is an Error, never a Pass.
		narrowed := role.DeepCopy()
		narrowed.Rules[0].Resources = []string{"namespaces", "pods", "services"}
		cur, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
		require.NoError(t, err)
		narrowed.ResourceVersion = cur.ResourceVersion
		_, err = roles.Update(ctx, narrowed, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			out, _ := runChecks(ctx, t, kubeconfig, as)
			return result(t, out, "gpu-allocatable", "").Status != checks.Pass, nil
		}))
		out, verdicts = runChecks(ctx, t, kubeconfig, as)
		gpu := result(t, out, "gpu-allocatable", "")
		assert.Equal(t, checks.Error, gpu.Status, gpu.Reason)
		assert.Contains(t, gpu.Reason, `cannot list resource "nodes"`)
		assert.Equal(t, checks.Error, verdictOf(t, verdicts, "gpu_nodes_allocatable").Result)
	})

	t.Run("Faults", func(t *testing.T) {
		t.Run("KServeControllerScaledToZero", func(t *testing.T) {
			scale(ctx, t, cs, kserve.Namespace(), kserve.Deployment(), 0)
			defer func() {
				scale(ctx, t, cs, kserve.Namespace(), kserve.Deployment(), 1)
				require.NoError(t, rig.WaitDeploymentAvailable(ctx, cs, kserve.Namespace(), kserve.Deployment()))
			}()
			// kwok deletes the pod once the ReplicaSet controller asks.
			require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				pods, err := cs.CoreV1().Pods(kserve.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=kserve-controller-manager"})
				return err == nil && len(pods.Items) == 0, nil
			}))
			out, verdicts := runChecks(ctx, t, kubeconfig, "")
			assertNotMet(t, out, verdicts, "kserve", "controller-ready")
		})

		t.Run("RayClusterWhileOperatorStopped", func(t *testing.T) {
			require.NoError(t, kuberay.Stop(ctx))
			orphan := create(ctx, t, dyn, rayClusterGVR, rayClusterYAML("raycluster-orphan"))
			out, verdicts := runChecks(ctx, t, kubeconfig, "")
			cr := assertNotMet(t, out, verdicts, "kuberay", "crs-reconciled")
			assert.Contains(t, cr.Reason, "raycluster-orphan")

			// The operator comes back, its webhook with it, and catches up.
			require.NoError(t, kuberay.Start(ctx))
			assert.Len(t, kuberay.Webhooks(), 1)
			waitConditions(ctx, t, dyn, rayClusterGVR, "ray", orphan.GetName(), 2*time.Minute, "HeadPodReady", "RayClusterProvisioned")
		})

		t.Run("WebhookCABundleEmpty", func(t *testing.T) {
			const name = "servingruntime.serving.kserve.io"
			vwcs := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
			orig, err := vwcs.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			broken := orig.DeepCopy()
			for i := range broken.Webhooks {
				broken.Webhooks[i].ClientConfig.CABundle = nil
			}
			_, err = vwcs.Update(ctx, broken, metav1.UpdateOptions{})
			require.NoError(t, err)
			defer func() {
				cur, err := vwcs.Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				for i := range cur.Webhooks {
					cur.Webhooks[i].ClientConfig.CABundle = orig.Webhooks[i].ClientConfig.CABundle
				}
				_, err = vwcs.Update(ctx, cur, metav1.UpdateOptions{})
				require.NoError(t, err)
			}()
			out, verdicts := runChecks(ctx, t, kubeconfig, "")
			r := assertNotMet(t, out, verdicts, "kserve", "webhooks-served")
			assert.Contains(t, r.Reason, "caBundle is empty")
		})
	})

	for _, op := range []*rig.Operator{kserve, kuberay} {
		rss, peak := rig.ProcessMemory(op.PID())
		t.Logf("%s (pid %d): RSS %d MiB, peak %d MiB", op.Name(), op.PID(), rss/1024, peak/1024)
	}
	total := 0
	for _, pid := range c.PIDs() {
		rss, _ := rig.ProcessMemory(pid)
		total += rss
	}
	t.Logf("whole rig RSS %d MiB; test ran %.1fs", total/1024, time.Since(began).Seconds())

	// Webhooks went by URL to 127.0.0.1; nothing should have asked the
	// egress proxy for a cluster address.
	refused, err := c.EgressRefusals()
	require.NoError(t, err)
	assert.Empty(t, refused, "the API server tried to reach cluster addresses")
}

// runChecks runs every check in-process, as `aiconform check all` does,
// reading the cluster as user as (or as the admin when empty), and writes
// the report files beside the test's other output.
func runChecks(ctx context.Context, t *testing.T, kubeconfig, as string) (checks.Outcome, []checks.Verdict) {
	t.Helper()
	res := framework.Audit(ctx, t, kubeconfig, as)
	return res.Outcome, res.Verdicts
}

// assertNotMet asserts that a fault of one operator shows: the check gives
// fail or error, and the operator's robust_controller verdict is not met.
func assertNotMet(t *testing.T, out checks.Outcome, verdicts []checks.Verdict, op, check string) checks.Result {
	t.Helper()
	r := result(t, out, check, op)
	assert.Contains(t, []checks.Status{checks.Fail, checks.Error}, r.Status, "%s for %s: %s", check, op, r.Reason)
	v := operatorVerdict(t, verdictOf(t, verdicts, "robust_controller"), op)
	assert.Contains(t, []checks.Status{checks.Fail, checks.Error}, v.Verdict, "robust_controller for %s: %s", op, v.Reason)
	t.Logf("%s for %s: %s: %s", check, op, r.Status, r.Reason)
	if t.Failed() {
		logResults(t, out)
	}
	return r
}

func verdictOf(t *testing.T, vs []checks.Verdict, req string) checks.Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Requirement.ID == req {
			return v
		}
	}
	t.Fatalf("no verdict for requirement %s", req)
	return checks.Verdict{}
}

func operatorVerdict(t *testing.T, v checks.Verdict, op string) checks.OperatorVerdict {
	t.Helper()
	for _, ov := range v.Operators {
		if ov.Operator == op {
			return ov
		}
	}
	t.Fatalf("requirement %s has no verdict for operator %s", v.Requirement.ID, op)
	return checks.OperatorVerdict{}
}

func result(t *testing.T, out checks.Outcome, check, op string) checks.Result {
	t.Helper()
	for _, r := range out.Results {
		if r.Check.ID == check && r.Operator == op {
			return r
		}
	}
	t.Fatalf("no result of %s for %q", check, op)
	return checks.Result{}
}

func logResults(t *testing.T, out checks.Outcome) {
	t.Helper()
	for _, r := range out.Results {
		t.Logf("  %-18s %-8s %-5s %s", r.Check.ID, r.Operator, r.Status, r.Reason)
	}
}

// create creates the object of a YAML manifest with the dynamic client.
func create(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, manifest string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(manifest))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	got, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	require.NoError(t, err, "create %s %s", u.GetKind(), u.GetName())
	return got
}

// waitConditions waits until every named condition of a custom resource is
// True, and returns the resource as last read.
func waitConditions(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string, timeout time.Duration, conds ...string) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u
		have := map[string]string{}
		list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range list {
			m, _ := c.(map[string]any)
			typ, _ := m["type"].(string)
			st, _ := m["status"].(string)
			have[typ] = st
		}
		for _, c := range conds {
			if have[c] != "True" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		status := "never read"
		if last != nil {
			s, _ := yaml.Marshal(last.Object["status"])
			status = string(s)
		}
		t.Fatalf("%s %s/%s: %v not all True within %s: %v; status:\n%s", gvr.Resource, ns, name, conds, timeout, err, status)
	}
	return last
}

func podsOf(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, selector string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	return pods.Items
}

func ownedBy(obj metav1.Object, uid types.UID) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// ownedThrough is true for a pod of a ReplicaSet owned by dep.
func ownedThrough(p corev1.Pod, dep *appsv1.Deployment, rss []appsv1.ReplicaSet) bool {
	for _, rs := range rss {
		if ownedBy(&p, rs.UID) && ownedBy(&rs, dep.UID) {
			return true
		}
	}
	return false
}

func runningReady(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func scale(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	err := retryConflict(func() error {
		cur, err := cs.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.ResourceVersion = cur.ResourceVersion
		_, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "scale %s/%s to %d", ns, name, n)
}

func retryConflict(f func() error) error {
	for range 5 {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
	return f()
}

// testLogWriter sends the rig's progress lines to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
