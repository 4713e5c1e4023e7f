package networking

import (
	"strings"

	"github.com/aiconform/aiconform/checks"
)

// The solutions of the networking checks, each derived from the data file
// the check reads (docs/solutions.md).

// Solutions are the DRA drivers and device plugins of network_devices.yaml.
func (c NetworkDevices) Solutions() ([]checks.Solution, error) {
	data, err := loadNetworkData()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, d := range data.DRADrivers {
		out = append(out, solution(c, d.Name, "ResourceSlices of driver "+d.Driver))
	}
	for _, p := range data.DevicePlugins {
		how := "node resources " + strings.Join(p.Resources, ", ")
		if len(p.Except) > 0 {
			how += ", except " + strings.Join(p.Except, ", ")
		}
		out = append(out, solution(c, p.Name, how))
	}
	return out, nil
}

// Solutions are the serving stacks of disaggregated.yaml.
func (c DisaggregatedServing) Solutions() ([]checks.Solution, error) {
	data, err := loadDisaggregated()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, s := range data.Labelled {
		how := "workloads labelled " + strings.Join(s.RoleLabels, " or ") + " = " +
			strings.Join(s.Prefill, ", ") + " and " + strings.Join(s.Decode, ", ")
		if s.GroupLabel != "" {
			how += ", grouped by " + s.GroupLabel
		}
		out = append(out, solution(c, s.Name, how))
	}
	for _, s := range data.Resources {
		var phases []string
		for _, p := range s.Phases {
			phases = append(phases, p.Role+" by condition "+p.Condition)
		}
		out = append(out, solution(c, s.Name, "CRD "+s.CRD+"; "+strings.Join(phases, ", ")))
	}
	return out, nil
}

func solution(c checks.Check, name, detected string) checks.Solution {
	m := c.Meta()
	return checks.Solution{Requirement: m.Requirement, Name: name, Detected: detected, Checks: []string{m.ID}}
}
