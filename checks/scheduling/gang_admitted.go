package scheduling

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

// GangsAdmitted judges the gangs the cluster already runs: every pod of an
// admitted gang bound to a node, and no pod of a gang still waiting. It is
// the read-only evidence of gang scheduling; the probe shows the same on a
// gang of the run's own.
type GangsAdmitted struct{}

// maxGangs bounds the gangs whose pods are read, each in its own
// namespace, never across the cluster: by its Job's label (one LIST a
// gang), by the label naming its record (one LIST a gang), or, where
// only an annotation names the record, one LIST of the namespace's pods
// that the gangs of the namespace share.
const maxGangs = 20

// jobUIDLabel is the label the Job controller puts on its pods.
const jobUIDLabel = "batch.kubernetes.io/controller-uid"

// Meta implements checks.Check.
func (GangsAdmitted) Meta() checks.Meta {
	return checks.Meta{
		ID: "gangs-admitted", Title: "The cluster's own gangs run whole or not at all",
		Requirement: "gang_scheduling", PerOperator: true,
		Description: fmt.Sprintf("Lists the solution's records of gangs (Kueue: Workloads; Volcano and coscheduling: "+
			"PodGroups; in every namespace), leaving out those of aiconform probe runs, and sorts them by what "+
			"the profile says: admitted (Kueue: the Admitted condition True; Volcano and coscheduling: "+
			"status.phase Running), waiting (Kueue: not yet admitted; Volcano: Pending or Inqueue; "+
			"coscheduling: Pending), finished, or in a phase not judged. For up to %d of those that have not "+
			"finished, reads their pods, in the record's namespace only: for Kueue the pods of the batch/v1 "+
			"Job that owns the record (one LIST by the Job controller's %s label), for coscheduling those "+
			"labelled scheduling.x-k8s.io/pod-group with the record's name (one LIST), for Volcano those "+
			"annotated scheduling.k8s.io/group-name with it (one LIST of the namespace's pods, shared by its "+
			"gangs). Compares the pods bound to a node with the count the record holds (Kueue: "+
			"spec.podSets[].count; PodGroups: spec.minMember). Fails when a waiting gang has a pod bound (it "+
			"runs partially; for a PodGroup, some but not all: its phase is counted from its pods, and a "+
			"gang with every pod bound was read before its phase was written); warns when an admitted gang has pods not bound yet; passes when at least one "+
			"admitted gang has every pod bound. With no gang to judge it skips, and the requirement then rests "+
			"on the probe, for a profile that has one.", maxGangs, jobUIDLabel),
		Remediation: "A waiting gang with running pods means the pods were not held back by the scheduler (for Kueue: " +
			"the Job was created unsuspended without a queue-name label, or the integration for its kind is " +
			"off; for a PodGroup: its pods name another schedulerName than the gang scheduler's); admitted " +
			"gangs whose pods stay Pending mean quota and capacity disagree (Kueue's waitForPodsReady " +
			"evicts such gangs).",
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
	w := &g.Workloads
	res, err := checks.CustomResource(ctx, env, w.CRD)
	if err != nil {
		return r, err
	}
	objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	if err != nil {
		return r, err
	}
	var gangs []gang
	var between []string
	total, admitted, finished, other := 0, 0, 0, 0
	for _, o := range objs {
		if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); ok {
			continue
		}
		total++
		state, said := w.State(o)
		gg := gang{u: o, admitted: state == checks.GangAdmitted}
		// A record of conditions can be admitted and finished at once:
		// it counts as both, as it always has.
		if gg.admitted || state == checks.GangFinished && w.Phase == nil && conditionTrue(o, w.AdmittedCondition) {
			admitted++
		}
		switch state {
		case checks.GangFinished:
			finished++
			continue
		case checks.GangOther:
			between = append(between, said)
			continue
		}
		for _, ref := range o.GetOwnerReferences() {
			if ref.APIVersion == "batch/v1" && ref.Kind == "Job" {
				gg.job, gg.jobUID = ref.Name, string(ref.UID)
			}
		}
		n, ok := checks.PodCount(o, w.PodCounts)
		if !ok || w.Pods.ByJob() && gg.job == "" || w.Pods.Label != "" && len(validation.IsValidLabelValue(o.GetName())) > 0 {
			other++
			continue
		}
		gg.want = n
		gangs = append(gangs, gg)
	}
	noun := strings.ToLower(res.Kind)
	if total == 0 {
		r.Finish(checks.Skip, "no %s of the cluster's own: nothing shows %s admitting a gang %s", res.Arg, env.Profile.Title, probeOr(env.Profile))
		return r, nil
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true}, "")
	sort.Slice(gangs, func(i, j int) bool { return kube.ObjectName(gangs[i].u) < kube.ObjectName(gangs[j].u) })
	skipped := 0
	if len(gangs) > maxGangs {
		skipped = len(gangs) - maxGangs
		gangs = gangs[:maxGangs]
	}
	var whole, partial, starting, lagging []string
	shown := false
	for _, gg := range gangs {
		pods, get, err := gangPods(ctx, env, w.Pods, gg)
		if err != nil {
			return r, err
		}
		bound := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		name := kube.ObjectName(gg.u)
		switch {
		case !gg.admitted && bound > 0 && w.Phase != nil && int64(bound) >= gg.want:
			// A phase is the solution's count of the gang's pods: one that
			// says waiting while every pod is bound is read before the
			// solution wrote the next, not a gang run in part.
			lagging = append(lagging, fmt.Sprintf("%s: every one of its %d pods bound, its %s not yet updated", name, gg.want, w.Phase.Field))
		case !gg.admitted && bound > 0:
			partial = append(partial, fmt.Sprintf("%s is not admitted, yet %d of its %d pods are bound (%s)", name, bound, gg.want, gangWaits(w, gg)))
		case gg.admitted && int64(bound) >= gg.want:
			whole = append(whole, fmt.Sprintf("%s: %d/%d pods bound", name, bound, gg.want))
			if !shown {
				shown = true
				r.AddEvidence(ctx, env, get, fmt.Sprintf("the pods of the admitted gang %s: every one bound to a node", name))
			}
		case gg.admitted:
			starting = append(starting, fmt.Sprintf("%s is admitted, but %d of its %d pods are bound", name, bound, gg.want))
		}
	}
	r.Details = append(append(append(append([]string{}, partial...), starting...), whole...), lagging...)
	summary := fmt.Sprintf("%s: %d admitted, %d finished", checks.Plural(total, noun), admitted, finished)
	if len(between) > 0 {
		sort.Strings(between)
		summary += fmt.Sprintf(", %d in a phase not judged (%s)", len(between), checks.CapLines(slices.Compact(between), 3, ", "))
	}
	if len(lagging) > 0 {
		summary += fmt.Sprintf(", %d waiting with every pod bound (%s not yet updated)", len(lagging), w.Phase.Field)
	}
	if other > 0 {
		if w.Pods.ByJob() {
			summary += fmt.Sprintf(", %d not owned by a Job (pods not judged)", other)
		} else {
			summary += fmt.Sprintf(", %d without a pod count (pods not judged)", other)
		}
	}
	if skipped > 0 {
		summary += fmt.Sprintf(", %d more not examined", skipped)
	}
	switch {
	case len(partial) > 0:
		r.Finish(checks.Fail, "a gang runs partially: %s (%s)", partial[0], summary)
	case len(whole) == 0 && len(starting) > 0:
		r.Finish(checks.Skip, "no admitted gang has every pod bound yet (%s; %s): %s", summary, starting[0], restsOn(env.Profile))
	case len(whole) == 0:
		r.Finish(checks.Skip, "no running admitted gang to judge (%s): %s", summary, restsOn(env.Profile))
	case len(starting) > 0:
		r.Finish(checks.Warn, "%s; but %s", checks.CapLines(whole, 2, "; "), strings.Join(starting, "; "))
	default:
		r.Finish(checks.Pass, "%s with every pod bound, and no waiting gang with any (%s)", checks.Plural(len(whole), "admitted gang"), summary)
	}
	return r, nil
}

// gangPods reads the pods of gang gg, in its record's namespace, and the
// kubectl command that shows them.
func gangPods(ctx context.Context, env *checks.Env, by checks.GangPods, gg gang) ([]*corev1.Pod, cluster.Get, error) {
	ns, name := gg.u.GetNamespace(), gg.u.GetName()
	q := cluster.Query{Resource: cluster.Pods, Namespace: ns}
	switch {
	case by.ByJob():
		q.LabelSelector = jobUIDLabel + "=" + gg.jobUID
	case by.Label != "":
		q.LabelSelector = by.Label + "=" + name
	}
	pods, err := checks.List[*corev1.Pod](ctx, env, q)
	if err != nil {
		return nil, cluster.Get{}, err
	}
	get := cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: ns, LabelSelector: q.LabelSelector, Wide: true}
	if by.Annotation == "" {
		return pods, get, nil
	}
	// kubectl selects by no annotation: the evidence names the pods.
	var mine []*corev1.Pod
	for _, p := range pods {
		if p.Annotations[by.Annotation] == name {
			mine = append(mine, p)
			get.Names = append(get.Names, p.Name)
		}
	}
	sort.Strings(get.Names)
	return mine, get, nil
}

// gangWaits says what holds a waiting gang's record, and its Job.
func gangWaits(w *checks.GangWorkloads, gg gang) string {
	_, said := w.State(gg.u)
	if gg.job != "" && w.Pods.ByJob() {
		return "Job " + gg.job
	}
	return said
}

// conditionTrue is true when u's condition t is True.
func conditionTrue(u *unstructured.Unstructured, t string) bool {
	c, ok := kube.FindCondition(kube.Conditions(u), t)
	return ok && c.Status == "True"
}

// probeOr says how else a gang can be shown: the probe, when the profile
// has one.
func probeOr(p *checks.Profile) string {
	if p.Gang.Probe != nil {
		return "(--probe runs one)"
	}
	return "(the profile has no probe: a gang of the cluster's own must run to show it)"
}

// restsOn says what the requirement rests on with no gang to judge.
func restsOn(p *checks.Profile) string {
	if p.Gang.Probe != nil {
		return "the requirement rests on the probe (--probe)"
	}
	return "the " + p.Name + " profile has no probe, so the requirement rests on this read-only evidence once a gang runs"
}
