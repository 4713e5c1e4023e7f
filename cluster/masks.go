package cluster

import (
	"bytes"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The field numbers are those of k8s.io/api/core/v1/generated.proto and
// k8s.io/apimachinery's meta/v1 and runtime generated.proto, which the API
// never renumbers.

// containerMask keeps of a container what slimPod keeps: its name,
// extended resources and claims, privilege, *_VISIBLE_DEVICES variables
// and volume mounts, so that a masked pod decodes to the slim pod itself.
var containerMask = message(
	field(1), // name
	field(7, entries(visibleDevicesVar, whole)), // env
	field(8, message( // resources
		field(1, entries(extendedEntry, whole)), // limits
		field(2, entries(extendedEntry, whole)), // requests
		field(3),                                // claims
	)),
	field(9, message(field(1), field(2), field(3))),     // volumeMounts: name, readOnly, mountPath
	field(15, entries(privilegeSet, message(field(2)))), // securityContext: privileged, if set
)

// privilegeSet says whether a security context sets privileged: slimPod
// keeps no security context that does not, and a mask that kept it empty
// would decode to one.
func privilegeSet(sc []byte) bool { return hasField(sc, 2) }

// objectMetaMask drops an object's managed fields and last-applied
// annotation, which trim drops.
var objectMetaMask = allBut(drop(17), field(12, entries(notLastApplied, whole)))

// notLastApplied says whether an annotation is not kubectl's last-applied
// configuration, a copy of the whole object as applied.
func notLastApplied(entry []byte) bool {
	key, _ := bytesField(entry, 1)
	return string(key) != lastApplied
}

// objectMask drops of any object what objectMetaMask drops.
var objectMask = allBut(field(1, objectMetaMask))

// nodeMask keeps of a node's status what trim keeps (capacity,
// allocatable, phase, its Ready condition), and drops its managed fields.
var nodeMask = allBut(field(1, objectMetaMask), field(3, message(field(1), field(2), field(3), field(4, entries(readyCondition, whole)))))

// crdMask drops of a CustomResourceDefinition its managed fields and its
// versions' schemas (spec.versions[*].schema), which trim drops: the
// schemas are most of a CRD, and no check reads them.
var crdMask = allBut(field(1, objectMetaMask), field(2, allBut(field(7, allBut(drop(4))))))

// resourceSliceMask drops of a ResourceSlice its managed fields and its
// devices' capacities (spec.devices[*].capacity), which trim drops: a map
// per device, and no check reads them (their attributes, which they read,
// are kept).
var resourceSliceMask = allBut(field(1, objectMetaMask), field(2, allBut(field(6, allBut(drop(3))))))

// templateLabels keeps of a pod template its labels.
var templateLabels = message(field(1, message(field(11))))

// deploymentMask and statefulSetMask keep of a workload listed across the
// cluster what slimWorkload keeps: all but its managed fields, its pod
// template's spec and metadata other than labels, and a StatefulSet's
// volume claim templates.
var (
	deploymentMask  = allBut(field(1, objectMetaMask), field(2, allBut(field(3, templateLabels))))
	statefulSetMask = allBut(field(1, objectMetaMask), field(2, allBut(field(3, templateLabels), drop(4))))
)

// nodePodMask keeps of a pod what slimPod keeps, so that decoding the
// masked pod and slimming it gives what slimming the whole pod gives.
var nodePodMask = message(
	field(1, message( // metadata
		field(1), field(3), field(5), // name, namespace, uid
		field(8), field(9), // creationTimestamp, deletionTimestamp
		field(11), // labels
		field(12, entries(cdiAnnotationEntry, whole)), // annotations
		field(13), // ownerReferences
	)),
	field(2, message( // spec
		field(1, entries(hostPathVolume, message(field(1), field(2, message(field(1)))))), // volumes: name, hostPath
		field(2, containerMask),                  // containers
		field(10),                                // nodeName
		field(20, containerMask),                 // initContainers
		field(32, entries(extendedEntry, whole)), // overhead
		field(39),                                // resourceClaims
	)),
	field(3, message( // status
		field(1), // phase
		field(2, entries(readyCondition, message(field(1), field(2)))), // conditions: type, status
		field(6), // podIP
	)),
)

// extendedEntry says whether an entry of a resource map names an extended
// resource, as extended does.
func extendedEntry(entry []byte) bool {
	key, _ := bytesField(entry, 1)
	return isExtended(corev1.ResourceName(key))
}

// VisibleDevicesSuffix ends the names of the variables the mask keeps of a
// node's pods' containers (slimPod keeps the same): those by which a
// vendor's container runtime hook hands devices to a container
// (NVIDIA_VISIBLE_DEVICES, ASCEND_VISIBLE_DEVICES,
// AWS_NEURON_VISIBLE_DEVICES...). The rule is by name, not a list, so that
// the cluster needs no vendor's list; the checks' accelerators.yaml refuses
// a vendor variable it would drop.
const VisibleDevicesSuffix = "_VISIBLE_DEVICES"

// visibleDevicesVar says whether an env entry is an *_VISIBLE_DEVICES
// variable with a literal value, as slimPod keeps.
func visibleDevicesVar(entry []byte) bool {
	name, _ := bytesField(entry, 1)
	return bytes.HasSuffix(name, []byte(VisibleDevicesSuffix)) && !hasField(entry, 3)
}

// cdiAnnotationEntry says whether an annotation asks for CDI devices.
func cdiAnnotationEntry(entry []byte) bool {
	key, _ := bytesField(entry, 1)
	return bytes.HasPrefix(key, []byte(CDIAnnotationPrefix))
}

// hostPathVolume says whether a volume is a hostPath one.
func hostPathVolume(entry []byte) bool {
	source, ok := bytesField(entry, 2)
	return ok && hasField(source, 1)
}

// readyCondition says whether a pod's or a node's condition is Ready.
func readyCondition(entry []byte) bool {
	t, _ := bytesField(entry, 1)
	return string(t) == string(corev1.PodReady)
}

// isExtended says whether a resource is an extended one, named in a
// vendor's domain (nvidia.com/gpu, amd.com/gpu, a NIC's rdma/...), not one
// of Kubernetes' own (CPU, memory, storage, huge pages).
func isExtended(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// listOf is the mask of a list whose items item masks, its metadata (the
// continue token) whole.
func listOf(item *fieldMask) *fieldMask {
	return message(field(1), field(2, item))
}

// The masks of the lists maskFor picks from.
var (
	nodePodList     = listOf(nodePodMask)
	deploymentList  = listOf(deploymentMask)
	statefulSetList = listOf(statefulSetMask)
	nodeList        = listOf(nodeMask)
	crdList         = listOf(crdMask)
	sliceList       = listOf(resourceSliceMask)
	objectList      = listOf(objectMask)
)

// maskFor is the mask of a page of q: what List keeps of its objects
// after trim and slimming, dropped before they are decoded.
func maskFor(q Query) *fieldMask {
	switch {
	case q.Whole:
		return objectList
	case q.nodePods():
		return nodePodList
	case q.acrossCluster() && q.Resource.GVR == Deployments.GVR:
		return deploymentList
	case q.acrossCluster() && q.Resource.GVR == StatefulSets.GVR:
		return statefulSetList
	case q.Resource.GVR == Nodes.GVR:
		return nodeList
	case q.Resource.GVR == CRDs.GVR:
		return crdList
	case q.Resource.GVR == ResourceSlices.GVR:
		return sliceList
	}
	return objectList
}

// nodePods says whether q lists the pods of a node.
func (q Query) nodePods() bool {
	return q.Resource.GVR == Pods.GVR && strings.HasPrefix(q.FieldSelector, NodeFieldSelector)
}

// acrossCluster says whether q lists every object of its kind.
func (q Query) acrossCluster() bool {
	return q.Namespace == "" && q.LabelSelector == "" && q.FieldSelector == ""
}
