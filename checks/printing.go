package checks

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// maxLogBytes bounds what is read of a probe container's output: what
// the probes print is a few KiB.
const maxLogBytes = 64 << 10

// CreateError is a probe object the cluster refused to create; Refused
// turns it into the check's answer.
type CreateError struct {
	Object *unstructured.Unstructured
	Err    error
}

func (e *CreateError) Error() string {
	return fmt.Sprintf("creating %s %s: %v", e.Object.GetKind(), e.Object.GetName(), e.Err)
}

func (e *CreateError) Unwrap() error { return e.Err }

// PrintingPods is how a probe learns what its pods see: it creates them
// (each labelled label, with restartPolicy Never), watches them until every
// one has ended, shows them as `kubectl get pods -l LABEL -o wide`, and
// reads what each container printed through the API server, as `kubectl
// logs` does, each a step of r's evidence with note(pod, container)
// (note(pod, "") notes the pod's creation). The
// outputs are keyed "pod/container"; the timeline of creations, bindings
// and ends becomes r's table. A pod the cluster refuses is a *CreateError;
// pods that do not end within the probe timeout, or a log that cannot be
// read, an error that says where each pod stands; a pod stopped before
// its script ended (out of memory, its deadline, evicted), an error that
// says so.
func PrintingPods(ctx context.Context, env *Env, r *Result, label string, pods []*unstructured.Unstructured, note func(pod, container string) string) (map[string]string, error) {
	p, err := StartProbing(ctx, env, r)
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	return p.PrintingPods(ctx, label, pods, note)
}

// PrintingPods is PrintingPods as a step of a probe that did other things
// before: its pods' events go on the probe's timeline. It ends the watch
// the probe had.
func (p *Probing) PrintingPods(ctx context.Context, label string, pods []*unstructured.Unstructured, note func(pod, container string) string) (map[string]string, error) {
	env, r, s := p.env, p.r, p.env.Probe
	defer p.EndWatch()
	w := &printingWatch{now: env.Now, timeline: &p.Timeline, pods: map[string]*corev1.Pod{}, said: map[string]bool{}}
	// The watch starts where the first pod was created, so that nothing
	// that happens to the others is missed; each pod as created is where
	// its story starts.
	var names []string
	for _, pod := range pods {
		created, err := p.Create(ctx, pod, note(pod.GetName(), ""))
		if err != nil {
			return nil, err
		}
		names = append(names, created.GetName())
		w.apply(probe.Event{Tag: printingTag, Event: watch.Event{Type: watch.Added, Object: created}})
	}
	if err := p.Watch(ctx, w.apply, probe.Source{Tag: printingTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: label}}); err != nil {
		return nil, err
	}
	ok, err := p.Phase(ctx, func() bool { return w.ended(len(names)) })
	if err != nil {
		return nil, err
	}
	r.AddEvidence(ctx, env.Fresh(), cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: label, Wide: true}, "the probe's pods and the node they ran on")
	if !ok {
		return nil, fmt.Errorf("the probe's pods did not finish within %s: %s", s.Timeout, w.unfinished(names))
	}
	outputs := map[string]string{}
	for _, name := range names {
		for _, c := range w.pods[name].Spec.Containers {
			out, err := s.Logs(ctx, name, c.Name, maxLogBytes)
			text := out
			if err != nil {
				text = probe.ErrorText("reading the logs of", "", err)
			}
			r.Evidence = append(r.Evidence, Step{Command: fmt.Sprintf("kubectl logs -n %s %s -c %s", s.Namespace, name, c.Name), Output: text, CapturedAt: env.Now().UTC(), Note: note(name, c.Name)})
			if err != nil {
				return nil, fmt.Errorf("cannot read what container %s of pod %s printed: %w", c.Name, name, err)
			}
			outputs[name+"/"+c.Name] = out
		}
	}
	// Read first, so that what the pods printed before they were stopped
	// is in the evidence.
	for _, name := range names {
		if why := cutShort(w.pods[name]); why != "" {
			return nil, fmt.Errorf("pod %s ended before its script did (%s): what it printed is incomplete", name, why)
		}
	}
	return outputs, nil
}

// printingTag tags the watch of a probe's printing pods.
const printingTag = "pods"

// printingWatch follows a probe's printing pods.
type printingWatch struct {
	now      func() time.Time
	timeline *probe.Timeline
	pods     map[string]*corev1.Pod
	said     map[string]bool
}

func (w *printingWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	var p corev1.Pod
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) != nil {
		return
	}
	if e.Type == watch.Deleted {
		delete(w.pods, p.Name)
		return
	}
	w.pods[p.Name] = &p
	say := func(key, format string, args ...any) {
		if !w.said[key] {
			w.said[key] = true
			w.timeline.Add(w.now(), format, args...)
		}
	}
	if p.Spec.NodeName != "" {
		say(p.Name+"/bound", "pod %s bound to %s", p.Name, p.Spec.NodeName)
	}
	if ended(&p) {
		say(p.Name+"/ended", "pod %s %s%s", p.Name, p.Status.Phase, parenthesized(cutShort(&p)))
	}
}

func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// cutShort says why a pod that ended was stopped before its script was
// done, by the kubelet (its deadline, an eviction) or the kernel (out of
// memory); "" when its containers ended on their own. What such a pod
// printed is only the start of what its script prints, which no probe can
// judge: a missing answer would read as the cluster's.
func cutShort(p *corev1.Pod) string {
	var why []string
	if p.Status.Reason != "" {
		why = append(why, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			why = append(why, fmt.Sprintf("container %s %s, exit code %d", c.Name, t.Reason, t.ExitCode))
		}
	}
	return strings.Join(why, "; ")
}

func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ended is true once every pod of the probe has run to its end.
func (w *printingWatch) ended(n int) bool {
	done := 0
	for _, p := range w.pods {
		if ended(p) {
			done++
		}
	}
	return done == n
}

// unfinished says where each pod that has not ended stands, in the
// scheduler's or the kubelet's words.
func (w *printingWatch) unfinished(names []string) string {
	var out []string
	for _, name := range names {
		p := w.pods[name]
		switch {
		case p == nil:
			out = append(out, "pod "+name+" not seen")
		case ended(p):
		default:
			out = append(out, fmt.Sprintf("pod %s %s%s", name, cmp.Or(string(p.Status.Phase), "Pending"), PodWhy(p)))
		}
	}
	return strings.Join(out, "; ")
}

// PodWhy is the last word on a pod that is not running to its end: the
// scheduler's condition, or a container's waiting reason.
func PodWhy(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			return " (" + c.Message + ")"
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
			return fmt.Sprintf(" (%s %s: %s)", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		}
	}
	return ""
}

// PrintingPodSpec is ProbePodSpec for a pod of PrintingPods: its one
// container runs script in sh, once (restartPolicy Never, a deadline), on
// node, where the probe compares what pods see. It is pinned there by the
// node's hostname label, so that the scheduler still places it and counts
// what it requests, or by name on a node without that label.
func PrintingPodSpec(image, script string, node *corev1.Node, timeout time.Duration, tolerate ...string) corev1.PodSpec {
	spec := ProbePodSpec(image, nil, tolerate...)
	spec.Containers[0].Command = []string{"sh", "-c", script}
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.ActiveDeadlineSeconds = ProbeDeadline(timeout)
	if h := node.Labels[corev1.LabelHostname]; h != "" {
		spec.NodeSelector = map[string]string{corev1.LabelHostname: h}
	} else {
		spec.NodeName = node.Name
	}
	return spec
}

// CommandsScript is the script of a printing pod that runs commands one
// after the other, each one's output headed by the command as a shell
// prompt shows it ("$ uname -r"), and ends well whatever they print: a
// missing file or tool is part of what the container sees.
// CommandOutputs reads it back.
func CommandsScript(commands ...string) string {
	var b strings.Builder
	for _, c := range commands {
		fmt.Fprintf(&b, "echo '$ %s'; %s 2>&1; ", c, c)
	}
	return b.String() + "exit 0"
}

// CommandOutputs splits what a CommandsScript printed by its headings:
// each command's output, trimmed, by command; a command missing did not
// run. Lines before the first heading (a runtime's own complaint) are no
// command's.
func CommandOutputs(out string) map[string]string {
	sections := map[string]string{}
	var cur string
	var lines []string
	flush := func() {
		if cur != "" {
			sections[cur] = strings.TrimSpace(strings.Join(lines, "\n"))
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$ "); ok {
			flush()
			cur, lines = cmd, nil
			continue
		}
		lines = append(lines, line)
	}
	flush()
	return sections
}
