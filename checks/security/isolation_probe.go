package security

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DevicesLabel marks the device isolation probe's pods.
const DevicesLabel = "aiconform.io/devices"

// The probe's pods and containers: pod a holds one accelerator in its
// holder container beside a bystander that asks for none; pod b holds
// another; pod none asks for none, but names every device in a variable
// as CUDA images do.
const (
	podA      = "aiconform-devices-a"
	podB      = "aiconform-devices-b"
	podNone   = "aiconform-devices-none"
	holder    = "holder"
	bystander = "bystander"
)

// DeviceIsolationProbe runs the program's test plan for
// secure_accelerator_access on one accelerator node, reading back what
// each container sees.
type DeviceIsolationProbe struct{}

// Meta implements checks.Check.
func (DeviceIsolationProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "device-isolation-probe", Title: "A container sees the accelerators it was given, and no other",
		Requirement: "secure_accelerator_access", Probe: true,
		Description: "Under --probe only. Picks the Ready, schedulable accelerator node with the most of an " +
			"accelerator resource free (only taints named after the resource, which the pods tolerate), and " +
			"runs three pods there (--probe-shell-image, non-root, no privilege, all capabilities dropped, " +
			"CPU and memory limits, a deadline): pod a with a container holding one accelerator and a second " +
			"container asking for none; pod b holding another (when two are free); pod none asking for none " +
			"but setting NVIDIA_VISIBLE_DEVICES=all (for an NVIDIA resource) as CUDA images do. Each " +
			"container prints `" + hardware.DescribeAccelerators(lsCommand) + "` (the folders of the device nodes " +
			"checks/hardware/accelerators.yaml knows) and `nvidia-smi -L`; the output is read back " +
			"through the API server as `kubectl logs` does. Passes when each holder sees exactly one " +
			"accelerator device node (or GPU), the containers asking for none see none, and the two holders " +
			"see different devices. Warns when only one accelerator was free, so the two holders could not " +
			"be compared. Fails naming the container and the devices it saw otherwise. Skips without an " +
			"accelerator resource on a Ready node; an error when none is free or the output cannot be read.",
		Remediation: "A container asking for none that sees devices: with the NVIDIA Container Toolkit, set " +
			"accept-nvidia-visible-devices-envvar-when-unprivileged = false and the device plugin's " +
			"DEVICE_LIST_STRATEGY to volume-mounts or cdi-cri; make sure the runtime is not set to inject " +
			"every GPU by default. A holder seeing several devices: the device plugin or the runtime hook " +
			"hands out more than allocated.",
	}
}

// devicePlan is where the probe runs and with what.
type devicePlan struct {
	node string
	// target is the node itself, once one has an accelerator free.
	target *corev1.Node
	res    corev1.ResourceName
	free   int64
}

// Run implements checks.Check.
func (DeviceIsolationProbe) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs pods on an accelerator node, with and without a request, and reads back the devices each container sees")
		return r, nil
	}
	accel, err := hardware.AcceleratorTable()
	if err != nil {
		return r, err
	}
	plan, skip, err := planDevices(ctx, env)
	if err != nil || skip != "" {
		if skip != "" {
			r.Finish(checks.Skip, "%s", skip)
		}
		return r, err
	}
	if plan.free == 0 {
		return r, fmt.Errorf("no Ready accelerator node has a %s free to give a probe pod: it cannot be judged while they are all in use", plan.res)
	}
	names := []string{podA, podNone}
	if plan.free >= 2 {
		names = []string{podA, podB, podNone}
	}
	var pods []*unstructured.Unstructured
	for _, name := range names {
		pod, err := devicesPod(name, s.ShellImage, devicesScript(accel), plan, s.Timeout)
		if err != nil {
			return r, err
		}
		pods = append(pods, pod)
	}
	outputs, err := checks.PrintingPods(ctx, env, &r, DevicesLabel, pods, func(pod, container string) string { return devicesNote(pod, container, plan) })
	if err != nil {
		return checks.Refused(r, err)
	}
	views := map[string]deviceView{}
	for key, out := range outputs {
		views[key] = parseDevices(accel, out)
	}
	st, why := judgeIsolation(views, plan)
	r.Finish(st, "%s", why)
	return r, nil
}

// planDevices picks the node and the resource (checks.PickAcceleratorNode):
// the most of one accelerator free on one node, so that two holders can be
// compared.
func planDevices(ctx context.Context, env *checks.Env) (devicePlan, string, error) {
	pick, skip, err := hardware.PickAcceleratorNode(ctx, env, nil)
	if err != nil || skip != "" {
		return devicePlan{}, skip, err
	}
	plan := devicePlan{target: pick.Node, res: pick.Resource, free: pick.Free}
	if pick.Node != nil {
		plan.node = pick.Node.Name
	}
	return plan, "", nil
}

// devicesPod is one of the probe's pods, bound for the plan's node.
func devicesPod(name, image, script string, plan devicePlan, timeout time.Duration) (*unstructured.Unstructured, error) {
	spec := checks.PrintingPodSpec(image, script, plan.target, timeout, string(plan.res))
	base := spec.Containers[0]
	with := *base.DeepCopy()
	with.Name = holder
	one := *resource.NewQuantity(1, resource.DecimalSI)
	with.Resources.Requests[plan.res] = one
	with.Resources.Limits[plan.res] = one
	without := *base.DeepCopy()
	without.Name = bystander
	switch name {
	case podA:
		spec.Containers = []corev1.Container{with, without}
	case podB:
		spec.Containers = []corev1.Container{with}
	default:
		if strings.HasPrefix(string(plan.res), "nvidia.com/") {
			without.Env = []corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}
		}
		spec.Containers = []corev1.Container{without}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{DevicesLabel: "probe"}}, Spec: spec}
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

// devicesNote says what a pod is for, or what a container's output is.
func devicesNote(pod, container string, plan devicePlan) string {
	switch {
	case container == holder:
		return fmt.Sprintf("what container %s of pod %s, holding one %s, sees", container, pod, plan.res)
	case container != "":
		return fmt.Sprintf("what container %s of pod %s, asking for no accelerator, sees", container, pod)
	case pod == podA:
		return fmt.Sprintf("on node %s: a container holding one %s, and a second container asking for none", plan.node, plan.res)
	case pod == podB:
		return fmt.Sprintf("on node %s: another pod holding one %s", plan.node, plan.res)
	}
	return fmt.Sprintf("on node %s: a pod asking for no accelerator (NVIDIA_VISIBLE_DEVICES=all where the resource is NVIDIA's, as CUDA images set it)", plan.node)
}

// judgeIsolation judges what the containers saw, keyed pod/container.
func judgeIsolation(views map[string]deviceView, plan devicePlan) (checks.Status, string) {
	var fails, holders []string
	for _, key := range checks.SortedKeys(views) {
		v := views[key]
		if !v.listed {
			fails = append(fails, fmt.Sprintf("container %s printed no listing of /dev: it did not run the probe's script "+
				"(is --probe-shell-image an image with sh and ls?)", key))
			continue
		}
		if strings.HasSuffix(key, "/"+holder) {
			holders = append(holders, key)
			if v.count() != 1 {
				fails = append(fails, fmt.Sprintf("container %s holds one %s but sees %s", key, plan.res, v.seen()))
			}
			continue
		}
		if v.count() > 0 {
			fails = append(fails, fmt.Sprintf("container %s asks for no accelerator but sees %s", key, v.seen()))
		}
	}
	for i, a := range holders {
		for _, b := range holders[i+1:] {
			if both := shares(views[a], views[b]); len(both) > 0 {
				fails = append(fails, fmt.Sprintf("containers %s and %s both see %s", a, b, strings.Join(both, ", ")))
			}
		}
	}
	if len(fails) > 0 {
		return checks.Fail, fmt.Sprintf("on node %s: %s", plan.node, strings.Join(fails, "; "))
	}
	var saw []string
	for _, key := range holders {
		saw = append(saw, key+" "+views[key].seen())
	}
	var none []string
	for _, key := range checks.SortedKeys(views) {
		if !slices.Contains(holders, key) {
			none = append(none, key)
		}
	}
	why := fmt.Sprintf("on node %s, each container holding one %s saw exactly one (%s); %s, asking for none, saw none", plan.node, plan.res, strings.Join(saw, "; "), strings.Join(none, " and "))
	if len(holders) < 2 {
		return checks.Warn, why + "; only one was free, so two holders could not be compared"
	}
	return checks.Pass, why + "; the two holders saw different devices"
}
