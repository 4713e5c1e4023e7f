package builtin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Cases the recorded scenarios lack, on a fake cluster built in Go: one
// thing broken per row.
func TestChecksOnFakeCluster(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(t *testing.T, w *checkstest.World)
		want  []expect
	}{
		{
			name: "healthy",
			want: []expect{
				{"crds-established", "widgets", checks.Pass, "1 CRDs of demo.example.com established"},
				{"controller-ready", "widgets", checks.Pass, "Deployment demo-system/widget-controller available, 1 pod Running and Ready"},
				{"webhooks-served", "widgets", checks.Pass, "1 webhook in 1 configuration registered with valid CA bundles"},
				{"crs-reconciled", "widgets", checks.Pass, "1 custom resource reconciled and Ready: Widget apps/w1"},
				{"gpu-allocatable", "", checks.Pass, "1 GPU node Ready with accelerators allocatable"},
			},
		},

		// crds-established
		{
			name: "CRD not established",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.CRDs[0].Status.Conditions[1] = apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
					Status: apiextensionsv1.ConditionFalse, Reason: "Installing", Message: "the initial names have not been accepted"}
			},
			want: []expect{{"crds-established", "widgets", checks.Fail, "1 of 1 CRDs not established: widgets.demo.example.com: Established is False Installing"}},
		},
		{
			name: "CRD names not accepted",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.CRDs[0].Status.Conditions[0].Status = apiextensionsv1.ConditionFalse
				w.CRDs[0].Status.Conditions[0].Reason = "NameConflict"
			},
			want: []expect{{"crds-established", "widgets", checks.Fail, "NamesAccepted is False NameConflict"}},
		},
		{
			name:  "CRD without conditions",
			tweak: func(t *testing.T, w *checkstest.World) { w.CRDs[0].Status.Conditions = nil },
			want:  []expect{{"crds-established", "widgets", checks.Fail, "Established is absent"}},
		},
		{
			name: "CRD of the group not named by the profile is judged too",
			tweak: func(t *testing.T, w *checkstest.World) {
				gadgets := checkstest.EstablishedCRD("gadgets", "Gadget")
				gadgets.Status.Conditions = nil
				w.CRDs = append(w.CRDs, gadgets)
			},
			// The count in the reason is not asserted: it counts problems, not
			// CRDs (see TestCRDsEstablishedCountsCRDs).
			want: []expect{{"crds-established", "widgets", checks.Fail, "CRDs not established: gadgets.demo.example.com: Established is absent"}},
		},
		{
			// A shared group (kubeflow.org) must not make a profile look
			// installed: a profile that names its CRDs is found by them.
			name: "named CRD missing, another CRD of its group left: not installed",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.CRDs = slices.DeleteFunc(w.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == checkstest.WidgetCRD })
				w.CRDs = append(w.CRDs, checkstest.EstablishedCRD("gadgets", "Gadget"))
			},
			want: []expect{
				{"crds-established", "widgets", checks.Skip, "serves none of its CRDs"},
				{"controller-ready", "widgets", checks.Skip, "serves none of its CRDs"},
				{"webhooks-served", "widgets", checks.Skip, "serves none of its CRDs"},
				{"crs-reconciled", "widgets", checks.Skip, "serves none of its CRDs"},
				{"controller-lease", "widgets", checks.Skip, "serves none of its CRDs"},
				{"crs-events", "widgets", checks.Skip, "serves none of its CRDs"},
			},
		},

		// controller-ready
		{
			name: "controller pod Ready=Unknown",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.ControllerPod.Status.Conditions[1].Status = corev1.ConditionUnknown
			},
			want: []expect{{"controller-ready", "widgets", checks.Fail, "pod widget-controller-7c9d-abcde is not Ready"}},
		},
		{
			name:  "controller pod without a Ready condition",
			tweak: func(t *testing.T, w *checkstest.World) { w.ControllerPod.Status.Conditions = nil },
			want:  []expect{{"controller-ready", "widgets", checks.Fail, "is not Ready"}},
		},
		{
			name:  "controller pod Pending",
			tweak: func(t *testing.T, w *checkstest.World) { w.ControllerPod.Status.Phase = corev1.PodPending },
			want:  []expect{{"controller-ready", "widgets", checks.Fail, "pod widget-controller-7c9d-abcde is Pending"}},
		},
		{
			name: "controller restarted in the last hour",
			tweak: func(t *testing.T, w *checkstest.World) {
				cs := &w.ControllerPod.Status.ContainerStatuses[0]
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
					FinishedAt: metav1.NewTime(checkstest.JudgeAt.Add(-20 * time.Minute))}
			},
			want: []expect{{"controller-ready", "widgets", checks.Warn, "container manager restarted 3 times, last 20m0s ago (OOMKilled, exit code 137)"}},
		},
		{
			name: "controller restarted yesterday",
			tweak: func(t *testing.T, w *checkstest.World) {
				cs := &w.ControllerPod.Status.ContainerStatuses[0]
				cs.RestartCount = 3
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					FinishedAt: metav1.NewTime(checkstest.JudgeAt.Add(-25 * time.Hour))}
			},
			want: []expect{{"controller-ready", "widgets", checks.Pass, "Running and Ready"}},
		},
		{
			name: "controller crash-looping",
			tweak: func(t *testing.T, w *checkstest.World) {
				cs := &w.ControllerPod.Status.ContainerStatuses[0]
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}
			},
			want: []expect{{"controller-ready", "widgets", checks.Fail, "container manager is waiting: CrashLoopBackOff back-off 40s"}},
		},
		{
			name: "controller Deployment not Available",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Controller.Status.Conditions[0].Status = corev1.ConditionFalse
				w.Controller.Status.Conditions[0].Reason = "MinimumReplicasUnavailable"
			},
			want: []expect{{"controller-ready", "widgets", checks.Fail, "Deployment widget-controller: Available is False MinimumReplicasUnavailable"}},
		},
		{
			name: "controller Deployment without conditions",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Controller.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1}
			},
			want: []expect{{"controller-ready", "widgets", checks.Fail, "Available is absent (1/2 replicas ready)"}},
		},
		{
			name:  "controller Deployment missing",
			tweak: func(t *testing.T, w *checkstest.World) { w.Controller = nil },
			want: []expect{
				{"controller-ready", "widgets", checks.Fail, "no controller Deployment of Widget Operator found: no Deployment in any namespace has a pod template labelled app=widget-controller"},
				{"controller-lease", "widgets", checks.Fail, "no controller of Widget Operator was found to hold Lease widget-controller-leader"},
			},
		},
		{
			// The profile's name is a hint: a Helm release names its
			// Deployment after itself.
			name: "controller Deployment of another name",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Controller.Name = "widget-controller-canary"
			},
			want: []expect{{"controller-ready", "widgets", checks.Pass, "Deployment demo-system/widget-controller-canary available"}},
		},
		{
			name:  "no controller pod",
			tweak: func(t *testing.T, w *checkstest.World) { w.ControllerPod = nil },
			want: []expect{
				{"controller-ready", "widgets", checks.Fail, "no controller pod in namespace demo-system with labels app=widget-controller"},
				{"controller-lease", "widgets", checks.Fail, "and no controller pod runs in namespace demo-system with labels app=widget-controller"},
			},
		},

		// webhooks-served
		{
			name:  "caBundle empty",
			tweak: func(t *testing.T, w *checkstest.World) { w.VWCs[0].Webhooks[0].ClientConfig.CABundle = nil },
			want: []expect{{"webhooks-served", "widgets", checks.Fail,
				"validating webhook validate.widgets.demo.example.com (configuration widget-webhook): caBundle is empty"}},
		},
		{
			name:  "caBundle blank",
			tweak: func(t *testing.T, w *checkstest.World) { w.VWCs[0].Webhooks[0].ClientConfig.CABundle = []byte(" \n") },
			want:  []expect{{"webhooks-served", "widgets", checks.Fail, "caBundle is empty"}},
		},
		{
			name: "caBundle not PEM",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].ClientConfig.CABundle = []byte("not a certificate")
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, "caBundle holds no PEM certificate"}},
		},
		{
			name: "caBundle certificate that does not parse",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].ClientConfig.CABundle = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, "caBundle holds a certificate that does not parse"}},
		},
		{
			name: "caBundle expired",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].ClientConfig.CABundle = checkstest.CAPEM(t, "old-ca", checkstest.JudgeAt.Add(-time.Hour))
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, `CA "old-ca" expired at 2026-06-01T11:00:00Z`}},
		},
		{
			name: "caBundle with one expired CA among good ones",
			tweak: func(t *testing.T, w *checkstest.World) {
				cc := &w.VWCs[0].Webhooks[0].ClientConfig
				cc.CABundle = append(append([]byte{}, cc.CABundle...), checkstest.CAPEM(t, "old-ca", checkstest.JudgeAt.AddDate(0, -1, 0))...)
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, `CA "old-ca" expired`}},
		},
		{
			name: "caBundle expiring within 30 days",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].ClientConfig.CABundle = checkstest.CAPEM(t, "soon-ca", checkstest.JudgeAt.Add(10*24*time.Hour))
			},
			want: []expect{{"webhooks-served", "widgets", checks.Warn, `CA "soon-ca" expires at 2026-06-11T12:00:00Z, in 240h0m0s`}},
		},
		{
			name: "caBundle expiring in 31 days",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].ClientConfig.CABundle = checkstest.CAPEM(t, "ok-ca", checkstest.JudgeAt.Add(31*24*time.Hour))
			},
			want: []expect{{"webhooks-served", "widgets", checks.Pass, "valid CA bundles"}},
		},
		{
			name: "webhook reached by URL",
			tweak: func(t *testing.T, w *checkstest.World) {
				cc := &w.VWCs[0].Webhooks[0].ClientConfig
				cc.Service, cc.URL = nil, checkstest.Ptr("https://widgets.example.com/validate")
			},
			want: []expect{{"webhooks-served", "widgets", checks.Warn, "is reached by URL https://widgets.example.com/validate"}},
		},
		{
			name: "webhook endpoint not ready",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Slice.Endpoints[0].Conditions.Ready = checkstest.Ptr(false)
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, "Service demo-system/widget-webhook has no ready endpoint"}},
		},
		{
			name: "webhook endpoint without a ready condition counts as ready",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Slice.Endpoints[0].Conditions.Ready = nil
			},
			want: []expect{{"webhooks-served", "widgets", checks.Pass, "their Services have ready endpoints"}},
		},
		{
			name:  "webhook Service without EndpointSlice",
			tweak: func(t *testing.T, w *checkstest.World) { w.Slice = nil },
			want:  []expect{{"webhooks-served", "widgets", checks.Fail, "has no ready endpoint"}},
		},
		{
			name:  "named webhook configuration not registered",
			tweak: func(t *testing.T, w *checkstest.World) { w.VWCs = nil },
			want: []expect{{"webhooks-served", "widgets", checks.Fail,
				"webhook validate.widgets.demo.example.com is not registered"}},
		},
		{
			// An installer that names the configuration otherwise (a
			// kustomize namePrefix, a Helm release name) installs the same
			// operator: its webhook is found by its rules and its Service.
			name:  "configuration named by another installer",
			tweak: func(t *testing.T, w *checkstest.World) { w.VWCs[0].Name = "widgets-validating-webhook-configuration" },
			want:  []expect{{"webhooks-served", "widgets", checks.Pass, "1 webhook in 1 configuration registered with valid CA bundles"}},
		},
		{
			// The required webhook is gone, though another of the
			// operator's is there.
			name: "required webhook missing",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.VWCs[0].Webhooks[0].Name = "other.widgets.demo.example.com"
			},
			want: []expect{{"webhooks-served", "widgets", checks.Fail, "webhook validate.widgets.demo.example.com is not registered"}},
		},
		{
			// Another component (as Kueue does for TrainJobs) validates
			// the operator's kinds from a Service of its own, which has no
			// endpoint: that is the other component's fault, listed, not
			// the operator's.
			name: "another component's webhook on its kinds",
			tweak: func(t *testing.T, w *checkstest.World) {
				queue := checkstest.ServiceWebhook("vwidget.queue.example.org", checkstest.CAPEM(t, "queue-ca", checkstest.JudgeAt.AddDate(1, 0, 0)))
				queue.ClientConfig.Service.Namespace, queue.ClientConfig.Service.Name = "queue-system", "queue-webhook-service"
				pods := checkstest.ServiceWebhook("vpod.queue.example.org", nil)
				pods.ClientConfig.Service = queue.ClientConfig.Service
				pods.Rules[0].APIGroups, pods.Rules[0].Resources = []string{""}, []string{"pods"}
				w.VWCs = append(w.VWCs, &admissionregistrationv1.ValidatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: "queue-validating-webhook-configuration"},
					Webhooks:   []admissionregistrationv1.ValidatingWebhook{queue, pods},
				})
			},
			want: []expect{{"webhooks-served", "widgets", checks.Pass,
				"1 webhook in 1 configuration registered with valid CA bundles; their Services have ready endpoints (registered and served, not exercised) (1 webhook of other components on its kinds not judged)"}},
		},
		{
			name: "webhook configuration found by its rules",
			tweak: func(t *testing.T, w *checkstest.World) {
				vw := checkstest.ServiceWebhook("default.widgets.demo.example.com", checkstest.CAPEM(t, "widget-ca", checkstest.JudgeAt.AddDate(1, 0, 0)))
				w.MWCs = []*admissionregistrationv1.MutatingWebhookConfiguration{{
					ObjectMeta: metav1.ObjectMeta{Name: "widget-defaulter"},
					Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: vw.Name, ClientConfig: vw.ClientConfig, Rules: vw.Rules,
						SideEffects: vw.SideEffects, AdmissionReviewVersions: vw.AdmissionReviewVersions}},
				}}
				// A configuration for someone else is not the operator's.
				other := checkstest.ServiceWebhook("other.example.org", nil)
				other.Rules[0].APIGroups = []string{"example.org"}
				w.VWCs = append(w.VWCs, &admissionregistrationv1.ValidatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: "unrelated"},
					Webhooks:   []admissionregistrationv1.ValidatingWebhook{other},
				})
			},
			want: []expect{{"webhooks-served", "widgets", checks.Pass, "2 webhooks in 2 configurations registered"}},
		},

		// crs-reconciled
		{
			name: "custom resource Ready=Unknown",
			tweak: func(t *testing.T, w *checkstest.World) {
				require.NoError(t, unstructured.SetNestedSlice(w.Widgets[0].Object, []any{
					map[string]any{"type": "Ready", "status": "Unknown", "reason": "Reconciling"},
				}, "status", "conditions"))
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "1 of 1 custom resource not reconciled: Widget apps/w1: Ready=Unknown Reconciling"}},
		},
		{
			name: "custom resource without status",
			tweak: func(t *testing.T, w *checkstest.World) {
				unstructured.RemoveNestedField(w.Widgets[0].Object, "status")
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "Widget apps/w1: Ready absent"}},
		},
		{
			name: "custom resource observedGeneration behind",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Widgets[0].SetGeneration(3)
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "observedGeneration 2 behind generation 3"}},
		},
		{
			name:  "no custom resource",
			tweak: func(t *testing.T, w *checkstest.World) { w.Widgets = nil },
			want:  []expect{{"crs-reconciled", "widgets", checks.Fail, "no widgets.demo.example.com exists"}},
		},
		{
			name: "child Deployment not owned by the resource",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.ChildDeploy.OwnerReferences = checkstest.Owner("Widget", "w0", "uid-someone-else")
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "owns no Deployment, owns no Pod"}},
		},
		{
			name: "child Deployment not Available",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.ChildDeploy.Status.Conditions[0].Status = corev1.ConditionFalse
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "Deployment w1-server Available=False"}},
		},
		{
			name:  "child Service missing",
			tweak: func(t *testing.T, w *checkstest.World) { w.ChildService = nil },
			want:  []expect{{"crs-reconciled", "widgets", checks.Fail, "owns no Service"}},
		},
		{
			name: "child pod not Ready",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.ChildPod.Status.Conditions[1].Status = corev1.ConditionUnknown
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "none of its 1 pod(s) Running and Ready"}},
		},
		{
			name: "child pod labelled for another resource",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.ChildPod.Labels = map[string]string{checkstest.WidgetLabel: "w2"}
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "owns no Pod"}},
		},
		{
			name: "unhealthy resources are reported, healthy ones counted",
			tweak: func(t *testing.T, w *checkstest.World) {
				w2 := w.Widgets[0].DeepCopy()
				w2.SetName("w2")
				w2.SetUID("uid-w2")
				w.Widgets = append(w.Widgets, w2)
			},
			want: []expect{{"crs-reconciled", "widgets", checks.Fail, "1 of 2 custom resources not reconciled: Widget apps/w2: owns no Deployment"}},
		},

		// gpu-allocatable
		{
			name: "GPU node Ready=Unknown",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Nodes[1].Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
			},
			want: []expect{{"gpu-allocatable", "", checks.Fail, "node gpu-node-1 is not Ready (Ready=Unknown: NodeStatusUnknown Kubelet stopped posting node status.)"}},
		},
		{
			name:  "GPU node without a Ready condition",
			tweak: func(t *testing.T, w *checkstest.World) { w.Nodes[1].Status.Conditions = nil },
			want:  []expect{{"gpu-allocatable", "", checks.Fail, "node gpu-node-1 is not Ready (Ready=Unknown: no Ready condition)"}},
		},
		{
			name: "GPU capacity but nothing allocatable",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Nodes[1].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
			},
			want: []expect{{"gpu-allocatable", "", checks.Fail, "node gpu-node-1 has nvidia.com/gpu allocatable 0 of capacity 8"}},
		},
		{
			name: "GPU capacity, allocatable not advertised",
			tweak: func(t *testing.T, w *checkstest.World) {
				delete(w.Nodes[1].Status.Allocatable, "nvidia.com/gpu")
			},
			want: []expect{{"gpu-allocatable", "", checks.Fail, "allocatable 0 of capacity 8"}},
		},
		{
			name: "MIG, AMD, Intel and Gaudi resources are accelerators",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Nodes = append(w.Nodes,
					checkstest.Node("mig-node-1", corev1.ConditionTrue, corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("7")}),
					checkstest.Node("amd-node-1", corev1.ConditionTrue, corev1.ResourceList{"amd.com/gpu": resource.MustParse("4")}),
					checkstest.Node("intel-node-1", corev1.ConditionTrue, corev1.ResourceList{"gpu.intel.com/i915": resource.MustParse("1")}),
					checkstest.Node("gaudi-node-1", corev1.ConditionTrue, corev1.ResourceList{"habana.ai/gaudi": resource.MustParse("8")}),
				)
			},
			want: []expect{
				{"gpu-allocatable", "", checks.Pass, "5 GPU nodes Ready with accelerators allocatable"},
				// They run no device plugin, unlike gpu-node-1.
				{"gpu-device-plugin", "", checks.Fail, "node amd-node-1 advertises amd.com/gpu, but no device plugin DaemonSet for amd.com/gpu exists"},
				// ...nor a labeller.
				{"accelerator-drivers", "", checks.Fail, "no driver version reported by 3 accelerator nodes: amd-node-1 (AMD), intel-node-1 (Intel), mig-node-1 (NVIDIA)"},
				// The MIG node's partitions are resources of their own.
				{"gpu-sharing", "", checks.Pass, "MIG partitions as resources (nvidia.com/mig-1g.10gb) on mig-node-1"},
				// Only gpu-node-1 runs an exporter.
				{"accelerator-metrics", "", checks.Fail, "4 of 5 accelerator nodes without per-accelerator utilization and memory: node amd-node-1: no accelerator metrics exporter pod runs on it"},
			},
		},
		{
			name: "MIG node with nothing allocatable fails",
			tweak: func(t *testing.T, w *checkstest.World) {
				n := checkstest.Node("mig-node-1", corev1.ConditionTrue, corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("7")})
				n.Status.Allocatable["nvidia.com/mig-1g.10gb"] = resource.MustParse("0")
				w.Nodes = append(w.Nodes, n)
			},
			want: []expect{
				{"gpu-allocatable", "", checks.Fail, "node mig-node-1 has nvidia.com/mig-1g.10gb allocatable 0 of capacity 7"},
				{"gpu-device-plugin", "", checks.Fail, "node mig-node-1 advertises nvidia.com/mig-1g.10gb, but no pod of device plugin DaemonSet kube-system/nvidia-device-plugin-daemonset runs on it"},
				{"accelerator-drivers", "", checks.Fail, "no driver version reported by 1 accelerator node: mig-node-1 (NVIDIA)"},
				{"accelerator-metrics", "", checks.Fail, "1 of 2 accelerator nodes without per-accelerator utilization and memory: node mig-node-1: no accelerator metrics exporter pod runs on it"},
			},
		},
		{
			name: "resources that are not accelerators",
			tweak: func(t *testing.T, w *checkstest.World) {
				w.Nodes = []*corev1.Node{
					checkstest.Node("cpu-node-1", corev1.ConditionTrue, nil),
					checkstest.Node("fpga-node-1", corev1.ConditionTrue, corev1.ResourceList{"xilinx.com/fpga": resource.MustParse("1"), "example.com/gpu": resource.MustParse("1")}),
				}
			},
			want: []expect{
				{"gpu-allocatable", "", checks.Skip, "none of 2 nodes advertises an accelerator resource"},
				{"gpu-device-plugin", "", checks.Skip, "none of 2 nodes advertises an accelerator resource or is labelled nvidia.com/gpu.present=true"},
				// The node groups' nodes are gone: nothing tells what they add.
				{"accelerator-node-groups", "", checks.Warn, "2 groups cannot be told (no node now, nothing in the spec): cpu-pool, gpu-pool"},
				{"accelerator-scale-ups", "", checks.Skip, "no accelerator node added on record"},
				{"device-access-mediated", "", checks.Skip, "none of 2 nodes has an accelerator"},
				{"accelerator-drivers", "", checks.Skip, "none of 2 nodes has an accelerator"},
				{"gpu-sharing", "", checks.Skip, "none of 2 nodes has an accelerator"},
				{"vgpu-exposed", "", checks.Skip, "none of 2 nodes has an accelerator"},
				{"accelerator-metrics", "", checks.Skip, "none of 2 nodes has an accelerator"},
			},
		},
		{
			name:  "no node at all",
			tweak: func(t *testing.T, w *checkstest.World) { w.Nodes = nil },
			want: []expect{
				{"gpu-allocatable", "", checks.Skip, "none of 0 nodes advertises"},
				{"gpu-device-plugin", "", checks.Skip, "none of 0 nodes advertises"},
				{"accelerator-node-groups", "", checks.Warn, "2 groups cannot be told"},
				{"accelerator-scale-ups", "", checks.Skip, "no accelerator node added on record"},
				{"device-access-mediated", "", checks.Skip, "none of 0 nodes has an accelerator"},
				{"accelerator-drivers", "", checks.Skip, "none of 0 nodes has an accelerator"},
				{"gpu-sharing", "", checks.Skip, "none of 0 nodes has an accelerator"},
				{"vgpu-exposed", "", checks.Skip, "none of 0 nodes has an accelerator"},
				{"accelerator-metrics", "", checks.Skip, "none of 0 nodes has an accelerator"},
				{"sandbox-runtimes", "", checks.Warn, "RuntimeClass gvisor (gVisor, handler runsc) admits no Ready, schedulable node"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := checkstest.NewWorld(t)
			if tc.tweak != nil {
				tc.tweak(t, w)
			}
			widgets := checkstest.WidgetProfile(t)
			fc := w.Serve()
			out := fc.Run(builtin.Registry(), []*checks.Profile{widgets})
			require.Len(t, out.Results, runsFor(widgets), "each cluster-wide check once, each check of a requirement the profile may carry once")
			assertReadsWhatTheCacheKeeps(t, out, fc.RunOn(fc.Cache().WholeObjects(), builtin.Registry(), []*checks.Profile{widgets}))
			for _, want := range tc.want {
				r := checkstest.Result(t, out, want.check, want.operator)
				assert.Equal(t, want.status, r.Status, "%s/%s: %s", want.check, want.operator, r.Reason)
				assert.Contains(t, r.Reason, want.reason, "%s/%s", want.check, want.operator)
			}
			// A row breaks one thing: every check it does not name still
			// passes, so each row shows what it meant to.
			named := map[string]bool{}
			for _, want := range tc.want {
				named[want.check] = true
			}
			for _, r := range out.Results {
				if !named[r.Check.ID] && !r.Check.Probe {
					assert.Equal(t, checks.Pass, r.Status, "%s/%s: %s", r.Check.ID, r.Operator, r.Reason)
				}
			}
		})
	}
}

func TestGPUAllocatableDetailsOnFakeCluster(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.Nodes = append(w.Nodes, checkstest.Node("mig-node-1", corev1.ConditionTrue, corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("7")}))
	out := w.Serve().Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
	r := checkstest.Result(t, out, "gpu-allocatable", "")
	require.Equal(t, checks.Pass, r.Status, r.Reason)

	// What is requested counts non-terminated pods on that node only, init
	// containers and limit-only requests as the scheduler does.
	require.NotNil(t, r.Table)
	assert.Equal(t, [][]string{
		{"gpu-node-1", "True", "nvidia.com/gpu", "8", "8", "4"},
		{"mig-node-1", "True", "nvidia.com/mig-1g.10gb", "7", "7", "0"},
	}, r.Table.Rows)

	// Custom columns are printed client side from the objects, so even a
	// client that cannot render Tables shows them.
	var cols *checks.Step
	for i, s := range r.Evidence {
		if strings.Contains(s.Command, "custom-columns") {
			cols = &r.Evidence[i]
		}
	}
	require.NotNil(t, cols)
	assert.Equal(t, `kubectl get nodes gpu-node-1 mig-node-1 -o 'custom-columns=NAME:.metadata.name,`+
		`GPU_CAPACITY:.status.capacity.nvidia\.com/gpu,GPU_ALLOCATABLE:.status.allocatable.nvidia\.com/gpu,`+
		`MIG-1G.10GB_CAPACITY:.status.capacity.nvidia\.com/mig-1g\.10gb,MIG-1G.10GB_ALLOCATABLE:.status.allocatable.nvidia\.com/mig-1g\.10gb'`,
		cols.Command)
	assert.Equal(t, ""+
		"NAME         GPU_CAPACITY   GPU_ALLOCATABLE   MIG-1G.10GB_CAPACITY   MIG-1G.10GB_ALLOCATABLE\n"+
		"gpu-node-1   8              8                 <none>                 <none>\n"+
		"mig-node-1   <none>         <none>            7                      7\n", cols.Output)

	// Evidence a fake cannot render says so; it is never dropped.
	for _, s := range r.Evidence {
		assert.False(t, s.CapturedAt.IsZero(), s.Command)
		if s != *cols {
			assert.Contains(t, s.Output, "cannot render server-side Tables", s.Command)
		}
	}
}

// A refused read is Error, never Pass, and says which verb on which
// resource was refused.
func TestForbiddenIsError(t *testing.T) {
	type refusal struct {
		client string // kube, ext or dyn
		group  string
		res    string
	}
	tests := []struct {
		name    string
		refuse  refusal
		errored []expect
	}{
		{
			name:   "list nodes",
			refuse: refusal{"kube", "", "nodes"},
			errored: []expect{
				{"gpu-allocatable", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"gpu-device-plugin", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"accelerator-node-groups", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"accelerator-scale-ups", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"device-access-mediated", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"accelerator-drivers", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"gpu-sharing", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"vgpu-exposed", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"sandbox-runtimes", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"accelerator-metrics", "", checks.Error, "list nodes.v1: nodes is forbidden"},
				{"network-devices", "", checks.Error, "list nodes.v1: nodes is forbidden"},
			},
		},
		{
			name:   "list resourceslices",
			refuse: refusal{"kube", "resource.k8s.io", "resourceslices"},
			errored: []expect{
				{"dra-apis", "", checks.Error, "list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"dra-devices", "", checks.Error, "list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"dra-claims-allocated", "", checks.Error, "list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"device-access-mediated", "", checks.Error, "the nodes DRA drivers publish accelerators for: list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"accelerator-drivers", "", checks.Error, "the nodes DRA drivers publish accelerators for: list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"gpu-sharing", "", checks.Error, "the nodes DRA drivers publish accelerators for: list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"vgpu-exposed", "", checks.Error, "the nodes DRA drivers publish accelerators for: list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"accelerator-metrics", "", checks.Error, "the nodes DRA drivers publish accelerators for: list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"network-devices", "", checks.Error, "list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
				{"multi-network", "", checks.Error, "list resourceslices.v1.resource.k8s.io: resourceslices.resource.k8s.io is forbidden"},
			},
		},
		{
			name:   "list resourceclaims",
			refuse: refusal{"kube", "resource.k8s.io", "resourceclaims"},
			errored: []expect{
				{"dra-apis", "", checks.Error, "list resourceclaims.v1.resource.k8s.io: resourceclaims.resource.k8s.io is forbidden"},
				{"dra-claims-allocated", "", checks.Error, "list resourceclaims.v1.resource.k8s.io: resourceclaims.resource.k8s.io is forbidden"},
			},
		},
		{
			name:   "list pods",
			refuse: refusal{"kube", "", "pods"},
			errored: []expect{
				{"controller-ready", "widgets", checks.Error, "list pods.v1 in namespace demo-system with labels app=widget-controller: pods is forbidden"},
				{"crs-reconciled", "widgets", checks.Error, "list pods.v1 in namespace apps with labels demo.example.com/widget: pods is forbidden"},
				{"gpu-allocatable", "", checks.Error, "pods on node gpu-node-1: list pods.v1 with fields spec.nodeName=gpu-node-1: pods is forbidden"},
				{"controller-lease", "widgets", checks.Error, "list pods.v1 in namespace demo-system with labels app=widget-controller: pods is forbidden"},
				{"gpu-device-plugin", "", checks.Error, "list pods.v1 in namespace kube-system with labels name=nvidia-device-plugin-ds: pods is forbidden"},
				{"device-access-mediated", "", checks.Error, "pods on node gpu-node-1: list pods.v1 with fields spec.nodeName=gpu-node-1: pods is forbidden"},
				{"accelerator-metrics", "", checks.Error, "pods on node gpu-node-1: list pods.v1 with fields spec.nodeName=gpu-node-1: pods is forbidden"},
			},
		},
		{
			name:   "list deployments",
			refuse: refusal{"kube", "apps", "deployments"},
			errored: []expect{
				{"controller-ready", "widgets", checks.Error, "cannot look for Widget Operator's controller: list deployments.v1.apps: deployments.apps is forbidden"},
				{"controller-lease", "widgets", checks.Error, "cannot look for Widget Operator's controller: list deployments.v1.apps: deployments.apps is forbidden"},
				{"crs-reconciled", "widgets", checks.Error, "deployments.apps is forbidden"},
				{"hpas-active", "", checks.Error, "list deployments.v1.apps in namespace ml"},
				{"inference-pools-ready", "", checks.Error, "list deployments.v1.apps in namespace ml"},
				{"disaggregated-serving", "", checks.Error, "list deployments.v1.apps: deployments.apps is forbidden"},
			},
		},
		{
			name:   "list replicasets",
			refuse: refusal{"kube", "apps", "replicasets"},
			errored: []expect{
				{"crs-reconciled", "widgets", checks.Error, "list replicasets.v1.apps in namespace apps with labels demo.example.com/widget: replicasets.apps is forbidden"},
			},
		},
		{
			name:   "list services",
			refuse: refusal{"kube", "", "services"},
			errored: []expect{
				{"crs-reconciled", "widgets", checks.Error, "list services.v1 in namespace apps with labels demo.example.com/widget: services is forbidden"},
				{"monitoring-system", "", checks.Error, "list services.v1: services is forbidden"},
				{"monitoring-targets", "", checks.Error, "list services.v1: services is forbidden"},
				{"inference-pools-ready", "", checks.Error, "list services.v1: services is forbidden"},
				{"disaggregated-serving", "", checks.Error, "list services.v1: services is forbidden"},
			},
		},
		{
			name:   "list validatingwebhookconfigurations",
			refuse: refusal{"kube", "admissionregistration.k8s.io", "validatingwebhookconfigurations"},
			errored: []expect{
				{"webhooks-served", "widgets", checks.Error, "list validatingwebhookconfigurations.v1.admissionregistration.k8s.io: validatingwebhookconfigurations.admissionregistration.k8s.io is forbidden"},
			},
		},
		{
			name:   "list mutatingwebhookconfigurations",
			refuse: refusal{"kube", "admissionregistration.k8s.io", "mutatingwebhookconfigurations"},
			errored: []expect{
				{"webhooks-served", "widgets", checks.Error, "list mutatingwebhookconfigurations.v1.admissionregistration.k8s.io"},
			},
		},
		{
			name:   "list endpointslices",
			refuse: refusal{"kube", "discovery.k8s.io", "endpointslices"},
			errored: []expect{
				{"webhooks-served", "widgets", checks.Error, "list endpointslices.v1.discovery.k8s.io in namespace demo-system with labels kubernetes.io/service-name=widget-webhook: endpointslices.discovery.k8s.io is forbidden"},
				{"inference-pools-ready", "", checks.Error, "list endpointslices.v1.discovery.k8s.io in namespace ml with labels kubernetes.io/service-name=llama-epp: endpointslices.discovery.k8s.io is forbidden"},
			},
		},
		{
			name:   "list leases",
			refuse: refusal{"kube", "coordination.k8s.io", "leases"},
			errored: []expect{
				{"controller-lease", "widgets", checks.Error, "list leases.v1.coordination.k8s.io in namespace demo-system: leases.coordination.k8s.io is forbidden: User \"auditor\" cannot list resource \"leases\""},
			},
		},
		{
			name:   "list events",
			refuse: refusal{"kube", "", "events"},
			errored: []expect{
				{"crs-events", "widgets", checks.Error, "list events.v1 with fields type=Warning: events is forbidden: User \"auditor\" cannot list resource \"events\""},
				{"accelerator-scale-ups", "", checks.Error, "list events.v1 with fields reason=TriggeredScaleUp: events is forbidden"},
			},
		},
		{
			name:   "list daemonsets",
			refuse: refusal{"kube", "apps", "daemonsets"},
			errored: []expect{
				{"gpu-device-plugin", "", checks.Error, "list daemonsets.v1.apps: daemonsets.apps is forbidden: User \"auditor\" cannot list resource \"daemonsets\""},
				{"accelerator-metrics", "", checks.Error, "list daemonsets.v1.apps: daemonsets.apps is forbidden"},
			},
		},
		{
			name:   "list the custom resources",
			refuse: refusal{"dyn", checkstest.WidgetGroup, "widgets"},
			errored: []expect{
				{"crs-reconciled", "widgets", checks.Error, "list widgets.v1.demo.example.com: widgets.demo.example.com is forbidden"},
			},
		},
		{
			name:   "list inferencepools",
			refuse: refusal{"dyn", "inference.networking.k8s.io", "inferencepools"},
			errored: []expect{
				{"inference-pools-ready", "", checks.Error, "list inferencepools.v1.inference.networking.k8s.io: inferencepools.inference.networking.k8s.io is forbidden"},
				{"inference-routes-accepted", "", checks.Error, "inferencepools.inference.networking.k8s.io is forbidden"},
				{"disaggregated-serving", "", checks.Error, "inferencepools.inference.networking.k8s.io is forbidden"},
			},
		},
		{
			name:   "list network-attachment-definitions",
			refuse: refusal{"dyn", "k8s.cni.cncf.io", "network-attachment-definitions"},
			errored: []expect{
				{"multi-network", "", checks.Error, "network-attachment-definitions.k8s.cni.cncf.io is forbidden"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := checkstest.NewWorld(t).Serve()
			react := checkstest.Forbidden(tc.refuse.group, tc.refuse.res)
			switch tc.refuse.client {
			case "kube":
				f.Kube.PrependReactor("list", tc.refuse.res, react)
			case "ext":
				f.Ext.PrependReactor("list", tc.refuse.res, react)
			case "dyn":
				f.Dyn.PrependReactor("list", tc.refuse.res, react)
			}
			out := f.Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)})
			errored := map[string]bool{}
			for _, want := range tc.errored {
				r := checkstest.Result(t, out, want.check, want.operator)
				errored[want.check] = true
				assert.Equal(t, checks.Error, r.Status, "%s/%s: %s", want.check, want.operator, r.Reason)
				assert.Contains(t, r.Reason, want.reason, "%s/%s", want.check, want.operator)
				assert.Contains(t, r.Reason, "forbidden")
			}
			// The refusal touches no other check.
			for _, r := range out.Results {
				if !errored[r.Check.ID] && !r.Check.Probe {
					assert.Equal(t, checks.Pass, r.Status, "%s/%s: %s", r.Check.ID, r.Operator, r.Reason)
				}
			}
		})
	}

	t.Run("list customresourcedefinitions", func(t *testing.T) {
		f := checkstest.NewWorld(t).Serve()
		f.Ext.PrependReactor("list", "customresourcedefinitions", checkstest.Forbidden("apiextensions.k8s.io", "customresourcedefinitions"))
		profiles := append(checkstest.BuiltinProfiles(t), checkstest.WidgetProfile(t))
		out := f.Run(builtin.Registry(), profiles)
		runs := 0
		for _, p := range profiles {
			runs += runsFor(p)
		}
		// runsFor counts the cluster-wide checks for each profile.
		clusterWide := 0
		for _, c := range builtin.Registry() {
			if !c.Meta().PerOperator {
				clusterWide++
			}
		}
		require.Len(t, out.Results, runs-clusterWide*(len(profiles)-1))
		for _, r := range out.Results {
			if r.Operator == "" && r.Check.ID == "gpu-device-plugin" {
				// It reads the CRDs only to find the GPU Operator's
				// ClusterPolicy, which can only ever warn.
				assert.Equal(t, checks.Warn, r.Status, "%s: %s", r.Check.ID, r.Reason)
				assert.Contains(t, r.Reason, "cannot tell whether the NVIDIA GPU Operator is installed: list customresourcedefinitions.v1.apiextensions.k8s.io: customresourcedefinitions.apiextensions.k8s.io is forbidden")
				continue
			}
			knownByCRDs := slices.Contains([]string{"ai_inference", "ai_service_metrics", "advanced_inference_ingress", "disaggregated_inference"}, r.Check.Requirement) || r.Check.ID == "multi-network"
			if r.Operator == "" && knownByCRDs && !r.Check.Probe {
				// The Gateway API and its Inference Extension, the
				// monitoring systems, the serving stacks and the
				// multi-network APIs are known by their CRDs.
				assert.Equal(t, checks.Error, r.Status, "%s: %s", r.Check.ID, r.Reason)
				assert.Contains(t, r.Reason, "list customresourcedefinitions.v1.apiextensions.k8s.io: customresourcedefinitions.apiextensions.k8s.io is forbidden")
				continue
			}
			if r.Operator == "" && r.Check.Requirement == "cluster_autoscaling" && !r.Check.Probe {
				// Karpenter is known by its CRDs.
				assert.Equal(t, checks.Error, r.Status, "%s: %s", r.Check.ID, r.Reason)
				assert.Contains(t, r.Reason, "cannot tell whether Karpenter is installed: list customresourcedefinitions")
				continue
			}
			if r.Operator == "" {
				// Nothing else cluster-wide needs the CRDs; probes are off.
				want := checks.Pass
				if r.Check.Probe {
					want = checks.Skip
				}
				assert.Equal(t, want, r.Status, "%s: %s", r.Check.ID, r.Reason)
				continue
			}
			assert.Equal(t, checks.Error, r.Status, "%s/%s: %s", r.Check.ID, r.Operator, r.Reason)
			assert.Contains(t, r.Reason, "cannot tell whether")
			assert.Contains(t, r.Reason, "is installed: list customresourcedefinitions.v1.apiextensions.k8s.io: customresourcedefinitions.apiextensions.k8s.io is forbidden")
		}
		for _, d := range out.Detections {
			assert.False(t, d.Found, d.Profile.Name)
		}
		// The requirement must not pass when nothing could be read.
		v := checkstest.Verdict(t, checks.Evaluate(catalog(t), out), "robust_controller")
		assert.NotEqual(t, checks.Implemented, v.Status, v.Conclusion)
		assert.False(t, v.Met(), v.Conclusion)
	})
}

// A CRD with neither condition is one CRD not established, not two.
func TestCRDsEstablishedCountsCRDs(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.CRDs[0].Status.Conditions = nil
	r := checkstest.Result(t, w.Serve().Run(builtin.Registry(), []*checks.Profile{checkstest.WidgetProfile(t)}), "crds-established", "widgets")
	assert.Equal(t, checks.Fail, r.Status)
	assert.Contains(t, r.Reason, "1 of 1 CRDs not established")
	assert.NotContains(t, r.Reason, "absent ;", "no trailing space after a condition without reason")
}

// A snapshot of a cluster replays to the verdicts the cluster gave.
func TestRecordReplaysTheSameVerdicts(t *testing.T) {
	w := checkstest.NewWorld(t)
	w.ControllerPod.Status.Conditions[1].Status = corev1.ConditionUnknown
	w.VWCs[0].Webhooks[0].ClientConfig.CABundle = checkstest.CAPEM(t, "soon-ca", checkstest.JudgeAt.Add(24*time.Hour))
	f := w.Serve()
	f.Kube.PrependReactor("list", "nodes", checkstest.Forbidden("", "nodes"))
	profiles := []*checks.Profile{checkstest.WidgetProfile(t), checkstest.AbsentProfile(t)}
	ctx := context.Background()

	rec, err := checks.Record(ctx, f.Cache(), cluster.Info{Live: true, ServerVersion: "v1.37.2"}, profiles, builtin.Registry(), time.Minute, func() time.Time { return checkstest.JudgeAt })
	require.NoError(t, err)
	assert.Equal(t, checkstest.JudgeAt, rec.Cluster.RecordedAt)
	data, err := rec.Marshal()
	require.NoError(t, err)
	replayed, err := cluster.LoadRecording("snapshot", data)
	require.NoError(t, err)

	opts := checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return checkstest.JudgeAt }}
	sel := checkstest.Everything(builtin.Registry())
	live := checks.Run(ctx, f.Cache(), profiles, sel, opts, checkstest.FixedNow)
	replay := checks.Run(ctx, cluster.NewCache(replayed), profiles, sel, opts, checkstest.FixedNow)
	require.Len(t, replay.Results, len(live.Results))
	for i, l := range live.Results {
		r := replay.Results[i]
		name := l.Check.ID + "/" + l.Operator
		assert.Equal(t, l.Status, r.Status, name)
		assert.Equal(t, l.Details, r.Details, name)
		assert.Equal(t, len(l.Evidence), len(r.Evidence), name)
	}
	assert.Equal(t, checks.Fail, checkstest.Result(t, replay, "controller-ready", "widgets").Status)
	assert.Equal(t, checks.Warn, checkstest.Result(t, replay, "webhooks-served", "widgets").Status)
	assert.Equal(t, checks.Error, checkstest.Result(t, replay, "gpu-allocatable", "").Status)
	assert.Contains(t, checkstest.Result(t, replay, "gpu-allocatable", "").Reason, "nodes is forbidden")
}

// runsFor counts the results a run with the one profile p gives.
func runsFor(p *checks.Profile) int {
	catalog, err := checks.Catalog(builtin.Registry())
	if err != nil {
		panic(err)
	}
	n := 0
	for _, c := range builtin.Registry() {
		m := c.Meta()
		runs := !m.PerOperator || p.CandidateFor(m.Requirement)
		// A controller's health is listed by gang_scheduling too: it runs
		// for a gang scheduler that carries only that.
		for _, r := range catalog {
			runs = runs || checks.Contains(r.Checks, m.ID) && p.CandidateFor(r.ID)
		}
		if runs {
			n++
		}
	}
	return n
}

// assertReadsWhatTheCacheKeeps compares a run with one on the same cluster
// read whole (cluster.Cache.WholeObjects). The cache drops of nodes, of a
// node's pods and of the cluster's workloads what no check reads; a check
// that read such a field would see it empty and judge otherwise than on
// the objects the cluster has. The fake world sets those fields (a node's
// system info and images, a pod's images and tolerations), so that such a
// check fails here, by name.
func assertReadsWhatTheCacheKeeps(t *testing.T, kept, whole checks.Outcome) {
	t.Helper()
	type key struct{ check, op string }
	byKey := map[key]checks.Result{}
	for _, r := range whole.Results {
		byKey[key{r.Check.ID, r.Operator}] = r
	}
	for _, r := range kept.Results {
		w, ok := byKey[key{r.Check.ID, r.Operator}]
		if !assert.True(t, ok, "%s/%s ran only on the cache's objects", r.Check.ID, r.Operator) {
			continue
		}
		if w.Status != r.Status || w.Reason != r.Reason || !slices.Equal(w.Details, r.Details) {
			t.Errorf("%s/%s reads a field the cache drops (cluster/masks.go, trim, slimPod): on whole objects %s %q, on what the cache keeps %s %q",
				r.Check.ID, r.Operator, w.Status, w.Reason, r.Status, r.Reason)
		}
	}
}
