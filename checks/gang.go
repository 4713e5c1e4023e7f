package checks

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Gang says how a solution admits gangs (all of a group's pods, or none),
// for gang_scheduling.
type Gang struct {
	// Queues are the solution's queue kinds: at least one object of the
	// first must be Active, and none of any may be inactive.
	Queues []ResourceKind `yaml:"queues"`
	// Workloads is the kind the solution records each gang in.
	Workloads GangWorkloads `yaml:"workloads"`
	// Probe is what --probe sends to show a gang admitted whole and one
	// that cannot fit admitted not at all; nil when the profile has none.
	Probe *GangProbe `yaml:"probe"`
}

// GangWorkloads is the solution's record of one gang.
type GangWorkloads struct {
	// CRD is the kind's CRD name (plural.group).
	CRD string `yaml:"crd"`
	// AdmittedCondition is True once the whole gang is admitted.
	AdmittedCondition string `yaml:"admittedCondition"`
	// PodCounts is the field holding how many pods the gang has, as a
	// dotted path; a list segment ends in [] and its counts add up
	// (Kueue: spec.podSets[].count).
	PodCounts string `yaml:"podCounts"`
}

// GangProbe is the probe's own queue and its two gangs. Objects are YAML as
// a user writes them for kubectl, with placeholders the probe fills: ${RUN}
// (the run id), ${NAMESPACE} (the run's namespace) and ${IMAGE} (what its
// pods run, --probe-image). A cluster-
// scoped object is named after the run (its name gets "-RUN"), so a
// reference to one is written NAME-${RUN}.
type GangProbe struct {
	// Setup are created first, in order: the probe's own quota.
	Setup []string `yaml:"setup"`
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
}

// GangLabel marks the pods of a probe's gang; its value is "fits" or
// "exceeds".
const GangLabel = "aiconform.io/gang"

// Objects returns the probe's objects with the placeholders filled:
// setup first, then the fitting gang, then the exceeding one.
func (g *GangProbe) Objects(runID, namespace, image string) (setup []*unstructured.Unstructured, fits, exceeds *unstructured.Unstructured, err error) {
	fill := strings.NewReplacer("${RUN}", runID, "${NAMESPACE}", namespace, "${IMAGE}", image)
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
	if len(g.Queues) == 0 {
		return fmt.Errorf("queues: at least one queue kind is needed")
	}
	for _, q := range g.Queues {
		if !p.ownsCRD(q.CRD) {
			return fmt.Errorf("queue crd %q is not in the profile's groups %v", q.CRD, p.Groups)
		}
		if len(q.ReadyConditions) == 0 {
			return fmt.Errorf("queue %s: readyConditions is empty", q.CRD)
		}
	}
	w := g.Workloads
	if !p.ownsCRD(w.CRD) || w.AdmittedCondition == "" || w.PodCounts == "" {
		return fmt.Errorf("workloads: crd (of the profile's groups), admittedCondition and podCounts are required")
	}
	if pr := g.Probe; pr != nil {
		if pr.Fits.Pods < 1 || pr.Exceeds.Pods <= pr.Fits.Pods {
			return fmt.Errorf("probe: fits needs at least one pod and exceeds more than fits")
		}
		if _, _, _, err := pr.Objects("RUN", "NAMESPACE", "IMAGE"); err != nil {
			return fmt.Errorf("probe: %w", err)
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
