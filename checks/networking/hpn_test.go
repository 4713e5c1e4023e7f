package networking_test

import (
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/checks/networking"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// dranetAttrs are attributes DRANET publishes for an RDMA NIC.
var dranetAttrs = map[string]string{"dra.net/ifName": "eth1", "dra.net/pciAddress": "0000:8c:00.0", "dra.net/numaNode": "1", "dra.net/rdma": "true"}

// withDRANET adds DRANET's devices on the GPU node, and its class.
func withDRANET(attrs map[string]string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.ResourceSlices = append(w.ResourceSlices, checkstest.NetworkSlice("gpu-node-1", "dra.net", 4, attrs))
		w.DeviceClasses = append(w.DeviceClasses, checkstest.DeviceClass("dranet", "dra.net"))
	}
}

// withNodeResource adds an allocatable resource to the GPU node.
func withNodeResource(name, n string) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		node := w.Nodes[1]
		node.Status.Capacity[corev1.ResourceName(name)] = resource.MustParse(n)
		node.Status.Allocatable[corev1.ResourceName(name)] = resource.MustParse(n)
	}
}

// withoutDRA unregisters resource.k8s.io/v1.
func withoutDRA(w *checkstest.World) {
	var kept []*unstructured.Unstructured
	for _, s := range w.APIServices {
		if s.GetName() != "v1.resource.k8s.io" {
			kept = append(kept, s)
		}
	}
	w.APIServices = kept
}

func both(edits ...func(w *checkstest.World)) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		for _, e := range edits {
			e(w)
		}
	}
}

func TestNetworkDevices(t *testing.T) {
	checkstest.RunCases(t, networking.NetworkDevices{}, on(checkstest.WithoutNetworks, []checkstest.Case{
		{Name: "DRANET publishes described devices", Edit: withDRANET(dranetAttrs), Status: checks.Pass,
			Reason:  "DRANET (dra.net) publishes 4 devices on 1 node, with attributes dra.net/ifName, dra.net/numaNode, dra.net/pciAddress, dra.net/rdma",
			Details: []string{"DeviceClass dranet selects the devices of DRANET (dra.net)"}},
		{Name: "SR-IOV DRA driver without a class, beside a device plugin", Edit: both(func(w *checkstest.World) {
			w.ResourceSlices = append(w.ResourceSlices, checkstest.NetworkSlice("gpu-node-1", "sriovnetwork.k8snetworkplumbingwg.io", 8,
				map[string]string{"sriovnetwork.k8snetworkplumbingwg.io/pciAddress": "0000:3b:02.0"}))
		}, withNodeResource("rdma/hca_shared_devices_a", "63")), Status: checks.Pass,
			Reason: "DRA driver for SR-IOV (sriovnetwork.k8snetworkplumbingwg.io) publishes 8 devices on 1 node, with attributes sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
			Details: []string{
				"no DeviceClass names DRA driver for SR-IOV (sriovnetwork.k8snetworkplumbingwg.io) in its selectors: a claim requests devices through a class",
				"also exposed as device-plugin resources, requested by count: rdma/hca_shared_devices_a on 1 node",
			}},
		{Name: "DRANET devices without attributes", Edit: withDRANET(nil), Status: checks.Warn,
			Reason: "DRANET (dra.net) publishes 4 devices on 1 node with no attribute: the scheduler cannot tell the devices apart"},
		{Name: "RDMA shared device plugin only", Edit: withNodeResource("rdma/hca_shared_devices_a", "63"), Status: checks.Warn,
			Reason: "network devices are only device-plugin resources (rdma/hca_shared_devices_a on 1 node): schedulable by count, but their characteristics (RDMA, PCI address, NUMA node) are not discoverable to the scheduler"},
		{Name: "EFA", Edit: withNodeResource("vpc.amazonaws.com/efa", "32"), Status: checks.Warn,
			Reason: "(vpc.amazonaws.com/efa on 1 node)"},
		{Name: "nothing: the GPU driver's devices are no network devices", Status: checks.Fail,
			Reason: "no network device is exposed as a resource: no network DRA driver (dra.net, sriovnetwork.k8snetworkplumbingwg.io) publishes devices, and no node offers a network device plugin's resource (intel.com/*, openshift.io/*, rdma/*, vpc.amazonaws.com/efa, networking.gke.io.networks/*)"},
		{Name: "a GKE network's addresses are no device", Edit: withNodeResource("networking.gke.io.networks/blue.IP", "128"), Status: checks.Fail,
			Reason: "no network device is exposed as a resource"},
		{Name: "a GKE device network is", Edit: withNodeResource("networking.gke.io.networks/rdma-0", "1"), Status: checks.Warn,
			Reason: "(networking.gke.io.networks/rdma-0 on 1 node)"},
		{Name: "no DRA API", Edit: both(withDRANET(dranetAttrs), withoutDRA), Status: checks.Fail,
			Reason:  "publishes devices (resource.k8s.io/v1 is not served), and no node offers",
			Details: []string{"resource.k8s.io/v1 is not served: no DRA driver can publish network devices"}},
	}), func(t *testing.T, tc checkstest.Case, r checks.Result) {
		assert.NotEmpty(t, r.Evidence)
	})
}

// withAttachments installs Multus' CRD and the given attachments.
func withAttachments(objs ...*unstructured.Unstructured) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.CRDs = append(w.CRDs, checkstest.AttachmentsCRD())
		if w.Custom == nil {
			w.Custom = map[schema.GroupVersionResource][]*unstructured.Unstructured{}
		}
		w.Custom[checkstest.AttachmentsGVR] = append(w.Custom[checkstest.AttachmentsGVR], objs...)
	}
}

// withGKENetworks installs GKE's Network CRD and the given networks.
func withGKENetworks(objs ...*unstructured.Unstructured) func(w *checkstest.World) {
	return func(w *checkstest.World) {
		w.CRDs = append(w.CRDs, checkstest.GKENetworksCRD())
		if w.Custom == nil {
			w.Custom = map[schema.GroupVersionResource][]*unstructured.Unstructured{}
		}
		w.Custom[checkstest.GKENetworksGVR] = append(w.Custom[checkstest.GKENetworksGVR], objs...)
	}
}

func TestMultiNetwork(t *testing.T) {
	sriov := `{"cniVersion":"1.0.0","name":"sriov-a","type":"sriov","ipam":{"type":"whereabouts","range":"10.56.217.0/24"}}`
	conflist := `{"cniVersion":"1.0.0","name":"mv","plugins":[{"type":"macvlan","master":"eth1"},{"type":"tuning"}]}`
	probed := checkstest.Attachment("ml", "canary", sriov)
	probed.SetLabels(map[string]string{probe.RunLabel: "r1"})
	checkstest.RunCases(t, networking.MultiNetwork{}, on(checkstest.WithoutNetworks, []checkstest.Case{
		{Name: "Multus networks", Edit: withAttachments(
			checkstest.Attachment("ml", "sriov-a", sriov),
			checkstest.Attachment("ml", "mv", conflist),
			checkstest.Attachment("rdma", "ib", ""),
			checkstest.Attachment("ml", "broken", "{not json"),
			probed,
		), Status: checks.Pass,
			Reason: "Multus: 4 NetworkAttachmentDefinitions in 2 namespaces, CNI plugins config on the nodes (1), macvlan+tuning (1), sriov (1), unreadable config (1)",
			Details: []string{
				"namespace ml: 3 NetworkAttachmentDefinitions (macvlan+tuning, sriov, unreadable config)",
				"namespace rdma: 1 NetworkAttachmentDefinition (config on the nodes)",
				"no GKE Network CRD (networks.networking.gke.io)",
			}},
		{Name: "Multus installed, no network", Edit: withAttachments(), Status: checks.Fail,
			Reason: "pods cannot attach further network interfaces: the NetworkAttachmentDefinition CRD is installed, but no NetworkAttachmentDefinition is defined"},
		{Name: "GKE multi-networking", Edit: withGKENetworks(checkstest.GKENetwork("default", "L3"), checkstest.GKENetwork("rdma-0", "Device")), Status: checks.Pass,
			Reason: "GKE multi-networking: 1 Network beside the default, rdma-0 (Device)"},
		{Name: "GKE default network only", Edit: withGKENetworks(checkstest.GKENetwork("default", "L3")), Status: checks.Fail,
			Reason: "no GKE Network beside the default pod network"},
		{Name: "DRANET", Edit: withDRANET(dranetAttrs), Status: checks.Pass,
			Reason: "DRANET (dra.net) publishes 4 devices on 1 node, each moved into the pod that claims it"},
		{Name: "nothing", Status: checks.Fail,
			Reason: "pods cannot attach further network interfaces: no NetworkAttachmentDefinition CRD (network-attachment-definitions.k8s.cni.cncf.io): Multus is not installed; no GKE Network CRD (networks.networking.gke.io); no network DRA driver (dra.net, sriovnetwork.k8snetworkplumbingwg.io) publishes devices"},
	}), func(t *testing.T, tc checkstest.Case, r checks.Result) {
		// A network's config is never repeated.
		assert.NotContains(t, r.Reason, "10.56.217.0")
		for _, d := range r.Details {
			assert.NotContains(t, d, "10.56.217.0")
		}
	})
}
