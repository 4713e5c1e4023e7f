package checks

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stub is a check that only has metadata.
type stub struct{ m Meta }

func (s stub) Meta() Meta                                { return s.m }
func (s stub) Run(context.Context, *Env) (Result, error) { return Result{}, nil }

func check(id, req string) Check { return stub{Meta{ID: id, Requirement: req}} }

func TestExtend(t *testing.T) {
	reqs := []Requirement{{ID: "gpu_nodes_allocatable", Program: "CNCF", Checks: []string{"gpu-allocatable"}}}
	registry := []Check{check("gpu-allocatable", "gpu_nodes_allocatable")}
	ext := Extensions{
		Checks:       []Check{check("gpu-team-label", "gpu_nodes_allocatable"), check("gateway-answers", "internal_gateway")},
		Requirements: []Requirement{{ID: "internal_gateway", Title: "Our gateway answers", Level: Should}},
	}
	out, all, err := Extend(reqs, registry, ext)
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu-allocatable"}, reqs[0].Checks, "the built-in catalog is not changed")
	assert.Equal(t, []string{"gpu-allocatable", "gpu-team-label"}, out[0].Checks)
	assert.Equal(t, []string{"gpu-team-label"}, out[0].UserChecks)
	assert.Equal(t, Requirement{ID: "internal_gateway", Title: "Our gateway answers", Level: Should, Category: UserProgram, Program: UserProgram, Checks: []string{"gateway-answers"}}, out[1])
	assert.Len(t, all, 3)
	assert.Len(t, registry, 1)

	for name, tt := range map[string]struct {
		ext  Extensions
		want string
	}{
		"check id taken":       {Extensions{Checks: []Check{check("gpu-allocatable", "gpu_nodes_allocatable")}, Origin: map[string]string{"gpu-allocatable": "mine.yaml:4"}}, "mine.yaml:4: check gpu-allocatable is already defined"},
		"requirement id taken": {Extensions{Requirements: []Requirement{{ID: "gpu_nodes_allocatable"}}}, "extension: requirement gpu_nodes_allocatable is already defined"},
		"requirement nowhere":  {Extensions{Checks: []Check{check("x", "gpu_node_allocatable")}}, `extension: check x names requirement "gpu_node_allocatable", which is neither the checklist's nor declared; did you mean "gpu_nodes_allocatable"?`},
		"skip of nothing":      {Extensions{Skips: []Exclusion{{ID: "gpu-allocatble", Source: "aiconform.yaml:3"}}}, `aiconform.yaml:3: skip gpu-allocatble: no requirement or check has that id; did you mean "gpu-allocatable"?`},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Extend(reqs, registry, tt.ext)
			assert.EqualError(t, err, tt.want)
		})
	}
}

func TestSelectionWithout(t *testing.T) {
	sel := Selection{
		Requirements: []Requirement{{ID: "a", Checks: []string{"shared", "only-a"}}, {ID: "b", Checks: []string{"shared", "only-b"}}},
		Checks:       []Check{check("shared", "a"), check("only-a", "a"), check("only-b", "b")},
	}
	ids := func(s Selection) []string {
		var out []string
		for _, c := range s.Checks {
			out = append(out, c.Meta().ID)
		}
		return out
	}
	// A check another requirement still lists keeps running.
	assert.Equal(t, []string{"shared", "only-b"}, ids(sel.Without([]Exclusion{{ID: "a"}})))
	assert.Equal(t, []string{"only-a", "only-b"}, ids(sel.Without([]Exclusion{{ID: "shared"}})))
	assert.Empty(t, ids(sel.Without([]Exclusion{{ID: "a"}, {ID: "b"}})))
	assert.Len(t, sel.Without([]Exclusion{{ID: "a"}}).Requirements, 2, "skipped requirements stay, for their verdicts")
}

func TestEvaluateNamesTheUsersChecks(t *testing.T) {
	req := Requirement{ID: "gpu_nodes_allocatable", Checks: []string{"gpu-allocatable", "gpu-team-label"}, UserChecks: []string{"gpu-team-label"}}
	out := Outcome{Results: []Result{
		{Check: Meta{ID: "gpu-allocatable"}, Status: Pass, Reason: "1 node"},
		{Check: Meta{ID: "gpu-team-label"}, Status: Pass, Reason: "labelled"},
	}}
	v := Evaluate([]Requirement{req}, out)[0]
	assert.Equal(t, Implemented, v.Status)
	assert.Contains(t, v.Conclusion, "[judged with the user's checks gpu-team-label besides aiconform's]")
}
