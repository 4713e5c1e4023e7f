package rig

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DRADriver is the driver name the rig publishes the GPU node's devices
// under: NVIDIA's DRA driver's, as its kubelet plugin would.
const DRADriver = "gpu.nvidia.com"

// DRADeviceClass is the class the rig installs for them, named as the
// driver's chart names its class of whole GPUs.
const DRADeviceClass = "gpu.nvidia.com"

// DRADevices returns what NVIDIA's DRA driver would publish for the GPU
// node, its eight GPUs in one ResourceSlice, and the DeviceClass that
// selects them. No driver runs: the kube-scheduler allocates claims from
// the slice, and kwok runs the pods, which no kubelet plugin prepares.
func DRADevices() (*resourcev1.DeviceClass, *resourcev1.ResourceSlice) {
	note := map[string]string{standInAnnotation: "the aiconform rig writes this for NVIDIA's DRA driver; no driver runs, kwok runs the pods"}
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DRADeviceClass, Annotations: note},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == '%s' && device.attributes['%s'].type == 'gpu'", DRADriver, DRADriver)},
		}}},
	}
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: GPUNodeName + "-" + DRADriver, Annotations: note},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: DRADriver, NodeName: ptr.To(GPUNodeName),
			Pool: resourcev1.ResourcePool{Name: GPUNodeName, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range GPUCount {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"type":        {StringValue: ptr.To("gpu")},
				"productName": {StringValue: ptr.To("NVIDIA H100 80GB HBM3")},
				"index":       {IntValue: ptr.To(int64(i))},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}},
		})
	}
	return class, slice
}

// PublishDRADevices writes DRADevices into the rig (what is there already
// is kept), on a full rig, whose scheduler allocates from them.
func (c *Cluster) PublishDRADevices(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	class, slice := DRADevices()
	if _, err := cs.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create DeviceClass %s: %w", class.Name, err)
	}
	if _, err := cs.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ResourceSlice %s: %w", slice.Name, err)
	}
	return nil
}

// WithdrawDRADevices deletes the ResourceSlice, as a driver that stopped
// leaves none; the DeviceClass stays.
func (c *Cluster) WithdrawDRADevices(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	_, slice := DRADevices()
	if err := cs.ResourceV1().ResourceSlices().Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
