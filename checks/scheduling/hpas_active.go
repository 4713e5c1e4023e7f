package scheduling

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// maxTargetNamespaces bounds the namespaces whose Deployments and
// StatefulSets are listed to find what the HPAs scale: two LISTs each.
const maxTargetNamespaces = 20

// HPAsActive judges the cluster's own HPAs that scale accelerator pods on
// custom or external metrics: the HPA controller must be getting their
// metrics and acting on them.
type HPAsActive struct{}

// Meta implements checks.Check.
func (HPAsActive) Meta() checks.Meta {
	return checks.Meta{
		ID: "hpas-active", Title: "HPAs scale accelerator pods on custom or external metrics",
		Requirement: "pod_autoscaling",
		Description: fmt.Sprintf("Lists the autoscaling/v2 HorizontalPodAutoscalers of every namespace (one LIST; it fails when "+
			"the API does not serve autoscaling/v2). For those with a Pods, Object or External metric, reads "+
			"the Deployments and StatefulSets of their namespaces (at most %d namespaces, one LIST per kind "+
			"each) to find whether the pods they scale request an accelerator. Passes when at least one such "+
			"HPA has ScalingActive=True and AbleToScale=True, and none fails; fails when every one of them "+
			"reports ScalingActive or AbleToScale not True (with the controller's reason, such as "+
			"FailedGetExternalMetric); warns when some work and others fail. None at all skips: nothing of "+
			"the cluster's own shows it, and --probe does. HPAs a probe run created are not judged.", maxTargetNamespaces),
		Remediation: "For an HPA that cannot get its metric, read its conditions and events (`kubectl describe hpa`): " +
			"the adapter must serve that metric name for the HPA's namespace (and, for Pods metrics, for its " +
			"pods), and the metrics APIService must be Available.",
	}
}

// hpaFinding is what was found of one HPA on custom or external metrics.
type hpaFinding struct {
	name        string // namespace/name
	target      string // Kind/name
	metrics     string
	accelerator string // the accelerator its pods request; "" for none, "?" unknown
	problem     string // why it does not scale; "" when it does
	replicas    string
}

// Run implements checks.Check.
func (HPAsActive) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.HorizontalPodAutoscalers}, AllNamespaces: true}, "")
	hpas, err := checks.List[*autoscalingv2.HorizontalPodAutoscaler](ctx, env, cluster.Query{Resource: cluster.HorizontalPodAutoscalers})
	if err != nil {
		return r, err
	}
	var found []*hpaFinding
	var namespaces []string
	for _, h := range hpas {
		if _, ok := checks.ProbeRun(h.Labels, h.Namespace); ok {
			continue
		}
		metrics := customMetrics(h)
		if len(metrics) == 0 {
			continue
		}
		f := &hpaFinding{name: h.Namespace + "/" + h.Name, target: h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name,
			metrics: strings.Join(metrics, ", "), problem: scalingProblem(h), accelerator: "?",
			replicas: fmt.Sprintf("%d/%d", h.Status.CurrentReplicas, h.Status.DesiredReplicas)}
		found = append(found, f)
		if !slices.Contains(namespaces, h.Namespace) {
			namespaces = append(namespaces, h.Namespace)
		}
	}
	// What each HPA scales, from its namespace's workloads.
	templates := map[string]*corev1.PodTemplateSpec{} // namespace/Kind/name
	unread := 0
	for i, ns := range namespaces {
		if i >= maxTargetNamespaces {
			unread = len(namespaces) - i
			break
		}
		deps, err := checks.List[*appsv1.Deployment](ctx, env, cluster.Query{Resource: cluster.Deployments, Namespace: ns})
		if err != nil {
			return r, err
		}
		for _, d := range deps {
			templates[ns+"/Deployment/"+d.Name] = &d.Spec.Template
		}
		sets, err := checks.List[*appsv1.StatefulSet](ctx, env, cluster.Query{Resource: cluster.StatefulSets, Namespace: ns})
		if err != nil {
			return r, err
		}
		for _, s := range sets {
			templates[ns+"/StatefulSet/"+s.Name] = &s.Spec.Template
		}
	}
	var working, broken []string
	for _, f := range found {
		ns, _, _ := strings.Cut(f.name, "/")
		if t, ok := templates[ns+"/"+f.target]; ok {
			f.accelerator = acceleratorOf(&t.Spec)
		}
		if f.accelerator == "" || f.accelerator == "?" || f.problem == scalingDisabled {
			continue
		}
		line := fmt.Sprintf("%s (%s, pods requesting %s, on %s)", f.name, f.target, f.accelerator, f.metrics)
		if f.problem != "" {
			broken = append(broken, line+": "+f.problem)
		} else {
			working = append(working, line)
		}
	}
	if len(found) > 0 {
		r.Table = &checks.Table{Header: []string{"HPA", "TARGET", "METRICS", "ACCELERATOR", "REPLICAS", "SCALING"}}
		for _, f := range found {
			acc, scaling := f.accelerator, "active"
			switch acc {
			case "":
				acc = "none"
			case "?":
				acc = "not read"
			}
			if f.problem != "" {
				scaling = f.problem
			}
			r.Table.Rows = append(r.Table.Rows, []string{f.name, f.target, f.metrics, acc, f.replicas, scaling})
		}
	}
	r.Details = broken
	if unread > 0 {
		r.Details = append(r.Details, fmt.Sprintf("the targets of HPAs in %s were not read", checks.Plural(unread, "more namespace")))
	}
	switch {
	case len(working) > 0 && len(broken) > 0:
		r.Finish(checks.Warn, "%s scaling accelerator pods on custom or external metrics; %d cannot: %s", checks.Plural(len(working), "HPA"), len(broken), broken[0])
	case len(working) > 0:
		r.Finish(checks.Pass, "%s scaling accelerator pods on custom or external metrics: %s", checks.Plural(len(working), "HPA"), checks.CapLines(working, 3, "; "))
	case len(broken) > 0:
		r.Finish(checks.Fail, "no HPA on custom or external metrics can scale accelerator pods: %s", checks.CapLines(broken, 3, "; "))
	default:
		r.Finish(checks.Skip, "no HPA scales accelerator pods on a custom or external metric (%s read, %d on such metrics)", checks.Plural(len(hpas), "HPA"), len(found))
	}
	return r, nil
}

// customMetrics names the HPA's metrics that are not CPU or memory of its
// own pods: what the requirement calls custom metrics.
func customMetrics(h *autoscalingv2.HorizontalPodAutoscaler) []string {
	var out []string
	for _, m := range h.Spec.Metrics {
		switch m.Type {
		case autoscalingv2.PodsMetricSourceType:
			if m.Pods != nil {
				out = append(out, "pods metric "+m.Pods.Metric.Name)
			}
		case autoscalingv2.ObjectMetricSourceType:
			if m.Object != nil {
				out = append(out, fmt.Sprintf("object metric %s of %s/%s", m.Object.Metric.Name, m.Object.DescribedObject.Kind, m.Object.DescribedObject.Name))
			}
		case autoscalingv2.ExternalMetricSourceType:
			if m.External != nil {
				out = append(out, "external metric "+m.External.Metric.Name)
			}
		}
	}
	return out
}

// scalingDisabled is what scalingProblem says of an HPA whose target was
// scaled to zero on purpose: it shows nothing, working or broken.
const scalingDisabled = "disabled (its target is scaled to zero)"

// scalingProblem is why the HPA controller does not act on the HPA, from
// its conditions; "" when ScalingActive and AbleToScale are True. Unknown
// is not True.
func scalingProblem(h *autoscalingv2.HorizontalPodAutoscaler) string {
	for _, c := range h.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Reason == "ScalingDisabled" {
			return scalingDisabled
		}
	}
	var out []string
	for _, t := range []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.ScalingActive, autoscalingv2.AbleToScale} {
		i := slices.IndexFunc(h.Status.Conditions, func(c autoscalingv2.HorizontalPodAutoscalerCondition) bool { return c.Type == t })
		if i < 0 {
			out = append(out, string(t)+" not reported")
			continue
		}
		c := h.Status.Conditions[i]
		if c.Status == corev1.ConditionTrue {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s (%s: %s)", t, c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, "; ")
}

// acceleratorOf names the accelerator resources the pod's containers
// request or limit, "" for none.
func acceleratorOf(spec *corev1.PodSpec) string {
	var names []string
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name, q := range l {
				if hardware.IsAccelerator(name) && !q.IsZero() && !slices.Contains(names, string(name)) {
					names = append(names, string(name))
				}
			}
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
