package accelerators

import (
	"context"
	"errors"
	"fmt"
	"regexp"
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

// DriverLabel marks the driver version probe's pod.
const DriverLabel = "aiconform.io/driver"

// The probe's one pod and its container, which holds one accelerator.
const (
	podDriver    = "aiconform-driver"
	driverHolder = "holder"
)

// The commands that make a driver say its version to a process in a
// container, read-only and with nothing of aiconform's in the image:
// NVIDIA's kernel module in procfs, nvidia-smi where NVIDIA's container
// toolkit put it in the container (NVML asks the same kernel module), and
// the version of AMD's amdgpu module in sysfs.
const (
	nvrmCommand   = "cat /proc/driver/nvidia/version"
	smiCommand    = "nvidia-smi --query-gpu=driver_version,name --format=csv,noheader"
	amdgpuCommand = "cat /sys/module/amdgpu/version"
)

// driverCommands are the commands that read each vendor's driver, by the
// vendor's name in node_labels.yaml, the most direct word first. A vendor
// not named here is not probed: nothing documented in its stack prints
// the driver's version to a container.
var driverCommands = map[string][]string{
	"NVIDIA": {nvrmCommand, smiCommand},
	"AMD":    {amdgpuCommand},
}

// driverScript runs a vendor's commands (checks.CommandsScript).
func driverScript(vendor string) string { return checks.CommandsScript(driverCommands[vendor]...) }

// DriverVersionProbe runs a pod holding one accelerator and compares the
// driver version its container sees with the one its node advertises.
type DriverVersionProbe struct{}

// Meta implements checks.Check.
func (DriverVersionProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "driver-version-probe", Title: "A container holding an accelerator sees the driver version its node advertises",
		Requirement: "driver_runtime_management", Probe: true,
		Description: "Under --probe only. Picks the Ready, schedulable accelerator node with the most of an NVIDIA or " +
			"AMD accelerator resource free (only taints named after the resource, which the pod tolerates), " +
			"as device-isolation-probe does, and runs one pod there (--probe-shell-image, non-root, no " +
			"privilege, all capabilities dropped, CPU and memory limits, a deadline) holding one " +
			"accelerator. Its container prints what the driver says of itself: for NVIDIA `cat " +
			"/proc/driver/nvidia/version` (the kernel module's NVRM line) and `nvidia-smi " +
			"--query-gpu=driver_version,name --format=csv,noheader` (where NVIDIA's container toolkit puts " +
			"it in the container), for AMD `cat /sys/module/amdgpu/version`; the output is read back through " +
			"the API server as `kubectl logs` does. The version it sees is compared with what the node " +
			"advertises, read as accelerator-drivers reads it (a DRA driver's device attribute " +
			"driverVersion, else the vendor's labeller's label). Passes when they are equal. Fails when they " +
			"differ, or when the container holding the accelerator sees no driver. Warns when the node " +
			"advertises no version, so there is nothing to compare with. Skips without an NVIDIA or AMD " +
			"accelerator resource on a Ready node; an error when none is free, the pod does not end or its " +
			"output cannot be read.",
		Remediation: "A version that differs from the node's labels: the labeller has not relabelled the node since " +
			"the driver changed (restart GPU Feature Discovery or AMD's node labeller on it), or the driver " +
			"was upgraded under running nodes without a drain. A container holding an accelerator that sees " +
			"no driver: the driver is not loaded on the node, or the container runtime does not give " +
			"containers the driver (NVIDIA's container toolkit as the runtime or its CDI specs; for AMD, the " +
			"out-of-tree amdgpu driver is the one with a version file).",
	}
}

// driverTarget is what the probe compares on: the node, the resource its
// pod holds, and what the node advertises of the vendor's driver.
type driverTarget struct {
	node   *corev1.Node
	res    corev1.ResourceName
	vendor vendorLabels
	// advertised is the node's own word on its driver, and from says
	// where it is written; "" when the node says nothing.
	advertised, from string
}

// Run implements checks.Check.
func (DriverVersionProbe) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs a pod holding one accelerator on an "+
			"accelerator node, and compares the driver version its container sees with "+
			"the one the node advertises")
		return r, nil
	}
	t, skip, err := planDriver(ctx, env, &r)
	if err != nil || skip != "" || r.Status != "" {
		if skip != "" {
			r.Finish(checks.Skip, "%s", skip)
		}
		return r, err
	}
	pod, err := checks.Unstructured(driverPod(s.ShellImage, t, s.Timeout), corev1.SchemeGroupVersion.WithKind("Pod"))
	if err != nil {
		return r, err
	}
	outputs, err := checks.PrintingPods(ctx, env, &r, DriverLabel, []*unstructured.Unstructured{pod}, func(_, container string) string {
		if container != "" {
			return fmt.Sprintf("what the %s driver says to a container holding one %s", t.vendor.Vendor, t.res)
		}
		return fmt.Sprintf("on node %s: a container holding one %s", t.node.Name, t.res)
	})
	if err != nil {
		return checks.Refused(r, err)
	}
	st, why := judgeDriver(checks.CommandOutputs(outputs[podDriver+"/"+driverHolder]), t)
	if st == checks.Error {
		return r, errors.New(why)
	}
	r.Finish(st, "%s", why)
	return r, nil
}

// planDriver picks the node as the device isolation probe does
// (checks.PickAcceleratorNode), among the resources of the vendors the
// probe reads, and reads what the node advertises, showing it. With no
// accelerator node, r skips; skip says why there is none to probe.
func planDriver(ctx context.Context, env *checks.Env, r *checks.Result) (driverTarget, string, error) {
	ns, err := labelledNodes(ctx, env, r)
	if ns == nil {
		return driverTarget{}, "", err
	}
	probed := func(res corev1.ResourceName) bool {
		return slices.ContainsFunc(ns, func(ln *labelledNode) bool { _, ok := probedVendor(ln, res); return ok })
	}
	pick, skip, err := hardware.PickAcceleratorNode(ctx, env, probed)
	if skip != "" {
		// Said in the probe's terms: a node of another vendor, or one
		// offering accelerators through DRA only, is not probed.
		skip = "no Ready node offers an NVIDIA or AMD accelerator resource for the probe's " +
			"pod to request (the probe reads those vendors' drivers; a DRA-only node's " +
			"driver version is read by accelerator-drivers alone)"
	}
	if err != nil || skip != "" {
		return driverTarget{}, skip, err
	}
	if pick.Free == 0 {
		return driverTarget{}, "", fmt.Errorf("no Ready accelerator node has a %s free to give a probe pod: it cannot be "+
			"judged while they are all in use", pick.Resource)
	}
	i := slices.IndexFunc(ns, func(ln *labelledNode) bool { return ln.node.Name == pick.Node.Name })
	if i < 0 {
		return driverTarget{}, "", fmt.Errorf("node %s offers %s but is not among the accelerator nodes", pick.Node.Name, pick.Resource)
	}
	ln := ns[i]
	v, _ := probedVendor(ln, pick.Resource)
	t := driverTarget{node: pick.Node, res: pick.Resource, vendor: v}
	t.advertised, t.from = ln.advertisedDriver(v)
	labelEvidence(ctx, env, r, ns[i:i+1], func(v vendorLabels) []string {
		return v.labelKeys(slices.Concat([]string{v.DriverVersion}, v.DriverVersionParts)...)
	}, "what the probed node advertises of its driver, as its vendor's labeller publishes it")
	sliceDriverEvidence(ctx, env, r, ns[i:i+1])
	return t, "", nil
}

// probedVendor is the vendor of the node serving res whose driver the
// probe reads.
func probedVendor(ln *labelledNode, res corev1.ResourceName) (vendorLabels, bool) {
	for _, v := range ln.vendors {
		if v.serves(res) && driverCommands[v.Vendor] != nil {
			return v, true
		}
	}
	return vendorLabels{}, false
}

// driverPod is the probe's pod: one container holding one of the
// accelerator, bound for the node.
func driverPod(image string, t driverTarget, timeout time.Duration) *corev1.Pod {
	spec := checks.PrintingPodSpec(image, driverScript(t.vendor.Vendor), t.node, timeout, string(t.res))
	c := &spec.Containers[0]
	c.Name = driverHolder
	one := *resource.NewQuantity(1, resource.DecimalSI)
	c.Resources.Requests[t.res] = one
	c.Resources.Limits[t.res] = one
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podDriver, Labels: map[string]string{DriverLabel: "probe"}}, Spec: spec}
}

// driverOutput is what the container printed under each command's
// heading (checks.CommandOutputs); a command missing did not run.
type driverOutput map[string]string

// versionWord is a driver version as the tools print it: 570.124.06,
// 6.10.5, with a packaging suffix at most.
var versionWord = regexp.MustCompile(`^\d+(\.\d+)+([-+~][0-9A-Za-z.+~-]+)?$`)

// nvrmVersion is the version in the kernel module's NVRM line: the first
// word that is one, after the module's name and architecture
// ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb
// 26 ...", or "... Open Kernel Module for x86_64  570.124.06  Release
// Build ...").
func nvrmVersion(out string) string {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "NVRM version:")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(rest) {
			if versionWord.MatchString(w) {
				return w
			}
		}
	}
	return ""
}

// smiVersion is the driver version of the first GPU nvidia-smi lists in
// CSV without a header ("570.124.06, NVIDIA H100 80GB HBM3"); its
// complaints ("NVIDIA-SMI has failed because ...") have none.
func smiVersion(out string) string {
	for _, line := range strings.Split(out, "\n") {
		first, _, _ := strings.Cut(line, ",")
		if w := strings.TrimSpace(first); versionWord.MatchString(w) {
			return w
		}
	}
	return ""
}

// wholeVersion is a file holding a version and nothing else, as sysfs
// holds a module's.
func wholeVersion(out string) string {
	if w := strings.TrimSpace(out); versionWord.MatchString(w) {
		return w
	}
	return ""
}

// versionParsers read each command's output.
var versionParsers = map[string]func(string) string{
	nvrmCommand:   nvrmVersion,
	smiCommand:    smiVersion,
	amdgpuCommand: wholeVersion,
}

// seenVersion is one command's reading of the driver's version.
type seenVersion struct {
	command, version string
}

// driverSeen are the versions a container's output shows of the vendor's
// driver, in the order of the vendor's commands.
func driverSeen(out driverOutput, vendor string) []seenVersion {
	var seen []seenVersion
	for _, c := range driverCommands[vendor] {
		if v := versionParsers[c](out[c]); v != "" {
			seen = append(seen, seenVersion{command: c, version: v})
		}
	}
	return seen
}

// judgeDriver compares what the container saw with what its node
// advertises. Error stands for output that says nothing either way: the
// container did not run the script.
func judgeDriver(out driverOutput, t driverTarget) (checks.Status, string) {
	vendor := t.vendor.Vendor
	where := fmt.Sprintf("on node %s, the container holding one %s", t.node.Name, t.res)
	cmds := driverCommands[vendor]
	if !slices.ContainsFunc(cmds, func(c string) bool { _, ok := out[c]; return ok }) {
		return checks.Error, fmt.Sprintf("%s printed none of the probe's commands: it did not run the script (is "+
			"--probe-shell-image an image with sh and cat?)", where)
	}
	seen := driverSeen(out, vendor)
	if len(seen) == 0 {
		var said []string
		for _, c := range cmds {
			said = append(said, fmt.Sprintf("`%s` printed %s", c, quoteOutput(out[c])))
		}
		return checks.Fail, fmt.Sprintf("%s sees no %s driver: %s", where, vendor, strings.Join(said, "; "))
	}
	got := seen[0]
	for _, other := range seen[1:] {
		if other.version != got.version {
			return checks.Fail, fmt.Sprintf("%s sees two %s drivers: %s by `%s`, %s by `%s`", where, vendor, got.version, got.command, other.version, other.command)
		}
	}
	saw := fmt.Sprintf("%s sees %s driver %s (`%s`)", where, vendor, got.version, got.command)
	switch {
	case t.advertised == "":
		return checks.Warn, fmt.Sprintf("%s, but the node advertises no driver version (no DRA device attribute "+
			"driverVersion, no %s label): nothing to compare it with", saw, t.vendor.Labeller)
	case t.advertised != got.version:
		return checks.Fail, fmt.Sprintf("%s, but the node advertises %s (%s)", saw, t.advertised, t.from)
	}
	return checks.Pass, fmt.Sprintf("%s, and the node advertises %s (%s)", saw, t.advertised, t.from)
}

// quoteOutput is a command's output on one line for a reason, cut short.
func quoteOutput(s string) string {
	if s == "" {
		return "nothing"
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return fmt.Sprintf("%q", s)
}
