package scheduling

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
)

// The solutions of the scheduling checks, each derived from the data file
// the check reads (docs/solutions.md).

// Solutions are the adapters of metrics_adapters.yaml.
func (c MetricsAPIs) Solutions() ([]checks.Solution, error) {
	as, err := metricsAdapters()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	for _, a := range as {
		var svcs []string
		for _, s := range a.Services {
			if s.Namespace != "" {
				svcs = append(svcs, s.Namespace+"/"+s.Name)
			} else {
				svcs = append(svcs, s.Name+" (any namespace)")
			}
		}
		out = append(out, solution(c, a.Name, "an Available metrics APIService backed by Service "+strings.Join(svcs, " or ")))
	}
	return out, nil
}

// Solutions are the autoscalers of autoscalers.yaml.
func (c AutoscalerFound) Solutions() ([]checks.Solution, error) { return autoscalerRows(c) }

// Solutions are the autoscalers of autoscalers.yaml, whose node groups
// the check reads.
func (c AcceleratorNodeGroups) Solutions() ([]checks.Solution, error) { return autoscalerRows(c) }

func autoscalerRows(c checks.Check) ([]checks.Solution, error) {
	d, err := loadAutoscalerData()
	if err != nil {
		return nil, err
	}
	var out []checks.Solution
	groups := make([]string, 0, len(d.Karpenter.Providers))
	for g := range d.Karpenter.Providers {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		out = append(out, solution(c, "Karpenter ("+d.Karpenter.Providers[g]+")",
			fmt.Sprintf("CRDs %s, %s; NodePools whose nodeClassRef group is %s", d.Karpenter.NodePools, d.Karpenter.NodeClaims, g)))
	}
	ca := d.ClusterAutoscaler
	out = append(out, solution(c, "Cluster Autoscaler",
		fmt.Sprintf("a Deployment whose pod label %s ends in %s, any namespace; status ConfigMap %s (in %s where several)",
			strings.Join(ca.Deployment.LabelKeys, ", "), ca.Deployment.NameSuffix, ca.StatusConfigMap, ca.Namespace)))
	var names []string
	crds := map[string][]string{}
	for _, k := range d.NodeGroupKinds {
		if _, ok := crds[k.Name]; !ok {
			names = append(names, k.Name)
		}
		crds[k.Name] = append(crds[k.Name], k.CRD)
	}
	for _, n := range names {
		out = append(out, solution(c, n, "CRDs "+strings.Join(crds[n], " or ")))
	}
	return out, nil
}

func solution(c checks.Check, name, detected string) checks.Solution {
	m := c.Meta()
	return checks.Solution{Requirement: m.Requirement, Name: name, Detected: detected, Checks: []string{m.ID}}
}
