package checks

import (
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Gang says how a solution admits gangs (all of a group's pods, or none),
// for gang_scheduling.
type Gang struct {
	// Queues are the solution's queue kinds: at least one object of the
	// first must be ready, and none of any may be not ready. None when the
	// solution has no queue (scheduler-plugins' coscheduling).
	Queues []GangQueue `yaml:"queues"`
	// Workloads is the kind the solution records each gang in.
	Workloads GangWorkloads `yaml:"workloads"`
	// Probe is what --probe sends to show a gang admitted whole and one
	// that cannot fit admitted not at all; nil when the profile has none.
	Probe *GangProbe `yaml:"probe"`
}

// GangQueue is a queue kind of the solution and how a queue of it shows
// that it admits: a condition (Kueue's Active) or a field's value
// (Volcano's status.state Open). One of the two is given.
type GangQueue struct {
	// CRD is the kind's CRD name (plural.group).
	CRD string `yaml:"crd"`
	// ReadyConditions must all be True.
	ReadyConditions []string `yaml:"readyConditions"`
	// ReadyState is a field that must hold one of its values.
	ReadyState *FieldValues `yaml:"readyState"`
}

// FieldValues is a string field of an object, as a dotted path, and the
// values that count.
type FieldValues struct {
	Field  string   `yaml:"field"`
	Values []string `yaml:"values"`
}

// GangWorkloads is the solution's record of one gang.
type GangWorkloads struct {
	// CRD is the kind's CRD name (plural.group).
	CRD string `yaml:"crd"`
	// AdmittedCondition is True once the whole gang is admitted; a record
	// is then waiting until it is, and finished once FinishedCondition is
	// True. Either this or Phase is given.
	AdmittedCondition string `yaml:"admittedCondition"`
	// FinishedCondition, True, means the gang ran to its end; Finished
	// (Kueue's) unless told.
	FinishedCondition string `yaml:"finishedCondition"`
	// Phase is a field whose value says where the gang is, for a solution
	// that writes a phase rather than conditions.
	Phase *GangPhase `yaml:"phase"`
	// PodCounts is the field holding how many pods the gang has, as a
	// dotted path; a list segment ends in [] and its counts add up
	// (Kueue: spec.podSets[].count).
	PodCounts string `yaml:"podCounts"`
	// Pods says how the gang's pods are found; by default they are the
	// pods of the batch/v1 Job that owns the record.
	Pods GangPods `yaml:"pods"`
}

// GangPhase sorts a record by the value of one field. A value in none of
// the lists (a phase between admission and running, or after a pod was
// lost) is not judged.
type GangPhase struct {
	// Field is the dotted path of the phase (status.phase).
	Field string `yaml:"field"`
	// Admitted are the values of a gang admitted whole.
	Admitted []string `yaml:"admitted"`
	// Waiting are the values of a gang not admitted: none of its pods may
	// be bound.
	Waiting []string `yaml:"waiting"`
	// Finished are the values of a gang that ran to its end.
	Finished []string `yaml:"finished"`
}

// GangPods names the pod label or annotation whose value is the name of
// the gang's record (in the record's namespace); neither means the pods
// of the owning batch/v1 Job.
type GangPods struct {
	Label      string `yaml:"label"`
	Annotation string `yaml:"annotation"`
}

// ByJob is true when the gang's pods are those of the Job that owns its
// record.
func (p GangPods) ByJob() bool { return p.Label == "" && p.Annotation == "" }

// GangState is where a gang's record says the gang is.
type GangState int

// The states of a gang's record.
const (
	// GangOther is a state the profile does not judge.
	GangOther GangState = iota
	GangWaiting
	GangAdmitted
	GangFinished
)

// State reads where the record u says its gang is, with the words that
// say so for a message (Admitted=True, status.phase=Running).
func (w *GangWorkloads) State(u *unstructured.Unstructured) (GangState, string) {
	if ph := w.Phase; ph != nil {
		v, _ := StringAt(u, ph.Field)
		said := ph.Field + "=" + v
		if v == "" {
			said = ph.Field + " not set"
		}
		switch {
		case Contains(ph.Finished, v):
			return GangFinished, said
		case Contains(ph.Admitted, v):
			return GangAdmitted, said
		case Contains(ph.Waiting, v):
			return GangWaiting, said
		}
		return GangOther, said
	}
	cs := kube.Conditions(u)
	if c, ok := kube.FindCondition(cs, w.FinishedCondition); ok && c.Status == "True" {
		return GangFinished, w.FinishedCondition + "=True"
	}
	if c, ok := kube.FindCondition(cs, w.AdmittedCondition); ok && c.Status == "True" {
		return GangAdmitted, w.AdmittedCondition + "=True"
	}
	return GangWaiting, w.AdmittedCondition + " not True"
}

// StringAt reads the string at a dotted path of u; ok is false when it is
// absent or not a string.
func StringAt(u *unstructured.Unstructured, path string) (string, bool) {
	v, ok, err := unstructured.NestedString(u.Object, strings.Split(path, ".")...)
	return v, ok && err == nil
}

// GangProbe is the probe's own queue and its two gangs. Objects are YAML as
// a user writes them for kubectl, with placeholders the probe fills: ${RUN}
// (the run id), ${NAMESPACE} (the run's namespace), ${IMAGE} (what its
// pods run, --probe-image) and ${SCHEDULER} (Scheduler). A cluster-
// scoped object is named after the run (its name gets "-RUN"), so a
// reference to one is written NAME-${RUN}.
type GangProbe struct {
	// Setup are created first, in order: the probe's own quota, or the
	// records its gangs are judged by.
	Setup []string `yaml:"setup"`
	// SetupSays is the evidence's note on Setup; "the probe's own quota"
	// unless told.
	SetupSays string `yaml:"setupSays"`
	// Scheduler fills ${SCHEDULER}: the schedulerName the gangs' pods ask
	// for, where the solution is a scheduler beside the cluster's own
	// (coscheduling's). Installs name it as they like: a profile of the
	// user's (--profile, or the data overlay) says how theirs does.
	Scheduler string `yaml:"scheduler"`
	// Fits is a gang the setup's quota holds: all its pods must be bound.
	Fits GangObject `yaml:"fits"`
	// Exceeds is a gang larger than the quota: none of its pods may be
	// bound while Fits runs, nor for a window after.
	Exceeds GangObject `yaml:"exceeds"`
}

// GangObject is one gang of the probe: an object whose pods carry the label
// aiconform.io/gang with the value Name.
type GangObject struct {
	Pods   int    `yaml:"pods"`
	Object string `yaml:"object"`
	// Says is how the probe's reasons tell the gang after its size ("a
	// gang of 4, more than the quota"): "that fits the quota" and "more
	// than the quota" unless told.
	Says string `yaml:"says"`
}

// FitsSays and ExceedsSays are how the probe's reasons tell its two gangs.
func (g *GangProbe) FitsSays() string { return or(g.Fits.Says, "that fits the quota") }

// ExceedsSays: see FitsSays.
func (g *GangProbe) ExceedsSays() string { return or(g.Exceeds.Says, "more than the quota") }

// SetupNote is the evidence's note on the probe's setup objects.
func (g *GangProbe) SetupNote() string { return or(g.SetupSays, "the probe's own quota") }

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// GangLabel marks the pods of a probe's gang; its value is "fits" or
// "exceeds".
const GangLabel = "aiconform.io/gang"

// Objects returns the probe's objects with the placeholders filled:
// setup first, then the fitting gang, then the exceeding one.
func (g *GangProbe) Objects(runID, namespace, image string) (setup []*unstructured.Unstructured, fits, exceeds *unstructured.Unstructured, err error) {
	fill := strings.NewReplacer("${RUN}", runID, "${NAMESPACE}", namespace, "${IMAGE}", image, "${SCHEDULER}", g.Scheduler)
	parse := func(what, text string) (*unstructured.Unstructured, error) {
		// Through JSON, so that numbers are int64 as in objects read back.
		data, err := yaml.YAMLToJSON([]byte(fill.Replace(text)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: apiVersion, kind and metadata.name are required", what)
		}
		return u, nil
	}
	for i, s := range g.Setup {
		u, err := parse(fmt.Sprintf("setup[%d]", i), s)
		if err != nil {
			return nil, nil, nil, err
		}
		setup = append(setup, u)
	}
	if fits, err = parse("fits", g.Fits.Object); err != nil {
		return nil, nil, nil, err
	}
	if exceeds, err = parse("exceeds", g.Exceeds.Object); err != nil {
		return nil, nil, nil, err
	}
	return setup, fits, exceeds, nil
}

func (g *Gang) validate(p *Profile) error {
	for i, q := range g.Queues {
		if !p.ownsCRD(q.CRD) {
			return fmt.Errorf("queues[%d].crd %q is not in the profile's groups %v", i, q.CRD, p.Groups)
		}
		switch st := q.ReadyState; {
		case st == nil && len(q.ReadyConditions) == 0:
			return fmt.Errorf("queues[%d] (%s): readyConditions or readyState is needed", i, q.CRD)
		case st != nil && len(q.ReadyConditions) > 0:
			return fmt.Errorf("queues[%d] (%s): readyConditions and readyState are exclusive", i, q.CRD)
		case st != nil:
			if err := st.validate(); err != nil {
				return fmt.Errorf("queues[%d].readyState: %w", i, err)
			}
		}
	}
	if err := g.Workloads.validate(p); err != nil {
		return err
	}
	if pr := g.Probe; pr != nil {
		if pr.Fits.Pods < 1 || pr.Exceeds.Pods <= pr.Fits.Pods {
			return fmt.Errorf("probe: fits needs at least one pod and exceeds more than fits")
		}
		if pr.Scheduler == "" && strings.Contains(strings.Join(append(pr.Setup, pr.Fits.Object, pr.Exceeds.Object), "\n"), "${SCHEDULER}") {
			return fmt.Errorf("probe: ${SCHEDULER} is used but scheduler is not set")
		}
		if _, _, _, err := pr.Objects("RUN", "NAMESPACE", "IMAGE"); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
	}
	return nil
}

func (f *FieldValues) validate() error {
	if err := validPath(f.Field); err != nil {
		return fmt.Errorf("field: %w", err)
	}
	if len(f.Values) == 0 || Contains(f.Values, "") {
		return fmt.Errorf("values: at least one value, none empty")
	}
	return nil
}

// validPath rejects a dotted path with an empty segment or a list
// segment: a phase or state is one string field.
func validPath(path string) error {
	if path == "" {
		return fmt.Errorf("a dotted path is required (status.phase)")
	}
	for _, seg := range strings.Split(path, ".") {
		if seg == "" || strings.ContainsAny(seg, "[]") {
			return fmt.Errorf("%q: segments are field names, none empty, no list", path)
		}
	}
	return nil
}

func (w *GangWorkloads) validate(p *Profile) error {
	// The first words are those profiles were told before phase existed.
	const needs = "workloads: crd (of the profile's groups), admittedCondition and podCounts are required, or phase in place of admittedCondition"
	if !p.ownsCRD(w.CRD) {
		return fmt.Errorf("%s: crd %q is not in the profile's groups %v", needs, w.CRD, p.Groups)
	}
	if w.PodCounts == "" {
		return fmt.Errorf("%s: podCounts (the field holding how many pods a gang has) is missing", needs)
	}
	for _, seg := range strings.Split(w.PodCounts, ".") {
		if name, _ := strings.CutSuffix(seg, "[]"); name == "" || strings.ContainsAny(name, "[]") {
			return fmt.Errorf("workloads.podCounts %q: segments are field names, a list one ending in []", w.PodCounts)
		}
	}
	switch ph := w.Phase; {
	case ph == nil && w.AdmittedCondition == "":
		return fmt.Errorf("%s: neither is given, so no gang can be told admitted", needs)
	case ph != nil && (w.AdmittedCondition != "" || w.FinishedCondition != ""):
		return fmt.Errorf("workloads: phase and admittedCondition/finishedCondition are exclusive")
	case ph != nil:
		if err := validPath(ph.Field); err != nil {
			return fmt.Errorf("workloads.phase.field: %w", err)
		}
		if len(ph.Admitted) == 0 || len(ph.Waiting) == 0 {
			return fmt.Errorf("workloads.phase: admitted and waiting each need a value")
		}
		seen := map[string]string{}
		for _, l := range []struct {
			name string
			vs   []string
		}{{"admitted", ph.Admitted}, {"waiting", ph.Waiting}, {"finished", ph.Finished}} {
			for _, v := range l.vs {
				if prev, dup := seen[v]; dup || v == "" {
					return fmt.Errorf("workloads.phase.%s: %q is empty or also in %s", l.name, v, prev)
				}
				seen[v] = l.name
			}
		}
	case w.FinishedCondition == "":
		// What Kueue writes, and what a profile of the condition kind
		// meant before it could say.
		w.FinishedCondition = "Finished"
	}
	switch pods := w.Pods; {
	case pods.Label != "" && pods.Annotation != "":
		return fmt.Errorf("workloads.pods: label and annotation are exclusive")
	case pods.Label != "":
		if errs := validation.IsQualifiedName(pods.Label); len(errs) > 0 {
			return fmt.Errorf("workloads.pods.label %q: %s", pods.Label, strings.Join(errs, "; "))
		}
	case pods.Annotation != "":
		if errs := validation.IsQualifiedName(pods.Annotation); len(errs) > 0 {
			return fmt.Errorf("workloads.pods.annotation %q: %s", pods.Annotation, strings.Join(errs, "; "))
		}
	}
	return nil
}

// PodCount reads how many pods a gang's record says it has, following
// path; ok is false when the field is absent or not a count.
func PodCount(u *unstructured.Unstructured, path string) (int64, bool) {
	return countAt(u.Object, strings.Split(path, "."))
}

func countAt(v any, path []string) (int64, bool) {
	if len(path) == 0 {
		switch n := v.(type) {
		case int64:
			return n, true
		case float64:
			return int64(n), true
		}
		return 0, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return 0, false
	}
	key, list := strings.CutSuffix(path[0], "[]")
	if !list {
		return countAt(m[key], path[1:])
	}
	items, ok := m[key].([]any)
	if !ok || len(items) == 0 {
		return 0, false
	}
	var sum int64
	for _, it := range items {
		n, ok := countAt(it, path[1:])
		if !ok {
			return 0, false
		}
		sum += n
	}
	return sum, true
}
