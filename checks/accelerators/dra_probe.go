package accelerators

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// DRALabel marks the DRA probe's pod.
const DRALabel = "aiconform.io/dra"

// draProbeName names the probe's ResourceClaimTemplate and its pod;
// draRequest is the name of its one request, and of the pod's claim.
const (
	draProbeName = "aiconform-dra"
	draRequest   = "device"
)

// The DRA probe's watches.
const (
	draPodsTag   = "pods"
	draClaimsTag = "claims"
)

// DRAProbe asks for one device of a DeviceClass through a
// ResourceClaimTemplate, as a workload does, and watches the claim being
// allocated and the pod bound where the device is.
type DRAProbe struct{}

// Meta implements checks.Check.
func (DRAProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "dra-probe", Title: "A claim for a device of a DeviceClass is allocated, and its pod bound where the device is",
		Requirement: "dra_support", Probe: true,
		Description: "Under --probe only. Picks a DeviceClass that selects a driver publishing devices on a Ready " +
			"node (an accelerator driver of checks/hardware/dra_drivers.yaml first). Creates a ResourceClaimTemplate " +
			"asking for exactly one device of it, and a pod that uses the template (--probe-image, non-root, " +
			"CPU and memory limits, a deadline; it tolerates taints named after accelerator resources). " +
			"Watches the pod and the claims of the run's namespace (no polling), with a timeline: the claim " +
			"the controller makes from the template, its allocation (driver, pool, device, node), the pod's " +
			"binding. Passes when the claim is allocated a device and the pod is bound to the node the " +
			"allocation names, within the probe timeout; then deletes the pod and reports whether the claim " +
			"was collected with it. Fails when the claim is not allocated or the pod not bound, quoting the " +
			"scheduler. Skips when no class selects devices on a Ready node.",
		Remediation: "A claim not allocated: the scheduler's message on the pod says why (no device matches the " +
			"class's selectors, all devices allocated, the driver's slices on NotReady nodes). A pod bound " +
			"but not running: the driver's kubelet plugin must prepare the device on that node.",
	}
}

// draWatch follows the probe's pod and claims.
type draWatch struct {
	now      func() time.Time
	timeline *probe.Timeline
	pod      *corev1.Pod
	claims   map[string]*resourcev1.ResourceClaim
	said     map[string]bool
	pending  string // the scheduler's last word on the pod
}

// Run implements checks.Check.
func (DRAProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe asks for a device of a DeviceClass through a ResourceClaimTemplate and watches it being allocated")
		return r, nil
	}
	if ok, err := draSkipUnlessServed(ctx, env, &r); !ok {
		return r, err
	}
	r.Evidence = nil // the read-only DRA checks show these reads
	class, driver, tolerate, err := draProbeClass(ctx, env)
	if err != nil {
		return r, err
	}
	if class == "" {
		r.Finish(checks.Skip, "no DeviceClass selects devices a driver publishes on a Ready node: there is nothing to allocate (see dra-devices)")
		return r, nil
	}
	tmpl, err := draTemplate(class)
	if err != nil {
		return r, err
	}
	pod, err := draPod(s.Image, tolerate, s.Timeout)
	if err != nil {
		return r, err
	}
	p, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer p.Stop()
	w := &draWatch{now: env.Now, timeline: &p.Timeline, claims: map[string]*resourcev1.ResourceClaim{}, said: map[string]bool{}}
	why := fmt.Sprintf("one device of DeviceClass %s (driver %s)", class, driver)
	if _, err := p.Create(ctx, tmpl, why); err != nil {
		return p.Refused(err)
	}
	if _, err := p.Create(ctx, pod, "a pod whose claim is made from the template"); err != nil {
		return p.Refused(err)
	}
	if err := p.Watch(ctx, w.apply,
		probe.Source{Tag: draPodsTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: DRALabel}},
		probe.Source{Tag: draClaimsTag, GVR: cluster.ResourceClaims.GVR, Namespaced: true},
	); err != nil {
		return r, err
	}
	phase := func(done func() bool) (bool, error) { return p.Phase(ctx, done) }
	end := func() {
		fresh := env.Fresh()
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.ResourceClaims}, Namespace: s.Namespace,
			Columns: "NAME:.metadata.name,DRIVER:.status.allocation.devices.results[*].driver," +
				"POOL:.status.allocation.devices.results[*].pool," +
				"DEVICE:.status.allocation.devices.results[*].device," +
				"RESERVED_FOR:.status.reservedFor[*].name"}, "the claim made from the template, and what was allocated to it")
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: DRALabel, Wide: true}, "the pod and the node it is bound to")
	}
	finish := func(st checks.Status, format string, args ...any) (checks.Result, error) {
		end()
		r.Finish(st, format, args...)
		return r, nil
	}

	ok, err := phase(func() bool { return w.allocated() != nil && w.pod != nil && w.pod.Spec.NodeName != "" })
	if err != nil {
		return r, err
	}
	claim := w.allocated()
	switch {
	case !ok && claim == nil:
		return finish(checks.Fail, "the claim for %s was not allocated within %s (%s)", why, s.Timeout, w.pendingWhy())
	case !ok:
		return finish(checks.Fail, "the claim %s was allocated %s, but the pod was not bound within %s (%s)", claim.Name, allocationText(claim), s.Timeout, w.pendingWhy())
	}
	node, bound := allocatedNode(claim.Status.Allocation), w.pod.Spec.NodeName
	if node != "" && node != bound {
		return finish(checks.Fail, "the claim %s was allocated %s on node %s, but the pod was bound to %s", claim.Name, allocationText(claim), node, bound)
	}
	done := fmt.Sprintf("the claim %s made from the template was allocated %s, and the pod bound to "+
		"%s, %s after the pod was created", claim.Name, allocationText(claim), bound, probe.Seconds(env.Now().Sub(w.timeline.T0)))

	// The claim is the pod's: deleting the pod collects it.
	if err := p.Delete(ctx, corev1.SchemeGroupVersion.WithKind("Pod"), draProbeName, "the pod goes; the claim made for it goes with it"); err != nil {
		return finish(checks.Error, "%s; the pod could not be deleted: %v", done, err)
	}
	if ok, err := phase(func() bool { return len(w.claims) == 0 }); err != nil {
		return r, err
	} else if !ok {
		return finish(checks.Warn, "%s; the claim was still there %s after the pod was deleted (the resource claim controller collects it)", done, s.Timeout)
	}
	return finish(checks.Pass, "%s; the claim was collected with the pod", done)
}

// draProbeClass picks the class the probe asks from: one selecting a driver
// that publishes devices on a Ready node, an accelerator driver's first.
// tolerate are the taints of those nodes named after accelerator
// resources.
func draProbeClass(ctx context.Context, env *checks.Env) (class, driver string, tolerate []string, err error) {
	drivers, err := hardware.DRADrivers()
	if err != nil {
		return "", "", nil, err
	}
	rslices, err := checks.List[*resourcev1.ResourceSlice](ctx, env, cluster.Query{Resource: cluster.ResourceSlices})
	if err != nil {
		return "", "", nil, err
	}
	classes, err := checks.List[*resourcev1.DeviceClass](ctx, env, cluster.Query{Resource: cluster.DeviceClasses})
	if err != nil {
		return "", "", nil, err
	}
	nodes, err := checks.List[*corev1.Node](ctx, env, cluster.Query{Resource: cluster.Nodes})
	if err != nil {
		return "", "", nil, err
	}
	ready := map[string]*corev1.Node{}
	for _, n := range nodes {
		if st, _ := kube.NodeReady(n); st == corev1.ConditionTrue && !n.Spec.Unschedulable {
			ready[n.Name] = n
		}
	}
	onReady := map[string][]*corev1.Node{} // driver -> Ready nodes it publishes devices on
	for _, sl := range rslices {
		if sl.Spec.NodeName != nil && ready[*sl.Spec.NodeName] != nil && len(sl.Spec.Devices) > 0 {
			onReady[sl.Spec.Driver] = append(onReady[sl.Spec.Driver], ready[*sl.Spec.NodeName])
		}
	}
	rank := func(d string) int {
		if hardware.IsAcceleratorDriver(drivers, d) {
			return 0
		}
		return 1
	}
	best := 2
	for _, c := range classes {
		for _, d := range hardware.ClassDrivers(c) {
			if len(onReady[d]) > 0 && rank(d) < best {
				class, driver, best = c.Name, d, rank(d)
			}
		}
	}
	for _, n := range onReady[driver] {
		for _, t := range n.Spec.Taints {
			if hardware.IsAccelerator(corev1.ResourceName(t.Key)) && !slices.Contains(tolerate, t.Key) {
				tolerate = append(tolerate, t.Key)
			}
		}
	}
	slices.Sort(tolerate)
	return class, driver, tolerate, nil
}

// draTemplate asks for exactly one device of the class.
func draTemplate(class string) (*unstructured.Unstructured, error) {
	t := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: draProbeName},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: draRequest, Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}},
		}}},
	}
	return checks.Unstructured(t, resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"))
}

// draPod uses a claim made from the template.
func draPod(image string, tolerate []string, timeout time.Duration) (*unstructured.Unstructured, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: draProbeName, Labels: map[string]string{DRALabel: "probe"}},
		Spec:       checks.ProbePodSpec(image, nil, tolerate...),
	}
	pod.Spec.ActiveDeadlineSeconds = checks.ProbeDeadline(timeout)
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: draRequest, ResourceClaimTemplateName: ptr.To(draProbeName)}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: draRequest}}
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

func (w *draWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	switch e.Tag {
	case draClaimsTag:
		var c resourcev1.ResourceClaim
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c) != nil {
			return
		}
		prev := w.claims[c.Name]
		if e.Type == watch.Deleted {
			if prev != nil {
				delete(w.claims, c.Name)
				w.timeline.Add(w.now(), "claim %s deleted", c.Name)
			}
			return
		}
		w.claims[c.Name] = &c
		if prev == nil {
			w.timeline.Add(w.now(), "claim %s created", c.Name)
		}
		if c.Status.Allocation != nil && (prev == nil || prev.Status.Allocation == nil) {
			w.timeline.Add(w.now(), "claim %s allocated %s", c.Name, allocationText(&c))
		}
	default:
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) != nil || e.Type == watch.Deleted {
			return
		}
		prev := w.pod
		w.pod = &p
		if p.Spec.NodeName != "" && (prev == nil || prev.Spec.NodeName == "") {
			w.timeline.Add(w.now(), "pod %s bound to %s", p.Name, p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
				w.pending = fmt.Sprintf("%s: %s", c.Reason, c.Message)
				if !w.said[w.pending] {
					w.said[w.pending] = true
					w.timeline.Add(w.now(), "pod %s pending: %s", p.Name, w.pending)
				}
			}
		}
	}
}

// allocated is an allocated claim of the probe's, nil for none.
func (w *draWatch) allocated() *resourcev1.ResourceClaim {
	for _, name := range checks.SortedKeys(w.claims) {
		if c := w.claims[name]; c.Status.Allocation != nil {
			return c
		}
	}
	return nil
}

func (w *draWatch) pendingWhy() string {
	return cmp.Or(w.pending, "the scheduler said nothing")
}

// allocationText is what a claim was allocated: "device gpu-0 of pool X
// (driver D)".
func allocationText(c *resourcev1.ResourceClaim) string {
	var out []string
	for _, d := range c.Status.Allocation.Devices.Results {
		out = append(out, fmt.Sprintf("device %s of pool %s (driver %s)", d.Device, d.Pool, d.Driver))
	}
	return strings.Join(out, ", ")
}
