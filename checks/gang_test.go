package checks_test

import (
	"strings"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const gangBase = `name: groups
title: Groups
groups: [groups.example.com]
controller: {namespace: g, selector: app=g}
carries: [gang_scheduling]
gang:
`

// A gang section of phases: a queue ready by its state, pods found by an
// annotation.
const gangOfPhases = `  queues:
    - crd: queues.groups.example.com
      readyState: {field: status.state, values: [Open]}
  workloads:
    crd: podgroups.groups.example.com
    phase:
      field: status.phase
      admitted: [Running]
      waiting: [Pending, Inqueue]
      finished: [Completed]
    podCounts: spec.minMember
    pods: {annotation: groups.example.com/group-name}
`

func TestGangOfPhases(t *testing.T) {
	ps, err := checks.ParseProfiles("g.yaml", []byte(gangBase+gangOfPhases))
	require.NoError(t, err)
	g := ps[0].Gang
	require.NotNil(t, g)
	assert.Equal(t, []checks.GangQueue{{CRD: "queues.groups.example.com", ReadyState: &checks.FieldValues{Field: "status.state", Values: []string{"Open"}}}}, g.Queues)
	assert.Equal(t, checks.GangPods{Annotation: "groups.example.com/group-name"}, g.Workloads.Pods)
	assert.False(t, g.Workloads.Pods.ByJob())
	assert.Empty(t, g.Workloads.FinishedCondition, "a profile of phases has no conditions")

	group := func(phase string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"minMember": int64(3)}}}
		if phase != "" {
			u.Object["status"] = map[string]any{"phase": phase}
		}
		return u
	}
	for _, tc := range []struct {
		phase string
		state checks.GangState
		said  string
	}{
		{"Running", checks.GangAdmitted, "status.phase=Running"},
		{"Pending", checks.GangWaiting, "status.phase=Pending"},
		{"Inqueue", checks.GangWaiting, "status.phase=Inqueue"},
		{"Completed", checks.GangFinished, "status.phase=Completed"},
		{"Unknown", checks.GangOther, "status.phase=Unknown"},
		{"", checks.GangOther, "status.phase not set"},
	} {
		state, said := g.Workloads.State(group(tc.phase))
		assert.Equal(t, tc.state, state, tc.phase)
		assert.Equal(t, tc.said, said)
	}
	n, ok := checks.PodCount(group("Running"), g.Workloads.PodCounts)
	assert.True(t, ok)
	assert.Equal(t, int64(3), n)
}

// Kueue's profile, unchanged, reads as it always has: by conditions, a
// Finished one ending the gang, pods by the owning Job.
func TestKueueGangByConditions(t *testing.T) {
	var w *checks.GangWorkloads
	for _, p := range checkstest.BuiltinProfiles(t) {
		if p.Name == "kueue" {
			w = &p.Gang.Workloads
		}
	}
	require.NotNil(t, w)
	assert.Nil(t, w.Phase)
	assert.Equal(t, "Finished", w.FinishedCondition)
	assert.True(t, w.Pods.ByJob())

	workload := func(conds ...string) *unstructured.Unstructured {
		var cs []any
		for _, c := range conds {
			t, st, _ := strings.Cut(c, "=")
			cs = append(cs, map[string]any{"type": t, "status": st})
		}
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": cs}}}
	}
	for _, tc := range []struct {
		conds []string
		state checks.GangState
	}{
		{[]string{"Admitted=True"}, checks.GangAdmitted},
		{[]string{"Admitted=False"}, checks.GangWaiting},
		{nil, checks.GangWaiting},
		{[]string{"Admitted=True", "Finished=True"}, checks.GangFinished},
	} {
		state, _ := w.State(workload(tc.conds...))
		assert.Equal(t, tc.state, state, tc.conds)
	}
}

func TestGangValidation(t *testing.T) {
	tests := []struct {
		name, from, to, err string
	}{
		{"a queue with no readiness", "      readyState: {field: status.state, values: [Open]}\n", "",
			"queues[0] (queues.groups.example.com): readyConditions or readyState is needed"},
		{"a queue with both", "      readyState:", "      readyConditions: [Active]\n      readyState:",
			"queues[0] (queues.groups.example.com): readyConditions and readyState are exclusive"},
		{"a state of no value", "values: [Open]", "values: []", "queues[0].readyState: values: at least one value"},
		{"a state of no field", "field: status.state", "field: \"\"", "queues[0].readyState: field: a dotted path is required"},
		{"a queue of another group", "crd: queues.groups.example.com", "crd: queues.other.example.com",
			`queues[0].crd "queues.other.example.com" is not in the profile's groups`},
		{"records of another group", "crd: podgroups.groups.example.com", "crd: podgroups.other.example.com",
			`crd "podgroups.other.example.com" is not in the profile's groups`},
		{"no pod count", "    podCounts: spec.minMember\n", "", "podCounts (the field holding how many pods a gang has) is missing"},
		{"a pod count with an empty segment", "podCounts: spec.minMember", "podCounts: spec..minMember", `workloads.podCounts "spec..minMember"`},
		{"neither phase nor condition", "    phase:\n      field: status.phase\n      admitted: [Running]\n      waiting: [Pending, Inqueue]\n      finished: [Completed]\n", "",
			"admittedCondition and podCounts are required, or phase in place of admittedCondition: neither is given"},
		{"phase and condition", "    phase:\n", "    admittedCondition: Admitted\n    phase:\n",
			"workloads: phase and admittedCondition/finishedCondition are exclusive"},
		{"a phase of a list", "field: status.phase", "field: status.phases[]", "workloads.phase.field: \"status.phases[]\""},
		{"a phase with nothing waiting", "waiting: [Pending, Inqueue]", "waiting: []", "workloads.phase: admitted and waiting each need a value"},
		{"a value in two lists", "finished: [Completed]", "finished: [Completed, Running]", `workloads.phase.finished: "Running" is empty or also in admitted`},
		{"pods by label and annotation", "pods: {annotation: groups.example.com/group-name}",
			"pods: {annotation: groups.example.com/group-name, label: groups.example.com/group}", "workloads.pods: label and annotation are exclusive"},
		{"a malformed annotation", "annotation: groups.example.com/group-name", "annotation: \"group name\"", `workloads.pods.annotation "group name"`},
		{"a malformed label", "pods: {annotation: groups.example.com/group-name}", "pods: {label: \"a/b/c\"}", `workloads.pods.label "a/b/c"`},
		{"a misspelt field", "readyState:", "readyStates:", `unknown key "readyStates"; did you mean "readyState"?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := strings.Replace(gangOfPhases, tc.from, tc.to, 1)
			require.NotEqual(t, gangOfPhases, y, "the case changes nothing")
			_, err := checks.ParseProfiles("g.yaml", []byte(gangBase+y))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "g.yaml:")
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// A solution without queues (coscheduling) is a valid gang scheduler.
func TestGangWithoutQueues(t *testing.T) {
	y := strings.Replace(gangOfPhases, "  queues:\n    - crd: queues.groups.example.com\n      readyState: {field: status.state, values: [Open]}\n", "", 1)
	require.NotEqual(t, gangOfPhases, y)
	ps, err := checks.ParseProfiles("g.yaml", []byte(gangBase+y))
	require.NoError(t, err)
	assert.Empty(t, ps[0].Gang.Queues)
}
