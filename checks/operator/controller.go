package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// ControllerReady checks that an operator's controller runs.
type ControllerReady struct{}

// Meta implements checks.Check.
func (ControllerReady) Meta() checks.Meta {
	return checks.Meta{
		ID:          "controller-ready",
		Title:       "Controller Deployment available, pods Ready",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "The profile's controller Deployment, found in its namespace by its selector, is Available, and every pod it selects is Running and Ready (Ready=Unknown is not Ready). A container (sidecars included) waiting in CrashLoopBackOff or terminated in a Running pod, or a pod not Ready, fails; restarts whose last termination is within the hour warn, with their count, reason (OOMKilled, Error) and exit code. Older restarts are listed in the details without changing the verdict.",
		Remediation: "Look at the controller pods' events and logs (`kubectl describe pod`, `kubectl logs --previous`); a crash loop usually comes from missing RBAC, a CRD version mismatch or a webhook certificate the controller cannot read.",
	}
}

// Run implements checks.Check.
func (ControllerReady) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	c := env.Profile.Controller
	get := cluster.Get{Resources: []cluster.Resource{cluster.Deployments, cluster.Pods},
		Namespace: c.Namespace, LabelSelector: c.Selector, Wide: true}
	r.AddEvidence(ctx, env, get, "")
	qs := get.Queries()
	deps, err := checks.List[*appsv1.Deployment](ctx, env, qs[0])
	if err != nil {
		return r, err
	}
	pods, err := checks.List[*corev1.Pod](ctx, env, qs[1])
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
		r.Finish(checks.Fail, "%s %s", name, where)
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
		f, w := checks.PodHealth(p, now)
		fails = append(fails, f...)
		warns = append(warns, w...)
		history = append(history, checks.RestartHistory(p, now)...)
	}
	r.Details = append(append(fails, warns...), history...)
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
	case len(warns) > 0:
		r.Finish(checks.Warn, "Deployment %s available with %s Ready, but %s", dep.Name, checks.Plural(len(pods), "pod"), strings.Join(warns, "; "))
	default:
		r.Finish(checks.Pass, "Deployment %s available, %s Running and Ready", dep.Name, checks.Plural(len(pods), "pod"))
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

// images are the container images, which name the operator's version.
func images(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Image)
	}
	sort.Strings(out)
	return out
}
