package scheduling

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GangsAdmitted judges the gangs the cluster already runs: every pod of an
// admitted gang bound to a node, and no pod of a gang still waiting. It is
// the read-only evidence of gang scheduling; the probe shows the same on a
// gang of the run's own.
type GangsAdmitted struct{}

// maxGangs bounds the gangs whose pods are read: one pod LIST each, in
// the gang's namespace and by its Job's label, never across the cluster.
const maxGangs = 20

// jobUIDLabel is the label the Job controller puts on its pods.
const jobUIDLabel = "batch.kubernetes.io/controller-uid"

// Meta implements checks.Check.
func (GangsAdmitted) Meta() checks.Meta {
	return checks.Meta{
		ID: "gangs-admitted", Title: "The cluster's own gangs run whole or not at all",
		Requirement: "gang_scheduling", PerOperator: true,
		Description: fmt.Sprintf("Lists the solution's workload records (Kueue: Workloads in every namespace), leaving out those "+
			"of aiconform probe runs, and sorts them into admitted (the profile's admitted condition True) "+
			"and waiting. For up to %d of those that a batch/v1 Job owns and that have not finished, reads "+
			"the Job's pods (one LIST in the workload's namespace, by the Job controller's %s label) and "+
			"compares the pods bound to a node with the count the record holds (Kueue: "+
			"spec.podSets[].count). Fails when a waiting gang has a pod bound (it runs partially); warns "+
			"when an admitted gang has pods not bound yet; passes when at least one admitted gang has every "+
			"pod bound. With no gang to judge it skips, and the requirement then rests on the probe.", maxGangs, jobUIDLabel),
		Remediation: "A waiting gang with running pods means the pods were not held back by the scheduler (for Kueue: " +
			"the Job was created unsuspended without a queue-name label, or the integration for its kind is " +
			"off); admitted gangs whose pods stay Pending mean quota and capacity disagree (Kueue's " +
			"waitForPodsReady evicts such gangs).",
	}
}

type gang struct {
	u        *unstructured.Unstructured
	want     int64
	job      string // the owning Job's name and UID, when a Job owns it
	jobUID   string
	admitted bool
}

// Run implements checks.Check.
func (GangsAdmitted) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	g := env.Profile.Gang
	if g == nil {
		return r, fmt.Errorf("the %s profile says nothing of gangs (gang:)", env.Profile.Name)
	}
	res, err := checks.CustomResource(ctx, env, g.Workloads.CRD)
	if err != nil {
		return r, err
	}
	objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	if err != nil {
		return r, err
	}
	var gangs []gang
	total, admitted, finished, other := 0, 0, 0, 0
	for _, o := range objs {
		if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); ok {
			continue
		}
		total++
		cs := checks.Conditions(o)
		gg := gang{u: o}
		if c, ok := checks.FindCondition(cs, g.Workloads.AdmittedCondition); ok && c.Status == "True" {
			gg.admitted = true
			admitted++
		}
		if c, ok := checks.FindCondition(cs, "Finished"); ok && c.Status == "True" {
			finished++
			continue
		}
		for _, ref := range o.GetOwnerReferences() {
			if ref.APIVersion == "batch/v1" && ref.Kind == "Job" {
				gg.job, gg.jobUID = ref.Name, string(ref.UID)
			}
		}
		n, ok := checks.PodCount(o, g.Workloads.PodCounts)
		if gg.job == "" || !ok {
			other++
			continue
		}
		gg.want = n
		gangs = append(gangs, gg)
	}
	if total == 0 {
		r.Finish(checks.Skip, "no %s of the cluster's own: nothing shows %s admitting a gang (--probe runs one)", res.Arg, env.Profile.Title)
		return r, nil
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true}, "")
	sort.Slice(gangs, func(i, j int) bool { return checks.ObjectName(gangs[i].u) < checks.ObjectName(gangs[j].u) })
	skipped := 0
	if len(gangs) > maxGangs {
		skipped = len(gangs) - maxGangs
		gangs = gangs[:maxGangs]
	}
	var whole, partial, starting []string
	shown := false
	for _, gg := range gangs {
		q := cluster.Query{Resource: cluster.Pods, Namespace: gg.u.GetNamespace(), LabelSelector: jobUIDLabel + "=" + gg.jobUID}
		pods, err := checks.List[*corev1.Pod](ctx, env, q)
		if err != nil {
			return r, err
		}
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		name := checks.ObjectName(gg.u)
		switch {
		case !gg.admitted && bound > 0:
			partial = append(partial, fmt.Sprintf("%s is not admitted, yet %d of its %d pods are bound (Job %s)", name, bound, gg.want, gg.job))
		case gg.admitted && int64(bound) >= gg.want:
			whole = append(whole, fmt.Sprintf("%s: %d/%d pods bound", name, bound, gg.want))
			if !shown {
				shown = true
				r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: q.Namespace, LabelSelector: q.LabelSelector, Wide: true},
					fmt.Sprintf("the pods of the admitted gang %s: every one bound to a node", name))
			}
		case gg.admitted:
			starting = append(starting, fmt.Sprintf("%s is admitted, but %d of its %d pods are bound", name, bound, gg.want))
		}
	}
	r.Details = append(append(append([]string{}, partial...), starting...), whole...)
	summary := fmt.Sprintf("%s: %d admitted, %d finished", checks.Plural(total, "workload"), admitted, finished)
	if other > 0 {
		summary += fmt.Sprintf(", %d not owned by a Job (pods not judged)", other)
	}
	if skipped > 0 {
		summary += fmt.Sprintf(", %d more not examined", skipped)
	}
	switch {
	case len(partial) > 0:
		r.Finish(checks.Fail, "a gang runs partially: %s (%s)", partial[0], summary)
	case len(whole) == 0 && len(starting) > 0:
		r.Finish(checks.Skip, "no admitted gang has every pod bound yet (%s; %s): the requirement rests on the probe (--probe)", summary, starting[0])
	case len(whole) == 0:
		r.Finish(checks.Skip, "no running admitted gang to judge (%s): the requirement rests on the probe (--probe)", summary)
	case len(starting) > 0:
		r.Finish(checks.Warn, "%s; but %s", checks.CapLines(whole, 2, "; "), strings.Join(starting, "; "))
	default:
		r.Finish(checks.Pass, "%s with every pod bound, and no waiting gang with any (%s)", checks.Plural(len(whole), "admitted gang"), summary)
	}
	return r, nil
}
