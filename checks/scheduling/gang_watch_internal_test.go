package scheduling

import (
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// The watch of the gang probe turns events into bindings per gang, a
// timeline, and what the exceeding gang's record says it waits on.
func TestGangWatchApply(t *testing.T) {
	t0 := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	w := &gangWatch{now: func() time.Time { return now }, t0: t0, timeline: &probe.Timeline{T0: t0},
		pods: map[string]string{}, said: map[string]bool{}, last: map[string]string{},
		bound:  map[string]map[string]bool{"fits": {}, "exceeds": {}},
		owners: map[string]string{"gang-fits": "fits", "gang-exceeds": "exceeds"}}
	pod := func(name, gang, node string) probe.Event {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"aiconform.io/gang": gang}},
			"spec":     map[string]any{"nodeName": node}}}
		return probe.Event{Tag: podsTag, Event: watch.Event{Type: watch.Modified, Object: u}}
	}
	record := func(owner, cond, status, msg string) probe.Event {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
			"metadata": map[string]any{"name": "job-" + owner, "ownerReferences": []any{map[string]any{"name": owner}}},
			"status":   map[string]any{"conditions": []any{map[string]any{"type": cond, "status": status, "reason": "R", "message": msg}}}}}
		return probe.Event{Tag: recordsTag, Event: watch.Event{Type: watch.Added, Object: u}}
	}
	for _, e := range []probe.Event{
		record("gang-exceeds", "QuotaReserved", "False", "insufficient quota"),
		record("gang-exceeds", "QuotaReserved", "False", "insufficient quota"), // said once
		record("someone-else", "Admitted", "True", ""),                         // not the probe's
		pod("f-1", "fits", ""),
		pod("f-1", "fits", "node-a"),
		pod("f-1", "fits", "node-a"), // bound once
		pod("x-1", "other", "node-a"),
		{Tag: podsTag, Event: watch.Event{Type: watch.Bookmark, Object: &unstructured.Unstructured{}}},
	} {
		now = now.Add(100 * time.Millisecond)
		w.apply(e)
	}
	assert.Equal(t, map[string]bool{"f-1": true}, w.bound["fits"])
	assert.Empty(t, w.bound["exceeds"])
	assert.Equal(t, []string{"exceeds gang: QuotaReserved=False: insufficient quota"}, w.lastSaid())
	var events []string
	for _, row := range w.timeline.Rows {
		events = append(events, row[0]+" "+row[2])
	}
	assert.Equal(t, []string{
		"workload job-gang-exceeds (exceeds): QuotaReserved=False: insufficient quota +0.1 s",
		"pod f-1 (fits) created +0.4 s",
		"pod f-1 (fits) bound to node-a +0.5 s",
	}, events)
}

// A record that writes a phase (Coscheduling's PodGroup) is its gang's by
// the name the gang's pods give it; each new phase goes in the timeline,
// and one not admitted is what the gang waits on.
func TestGangWatchApplyPhases(t *testing.T) {
	t0 := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	job := func(name, group string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
				"labels": map[string]any{"scheduling.x-k8s.io/pod-group": group}}}}}}
	}
	workloads := &checks.GangWorkloads{CRD: "podgroups.scheduling.x-k8s.io", PodCounts: "spec.minMember",
		Phase: &checks.GangPhase{Field: "status.phase", Admitted: []string{"Running"}, Waiting: []string{"Pending"}},
		Pods:  checks.GangPods{Label: "scheduling.x-k8s.io/pod-group"}}
	w := &gangWatch{now: func() time.Time { return now }, t0: t0, timeline: &probe.Timeline{T0: t0},
		pods: map[string]string{}, said: map[string]bool{}, last: map[string]string{},
		bound:  map[string]map[string]bool{"fits": {}, "exceeds": {}},
		owners: map[string]string{"gang-fits": "fits", "gang-exceeds": "exceeds"},
		named:  recordNames(workloads.Pods, job("gang-fits", "pg-fits"), job("gang-exceeds", "pg-exceeds")), workloads: workloads}
	group := func(name, phase string) probe.Event {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name}, "status": map[string]any{"phase": phase}}}
		return probe.Event{Tag: recordsTag, Event: watch.Event{Type: watch.Modified, Object: u}}
	}
	for _, e := range []probe.Event{
		group("pg-exceeds", "Pending"),
		group("pg-exceeds", "Pending"), // said once
		group("pg-fits", "Pending"),
		group("pg-fits", "Running"),
		group("pg-other", "Running"), // not the probe's
	} {
		now = now.Add(100 * time.Millisecond)
		w.apply(e)
	}
	assert.Equal(t, map[string]string{"pg-fits": "fits", "pg-exceeds": "exceeds"}, w.named)
	assert.Equal(t, []string{"exceeds gang: status.phase=Pending"}, w.lastSaid())
	var events []string
	for _, row := range w.timeline.Rows {
		events = append(events, row[0]+" "+row[2])
	}
	assert.Equal(t, []string{
		"podgroup pg-exceeds (exceeds): status.phase=Pending +0.1 s",
		"podgroup pg-fits (fits): status.phase=Pending +0.3 s",
		"podgroup pg-fits (fits): status.phase=Running +0.4 s",
	}, events)
}
