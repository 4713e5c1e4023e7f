package cluster

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource names one API resource the way both the API server and kubectl
// know it.
type Resource struct {
	GVR  schema.GroupVersionResource
	Kind string
	// Arg is what a person types after `kubectl get` for this resource.
	Arg        string
	Namespaced bool
}

// GroupKind is what kubectl prefixes names with when it prints several kinds
// in one command ("deployment.apps/NAME").
func (r Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.GVR.Group, Kind: r.Kind}
}

// String is the unambiguous resource.version.group form used in recordings
// and messages.
func (r Resource) String() string {
	s := r.GVR.Resource + "." + r.GVR.Version
	if r.GVR.Group != "" {
		s += "." + r.GVR.Group
	}
	return s
}

// The built-in resources aiconform reads.
var (
	Nodes = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"},
		Kind: "Node", Arg: "nodes"}
	Namespaces = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		Kind: "Namespace", Arg: "namespaces"}
	Pods = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Kind: "Pod", Arg: "pods", Namespaced: true}
	// ConfigMaps are read by name only (cluster-autoscaler's status).
	ConfigMaps = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
		Kind: "ConfigMap", Arg: "configmap", Namespaced: true}
	Services = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"},
		Kind: "Service", Arg: "svc", Namespaced: true}
	Deployments = Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Kind: "Deployment", Arg: "deploy", Namespaced: true}
	StatefulSets = Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		Kind: "StatefulSet", Arg: "sts", Namespaced: true}
	HorizontalPodAutoscalers = Resource{GVR: schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
		Kind: "HorizontalPodAutoscaler", Arg: "hpa", Namespaced: true}
	// APIServices are the aggregator's registrations; read as
	// unstructured, since client-go's scheme does not hold them.
	APIServices = Resource{GVR: schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
		Kind: "APIService", Arg: "apiservices"}
	ReplicaSets = Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"},
		Kind: "ReplicaSet", Arg: "rs", Namespaced: true}
	Jobs = Resource{GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
		Kind: "Job", Arg: "jobs", Namespaced: true}
	EndpointSlices = Resource{GVR: schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
		Kind: "EndpointSlice", Arg: "endpointslices", Namespaced: true}
	DaemonSets = Resource{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"},
		Kind: "DaemonSet", Arg: "ds", Namespaced: true}
	Leases = Resource{GVR: schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
		Kind: "Lease", Arg: "lease", Namespaced: true}
	// Events are the core v1 Events `kubectl get events` reads, not
	// events.k8s.io: the same objects, and the Table kubectl prints.
	Events = Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"},
		Kind: "Event", Arg: "events", Namespaced: true}
	// The Dynamic Resource Allocation API, resource.k8s.io/v1 (GA since
	// Kubernetes 1.34).
	DeviceClasses = Resource{GVR: schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"},
		Kind: "DeviceClass", Arg: "deviceclasses"}
	ResourceSlices = Resource{GVR: schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"},
		Kind: "ResourceSlice", Arg: "resourceslices"}
	ResourceClaims = Resource{GVR: schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
		Kind: "ResourceClaim", Arg: "resourceclaims", Namespaced: true}
	ResourceClaimTemplates = Resource{GVR: schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaimtemplates"},
		Kind: "ResourceClaimTemplate", Arg: "resourceclaimtemplates", Namespaced: true}
	// RuntimeClasses name the container runtime handlers pods may ask
	// for: a sandbox's among them.
	RuntimeClasses = Resource{GVR: schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"},
		Kind: "RuntimeClass", Arg: "runtimeclasses"}
	CRDs = Resource{GVR: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		Kind: "CustomResourceDefinition", Arg: "crd"}
	ValidatingWebhookConfigurations = Resource{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
		Kind: "ValidatingWebhookConfiguration", Arg: "validatingwebhookconfigurations"}
	MutatingWebhookConfigurations = Resource{GVR: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		Kind: "MutatingWebhookConfiguration", Arg: "mutatingwebhookconfigurations"}
)

// Query is one LIST: a resource, in a namespace ("" for all or for a
// cluster-scoped resource), narrowed by selectors the server applies.
type Query struct {
	Resource      Resource
	Namespace     string
	LabelSelector string
	FieldSelector string
	// Whole asks for the objects as the server keeps them, but for their
	// managed fields and kubectl's last-applied annotation. Without it,
	// List drops what no built-in check reads of some kinds (a node's
	// status but its capacity, allocatable, phase and conditions; CRD
	// schemas; the specs of a node's pods and of the cluster's workloads):
	// a check that reads fields the built-in ones do not name, a user's,
	// must ask for them whole, or read an empty value where the cluster
	// has one. A whole query is a query of its own: one LIST more.
	Whole bool
}

// Key identifies the query in the cache and in recordings.
func (q Query) Key() string {
	k := strings.Join([]string{q.Resource.String(), q.Namespace, q.LabelSelector, q.FieldSelector}, "|")
	if q.Whole {
		k += "|whole"
	}
	return k
}

// nameField is the field selector every resource answers: only the
// object of that name passes it.
const nameField = "metadata.name="

// Named narrows q to the object called name, which the API server then
// reads alone.
func (q Query) Named(name string) Query {
	q.FieldSelector = nameField + name
	return q
}

// named is the name q narrows to, if that is all its field selector says,
// and q without it.
func (q Query) named() (name string, all Query, ok bool) {
	name, ok = strings.CutPrefix(q.FieldSelector, nameField)
	if !ok || name == "" || strings.ContainsAny(name, ",=!") {
		return "", q, false
	}
	q.FieldSelector = ""
	return name, q, true
}

func (q Query) String() string {
	s := q.Resource.String()
	if q.Namespace != "" {
		s += " in namespace " + q.Namespace
	}
	if q.LabelSelector != "" {
		s += " with labels " + q.LabelSelector
	}
	if q.FieldSelector != "" {
		s += " with fields " + q.FieldSelector
	}
	return s
}

// ParseResource reads the resource.version.group form of Resource.String.
// Kind and Arg are not part of it; recordings carry them beside it.
func ParseResource(s string) (schema.GroupVersionResource, error) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return schema.GroupVersionResource{}, fmt.Errorf("resource %q: want resource.version[.group]", s)
	}
	gvr := schema.GroupVersionResource{Resource: parts[0], Version: parts[1]}
	if len(parts) == 3 {
		gvr.Group = parts[2]
	}
	return gvr, nil
}
