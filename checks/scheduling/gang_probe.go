package scheduling

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// GangProbe runs the program's test plan for gang scheduling on objects of
// the run's own: a queue with a small quota, a gang that fits it (all of
// its pods must be bound) and a gang larger than the quota (none of its
// pods may be bound, not even some).
type GangProbe struct{}

// gangWindow is how long the gang that cannot fit is watched once the one
// that fits is bound: a scheduler that admits gangs piecemeal would have
// bound some of its pods by then.
const gangWindow = 15 * time.Second

// Meta implements checks.Check.
func (GangProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "gang-probe", Title: "A gang that fits is admitted whole, and one that cannot fit gets no pod",
		Requirement: "gang_scheduling", PerOperator: true, Probe: true,
		Description: fmt.Sprintf("Under --probe only. Creates the profile's own quota (Kueue: a ResourceFlavor and a ClusterQueue "+
			"named after the run, holding 300m CPU and 96Mi, open to the run's namespace only, and a "+
			"LocalQueue in it), then two gangs of pods that do nothing (--probe-image, "+
			"registry.k8s.io/pause:3.10 by default), with requests and limits, non-root, and a deadline: one "+
			"that fits the quota (Kueue: a Job of 3 pods of 100m) and one that exceeds it (a Job of 4); for Coscheduling, "+
			"its PodGroups first (minMember 3 and 5) and Jobs of 3 and 4 pods for its scheduler (the profile's "+
			"scheduler-plugins-scheduler unless a profile of the user's names it otherwise), so that the second gang "+
			"never has the members its group needs. "+
			"Watches their pods and the solution's workload records (no polling), with a timeline of every "+
			"pod's creation and binding and every admission or phase. Passes when every pod of the fitting gang is "+
			"bound within the probe timeout, and no pod of the other is bound while the first runs nor for "+
			"%s after. Everything is labelled aiconform.io/run=RUN and deleted with the run's namespace at "+
			"the end of the run, however it ends. A profile with no gang probe (Volcano) skips: "+
			"the requirement then rests on the read-only evidence of gangs-admitted.", gangWindow),
		Remediation: "A fitting gang not admitted: read its workload's conditions in the evidence (a queue that is " +
			"not Active, a missing flavor, a webhook that did not suspend the Job). A gang with some pods " +
			"bound and others not: the pods were not held back until the whole gang fit (for Kueue, the Job " +
			"integration is off or its webhook is not called).",
	}
}

// gangWatch follows the probe's pods and workload records.
type gangWatch struct {
	now      func() time.Time
	t0       time.Time
	timeline *probe.Timeline
	// pods are the gangs' pods by name, with the gang each belongs to.
	pods  map[string]string
	bound map[string]map[string]bool // gang -> pod -> bound
	// said are the workload conditions already put in the timeline.
	said map[string]bool
	// owners maps a workload record to its gang, by its owner's name;
	// named, by its own name, where the gang's pods name their record
	// (a PodGroup named by a label of its pods).
	owners, named map[string]string
	workloads     *checks.GangWorkloads
	last          map[string]string // gang -> the last condition its record gave
}

// Run implements checks.Check.
func (GangProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s, p := env.Probe, env.Profile
	if p.Gang == nil || p.Gang.Probe == nil {
		r.Finish(checks.Skip, "the %s profile has no gang probe: for %s, gang_scheduling rests on the read-only evidence (gangs-admitted)", p.Name, p.Title)
		return r, nil
	}
	gp := p.Gang.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe runs a gang of %d pods %s and one of %d, %s", gp.Fits.Pods, gp.FitsSays(), gp.Exceeds.Pods, gp.ExceedsSays())
		return r, nil
	}
	setup, fits, exceeds, err := gp.Objects(s.RunID, s.Namespace, s.Image)
	if err != nil {
		return r, err
	}
	workloads, err := checks.CustomResource(ctx, env, p.Gang.Workloads.CRD)
	if err != nil {
		return r, fmt.Errorf("cannot probe: %w", err)
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	w := &gangWatch{now: env.Now, t0: pr.Timeline.T0, timeline: &pr.Timeline, pods: map[string]string{}, said: map[string]bool{}, last: map[string]string{},
		bound:  map[string]map[string]bool{"fits": {}, "exceeds": {}},
		owners: map[string]string{fits.GetName(): "fits", exceeds.GetName(): "exceeds"},
		named:  recordNames(p.Gang.Workloads.Pods, fits, exceeds), workloads: &p.Gang.Workloads}

	// The watches start at the first object the probe made: a setup
	// object can be a gang's own record (a PodGroup), whose first status
	// its controller may write before the gangs exist.
	for _, obj := range setup {
		if _, err := pr.Create(ctx, obj, gp.SetupNote()); err != nil {
			return pr.Refused(err)
		}
	}
	if _, err := pr.Create(ctx, fits, fmt.Sprintf("a gang of %d pods %s", gp.Fits.Pods, gp.FitsSays())); err != nil {
		return pr.Refused(err)
	}
	if err := w.start(ctx, pr, workloads); err != nil {
		return r, err
	}
	if _, err := pr.Create(ctx, exceeds, fmt.Sprintf("a gang of %d pods, %s", gp.Exceeds.Pods, gp.ExceedsSays())); err != nil {
		return pr.Refused(err)
	}

	whole, err := pr.Phase(ctx, func() bool { return len(w.bound["fits"]) >= gp.Fits.Pods || len(w.bound["exceeds"]) > 0 })
	if err != nil {
		return r, err
	}
	fitsAt := env.Now()
	if whole && len(w.bound["exceeds"]) == 0 {
		w.timeline.Add(fitsAt, "every pod of the fitting gang bound")
		window := min(gangWindow, s.Timeout)
		if _, err := pr.Until(ctx, window, func() bool { return len(w.bound["exceeds"]) > 0 }); err != nil {
			return r, err
		}
		if len(w.bound["exceeds"]) == 0 {
			w.timeline.Add(env.Now(), "window of %s over: no pod of the exceeding gang bound", window)
		}
	}
	end := env.Now()

	fresh := env.Fresh()
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{workloads}, Namespace: s.Namespace}, "the solution's record of each gang")
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: checks.GangLabel, Wide: true, LabelColumns: []string{checks.GangLabel}},
		"the gangs' pods and the nodes they are bound to")

	fitN, exN := len(w.bound["fits"]), len(w.bound["exceeds"])
	switch {
	case exN > 0:
		r.Details = w.lastSaid()
		r.Finish(checks.Fail, "the gang of %d pods, %s, ran partially: %d of its pods bound", gp.Exceeds.Pods, gp.ExceedsSays(), exN)
	case fitN < gp.Fits.Pods:
		r.Details = w.lastSaid()
		why := "nothing said why"
		if len(r.Details) > 0 {
			why = r.Details[0]
		}
		r.Finish(checks.Fail, "the gang of %d pods %s was not admitted whole within %s: %d of its pods bound (%s)", gp.Fits.Pods, gp.FitsSays(), s.Timeout, fitN, why)
	default:
		held := ""
		if why := w.last["exceeds"]; why != "" {
			held = " (" + why + ")"
		}
		r.Finish(checks.Pass, "a gang of %d pods was admitted whole, every pod bound %s after creation; a gang of %d, %s, had none bound in %s%s",
			gp.Fits.Pods, probe.Seconds(fitsAt.Sub(w.t0)), gp.Exceeds.Pods, gp.ExceedsSays(), probe.Seconds(end.Sub(w.t0)), held)
	}
	return r, nil
}

// podsTag and recordsTag name the probe's two watches.
const podsTag, recordsTag = "pods", "records"

// start watches the gangs' pods (by the gang label) and the workload
// records of the run's namespace.
func (w *gangWatch) start(ctx context.Context, pr *checks.Probing, workloads cluster.Resource) error {
	return pr.Watch(ctx, w.apply,
		probe.Source{Tag: podsTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: checks.GangLabel}},
		probe.Source{Tag: recordsTag, GVR: workloads.GVR, Namespaced: true},
	)
}

func (w *gangWatch) apply(e probe.Event) {
	if e.Type != watch.Added && e.Type != watch.Modified {
		return
	}
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if e.Tag == recordsTag {
		w.applyRecord(u)
		return
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod); err != nil {
		return
	}
	gang := pod.Labels[checks.GangLabel]
	if _, known := w.bound[gang]; !known {
		return
	}
	if _, seen := w.pods[pod.Name]; !seen {
		w.pods[pod.Name] = gang
		w.timeline.Add(w.now(), "pod %s (%s) created", pod.Name, gang)
	}
	if pod.Spec.NodeName != "" && !w.bound[gang][pod.Name] {
		w.bound[gang][pod.Name] = true
		w.timeline.Add(w.now(), "pod %s (%s) bound to %s", pod.Name, gang, pod.Spec.NodeName)
	}
}

// applyRecord puts each new condition of a gang's workload record in the
// timeline, and keeps the last one that is not True as what it waits on.
func (w *gangWatch) applyRecord(u *unstructured.Unstructured) {
	gang := w.named[u.GetName()]
	for _, o := range u.GetOwnerReferences() {
		if g, ok := w.owners[o.Name]; ok {
			gang = g
		}
	}
	if gang == "" {
		return
	}
	if w.workloads != nil && w.workloads.Phase != nil {
		// A record that writes a phase, not conditions (a PodGroup).
		state, said := w.workloads.State(u)
		key := u.GetName() + "|" + said
		if w.said[key] {
			return
		}
		w.said[key] = true
		if state == checks.GangAdmitted || state == checks.GangFinished {
			delete(w.last, gang)
		} else {
			w.last[gang] = said
		}
		w.timeline.Add(w.now(), "%s %s (%s): %s", strings.ToLower(u.GetKind()), u.GetName(), gang, said)
		return
	}
	for _, c := range kube.Conditions(u) {
		key := u.GetName() + "|" + c.Type + "|" + c.Status + "|" + c.Reason
		if w.said[key] {
			continue
		}
		w.said[key] = true
		text := fmt.Sprintf("%s=%s", c.Type, c.Status)
		if c.Status != "True" && c.Message != "" {
			text += ": " + c.Message
			w.last[gang] = text
		}
		w.timeline.Add(w.now(), "workload %s (%s): %s", u.GetName(), gang, text)
	}
}

// lastSaid is what each gang's record last said it waits on.
func (w *gangWatch) lastSaid() []string {
	var out []string
	for _, g := range []string{"fits", "exceeds"} {
		if why := w.last[g]; why != "" {
			out = append(out, fmt.Sprintf("%s gang: %s", g, strings.TrimSpace(why)))
		}
	}
	return out
}

// recordNames maps the names of the records the gangs' pods name (by
// label or annotation, in their pod templates) to their gang; empty where
// a gang's record is found by the Job that owns it.
func recordNames(pods checks.GangPods, fits, exceeds *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	if pods.ByJob() {
		return out
	}
	for gang, obj := range map[string]*unstructured.Unstructured{"fits": fits, "exceeds": exceeds} {
		field, key := "labels", pods.Label
		if key == "" {
			field, key = "annotations", pods.Annotation
		}
		if name, ok, _ := unstructured.NestedString(obj.Object, "spec", "template", "metadata", field, key); ok && name != "" {
			out[name] = gang
		}
	}
	return out
}
