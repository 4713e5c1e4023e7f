package checkstest

import (
	"slices"

	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The multi-network APIs: Multus' NetworkAttachmentDefinitions and GKE
// multi-networking's Networks.
var (
	AttachmentsGVR = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	GKENetworksGVR = schema.GroupVersionResource{Group: "networking.gke.io", Version: "v1", Resource: "networks"}
)

// NetworkSlice is the pool a network DRA driver publishes for one node, of
// n devices eth0, eth1..., each with the given string attributes.
func NetworkSlice(node, driver string, n int, attrs map[string]string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node,
			Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := range n {
		d := resourcev1.Device{Name: fmt.Sprintf("eth%d", i)}
		if len(attrs) > 0 {
			d.Attributes = map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}
			for k, v := range attrs {
				d.Attributes[resourcev1.QualifiedName(k)] = resourcev1.DeviceAttribute{StringValue: Ptr(v)}
			}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	return s
}

// crdOf is an established CRD serving gvr at its version only.
func crdOf(gvr schema.GroupVersionResource, kind string, scope apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
	crd := EstablishedCRD(gvr.Resource, kind)
	crd.Name = gvr.Resource + "." + gvr.Group
	crd.Spec.Group = gvr.Group
	crd.Spec.Scope = scope
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvr.Version, Served: true, Storage: true}}
	return crd
}

// AttachmentsCRD is Multus' NetworkAttachmentDefinition CRD.
func AttachmentsCRD() *apiextensionsv1.CustomResourceDefinition {
	return crdOf(AttachmentsGVR, "NetworkAttachmentDefinition", apiextensionsv1.NamespaceScoped)
}

// Attachment is a NetworkAttachmentDefinition whose spec.config is config
// (none when empty).
func Attachment(namespace, name, config string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	if config != "" {
		u.Object["spec"] = map[string]any{"config": config}
	}
	u.SetAPIVersion(AttachmentsGVR.GroupVersion().String())
	u.SetKind("NetworkAttachmentDefinition")
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// GKENetworksCRD is GKE multi-networking's Network CRD.
func GKENetworksCRD() *apiextensionsv1.CustomResourceDefinition {
	return crdOf(GKENetworksGVR, "Network", apiextensionsv1.ClusterScoped)
}

// GKENetwork is a GKE Network of type (L2, L3, Device).
func GKENetwork(name, typ string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"type": typ}}}
	u.SetAPIVersion(GKENetworksGVR.GroupVersion().String())
	u.SetKind("Network")
	u.SetName(name)
	return u
}

// WithoutNetworks takes NewWorld's DRANET devices, their class and its
// Multus network out of w, for tests that bring their own.
func WithoutNetworks(w *World) {
	w.ResourceSlices = slices.DeleteFunc(w.ResourceSlices, func(s *resourcev1.ResourceSlice) bool { return s.Spec.Driver == "dra.net" })
	w.DeviceClasses = slices.DeleteFunc(w.DeviceClasses, func(c *resourcev1.DeviceClass) bool { return c.Name == "dranet" })
	w.CRDs = slices.DeleteFunc(w.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Spec.Group == AttachmentsGVR.Group })
	delete(w.Custom, AttachmentsGVR)
}
