package security

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SandboxLabel marks the sandbox probe's pods.
const SandboxLabel = "aiconform.io/sandbox"

// The sandbox probe's two pods, on one node: one in the sandbox's
// RuntimeClass, one beside it as any pod runs.
const (
	podSandboxed = "aiconform-sandboxed"
	podBeside    = "aiconform-beside"
)

// What the sandbox probe's containers print, each section headed by its
// command as a shell prompt shows it: the kernel release they see, and the
// kernel's boot id, which differs between two kernels even of one release.
const (
	unameCommand  = "uname -r"
	bootIDCommand = "cat /proc/sys/kernel/random/boot_id"
)

var kernelScript = checks.CommandsScript(unameCommand, bootIDCommand)

// SandboxProbe runs a pod in a sandbox RuntimeClass and one beside it on
// the same node, and compares the kernel each sees.
type SandboxProbe struct{}

// Meta implements checks.Check.
func (SandboxProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "sandbox-probe", Title: "A pod in the sandbox sees another kernel than the pod beside it",
		Requirement: "workload_sandboxing", Probe: true,
		Description: "Under --probe only. Takes the first sandbox RuntimeClass (by name) that admits a Ready, " +
			"schedulable node (see sandbox-runtimes), and runs two pods on one such node " +
			"(--probe-shell-image, non-root, no privilege, all capabilities dropped, CPU and memory limits, " +
			"a deadline): one in the RuntimeClass, with its tolerations, and one beside it as any pod runs. " +
			"Each prints `uname -r` and `cat /proc/sys/kernel/random/boot_id`, read back through the API " +
			"server as `kubectl logs` does. Passes when the sandboxed pod sees another kernel release or " +
			"another boot id than the pod beside it: a kernel of its own. Fails when it sees the node's own " +
			"kernel, or a pod could not run the script. Skips when no sandbox RuntimeClass admits a Ready " +
			"node; an error when the pods do not end or their output cannot be read.",
		Remediation: "A sandboxed pod that sees the node's kernel is not sandboxed: the RuntimeClass's handler is not " +
			"the sandbox on that node (check the node's containerd runtime configuration for the handler's " +
			"name), or the sandbox passes the host kernel through.",
	}
}

// Run implements checks.Check.
func (SandboxProbe) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs a pod in a sandbox RuntimeClass and one beside it, and compares the kernel each sees")
		return r, nil
	}
	found, _, err := sandboxClasses(ctx, env)
	if err != nil {
		return r, err
	}
	var pick *sandboxClass
	for i := range found {
		if len(found[i].nodes) > 0 {
			pick = &found[i]
			break
		}
	}
	if pick == nil {
		r.Finish(checks.Skip, "no sandbox RuntimeClass admits a Ready node: there is nothing to run a pod in (see sandbox-runtimes)")
		return r, nil
	}
	node := pick.nodes[0]
	var pods []*unstructured.Unstructured
	for _, name := range []string{podSandboxed, podBeside} {
		pod, err := kernelPod(name, s.ShellImage, pick, node, s.Timeout)
		if err != nil {
			return r, err
		}
		pods = append(pods, pod)
	}
	outputs, err := checks.PrintingPods(ctx, env, &r, SandboxLabel, pods, func(pod, container string) string {
		switch {
		case container != "":
			return "the kernel pod " + pod + " sees"
		case pod == podSandboxed:
			return fmt.Sprintf("on node %s, in RuntimeClass %s (%s)", node.Name, pick.class.Name, pick.sandbox)
		}
		return fmt.Sprintf("on node %s, beside it, as any pod runs", node.Name)
	})
	if err != nil {
		return checks.Refused(r, err)
	}
	st, why := judgeKernels(parseKernel(outputs[podSandboxed+"/probe"]), parseKernel(outputs[podBeside+"/probe"]))
	r.Finish(st, "on node %s, in RuntimeClass %s (%s): %s", node.Name, pick.class.Name, pick.sandbox, why)
	return r, nil
}

// kernelPod is one of the probe's pods, on the node, in the sandbox's
// RuntimeClass when it is the sandboxed one.
func kernelPod(name, image string, sc *sandboxClass, node *corev1.Node, timeout time.Duration) (*unstructured.Unstructured, error) {
	spec := checks.PrintingPodSpec(image, kernelScript, node, timeout)
	if name == podSandboxed {
		spec.RuntimeClassName = &sc.class.Name
	}
	// Both tolerate what the sandbox's nodes are tainted with, so that
	// both run on the node the sandbox runs on.
	if sc.class.Scheduling != nil {
		spec.Tolerations = append(spec.Tolerations, sc.class.Scheduling.Tolerations...)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{SandboxLabel: "probe"}}, Spec: spec}
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

// kernelView is what one container printed of its kernel.
type kernelView struct {
	release, bootID string
}

// parseKernel reads a container's output; an empty field is one it did
// not print.
func parseKernel(out string) kernelView {
	var v kernelView
	sections := checks.CommandOutputs(out)
	for _, line := range strings.Split(sections[unameCommand], "\n") {
		if line = strings.TrimSpace(line); line != "" {
			v.release = line
			break
		}
	}
	for _, line := range strings.Split(sections[bootIDCommand], "\n") {
		if line = strings.TrimSpace(line); len(line) == 36 && strings.Count(line, "-") == 4 {
			v.bootID = line
			break
		}
	}
	return v
}

// judgeKernels compares what the sandboxed pod and the pod beside it saw.
func judgeKernels(in, beside kernelView) (checks.Status, string) {
	switch {
	case in.release == "" || in.bootID == "":
		return checks.Fail, "the sandboxed pod printed no kernel release and boot id: it did not run the probe's script (is --probe-shell-image an image with sh?)"
	case beside.release == "" || beside.bootID == "":
		return checks.Fail, "the pod beside it printed no kernel release and boot id: it did not run the probe's script (is --probe-shell-image an image with sh?)"
	case in.bootID == beside.bootID:
		return checks.Fail, fmt.Sprintf("the sandboxed pod sees the node's own kernel (release %s, boot id %s), as the pod beside it does", in.release, in.bootID)
	}
	return checks.Pass, fmt.Sprintf("the sandboxed pod sees a kernel of its own (release %s, boot id %s), the "+
		"pod beside it the node's (release %s, boot id %s)", in.release, in.bootID, beside.release, beside.bootID)
}
