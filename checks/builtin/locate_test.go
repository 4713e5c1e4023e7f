package builtin_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// helmLabels are the labels a Helm chart gives the widget controller's
// pods: not the profile's app=widget-controller.
var helmLabels = map[string]string{"app.kubernetes.io/name": "widget-operator", "app.kubernetes.io/instance": "widgets"}

// moveController puts the controller, its pod, its Lease and its webhook
// Service in namespace ns, with the pod labels given, as another
// installer would.
func moveController(w *checkstest.World, ns string, labels map[string]string) {
	w.Controller = checkstest.AvailableDeployment(ns, "widgets-widget-operator", labels, "demo/widget-controller:v1.2.3")
	w.ControllerPod = checkstest.ReadyPod(ns, w.ControllerPod.Name, labels, "cpu-node-1")
	w.Lease.Namespace = ns
	w.Slice.Namespace = ns
	w.VWCs[0].Webhooks[0].ClientConfig.Service.Namespace = ns
}

// An operator's controller is found by what it is, wherever an installer
// put it; the profile's namespace and Deployment name are hints.
func TestControllerFoundWhereverInstalled(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(t *testing.T, w *checkstest.World)
		// namespace and foundBy are where and how it must be found.
		namespace, foundBy string
	}{
		{
			name: "its pod template's labels, in another namespace under another name",
			tweak: func(t *testing.T, w *checkstest.World) {
				moveController(w, "widgets", map[string]string{"app": "widget-controller", "app.kubernetes.io/instance": "widgets"})
			},
			namespace: "widgets",
			foundBy:   "its pod template's labels app=widget-controller",
		},
		{
			name: "the Service its webhook calls, where its labels are another installer's",
			tweak: func(t *testing.T, w *checkstest.World) {
				moveController(w, "widgets", helmLabels)
				w.Lease = nil
				w.Services = append(w.Services, &corev1.Service{})
				svc := w.Services[len(w.Services)-1]
				svc.Namespace, svc.Name, svc.Spec.Selector = "widgets", "widget-webhook", helmLabels
			},
			namespace: "widgets",
			foundBy:   "its pods back Service widgets/widget-webhook, which webhook validate.widgets.demo.example.com calls",
		},
		{
			name: "the Lease its pod holds, where neither labels nor Service say",
			tweak: func(t *testing.T, w *checkstest.World) {
				moveController(w, "widgets", helmLabels)
			},
			namespace: "widgets",
			foundBy:   "its pod widget-controller-7c9d-abcde holds Lease widgets/widget-controller-leader",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			tc.tweak(t, w)
			out := w.Serve().Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
			require.Len(t, out.Detections, 1)
			in := out.Detections[0].Install
			require.NotNil(t, in, "the controller was not found")
			assert.Equal(t, tc.namespace, in.Namespace)
			assert.Equal(t, "widgets-widget-operator", in.Deployment)
			assert.Contains(t, in.FoundBy, tc.foundBy)

			// Judged where it was found, as it would be where the
			// profile expects it.
			ready := checkstest.Result(t, out, "controller-ready", "widgets")
			assert.Equal(t, checks.Pass, ready.Status, ready.Reason)
			assert.Contains(t, ready.Reason, "Deployment widgets/widgets-widget-operator available, 1 pod Running and Ready")
			require.NotEmpty(t, ready.Evidence)
			assert.Equal(t, "kubectl get deploy widgets-widget-operator -n widgets -o wide", ready.Evidence[0].Command)
			assert.Contains(t, ready.Evidence[0].Note, "Widget Operator's controller: Deployment widgets/widgets-widget-operator, found by ")
			assert.Contains(t, ready.Evidence[0].Note, "not in demo-system")
			served := checkstest.Result(t, out, "webhooks-served", "widgets")
			assert.Equal(t, checks.Pass, served.Status, served.Reason)
			if w.Lease != nil {
				lease := checkstest.Result(t, out, "controller-lease", "widgets")
				assert.Equal(t, checks.Pass, lease.Status, lease.Reason)
				assert.Contains(t, lease.Reason, "Lease widgets/widget-controller-leader held by controller pod")
			}
		})
	}
}

// Two installs of one operator in two namespaces are two candidates, each
// judged on its own controller: one healthy install meets the
// requirement, and the broken one is named.
func TestTwoInstallsAreTwoCandidates(t *testing.T) {
	w := checkstest.NewWorld(t)
	labels := map[string]string{"app": "widget-controller"}
	broken := checkstest.AvailableDeployment("team-b", "widget-controller", labels, "demo/widget-controller:v1.1.0")
	broken.Status.Conditions[0].Status = corev1.ConditionFalse
	w.Deployments = append(w.Deployments, broken)
	out := w.Serve().Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})

	var names []string
	for _, d := range out.Detections {
		names = append(names, d.Profile.Name)
	}
	// The profile's own namespace first.
	assert.Equal(t, []string{"widgets@demo-system", "widgets@team-b"}, names)
	a := checkstest.Result(t, out, "controller-ready", "widgets@demo-system")
	assert.Equal(t, checks.Pass, a.Status, a.Reason)
	b := checkstest.Result(t, out, "controller-ready", "widgets@team-b")
	assert.Equal(t, checks.Fail, b.Status, b.Reason)
	assert.Contains(t, b.Reason, "Deployment widget-controller: Available is False")

	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	v := checkstest.Verdict(t, checks.Evaluate(reqs, out), "robust_controller")
	assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	assert.Equal(t, "widgets@demo-system", v.Operator)
	assert.Contains(t, v.Conclusion, "Widget Operator in team-b: controller-ready: Deployment widget-controller: Available is False")
}

// An operator installed without webhooks (KubeRay's Helm chart registers
// none) has no webhook to be operational: that leg does not apply, and the
// verdict says so rather than failing it. A profile that requires a
// webhook still fails without it (TestChecksOnFakeCluster).
func TestNoWebhookDoesNotApply(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.VWCs, w.Slice = nil, nil
	yaml := strings.Replace(checkstest.WidgetProfileYAML, "requiredWebhooks: [validate.widgets.demo.example.com]\n", "", 1)
	ps, err := checks.ParseProfiles("widgets.yaml", []byte(yaml))
	require.NoError(t, err)
	out := w.Serve().Run(builtin.Registry(), ps)

	served := checkstest.Result(t, out, "webhooks-served", "widgets")
	assert.Equal(t, checks.Skip, served.Status)
	assert.Equal(t, "Widget Operator registers no admission webhook (no configuration named widget-webhook; none served from namespace demo-system, where its controller runs, names demo.example.com): the webhook leg does not apply, there is no webhook to be operational", served.Reason)
	require.NotEmpty(t, served.Evidence)
	assert.Equal(t, "kubectl get validatingwebhookconfigurations,mutatingwebhookconfigurations", served.Evidence[0].Command)
	// Without --probe too: nothing would answer a probe.
	answer := checkstest.Result(t, out, "webhooks-answer", "widgets")
	assert.Equal(t, checks.Skip, answer.Status)
	assert.Contains(t, answer.Reason, "there is no webhook to answer")

	reqs, err := checks.Catalog(builtin.Registry())
	require.NoError(t, err)
	v := checkstest.Verdict(t, checks.Evaluate(reqs, out), "robust_controller")
	assert.Equal(t, checks.Implemented, v.Status, v.Conclusion)
	assert.Contains(t, v.Conclusion, "not applicable: webhooks-served: Widget Operator registers no admission webhook")
	assert.NotContains(t, v.Conclusion, "webhooks-answer: run with --probe", "a probe of no webhook is not a probe left unrun")
}

// A search that found nothing because a read was refused cannot say the
// controller is absent: Error, never Fail. One that found the controller
// anyway judges it, and says what it could not look at.
func TestRefusedSearchIsAnError(t *testing.T) {
	t.Run("nothing found", func(t *testing.T) {
		w := checkstest.NewWorld(t)
		moveController(w, "widgets", helmLabels)
		f := w.Serve()
		f.Kube.PrependReactor("list", "leases", checkstest.Forbidden("coordination.k8s.io", "leases"))
		out := f.Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
		r := checkstest.Result(t, out, "controller-ready", "widgets")
		assert.Equal(t, checks.Error, r.Status, r.Reason)
		assert.Contains(t, r.Reason, "cannot look for Widget Operator's controller: list leases.v1.coordination.k8s.io with fields metadata.name=widget-controller-leader: leases.coordination.k8s.io is forbidden")
	})
	t.Run("found by its labels", func(t *testing.T) {
		w := checkstest.NewWorld(t)
		f := w.Serve()
		f.Kube.PrependReactor("list", "services", checkstest.Forbidden("", "services"))
		out := f.Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
		r := checkstest.Result(t, out, "controller-ready", "widgets")
		assert.Equal(t, checks.Pass, r.Status, r.Reason)
		assert.Contains(t, strings.Join(r.Details, "\n"), "not looked at, which may hide another install: list services.v1 in namespace demo-system: services is forbidden")
	})
}
