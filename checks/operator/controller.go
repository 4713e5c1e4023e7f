package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
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
		Description: "The operator's controller Deployment is found in any namespace: a Deployment whose pod template " +
			"carries the profile's labels, one whose pods back a Service the operator's webhooks or CRD " +
			"conversions call, or the one whose pod holds its leader Lease (the profile's namespace and name " +
			"are hints that order what is found; the evidence says where and how it was found, and an " +
			"operator installed in two namespaces is two candidates, each judged). It is Available, and " +
			"every pod it selects is Running and Ready (Ready=Unknown is not Ready). A container (sidecars " +
			"included) waiting in CrashLoopBackOff or terminated in a Running pod, or a pod not Ready, " +
			"fails; restarts whose last termination is within the hour warn, with their count, reason " +
			"(OOMKilled, Error) and exit code. Older restarts are listed in the details without changing the " +
			"verdict.",
		Remediation: "Look at the controller pods' events and logs (`kubectl describe pod`, `kubectl logs " +
			"--previous`); a crash loop usually comes from missing RBAC, a CRD version mismatch or a webhook " +
			"certificate the controller cannot read.",
	}
}

// Run implements checks.Check.
func (ControllerReady) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p, in := env.Profile, env.Install
	if env.LocateErr != nil {
		return r, fmt.Errorf("cannot look for %s's controller: %w", p.Title, env.LocateErr)
	}
	if in == nil {
		// What a person would run to look for it: no pod of it anywhere.
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, AllNamespaces: true, LabelSelector: p.Controller.Selector}, "")
		r.Finish(checks.Fail, "no controller Deployment of %s found: %s", p.Title, checks.Searched(p))
		return r, nil
	}
	note := p.Title + "'s controller: " + in.Where() + in.Hinted(p)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Deployments}, Namespace: in.Namespace, Names: []string{in.Deployment}, Wide: true}, note)
	podsGet := cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: in.Namespace, LabelSelector: in.Selector, Wide: true}
	r.AddEvidence(ctx, env, podsGet, "the pods its selector picks")
	deps, err := checks.List[*appsv1.Deployment](ctx, env, cluster.Query{Resource: cluster.Deployments, Namespace: in.Namespace})
	if err != nil {
		return r, err
	}
	pods, err := checks.List[*corev1.Pod](ctx, env, podsGet.Queries()[0])
	if err != nil {
		return r, err
	}

	var dep *appsv1.Deployment
	for _, d := range deps {
		if d.Name == in.Deployment {
			dep = d
		}
	}
	where := fmt.Sprintf("in namespace %s with labels %s", in.Namespace, in.Selector)
	if dep == nil {
		// Found a moment ago in the cluster-wide list: deleted since.
		r.Finish(checks.Fail, "Deployment %s/%s, found by %s, is gone from its namespace", in.Namespace, in.Deployment, strings.Join(in.FoundBy, "; "))
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
	var others []string
	for _, m := range in.Missed {
		others = append(others, "not looked at, which may hide another install: "+m)
	}
	for _, o := range in.Others {
		// Said, not judged: one install is one controller.
		others = append(others, fmt.Sprintf("Deployment %s/%s was found too and not judged: %s is judged as the controller", in.Namespace, o, dep.Name))
	}
	now := env.Now()
	var history []string
	for _, p := range pods {
		f, w := kube.PodHealth(p, now)
		fails = append(fails, f...)
		warns = append(warns, w...)
		history = append(history, kube.RestartHistory(p, now)...)
	}
	r.Details = append(append(append(fails, warns...), history...), others...)
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
	case len(warns) > 0:
		r.Finish(checks.Warn, "Deployment %s/%s available with %s Ready, but %s", dep.Namespace, dep.Name, checks.Plural(len(pods), "pod"), strings.Join(warns, "; "))
	default:
		r.Finish(checks.Pass, "Deployment %s/%s available, %s Running and Ready", dep.Namespace, dep.Name, checks.Plural(len(pods), "pod"))
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
