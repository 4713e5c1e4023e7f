package checks

import (
	"fmt"
	"sort"
	"strings"
)

// Solution is one solution aiconform recognises for a requirement: what
// docs/solutions.md lists, derived from the data the checks read so that
// the list cannot drift from what they detect.
type Solution struct {
	// Requirement is the catalog id the solution can meet.
	Requirement string
	// Name is the solution as the data names it.
	Name string
	// Detected says how the checks find it in a cluster.
	Detected string
	// Checks are the ids of the checks that judge it.
	Checks []string
}

// Solver is a check that reads a data file of solutions and can list
// them without a cluster.
type Solver interface {
	Solutions() ([]Solution, error)
}

// ProfileSolutions lists the operators and gang schedulers of the
// profiles, a row per requirement each carries (none listed means
// robust_controller), with checks the ones of reqs that judge them.
func ProfileSolutions(ps []*Profile, reqs []Requirement) []Solution {
	checksOf := map[string][]string{}
	for _, r := range reqs {
		checksOf[r.ID] = r.Checks
	}
	var out []Solution
	for _, p := range ps {
		carries := p.Carries
		if len(carries) == 0 {
			carries = []string{"robust_controller"}
		}
		for _, req := range carries {
			out = append(out, Solution{Requirement: req, Name: p.Title, Detected: describeProfile(p, req), Checks: checksOf[req]})
		}
	}
	return out
}

func describeProfile(p *Profile, req string) string {
	var parts []string
	if len(p.CRDs) > 0 {
		parts = append(parts, "CRDs "+strings.Join(p.CRDs, ", "))
	} else if len(p.Groups) > 0 {
		parts = append(parts, "CRDs of group "+strings.Join(p.Groups, ", "))
	}
	if len(p.Served) > 0 {
		var served []string
		for crd, v := range p.Served {
			served = append(served, crd+" at "+v)
		}
		sort.Strings(served)
		parts = append(parts, "serving "+strings.Join(served, ", "))
	}
	if c := p.Controller; c.Selector != "" {
		parts = append(parts, fmt.Sprintf("controller by pod labels %s, any namespace", c.Selector))
	}
	if req == "gang_scheduling" && p.Gang != nil {
		var kinds []string
		for _, q := range p.Gang.Queues {
			kinds = append(kinds, q.CRD)
		}
		if p.Gang.Workloads.CRD != "" {
			kinds = append(kinds, p.Gang.Workloads.CRD)
		}
		if len(kinds) > 0 {
			parts = append(parts, "gangs read from "+strings.Join(kinds, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
