//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// releaseNamespaces are where TestInstalledElsewhereOnRig moves each
// operator: namespaces a Helm release could be installed into, none of
// them its manifests' own (accepted submissions show KubeRay in kuberay).
var releaseNamespaces = map[string]string{
	"kserve":            "kserve-system",
	"kuberay":           "kuberay",
	"kubeflow-trainer":  "kubeflow-trainer", // with JobSet, as Trainer's manifests bundle it
	"kubeflow-training": "training-operator",
	"kueue":             "kueue",
}

// TestInstalledElsewhereOnRig is the proof that no verdict hangs on where
// an installer puts an operator (issue 35). On one rig, every built-in
// operator is installed as its manifests lay it out and judged (check
// robust_controller and gang_scheduling, read-only and with probes); then
// each is uninstalled and installed into a release namespace of its own,
// and judged again: every requirement, operator verdict and check status
// is the same, and the evidence says where each controller was found.
// Last, KubeRay as its Helm chart lays it out (release kuberay-operator in
// kuberay-system, the chart's labels, no webhook) is Implemented, its
// webhook leg not applicable and said so.
func TestInstalledElsewhereOnRig(t *testing.T) {
	t.Parallel()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	aiconform := buildAiconform(t)
	c := startOperatorRig(ctx, t, "installs", false)
	kubeconfig := c.Kubeconfig()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	for _, ns := range []string{"models", "ray"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	shipped := map[string]*rig.Operator{"kserve": c.KServe, "kuberay": c.KubeRay, "kubeflow-trainer": c.Trainer,
		"kubeflow-training": c.TrainingOperator, "kueue": c.Kueue}
	shippedHooks := map[string][]string{}
	for op, o := range shipped {
		shippedHooks[op] = webhookNames(o)
	}

	step := time.Now()
	asShipped := judgeInstalls(ctx, t, aiconform, kubeconfig, cs, dyn, "shipped")
	assertFoundIn(t, asShipped, shipped)
	t.Logf("as the manifests lay them out: judged in %.1fs", time.Since(step).Seconds())
	// The shipped phase's custom resources go while their operators run
	// (finalizers), so that the next phase judges only what its installs
	// reconciled.
	deleteAndWait(ctx, t, dyn, isvcGVR, "models", "iris-shipped")
	deleteAndWait(ctx, t, dyn, rayClusterGVR, "ray", "raycluster-shipped")

	// Kueue first: its webhooks see the other operators' jobs.
	step = time.Now()
	for _, o := range []*rig.Operator{c.Kueue, c.TrainingOperator, c.JobSet, c.Trainer, c.KubeRay, c.KServe} {
		require.NoError(t, o.Uninstall(ctx), "uninstall %s", o.Name())
	}
	t.Logf("all uninstalled in %.1fs", time.Since(step).Seconds())

	step = time.Now()
	in := func(op string) rig.OperatorOptions {
		return rig.OperatorOptions{BinDir: c.BinDir, Progress: testLogWriter{t}, Namespace: releaseNamespaces[op]}
	}
	moved := map[string]*rig.Operator{}
	moved["kserve"], err = c.InstallKServe(ctx, in("kserve"))
	require.NoError(t, err)
	moved["kuberay"], err = c.InstallKubeRay(ctx, in("kuberay"))
	require.NoError(t, err)
	moved["kubeflow-trainer"], _, err = c.InstallTrainer(ctx, in("kubeflow-trainer"))
	require.NoError(t, err)
	moved["kubeflow-training"], err = c.InstallTrainingOperator(ctx, in("kubeflow-training"))
	require.NoError(t, err)
	moved["kueue"], err = c.InstallKueue(ctx, in("kueue"))
	require.NoError(t, err)
	for op, o := range moved {
		require.Equal(t, releaseNamespaces[op], o.Namespace())
		// The same webhooks as shipped, wherever the process runs.
		assert.Equal(t, shippedHooks[op], webhookNames(o), "%s's webhooks", op)
	}
	t.Logf("all installed into release namespaces in %.1fs", time.Since(step).Seconds())

	step = time.Now()
	elsewhere := judgeInstalls(ctx, t, aiconform, kubeconfig, cs, dyn, "moved")
	assertFoundIn(t, elsewhere, moved)
	t.Logf("in release namespaces: judged in %.1fs", time.Since(step).Seconds())
	for _, mode := range []string{"read-only", "probe"} {
		assert.Equal(t, asShipped.statuses[mode], elsewhere.statuses[mode],
			"%s: verdicts and check statuses differ once the operators are installed elsewhere", mode)
		t.Logf("%s, shipped and moved alike:\n%s", mode, statusTable(elsewhere.statuses[mode]))
	}

	// KubeRay as its Helm chart lays it out: the release's namespace and
	// Deployment name, the chart's labels, no webhook at all.
	step = time.Now()
	require.NoError(t, moved["kuberay"].Uninstall(ctx))
	chart, err := c.InstallKubeRayChart(ctx, "kuberay-operator", rig.OperatorOptions{BinDir: c.BinDir, Progress: testLogWriter{t}, Namespace: "kuberay-system"})
	require.NoError(t, err)
	t.Logf("KubeRay's chart layout installed in %.1fs", time.Since(step).Seconds())
	assert.Empty(t, chart.Webhooks())
	assert.Equal(t, "kuberay-operator", chart.Deployment())
	for _, name := range []string{"kuberay-validating-webhook-configuration", "validating-webhook-configuration"} {
		_, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "ValidatingWebhookConfiguration %s: %v", name, err)
	}
	dep, err := cs.AppsV1().Deployments("kuberay-system").Get(ctx, "kuberay-operator", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator",
		"app.kubernetes.io/component": "kuberay-operator"}, dep.Spec.Template.Labels)

	rcCreated := time.Now()
	rc := create(ctx, t, dyn, rayClusterGVR, rayClusterYAML("raycluster-chart"))
	waitConditions(ctx, t, dyn, rayClusterGVR, "ray", "raycluster-chart", 2*time.Minute, "HeadPodReady", "RayClusterProvisioned")
	t.Logf("RayCluster raycluster-chart HeadPodReady and RayClusterProvisioned %.1fs after create", time.Since(rcCreated).Seconds())
	for _, p := range podsOf(ctx, t, cs, "ray", "ray.io/cluster=raycluster-chart") {
		assert.True(t, ownedBy(&p, rc.GetUID()), "pod %s owned by the RayCluster", p.Name)
		assert.True(t, runningReady(p), "pod %s Running and Ready", p.Name)
	}

	chartStatuses := map[string]map[string]string{}
	for mode, args := range map[string][]string{"read-only": nil, "probe": {"--probe", "--probe-timeout", "2m"}} {
		rep, _, _ := runCheck(ctx, t, aiconform, kubeconfig, "robust_controller", append([]string{"--operator", "kuberay"}, args...)...)
		rc := requirement(t, rep, "robust_controller")
		assert.Equal(t, "Implemented", rc.Status, "%s: %s", mode, rc.Conclusion)
		assert.Contains(t, rc.Conclusion, "not applicable: webhooks-served", mode)
		served := reportCheck(t, rep, "webhooks-served", "kuberay")
		assert.Equal(t, "skip", served.Status, served.Reason)
		assert.Contains(t, served.Reason, "registers no admission webhook")
		assert.Contains(t, served.Reason, "the webhook leg does not apply")
		ready := reportCheck(t, rep, "controller-ready", "kuberay")
		require.NotEmpty(t, ready.Evidence)
		assert.Contains(t, ready.Evidence[0].Note, "KubeRay's controller: Deployment kuberay-system/kuberay-operator, found by its pod template's labels")
		assert.Equal(t, "kuberay-system/kuberay-operator", controllerOf(t, rep, "kuberay"))
		if mode == "probe" {
			answer := reportCheck(t, rep, "webhooks-answer", "kuberay")
			assert.Equal(t, "skip", answer.Status, answer.Reason)
			canary := reportCheck(t, rep, "canary-reconciled", "kuberay")
			assert.Equal(t, "pass", canary.Status, canary.Reason)
			assertNoLeftovers(ctx, t, cs, dyn)
		}
		t.Logf("chart layout, %s: robust_controller %s: %s\n  webhooks-served: %s\n  controller-ready note: %s",
			mode, rc.Status, rc.Conclusion, served.Reason, ready.Evidence[0].Note)
		chartStatuses[mode] = statuses(rep, "kuberay")
	}
	// Everything else is judged as the manifests' install was.
	for mode, got := range chartStatuses {
		want := map[string]string{}
		for k, v := range asShipped.statuses[mode] {
			if strings.HasSuffix(k, "/kuberay") && !strings.Contains(k, "/webhooks-") && strings.Count(k, "/") == 2 {
				want[k] = v
			}
		}
		for k := range got {
			if strings.Contains(k, "/webhooks-") || strings.Count(k, "/") != 2 {
				delete(got, k)
			}
		}
		assert.Equal(t, want, got, "%s: KubeRay's checks but the webhooks', chart layout against the manifests'", mode)
		t.Logf("chart layout, %s:\n%s", mode, statusTable(chartStatuses[mode]))
	}

	refused, err := c.EgressRefusals()
	require.NoError(t, err)
	assert.Empty(t, refused, "the API server tried to reach cluster addresses")
	t.Logf("test ran %.1fs", time.Since(began).Seconds())
}

// judged is what the two runs of one layout said.
type judged struct {
	// statuses by mode ("read-only", "probe"): statuses() of its report.
	statuses map[string]map[string]string
	// reports by mode.
	reports map[string]*report.Report
}

// judgeInstalls creates an InferenceService and a RayCluster named after
// the phase, waits until they are reconciled, as TestOperatorsOnRig does,
// and runs `check robust_controller gang_scheduling`, read-only and with
// probes.
func judgeInstalls(ctx context.Context, t *testing.T, aiconform, kubeconfig string, cs kubernetes.Interface, dyn dynamic.Interface, phase string) judged {
	t.Helper()
	create(ctx, t, dyn, isvcGVR, strings.Replace(sklearnIris, "name: sklearn-iris", "name: iris-"+phase, 1))
	create(ctx, t, dyn, rayClusterGVR, rayClusterYAML("raycluster-"+phase))
	waitConditions(ctx, t, dyn, isvcGVR, "models", "iris-"+phase, 3*time.Minute, "Ready")
	waitConditions(ctx, t, dyn, rayClusterGVR, "ray", "raycluster-"+phase, 2*time.Minute, "HeadPodReady", "RayClusterProvisioned")

	j := judged{statuses: map[string]map[string]string{}, reports: map[string]*report.Report{}}
	for mode, args := range map[string][]string{"read-only": nil, "probe": {"--probe", "--probe-timeout", "2m"}} {
		began := time.Now()
		rep, _, _ := runCheck(ctx, t, aiconform, kubeconfig, "robust_controller", append([]string{"gang_scheduling"}, args...)...)
		t.Logf("%s, %s: checks ran in %.1fs", phase, mode, time.Since(began).Seconds())
		if mode == "probe" {
			// What TestProbesOnRig asserts of the manifests' installs.
			rc := requirement(t, rep, "robust_controller")
			assert.Equal(t, "Implemented", rc.Status, "%s: %s", phase, rc.Conclusion)
			assert.Equal(t, "Implemented", requirement(t, rep, "gang_scheduling").Status, phase)
			for _, op := range []string{"kserve", "kuberay", "kubeflow-trainer", "kubeflow-training", "kueue"} {
				answer := reportCheck(t, rep, "webhooks-answer", op)
				assert.Equal(t, "pass", answer.Status, "%s, %s: %s", phase, op, answer.Reason)
				canary := reportCheck(t, rep, "canary-reconciled", op)
				assert.Equal(t, "pass", canary.Status, "%s, %s: %s", phase, op, canary.Reason)
			}
			assertNoLeftovers(ctx, t, cs, dyn)
		}
		j.statuses[mode], j.reports[mode] = statuses(rep, ""), rep
	}
	return j
}

// statuses flattens a report's verdicts: "REQ" to its status, "REQ/OP" to
// an operator's verdict, "REQ/CHECK/OP" to a check's status ("-" for no
// operator); only the operators named op, when op is set.
func statuses(rep *report.Report, op string) map[string]string {
	out := map[string]string{}
	for _, req := range rep.Requirements {
		if op == "" {
			out[req.ID] = req.Status
		}
		for _, v := range req.Operators {
			if op == "" || v.Operator == op {
				out[req.ID+"/"+v.Operator] = v.Result
			}
		}
		for _, c := range req.Checks {
			if op != "" && c.Operator != op {
				continue
			}
			target := c.Operator
			if target == "" {
				target = "-"
			}
			out[req.ID+"/"+c.ID+"/"+target] = c.Status
		}
	}
	return out
}

// assertFoundIn asserts that each operator was found once, where it was
// installed, and that the evidence says so.
func assertFoundIn(t *testing.T, j judged, ops map[string]*rig.Operator) {
	t.Helper()
	for mode, rep := range j.reports {
		for _, o := range rep.Operators {
			assert.NotContains(t, o.Name, "@", "%s: one install of each operator, not two candidates", mode)
		}
		for name, op := range ops {
			assert.Equal(t, op.Namespace()+"/"+op.Deployment(), controllerOf(t, rep, name), "%s: %s's controller", mode, name)
			ready := reportCheck(t, rep, "controller-ready", name)
			assert.Equal(t, "pass", ready.Status, "%s, %s: %s", mode, name, ready.Reason)
			if assert.NotEmpty(t, ready.Evidence) {
				assert.Contains(t, ready.Evidence[0].Note, "'s controller: Deployment "+op.Namespace()+"/"+op.Deployment()+", found by ", "%s, %s", mode, name)
			}
		}
	}
}

// controllerOf is where the report says an operator's controller was
// found.
func controllerOf(t *testing.T, rep *report.Report, name string) string {
	t.Helper()
	for _, o := range rep.Operators {
		if o.Name == name {
			return o.Controller
		}
	}
	t.Fatalf("no operator %s in the report", name)
	return ""
}

func webhookNames(o *rig.Operator) []string {
	var names []string
	for _, w := range o.Webhooks() {
		names = append(names, w.Configuration+"/"+w.Name)
	}
	sort.Strings(names)
	return names
}

// statusTable prints statuses one per line, in order.
func statusTable(s map[string]string) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-55s %s\n", k, s[k])
	}
	return b.String()
}

// deleteAndWait deletes a custom resource and waits until it is gone.
func deleteAndWait(ctx context.Context, t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	require.NoError(t, dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "%s %s/%s gone", gvr.Resource, ns, name)
}
