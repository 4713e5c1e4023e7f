package cluster

import (
	"bytes"
	"context"
	"fmt"
	resourcev1 "k8s.io/api/resource/v1"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"
)

// nodePodsCases are pods as a node holds them: an application pod as
// controllers make it, and pods with each thing slimPod keeps or drops.
func nodePodsCases() []corev1.Pod {
	at := metav1.NewTime(t0.Add(-time.Hour))
	gone := metav1.NewTime(t0)
	cpu := resource.MustParse("500m")
	gpus := resource.MustParse("2")
	app := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d4b9-x2x", GenerateName: "web-7d4b9-", Namespace: "team-a", UID: "u1",
			ResourceVersion: "42", CreationTimestamp: at, Labels: map[string]string{"app": "web", "pod-template-hash": "7d4b9"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "now"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9", UID: "u0", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.PodSpec{NodeName: "gpu-1", ServiceAccountName: "default", RestartPolicy: corev1.RestartPolicyAlways,
			Volumes: []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}},
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
				Env: []corev1.EnvVar{{Name: "MODE", Value: "serve"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": gpus, corev1.ResourceMemory: resource.MustParse("1Gi")}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				ReadinessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}}},
			Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.1.0.7", StartTime: &at,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: at},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Image: "nginx:1.27", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}}},
	}

	agent := *app.DeepCopy()
	agent.Name, agent.UID, agent.DeletionTimestamp = "plugin-abc", "u2", &gone
	agent.Annotations = map[string]string{
		CDIAnnotationPrefix + "devices": "nvidia.com/gpu=0", "kubectl.kubernetes.io/last-applied-configuration": "{}", "other": "x"}
	agent.Spec.Volumes = append(agent.Spec.Volumes,
		corev1.Volume{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev", Type: ptr.To(corev1.HostPathDirectory)}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	agent.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0)}
	agent.Spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"},
		{Name: "CUDA_VISIBLE_DEVICES", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "HOME", Value: "/root"},
		// Another vendor's hook variable is kept by the same rule; one that
		// only picks among a container's devices is not.
		{Name: "ASCEND_VISIBLE_DEVICES", Value: "0-3"}, {Name: "TPU_VISIBLE_CHIPS", Value: "0"}}
	agent.Spec.Containers[0].VolumeMounts = append(agent.Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: "dev", MountPath: "/host/dev", SubPath: "nvidia0"}, corev1.VolumeMount{Name: "cache", MountPath: "/cache"})
	agent.Spec.Containers = append(agent.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox",
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(false)},
		Resources:       corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu", Request: "one"}}}})
	agent.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4"), "hugepages-2Mi": resource.MustParse("2Mi"), "kubernetes.io/batch-cpu": cpu}}}}
	agent.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Mi"), "example.com/nic": resource.MustParse("1")}
	agent.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	agent.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	agent.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}}

	bare := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "gpu-1"}}
	return []corev1.Pod{app, agent, bare}
}

// encodeList is a page of a list as the API server sends it in protobuf.
func encodeList(t testing.TB, list runtime.Object) []byte {
	t.Helper()
	gvks, _, err := scheme.ObjectKinds(list)
	require.NoError(t, err)
	list.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme, scheme).Encode(list, &buf))
	return buf.Bytes()
}

// settled is what List makes of a page decoded whole: each item trimmed
// and slimmed as q's are.
func settled(t testing.TB, q Query, body []byte) runtime.Object {
	t.Helper()
	obj, _, err := codecs.UniversalDeserializer().Decode(body, nil, nil)
	require.NoError(t, err)
	settleAll(t, q, obj)
	// A typed client's list does not say its kind either.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj
}

func settleAll(t testing.TB, q Query, list runtime.Object) {
	t.Helper()
	require.NoError(t, meta.EachListItem(list, func(o runtime.Object) error {
		settle(q, o)
		return nil
	}))
}

// maskCases are a page of each kind maskFor masks, and what its mask
// must have dropped before the page was decoded.
func maskCases() []struct {
	name    string
	q       Query
	list    runtime.Object
	dropped func(t *testing.T, masked runtime.Object)
} {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"llm-d.ai/role": "decode"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm:1"}}}}
	replicas := ptr.To[int32](3)
	return []struct {
		name    string
		q       Query
		list    runtime.Object
		dropped func(t *testing.T, masked runtime.Object)
	}{
		{"the pods of a node", Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"},
			&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next-page"}, Items: nodePodsCases()},
			func(t *testing.T, masked runtime.Object) {
				pods := masked.(*corev1.PodList)
				assert.Equal(t, "next-page", pods.Continue, "the pager follows the continue token")
				assert.Empty(t, pods.Items[0].Spec.Containers[0].Image)
				assert.Empty(t, pods.Items[0].Status.ContainerStatuses)
				assert.Empty(t, pods.Items[0].ManagedFields)
				assert.Empty(t, pods.Items[0].Spec.Containers[0].Resources.Requests, "CPU and memory")
				assert.Len(t, pods.Items[1].Spec.Volumes, 1, "the hostPath volume only")
			}},
		{"Deployments across the cluster", Query{Resource: Deployments},
			&appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", ManagedFields: managed,
				Annotations: map[string]string{lastApplied: `{"kind":"Deployment"}`, "deployment.kubernetes.io/revision": "3"}},
				Spec:   appsv1.DeploymentSpec{Replicas: replicas, Template: template, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 3}}}},
			func(t *testing.T, masked runtime.Object) {
				d := masked.(*appsv1.DeploymentList).Items[0]
				assert.Empty(t, d.Spec.Template.Spec.Containers)
				assert.Empty(t, d.Spec.Template.Annotations)
				assert.Empty(t, d.ManagedFields)
				assert.Equal(t, map[string]string{"deployment.kubernetes.io/revision": "3"}, d.Annotations, "all but the last-applied configuration")
				assert.Equal(t, appsv1.RecreateDeploymentStrategyType, d.Spec.Strategy.Type, "the rest of the spec is kept")
			}},
		{"StatefulSets across the cluster", Query{Resource: StatefulSets},
			&appsv1.StatefulSetList{Items: []appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
				Spec: appsv1.StatefulSetSpec{Replicas: replicas, Template: template, ServiceName: "svc",
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}}},
			func(t *testing.T, masked runtime.Object) {
				s := masked.(*appsv1.StatefulSetList).Items[0]
				assert.Empty(t, s.Spec.Template.Spec.Containers)
				assert.Empty(t, s.Spec.VolumeClaimTemplates)
				assert.Equal(t, "svc", s.Spec.ServiceName)
			}},
		{"the Deployments of a namespace, whole", Query{Resource: Deployments, Namespace: "ns"},
			&appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", ManagedFields: managed},
				Spec: appsv1.DeploymentSpec{Replicas: replicas, Template: template}}}},
			func(t *testing.T, masked runtime.Object) {
				d := masked.(*appsv1.DeploymentList).Items[0]
				assert.Equal(t, "vllm:1", d.Spec.Template.Spec.Containers[0].Image)
				assert.Empty(t, d.ManagedFields)
			}},
		{"nodes", Query{Resource: Nodes},
			&corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}, ManagedFields: managed},
				Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
					Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
					Conditions: []corev1.NodeCondition{
						{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
						{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
						{Type: "KernelDeadlock", Status: corev1.ConditionFalse, Reason: "KernelHasNoDeadlock"}},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", BootID: "b"}, Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}}},
			func(t *testing.T, masked runtime.Object) {
				n := masked.(*corev1.NodeList).Items[0]
				assert.Empty(t, n.Status.Images)
				assert.Empty(t, n.Status.NodeInfo)
				assert.Empty(t, n.Status.Addresses)
				require.Len(t, n.Status.Conditions, 1, "the conditions but Ready are dropped")
				assert.Equal(t, "KubeletReady", n.Status.Conditions[0].Reason)
				assert.Equal(t, "kubelet is posting ready status", n.Status.Conditions[0].Message)
				assert.Empty(t, n.ManagedFields)
				assert.Len(t, n.Status.Capacity, 1)
			}},
		{"nodes, whole", Query{Resource: Nodes, Whole: true},
			&corev1.NodeList{Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: managed},
				Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}, SizeBytes: 1}},
					NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2"}}}}},
			func(t *testing.T, masked runtime.Object) {
				n := masked.(*corev1.NodeList).Items[0]
				assert.Equal(t, "v1.37.2", n.Status.NodeInfo.KubeletVersion, "a whole query keeps what the built-in checks do not read")
				assert.Len(t, n.Status.Images, 1)
				assert.Empty(t, n.ManagedFields)
			}},
		{"CRDs", Query{Resource: CRDs},
			&apiextensionsv1.CustomResourceDefinitionList{Items: []apiextensionsv1.CustomResourceDefinition{{
				ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", ManagedFields: managed},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
					Scope: apiextensionsv1.NamespaceScoped, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
				Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}}}}},
			func(t *testing.T, masked runtime.Object) {
				crd := masked.(*apiextensionsv1.CustomResourceDefinitionList).Items[0]
				assert.Nil(t, crd.Spec.Versions[0].Schema)
				assert.True(t, crd.Spec.Versions[0].Served)
				assert.Empty(t, crd.ManagedFields)
			}},
		{"ResourceSlices", Query{Resource: ResourceSlices},
			&resourcev1.ResourceSliceList{Items: []resourcev1.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1-gpu.nvidia.com", ManagedFields: managed},
				Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: ptr.To("gpu-1"), Pool: resourcev1.ResourcePool{Name: "gpu-1", ResourceSliceCount: 1},
					Devices: []resourcev1.Device{{Name: "gpu-0",
						Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"driverVersion": {VersionValue: ptr.To("580.95.5")}},
						Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}}}}}}},
			func(t *testing.T, masked runtime.Object) {
				s := masked.(*resourcev1.ResourceSliceList).Items[0]
				assert.Empty(t, s.Spec.Devices[0].Capacity)
				assert.Empty(t, s.ManagedFields)
				assert.Equal(t, "580.95.5", *s.Spec.Devices[0].Attributes["driverVersion"].VersionValue, "the attributes are read")
				assert.Equal(t, "gpu-1", *s.Spec.NodeName)
			}},
		{"any other kind", Query{Resource: ConfigMaps, Namespace: "kube-system"},
			&corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "kube-system", ManagedFields: managed}, Data: map[string]string{"k": "v"}}}},
			func(t *testing.T, masked runtime.Object) {
				c := masked.(*corev1.ConfigMapList).Items[0]
				assert.Empty(t, c.ManagedFields)
				assert.Equal(t, map[string]string{"k": "v"}, c.Data)
			}},
	}
}

// A page masked on the wire holds, once settled, what the same page
// decoded whole and settled holds; the mask dropped the rest before.
func TestDecodeListMasksWhatSettleDrops(t *testing.T) {
	for _, c := range maskCases() {
		t.Run(c.name, func(t *testing.T) {
			body := encodeList(t, c.list)
			masked := newTypedList(c.q)
			require.NotNil(t, masked)
			require.NoError(t, decodeList(body, masked, maskFor(c.q)))
			c.dropped(t, masked)
			if packedKind(c.q) != nil {
				// The cache keeps these as the mask leaves them: there
				// must be nothing left to settle.
				assert.Equal(t, settled(t, c.q, body), masked, "decoded as masked")
			}
			settleAll(t, c.q, masked)
			assert.Equal(t, settled(t, c.q, body), masked)
		})
	}
}

// A page masked in place, as readPage masks it, is the page masked into a
// buffer of its own: what a mask writes never overtakes what it has yet
// to read.
func TestFilterInPlace(t *testing.T) {
	for _, c := range maskCases() {
		t.Run(c.name, func(t *testing.T) {
			raw, err := c.list.(interface{ Marshal() ([]byte, error) }).Marshal()
			require.NoError(t, err)
			mask := maskFor(c.q)
			want, err := mask.filter(nil, raw)
			require.NoError(t, err)
			require.Less(t, len(want), len(raw), "the mask drops something")
			got, err := mask.filter(raw[:0], raw)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// What the checks read of a node's pods is there.
func TestDecodeListNodePods(t *testing.T) {
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	pods := &corev1.PodList{}
	require.NoError(t, decodeList(encodeList(t, &corev1.PodList{Items: nodePodsCases()}), pods, maskFor(q)))
	assert.Equal(t, len(pods.Items), cap(pods.Items), "the items' slice made to size")
	settleAll(t, q, pods)
	agent := pods.Items[1]
	assert.Equal(t, map[string]string{CDIAnnotationPrefix + "devices": "nvidia.com/gpu=0"}, agent.Annotations)
	assert.Equal(t, []corev1.Volume{{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev", Type: ptr.To(corev1.HostPathDirectory)}}}}, agent.Spec.Volumes)
	assert.Equal(t, []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}, {Name: "ASCEND_VISIBLE_DEVICES", Value: "0-3"}}, agent.Spec.Containers[0].Env)
	assert.Equal(t, []corev1.VolumeMount{{Name: "kube-api-access", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		{Name: "dev", MountPath: "/host/dev"}, {Name: "cache", MountPath: "/cache"}}, agent.Spec.Containers[0].VolumeMounts, "every mount: which are of hostPath volumes is read later")
	assert.Equal(t, &corev1.SecurityContext{Privileged: ptr.To(true)}, agent.Spec.Containers[0].SecurityContext)
	assert.True(t, agent.DeletionTimestamp.Equal(ptr.To(metav1.NewTime(t0))), "deleted at %v", agent.DeletionTimestamp)
	assert.Equal(t, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}, agent.Spec.InitContainers[0].Resources.Requests)
	assert.Equal(t, corev1.ResourceList{"example.com/nic": resource.MustParse("1")}, agent.Spec.Overhead)
	assert.Equal(t, []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}, agent.Status.Conditions)
	assert.Equal(t, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}, pods.Items[0].Spec.Containers[0].Resources.Limits)
}

func TestDecodeListJSON(t *testing.T) {
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	list := &corev1.PodList{Items: nodePodsCases()}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	var buf bytes.Buffer
	require.NoError(t, json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{}).Encode(list, &buf))
	got := &corev1.PodList{}
	require.NoError(t, decodeList(buf.Bytes(), got, maskFor(q)))
	settleAll(t, q, got)
	assert.Equal(t, settled(t, q, encodeList(t, &corev1.PodList{Items: nodePodsCases()})), got)
}

func TestDecodeListRefusesOtherBodies(t *testing.T) {
	q := Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}
	err := decodeList(encodeList(t, &corev1.NamespaceList{}), &corev1.PodList{}, maskFor(q))
	assert.ErrorContains(t, err, `decode PodList: the server answered a "NamespaceList"`)

	body := encodeList(t, &corev1.PodList{Items: nodePodsCases()[:1]})
	assert.Error(t, decodeList(body[:len(body)/2], &corev1.PodList{}, maskFor(q)), "a truncated body")
}

// The built-in kinds are read in protobuf; an aggregated API's and custom
// resources by the dynamic client.
func TestNewTypedList(t *testing.T) {
	for _, r := range []Resource{Nodes, Namespaces, Pods, ConfigMaps, Services, Deployments, StatefulSets, HorizontalPodAutoscalers,
		ReplicaSets, Jobs, EndpointSlices, DaemonSets, Leases, Events, DeviceClasses, ResourceSlices, ResourceClaims,
		ResourceClaimTemplates, RuntimeClasses, CRDs, ValidatingWebhookConfigurations, MutatingWebhookConfigurations} {
		assert.NotNil(t, newTypedList(Query{Resource: r}), r.Arg)
	}
	assert.Nil(t, newTypedList(Query{Resource: APIServices}))
	assert.Nil(t, newTypedList(Query{Resource: isvcs}))
}

// FuzzNodePodMask: whatever pod decodes whole decodes masked to its slim
// pod, as the cache packs it. The seeds are the cases above; `go test -fuzz` explores.
func FuzzNodePodMask(f *testing.F) {
	for _, p := range nodePodsCases() {
		data, err := p.Marshal()
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var whole corev1.Pod
		if whole.Unmarshal(data) != nil {
			return
		}
		// What a server sends is a pod's encoding. The generated decoder
		// accepts more: a map entry whose value runs past the entry's end
		// into the fields after it, which a mask that drops those fields
		// leaves running past the end of the message.
		data, err := whole.Marshal()
		require.NoError(t, err)
		whole = corev1.Pod{}
		require.NoError(t, whole.Unmarshal(data))
		masked, err := nodePodMask.filter(nil, data)
		require.NoError(t, err)
		in := bytes.Clone(data)
		inPlace, err := nodePodMask.filter(in[:0], in)
		require.NoError(t, err)
		require.Equal(t, masked, inPlace, "masked in place")
		var p corev1.Pod
		require.NoError(t, p.Unmarshal(masked))
		var np NodePod
		require.NoError(t, decodeNodePod(masked, &np))
		assert.Equal(t, nodePodOf(&whole), &np, "the NodePod of the masked pod is the whole pod's")
		trim(&whole)
		slimPod(&whole)
		assert.Equal(t, whole, p, "the masked pod is the slim pod, with nothing left to slim")
	})
}

// A live LIST of a node's pods asks for protobuf and gets slim pods,
// following the continue token as any LIST does, whether decoded (List) or
// packed (the cache's packNodePods).
func TestLiveListNodePodsOverHTTP(t *testing.T) {
	pods := nodePodsCases()
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/nodes" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
				`"message":"nodes is forbidden: User \"auditor\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"}`))
			return
		}
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		list := &corev1.PodList{Items: pods[:2], ListMeta: metav1.ListMeta{Continue: "c2"}}
		if r.URL.Query().Get("continue") == "c2" {
			list = &corev1.PodList{Items: pods[2:]}
		}
		assert.Contains(t, r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf")
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(encodeList(t, list))
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL), 0o600))
	l, err := NewLiveFor(kubeconfig, "", func() time.Time { return t0 })
	require.NoError(t, err)

	got, _, err := l.List(context.Background(), Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"})
	require.NoError(t, err)
	require.Len(t, got, 3)
	want := settled(t, Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}, encodeList(t, &corev1.PodList{Items: pods})).(*corev1.PodList)
	for i, o := range got {
		assert.Equal(t, &want.Items[i], o)
	}
	assert.Equal(t, []string{
		"/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1&limit=500",
		"/api/v1/pods?continue=c2&fieldSelector=spec.nodeName%3Dgpu-1&limit=500",
	}, asked)

	// Through a cache, the same pods are read packed, by the same
	// requests.
	asked = nil
	c := NewCache(l)
	for range 2 {
		got, at, err := c.List(context.Background(), Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"})
		require.NoError(t, err)
		assert.Equal(t, t0, at)
		require.Len(t, got, 3)
		for i, o := range got {
			assert.Equal(t, &want.Items[i], o)
		}
	}
	assert.Len(t, asked, 2, "asked once, in two pages: %v", asked)

	// NodePods decodes the same packed list, asking nothing more, into
	// what each pod holds that the checks read; a recording of the same
	// pods, whose list is not packed, gives the same.
	nps, at, err := c.NodePods(context.Background(), "gpu-1")
	require.NoError(t, err)
	assert.Equal(t, t0, at)
	assert.Len(t, asked, 2, "NodePods reads the list List read")
	require.Len(t, nps, 3)
	for i, np := range nps {
		assert.Equal(t, nodePodOf(&pods[i]), np)
	}
	assert.Equal(t, []Annotation{{Key: CDIAnnotationPrefix + "devices", Value: "nvidia.com/gpu=0"}}, nps[1].CDI)
	assert.True(t, nps[1].Containers[0].Privileged)
	rec, err := c.Recording(Info{})
	require.NoError(t, err)
	data, err := rec.Marshal()
	require.NoError(t, err)
	replay, err := LoadRecording("pods", data)
	require.NoError(t, err)
	fromRecording, _, err := NewCache(replay).NodePods(context.Background(), "gpu-1")
	require.NoError(t, err)
	assert.Equal(t, nps, fromRecording)

	// A refusal is the server's Status, which says who was refused what:
	// a check makes an Error of it.
	_, _, err = l.List(context.Background(), Query{Resource: Nodes})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `nodes is forbidden: User "auditor" cannot list resource "nodes"`)
}

// BenchmarkReadPage reads a page as the API server sends it: 500 nodes,
// each with the images a node reports, and 25 pods of a node. Both are
// masked on the wire; the nodes are a page of megabytes, the pods one of
// the hundreds a run reads.
func BenchmarkReadPage(b *testing.B) {
	var images []corev1.ContainerImage
	for i := range 40 {
		images = append(images, corev1.ContainerImage{Names: []string{fmt.Sprintf("registry.example.com/team/image-%d@sha256:%064d", i, i),
			fmt.Sprintf("registry.example.com/team/image-%d:1.%d", i, i)}, SizeBytes: int64(i) << 20})
	}
	nodes := &corev1.NodeList{}
	for i := range 500 {
		nodes.Items = append(nodes.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("node-%04d", i)}},
			Status: corev1.NodeStatus{Images: images, Capacity: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Ubuntu 24.04"}}})
	}
	pods := &corev1.PodList{}
	for len(pods.Items) < 25 {
		pods.Items = append(pods.Items, nodePodsCases()...)
	}
	for _, c := range []struct {
		name string
		q    Query
		list runtime.Object
	}{
		{"500 nodes", Query{Resource: Nodes}, nodes},
		{"25 pods of a node", Query{Resource: Pods, FieldSelector: NodeFieldSelector + "gpu-1"}, pods},
	} {
		body := encodeList(b, c.list)
		mask := maskFor(c.q)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decodeList(body, newTypedList(c.q), mask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Pages too large for the pooled buffers are read into the one kept
// buffer, one after another; what was decoded or packed from a page is
// its own, unchanged when the next page is read into the same buffer.
func TestLargePagesShareABuffer(t *testing.T) {
	nodes := func(prefix string) *corev1.NodeList {
		l := &corev1.NodeList{}
		for i := range 400 {
			l.Items = append(l.Items, corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%03d", prefix, i),
				Labels: map[string]string{"example.com/label": strings.Repeat(prefix, 800)},
			}})
		}
		return l
	}
	deployments := func(prefix string) *appsv1.DeploymentList {
		l := &appsv1.DeploymentList{}
		for i := range 400 {
			l.Items = append(l.Items, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%03d", prefix, i), Namespace: "ns",
				Labels: map[string]string{"example.com/label": strings.Repeat(prefix, 800)},
			}})
		}
		return l
	}
	first, second := encodeList(t, nodes("a")), encodeList(t, nodes("b"))
	require.Greater(t, len(first), maxPooledBuffer, "a page too large for the pooled buffers")
	third := encodeList(t, deployments("c"))
	require.Greater(t, len(third), maxPooledBuffer)

	a, b := &corev1.NodeList{}, &corev1.NodeList{}
	require.NoError(t, decodeList(first, a, maskFor(Query{Resource: Nodes})))
	kept := getLarge(len(first) - 100)
	putLarge(kept)
	require.NoError(t, decodeList(second, b, maskFor(Query{Resource: Nodes})))
	again := getLarge(len(first) - 100)
	assert.Same(t, &kept[0], &again[0], "the buffer kept is the one read into")
	putLarge(again)
	assert.Equal(t, "a-399", a.Items[399].Name)
	assert.Equal(t, strings.Repeat("a", 800), a.Items[399].Labels["example.com/label"])
	assert.Equal(t, "b-000", b.Items[0].Name)

	q := Query{Resource: Deployments}
	pk := &packedList{newObject: packedKind(q)}
	_, err := readPacked(bytes.NewReader(third), q, pk)
	require.NoError(t, err)
	_, err = readPacked(bytes.NewReader(encodeList(t, deployments("d"))), q, &packedList{newObject: packedKind(q)})
	require.NoError(t, err)
	objs, err := pk.unpack()
	require.NoError(t, err)
	require.Len(t, objs, 400)
	last := objs[399].(*appsv1.Deployment)
	assert.Equal(t, "c-399", last.Name)
	assert.Equal(t, strings.Repeat("c", 800), last.Labels["example.com/label"])

	huge := getLarge(maxLargeBuffer + 1)
	putLarge(huge)
	assert.NotSame(t, &huge[0], &getLarge(maxLargeBuffer + 1)[0], "a buffer past maxLargeBuffer is not kept")
}
