package networking

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// InferenceRoutesAccepted checks that a gateway implementation accepted
// routes that send requests to InferencePools.
type InferenceRoutesAccepted struct{}

// Meta implements checks.Check.
func (InferenceRoutesAccepted) Meta() checks.Meta {
	return checks.Meta{
		ID: "inference-routes-accepted", Title: "Routes to InferencePools are accepted",
		Requirement: "advanced_inference_ingress",
		Description: "Reads the HTTPRoutes and keeps those with a backendRef of group inference.networking.k8s.io and " +
			"kind InferencePool: traffic a gateway hands to the pool's endpoint picker rather than to a " +
			"Service. Such a route is accepted when every parent in its status.parents reports Accepted and " +
			"ResolvedRefs True for the route's current generation, and every pool it names exists. Passes " +
			"when every such route is accepted; warns when some parents or routes are not; fails when none " +
			"is; says nothing when no HTTPRoute sends to an InferencePool, as httproutes-accepted says " +
			"nothing without a route.",
		Remediation: "`kubectl describe httproute -n NS NAME` shows each parent's Accepted and ResolvedRefs " +
			"conditions with their reasons: a gateway implementation that does not support InferencePool " +
			"backends reports the backend as an unsupported kind (InvalidKind); a missing pool, " +
			"BackendNotFound. Use an implementation that supports the Gateway API Inference Extension and " +
			"create the pool in the route's namespace.",
	}
}

// inferenceRouteColumns show each route's parents' word and the kinds and
// names of its backends.
const inferenceRouteColumns = `NAMESPACE:.metadata.namespace,NAME:.metadata.name,` +
	`PARENTS:.spec.parentRefs[*].name,` +
	`ACCEPTED:.status.parents[*].conditions[?(@.type=="Accepted")].status,` +
	`RESOLVED_REFS:.status.parents[*].conditions[?(@.type=="ResolvedRefs")].status,BACKEND_KINDS:.spec.rules[*].backendRefs[*].kind,BACKENDS:.spec.rules[*].backendRefs[*].name`

// Run implements checks.Check.
func (InferenceRoutesAccepted) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	api, err := readGatewayAPI(ctx, env)
	if err != nil {
		return r, err
	}
	routes, res, ok, err := api.list(ctx, env, routesCRD)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", notServed)
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true, Columns: inferenceRouteColumns}, "")
	toPools := map[*unstructured.Unstructured][]string{}
	var ordered []*unstructured.Unstructured
	for _, rt := range routes {
		if refs := poolRefs(rt); len(refs) > 0 {
			toPools[rt] = refs
			ordered = append(ordered, rt)
		}
	}
	if len(ordered) == 0 {
		// As httproutes-accepted without a route: a route to a pool is
		// what a model's owner writes, and without one nothing shows the
		// gateway routing to a pool either way.
		r.Finish(checks.Skip, "no HTTPRoute sends to an InferencePool (a backendRef of group %s, kind %s): "+
			"nothing shows a gateway routing to one", inferenceGroup, poolKind)
		return r, nil
	}
	inf, err := readInferenceAPI(ctx, env)
	if err != nil {
		return r, err
	}
	pools, poolRes, poolsOK, err := inf.pools(ctx, env)
	if err != nil {
		return r, err
	}
	exists := map[string]bool{}
	if poolsOK {
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{poolRes}, AllNamespaces: true}, "")
		for _, p := range pools {
			exists[kube.ObjectName(p)] = true
		}
	}
	var shown, partial, broken []string
	for _, rt := range ordered {
		name := kube.ObjectName(rt)
		var missing []string
		for _, p := range toPools[rt] {
			if !exists[p] {
				missing = append(missing, "InferencePool "+p)
			}
		}
		accepted, rejected := acceptingParents(rt, false)
		var whys []string
		switch {
		case len(accepted) == 0 && len(rejected) == 0:
			whys = append(whys, "no implementation reports on it (status.parents is empty)")
		case len(rejected) > 0:
			whys = append(whys, rejected...)
		}
		switch {
		case len(missing) > 0 && !poolsOK:
			whys = append(whys, "it sends to "+strings.Join(missing, ", ")+", but "+poolsNotServed)
		case len(missing) > 0:
			whys = append(whys, "it sends to "+strings.Join(missing, ", ")+", which does not exist")
		}
		switch {
		case len(whys) == 0:
			shown = append(shown, fmt.Sprintf("HTTPRoute %s, accepted by %s, sends to InferencePool %s", name, strings.Join(accepted, ", "), strings.Join(toPools[rt], ", ")))
		case len(accepted) > 0 && len(missing) == 0:
			partial = append(partial, fmt.Sprintf("HTTPRoute %s, accepted by %s but not by %s", name, strings.Join(accepted, ", "), strings.Join(whys, "; ")))
		default:
			broken = append(broken, fmt.Sprintf("HTTPRoute %s: %s", name, strings.Join(whys, "; ")))
		}
	}
	r.Details = append(append(r.Details, partial...), broken...)
	notAll := append(append([]string(nil), partial...), broken...)
	switch {
	case len(shown) == 0 && len(partial) == 0:
		r.Finish(checks.Fail, "none of %s to an InferencePool is accepted with its refs resolved: %s", checks.Plural(len(ordered), "HTTPRoute"), checks.CapLines(broken, 3, "; "))
	case len(shown) == 0:
		r.Finish(checks.Warn, "no HTTPRoute to an InferencePool is accepted by every parent: %s", checks.CapLines(notAll, 3, "; "))
	case len(notAll) > 0:
		r.Finish(checks.Warn, "%d of %d HTTPRoutes to an InferencePool accepted by every parent (%s); not: %s", len(shown), len(ordered),
			checks.CapLines(shown, 2, "; "), checks.CapLines(notAll, 3, "; "))
	default:
		r.Finish(checks.Pass, "%s", checks.CapLines(shown, 3, "; "))
	}
	return r, nil
}

// poolRefs are the InferencePools (namespace/name) a route's rules send
// to; a backendRef's namespace defaults to the route's.
func poolRefs(rt *unstructured.Unstructured) []string {
	rules, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
	var out []string
	for _, x := range rules {
		rule, ok := x.(map[string]any)
		if !ok {
			continue
		}
		refs, _, _ := unstructured.NestedSlice(rule, "backendRefs")
		for _, ref := range refs {
			m, ok := ref.(map[string]any)
			if !ok || str(m, "group") != inferenceGroup || str(m, "kind") != poolKind {
				continue
			}
			ns := str(m, "namespace")
			if ns == "" {
				ns = rt.GetNamespace()
			}
			if p := ns + "/" + str(m, "name"); !checks.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
