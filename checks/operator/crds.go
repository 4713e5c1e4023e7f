package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CRDsEstablished checks that an operator's CRDs are served.
type CRDsEstablished struct{}

// Meta implements checks.Check.
func (CRDsEstablished) Meta() checks.Meta {
	return checks.Meta{
		ID:          "crds-established",
		Title:       "Operator CRDs established",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "Each CRD the operator profile names exists, and its Established and NamesAccepted conditions " +
			"are True, so the API server serves the operator's kinds.",
		Remediation: "Install or repair the operator's CRDs; `kubectl describe crd NAME` shows why a CRD is not " +
			"Established (a name conflict makes NamesAccepted False).",
	}
}

// Run implements checks.Check.
func (CRDsEstablished) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p := env.Profile
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	names := append([]string(nil), p.CRDs...)
	for _, c := range crds {
		byName[c.Name] = c
		if checks.Contains(p.Groups, c.Spec.Group) && !checks.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: names}, "")

	var problems []string
	bad := 0
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			problems = append(problems, n+" is missing")
			bad++
			continue
		}
		var conds []string
		for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
			if st, msg := crdCondition(c, t); st != apiextensionsv1.ConditionTrue {
				conds = append(conds, strings.TrimSpace(fmt.Sprintf("%s is %s %s", t, st, msg)))
			}
		}
		if len(conds) > 0 {
			problems = append(problems, n+": "+strings.Join(conds, ", "))
			bad++
		}
	}
	r.Details = problems
	if bad > 0 {
		r.Finish(checks.Fail, "%d of %d CRDs not established: %s", bad, len(names), strings.Join(problems, "; "))
		return r, nil
	}
	r.Finish(checks.Pass, "%d CRDs of %s established", len(names), strings.Join(p.Groups, ", "))
	return r, nil
}

func crdCondition(c *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) (apiextensionsv1.ConditionStatus, string) {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status, strings.TrimSpace(cond.Reason + " " + cond.Message)
		}
	}
	return "absent", ""
}
