package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// recentRestart is how recent a container's last termination must be for its
// restarts to count as ongoing rather than history.
const recentRestart = time.Hour

// ControllerReady checks that an operator's controller runs.
type ControllerReady struct{}

// Meta implements Check.
func (ControllerReady) Meta() Meta {
	return Meta{
		ID:          "controller-ready",
		Title:       "Controller Deployment available, pods Ready",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "The profile's controller Deployment, found in its namespace by its selector, is Available, and every pod it selects is Running and Ready (Ready=Unknown is not Ready). A container (sidecars included) waiting in CrashLoopBackOff or terminated in a Running pod, or a pod not Ready, fails; restarts whose last termination is within the hour warn, with their count, reason (OOMKilled, Error) and exit code. Older restarts are listed in the details without changing the verdict.",
		Remediation: "Look at the controller pods' events and logs (`kubectl describe pod`, `kubectl logs --previous`); a crash loop usually comes from missing RBAC, a CRD version mismatch or a webhook certificate the controller cannot read.",
	}
}

// Run implements Check.
func (ControllerReady) Run(ctx context.Context, env *Env) (Result, error) {
	var r Result
	c := env.Profile.Controller
	get := cluster.Get{Resources: []cluster.Resource{cluster.Deployments, cluster.Pods},
		Namespace: c.Namespace, LabelSelector: c.Selector, Wide: true}
	r.evidence(ctx, env, get, "")
	qs := get.Queries()
	deps, err := list[*appsv1.Deployment](ctx, env, qs[0])
	if err != nil {
		return r, err
	}
	pods, err := list[*corev1.Pod](ctx, env, qs[1])
	if err != nil {
		return r, err
	}

	var dep *appsv1.Deployment
	for _, d := range deps {
		if c.Deployment == "" || d.Name == c.Deployment {
			dep = d
			break
		}
	}
	where := fmt.Sprintf("in namespace %s with labels %s", c.Namespace, c.Selector)
	if dep == nil {
		name := "no controller Deployment"
		if c.Deployment != "" {
			name = "Deployment " + c.Deployment + " not found"
		}
		r.finish(Fail, "%s %s", name, where)
		return r, nil
	}
	r.Versions = images(dep.Spec.Template.Spec.Containers)

	var fails, warns []string
	if st, msg := deploymentAvailable(dep); st != corev1.ConditionTrue {
		fails = append(fails, fmt.Sprintf("Deployment %s: Available is %s %s", dep.Name, st, msg))
	}
	if len(pods) == 0 {
		fails = append(fails, "no controller pod "+where)
	}
	now := env.Now()
	var history []string
	for _, p := range pods {
		f, w := podHealth(p, now)
		fails = append(fails, f...)
		warns = append(warns, w...)
		history = append(history, restartHistory(p, now)...)
	}
	r.Details = append(append(fails, warns...), history...)
	switch {
	case len(fails) > 0:
		r.finish(Fail, "%s", strings.Join(fails, "; "))
	case len(warns) > 0:
		r.finish(Warn, "Deployment %s available with %s Ready, but %s", dep.Name, plural(len(pods), "pod"), strings.Join(warns, "; "))
	default:
		r.finish(Pass, "Deployment %s available, %s Running and Ready", dep.Name, plural(len(pods), "pod"))
	}
	return r, nil
}

func deploymentAvailable(d *appsv1.Deployment) (corev1.ConditionStatus, string) {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status, strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "absent", fmt.Sprintf("(%d/%d replicas ready)", d.Status.ReadyReplicas, d.Status.Replicas)
}

// podHealth lists what makes a pod unhealthy (fails) or suspicious (warns).
func podHealth(p *corev1.Pod, now time.Time) (fails, warns []string) {
	if p.Status.Phase != corev1.PodRunning {
		fails = append(fails, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase))
	} else if !podReady(p) {
		fails = append(fails, fmt.Sprintf("pod %s is not Ready", p.Name))
	}
	for _, cs := range containerStatuses(p) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			fails = append(fails, fmt.Sprintf("pod %s container %s is waiting: %s %s", p.Name, cs.Name, w.Reason, w.Message))
		}
		if t := cs.State.Terminated; t != nil && p.Status.Phase == corev1.PodRunning && !isInitStatus(p, cs.Name) {
			fails = append(fails, fmt.Sprintf("pod %s container %s has terminated (%s, exit code %d)", p.Name, cs.Name, t.Reason, t.ExitCode))
		}
		if t := cs.LastTerminationState.Terminated; cs.RestartCount > 0 && t != nil && now.Sub(t.FinishedAt.Time) < recentRestart {
			warns = append(warns, fmt.Sprintf("pod %s container %s restarted %d times, last %s ago (%s, exit code %d)",
				p.Name, cs.Name, cs.RestartCount, age(now.Sub(t.FinishedAt.Time)), t.Reason, t.ExitCode))
		}
	}
	return fails, warns
}

// restartHistory reports restarts that are not recent, one line per
// container, so that a report still shows a controller that was OOMKilled
// yesterday; they do not change the verdict.
func restartHistory(p *corev1.Pod, now time.Time) []string {
	var out []string
	for _, cs := range containerStatuses(p) {
		if cs.RestartCount == 0 {
			continue
		}
		t := cs.LastTerminationState.Terminated
		switch {
		case t == nil:
			out = append(out, fmt.Sprintf("pod %s container %s restarted %d times (its last termination is not recorded)", p.Name, cs.Name, cs.RestartCount))
		case now.Sub(t.FinishedAt.Time) >= recentRestart:
			out = append(out, fmt.Sprintf("pod %s container %s restarted %d times, last %s ago (%s, exit code %d): not recent, not counted",
				p.Name, cs.Name, cs.RestartCount, age(now.Sub(t.FinishedAt.Time)), t.Reason, t.ExitCode))
		}
	}
	return out
}

// containerStatuses are a pod's init containers' statuses, sidecars among
// them, then its containers'.
func containerStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// isInitStatus is true when name is one of the pod's init containers that
// runs to completion: its terminated state is success, not a crash. Sidecars
// (restartPolicy Always) keep running like containers.
func isInitStatus(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// images are the container images, which name the operator's version.
func images(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Image)
	}
	sort.Strings(out)
	return out
}
