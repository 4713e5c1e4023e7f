package rig

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DRANETDriver is the name DRANET publishes network devices under.
const DRANETDriver = "dra.net"

// DRANETClass is a DeviceClass of DRANET's RDMA NICs.
func DRANETClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "dranet-rdma"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].rdma == true", DRANETDriver, DRANETDriver)},
		}}},
	}
}

// DRANETSlice is what DRANET publishes for a node with two RDMA NICs: their
// interface, PCI address, NUMA node and RDMA attributes, as the recordings
// and the benchmark cluster both write it. No driver runs behind it.
func DRANETSlice(node string) *resourcev1.ResourceSlice {
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + DRANETDriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: DRANETDriver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range 2 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{
			Name: fmt.Sprintf("pci-0000-%x-00-0", 0x8a+i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				DRANETDriver + "/ifName":     {StringValue: ptr.To(fmt.Sprintf("ens%df0np0", 10+i))},
				DRANETDriver + "/pciAddress": {StringValue: ptr.To(fmt.Sprintf("0000:%x:00.0", 0x8a+i))},
				DRANETDriver + "/numaNode":   {IntValue: ptr.To(int64(i))},
				DRANETDriver + "/rdma":       {BoolValue: ptr.To(true)},
			},
		})
	}
	return slice
}
