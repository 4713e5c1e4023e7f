package checks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// judgeAt is when verdicts on a fake cluster are judged (certificate expiry,
// recent restarts).
var judgeAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// A made-up operator, so that the tests depend on no shipped profile.
const (
	widgetGroup = "demo.example.com"
	widgetLabel = "demo.example.com/widget"
	widgetCRD   = "widgets.demo.example.com"
)

var widgetsGVR = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}

// clusterPoliciesGVR is the NVIDIA GPU Operator's ClusterPolicy.
var clusterPoliciesGVR = schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}

const widgetProfileYAML = `name: widgets
title: Widget Operator
groups: [demo.example.com]
crds: [widgets.demo.example.com]
controller:
  namespace: demo-system
  deployment: widget-controller
  selector: app=widget-controller
  lease: widget-controller-leader
webhooks: [widget-webhook]
requiredWebhooks: [validate.widgets.demo.example.com]
resources:
  - crd: widgets.demo.example.com
    readyConditions: [Ready]
    childLabel: demo.example.com/widget
    children: [Deployment, Service]
`

func widgetProfile(t *testing.T) *checks.Profile {
	t.Helper()
	ps, err := checks.ParseProfiles("widgets.yaml", []byte(widgetProfileYAML))
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

// world is a small healthy cluster running the widget operator, one
// reconciled Widget and one GPU node. Tests break one thing and look.
type world struct {
	crds          []*apiextensionsv1.CustomResourceDefinition
	controller    *appsv1.Deployment
	controllerPod *corev1.Pod
	vwcs          []*admissionregistrationv1.ValidatingWebhookConfiguration
	mwcs          []*admissionregistrationv1.MutatingWebhookConfiguration
	slice         *discoveryv1.EndpointSlice
	widgets       []*unstructured.Unstructured
	childDeploy   *appsv1.Deployment
	childRS       *appsv1.ReplicaSet
	childPod      *corev1.Pod
	childService  *corev1.Service
	nodes         []*corev1.Node
	// pods are other pods: workloads on the GPU node.
	pods []*corev1.Pod
	// lease is the controller's leader-election Lease, held by its pod.
	lease *coordinationv1.Lease
	// devicePlugin runs pluginPod on the GPU node.
	devicePlugin *appsv1.DaemonSet
	pluginPod    *corev1.Pod
	// extraDaemonSets are other DaemonSets (their pods go in pods).
	extraDaemonSets []*appsv1.DaemonSet
	events          []*corev1.Event
	// clusterPolicies are the GPU Operator's, served when its CRD is in
	// crds.
	clusterPolicies []*unstructured.Unstructured
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{
		crds:          []*apiextensionsv1.CustomResourceDefinition{establishedCRD("widgets", "Widget")},
		controller:    availableDeployment("demo-system", "widget-controller", map[string]string{"app": "widget-controller"}, "demo/widget-controller:v1.2.3"),
		controllerPod: readyPod("demo-system", "widget-controller-7c9d-abcde", map[string]string{"app": "widget-controller"}, "cpu-node-1"),
		vwcs: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "widget-webhook"},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{serviceWebhook("validate.widgets.demo.example.com", caPEM(t, "widget-ca", judgeAt.AddDate(1, 0, 0)))},
		}},
		slice: &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "demo-system", Name: "widget-webhook-x7k2p", Labels: map[string]string{discoveryv1.LabelServiceName: "widget-webhook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
		},
		nodes: []*corev1.Node{
			node("cpu-node-1", corev1.ConditionTrue, nil),
			node("gpu-node-1", corev1.ConditionTrue, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}),
		},
	}

	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion(widgetGroup + "/v1")
	widget.SetKind("Widget")
	widget.SetNamespace("apps")
	widget.SetName("w1")
	widget.SetUID("uid-w1")
	widget.SetGeneration(2)
	require.NoError(t, unstructured.SetNestedField(widget.Object, int64(2), "status", "observedGeneration"))
	require.NoError(t, unstructured.SetNestedSlice(widget.Object, []any{
		map[string]any{"type": "Ready", "status": "True"},
	}, "status", "conditions"))
	w.widgets = []*unstructured.Unstructured{widget}

	children := map[string]string{widgetLabel: "w1"}
	w.childDeploy = availableDeployment("apps", "w1-server", children, "demo/server:v1")
	w.childDeploy.UID = "uid-w1-deploy"
	w.childDeploy.OwnerReferences = owner("Widget", "w1", "uid-w1")
	w.childRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "w1-server-5f6", UID: "uid-w1-rs",
		Labels: children, OwnerReferences: owner("Deployment", "w1-server", "uid-w1-deploy")}}
	w.childPod = readyPod("apps", "w1-server-5f6-xyz12", children, "cpu-node-1")
	w.childPod.OwnerReferences = owner("ReplicaSet", "w1-server-5f6", "uid-w1-rs")
	w.childService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "w1", Labels: children,
		OwnerReferences: owner("Widget", "w1", "uid-w1")}}

	// On the GPU node: a pod asking 1 GPU and limiting another container to
	// 2 (so requesting 2), with an init container asking 4: 4 count. A
	// finished pod's 8 do not.
	train := readyPod("ml", "train-0", nil, "gpu-node-1")
	train.Spec.Containers = []corev1.Container{
		{Name: "a", Resources: corev1.ResourceRequirements{Requests: gpus("1")}},
		{Name: "b", Resources: corev1.ResourceRequirements{Limits: gpus("2")}},
	}
	train.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: gpus("4")}}}
	done := readyPod("ml", "done-0", nil, "gpu-node-1")
	done.Status.Phase = corev1.PodSucceeded
	done.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: gpus("8")}}}
	elsewhere := readyPod("ml", "cpu-0", nil, "cpu-node-1")
	elsewhere.Spec.Containers = []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: gpus("3")}}}
	w.pods = []*corev1.Pod{train, done, elsewhere}

	w.lease = &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo-system", Name: "widget-controller-leader"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr("widget-controller-7c9d-abcde_6c1f0a9e-2b4d-4e8f-9a7c-5d3e1b2f4a60"),
			LeaseDurationSeconds: ptr[int32](15),
			RenewTime:            ptr(metav1.NewMicroTime(judgeAt.Add(-4 * time.Second))),
		},
	}
	pluginLabels := map[string]string{"name": "nvidia-device-plugin-ds"}
	w.devicePlugin = &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "nvidia-device-plugin-daemonset", UID: "uid-nvdp"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: pluginLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pluginLabels}},
		},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1},
	}
	w.pluginPod = readyPod("kube-system", "nvidia-device-plugin-daemonset-k7x2p", pluginLabels, "gpu-node-1")
	w.pluginPod.OwnerReferences = owner("DaemonSet", "nvidia-device-plugin-daemonset", "uid-nvdp")
	return w
}

// fakeCluster is a world served by client-go's fakes, and the fakes
// themselves, to add reactors to.
type fakeCluster struct {
	kube *kubefake.Clientset
	ext  *apiextensionsfake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
}

func (w *world) serve() *fakeCluster {
	var kube []runtime.Object
	add := func(o runtime.Object, ok bool) {
		if ok {
			kube = append(kube, o)
		}
	}
	add(w.controller, w.controller != nil)
	add(w.controllerPod, w.controllerPod != nil)
	add(w.slice, w.slice != nil)
	add(w.childDeploy, w.childDeploy != nil)
	add(w.childRS, w.childRS != nil)
	add(w.childPod, w.childPod != nil)
	add(w.childService, w.childService != nil)
	add(w.lease, w.lease != nil)
	add(w.devicePlugin, w.devicePlugin != nil)
	add(w.pluginPod, w.pluginPod != nil)
	for _, o := range w.events {
		kube = append(kube, o)
	}
	for _, o := range w.extraDaemonSets {
		kube = append(kube, o)
	}
	for _, o := range w.vwcs {
		kube = append(kube, o)
	}
	for _, o := range w.mwcs {
		kube = append(kube, o)
	}
	for _, o := range w.nodes {
		kube = append(kube, o)
	}
	for _, o := range w.pods {
		kube = append(kube, o)
	}
	var ext []runtime.Object
	for _, o := range w.crds {
		ext = append(ext, o)
	}
	var dyn []runtime.Object
	for _, o := range w.widgets {
		dyn = append(dyn, o)
	}
	for _, o := range w.clusterPolicies {
		dyn = append(dyn, o)
	}
	f := &fakeCluster{
		kube: kubefake.NewClientset(kube...),
		ext:  apiextensionsfake.NewClientset(ext...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList", clusterPoliciesGVR: "ClusterPolicyList"}, dyn...),
	}
	// The fake clientset ignores field selectors; the API server does
	// not, and the GPU check reads pods per node with one.
	f.kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
		if sel == nil || sel.Empty() {
			return false, nil, nil
		}
		obj, err := f.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		list := obj.(*corev1.PodList)
		var kept []corev1.Pod
		for _, p := range list.Items {
			if sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName, "metadata.namespace": p.Namespace, "metadata.name": p.Name}) {
				kept = append(kept, p)
			}
		}
		list.Items = kept
		return true, list, nil
	})
	return f
}

// cache is a run's view of the fake cluster. The fakes cannot render
// Tables, so evidence steps say so; verdicts do not depend on them.
func (f *fakeCluster) cache() *cluster.Cache {
	return cluster.NewCache(&cluster.Live{Kube: f.kube, APIExtensions: f.ext, Dynamic: f.dyn, Now: fixedNow})
}

// run runs every registered check against the fake cluster.
func (f *fakeCluster) run(profiles []*checks.Profile) checks.Outcome {
	return checks.Run(context.Background(), f.cache(), profiles, checks.Registry(),
		checks.RunOptions{Concurrency: 4, Timeout: time.Minute, JudgeAt: func() time.Time { return judgeAt }}, fixedNow)
}

func establishedCRD(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true},
				{Name: "v1", Served: true, Storage: true},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
		}},
	}
}

func availableDeployment(ns, name string, labels map[string]string, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: image}},
		}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
		}},
	}
}

func readyPod(ns, name string, labels map[string]string, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "manager"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

func node(name string, ready corev1.ConditionStatus, accelerators corev1.ResourceList) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourcePods: resource.MustParse("110")}
	for k, v := range accelerators {
		capacity[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady"}},
		},
	}
}

func serviceWebhook(name string, caBundle []byte) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "demo-system", Name: "widget-webhook", Path: ptr("/validate")},
			CABundle: caBundle,
		},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{widgetGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
		}},
	}
}

func owner(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: ptr(true)}}
}

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
}

func ptr[T any](v T) *T { return &v }

// caPEM is a self-signed CA certificate valid until notAfter.
func caPEM(t *testing.T, cn string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             notAfter.AddDate(-2, 0, 0),
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
