package networking

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HTTPRoutesAccepted checks that an implementation accepted routes that
// manage traffic as inference services need: split by weight between
// backends, matched on headers.
type HTTPRoutesAccepted struct{}

// Meta implements checks.Check.
func (HTTPRoutesAccepted) Meta() checks.Meta {
	return checks.Meta{
		ID: "httproutes-accepted", Title: "Routes that split by weight or match headers are accepted",
		Requirement: "ai_inference",
		Description: "Reads the HTTPRoutes. A route is accepted when, for one of its parents, the implementation " +
			"(status.parents[].controllerName) reports Accepted and ResolvedRefs True for the route's " +
			"current generation. Among accepted routes it looks for those that split traffic by weight (a " +
			"rule with two or more backendRefs; the weights are reported) or match on a header (an " +
			"OpenAI-style x-model header, say). Passes when at least one such route is accepted (warns when " +
			"other routes are not); fails when there are routes and none is accepted, or when the routes " +
			"that split or match are all refused while plain ones are accepted; says nothing either way when " +
			"there is no route, or none of the accepted ones splits or matches: then only the probe's own " +
			"route shows it.",
		Remediation: "Check the route's parents and backends: `kubectl describe httproute -n NS NAME` shows each " +
			"parent's Accepted and ResolvedRefs conditions with their reasons (NotAllowedByListeners, " +
			"BackendNotFound, RefNotPermitted...).",
	}
}

// routeColumns shows what a route's status says per parent, and the
// weights and header matches of its rules; kubectl's own columns show
// only hostnames.
const routeColumns = `NAMESPACE:.metadata.namespace,NAME:.metadata.name,` +
	`PARENTS:.spec.parentRefs[*].name,` +
	`ACCEPTED:.status.parents[*].conditions[?(@.type=="Accepted")].status,` +
	`RESOLVED_REFS:.status.parents[*].conditions[?(@.type=="ResolvedRefs")].status,WEIGHTS:.spec.rules[*].backendRefs[*].weight,HEADERS:.spec.rules[*].matches[*].headers[*].name`

// Run implements checks.Check.
func (HTTPRoutesAccepted) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
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
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true, Columns: routeColumns}, "")
	if len(routes) == 0 {
		r.Finish(checks.Skip, "there is no HTTPRoute: nothing shows traffic split or matched (the probe's route does)")
		return r, nil
	}
	// rejectedManaged are the rejected routes that split or match: what
	// the requirement names, not shown at work.
	var shown, plain, rejected, rejectedManaged []string
	for _, rt := range routes {
		name := kube.ObjectName(rt)
		by, why := acceptedBy(rt)
		if by == "" {
			rejected = append(rejected, fmt.Sprintf("HTTPRoute %s: %s", name, why))
			if trafficManagement(rt) != "" {
				rejectedManaged = append(rejectedManaged, rejected[len(rejected)-1])
			}
			continue
		}
		if uses := trafficManagement(rt); uses != "" {
			shown = append(shown, fmt.Sprintf("HTTPRoute %s, accepted by %s, %s", name, by, uses))
		} else {
			plain = append(plain, name)
		}
	}
	r.Details = append(r.Details, rejected...)
	switch {
	case len(shown) > 0 && len(rejected) > 0:
		r.Finish(checks.Warn, "%s; %d of %d HTTPRoutes not accepted: %s", checks.CapLines(shown, 2, "; "), len(rejected), len(routes), checks.CapLines(rejected, 2, "; "))
	case len(shown) > 0:
		r.Finish(checks.Pass, "%s", checks.CapLines(shown, 3, "; "))
	case len(plain) == 0:
		r.Finish(checks.Fail, "none of %s is accepted with its refs resolved: %s", checks.Plural(len(routes), "HTTPRoute"), checks.CapLines(rejected, 3, "; "))
	case len(rejectedManaged) > 0:
		// Plain routes accepted say the implementation works; the routes
		// that would show the requirement at work are refused.
		r.Finish(checks.Fail, "no HTTPRoute that splits by weight or matches a header is accepted with its refs resolved (%s without either is): %s",
			checks.Plural(len(plain), "route"), checks.CapLines(rejectedManaged, 3, "; "))
	default:
		reason := fmt.Sprintf("%s accepted (%s), none splits by weight or matches a header", checks.Plural(len(plain), "HTTPRoute"), checks.CapLines(plain, 3, ", "))
		if len(rejected) > 0 {
			reason += fmt.Sprintf("; %d not accepted", len(rejected))
		}
		r.Finish(checks.Skip, "%s: nothing shows the traffic management the requirement names (the probe's route does)", reason)
	}
	return r, nil
}

// acceptedBy names the first parent, and its implementation, that accepted
// a route with its refs resolved; "" with why when none did.
func acceptedBy(rt *unstructured.Unstructured) (by, why string) {
	accepted, rejected := acceptingParents(rt, false)
	switch {
	case len(accepted) > 0:
		return accepted[0], ""
	case len(rejected) == 0:
		return "", "no implementation reports on it (status.parents is empty)"
	}
	return "", strings.Join(rejected, "; ")
}

// trafficManagement says how a route splits or matches traffic, "" when it
// does neither.
func trafficManagement(rt *unstructured.Unstructured) string {
	rules, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
	var splits, headers []string
	for _, x := range rules {
		rule, ok := x.(map[string]any)
		if !ok {
			continue
		}
		refs, _, _ := unstructured.NestedSlice(rule, "backendRefs")
		if len(refs) >= 2 {
			var ws []string
			for _, ref := range refs {
				w := int64(1) // the API's default
				if m, ok := ref.(map[string]any); ok {
					if v, found, _ := unstructured.NestedInt64(m, "weight"); found {
						w = v
					}
				}
				ws = append(ws, strconv.FormatInt(w, 10))
			}
			splits = append(splits, strings.Join(ws, "/"))
		}
		matches, _, _ := unstructured.NestedSlice(rule, "matches")
		for _, mt := range matches {
			m, ok := mt.(map[string]any)
			if !ok {
				continue
			}
			hs, _, _ := unstructured.NestedSlice(m, "headers")
			for _, h := range hs {
				if hm, ok := h.(map[string]any); ok && !checks.Contains(headers, str(hm, "name")) {
					headers = append(headers, str(hm, "name"))
				}
			}
		}
	}
	var uses []string
	if len(splits) > 0 {
		uses = append(uses, "splits by weight "+strings.Join(splits, ", "))
	}
	if len(headers) > 0 {
		uses = append(uses, "matches header "+strings.Join(headers, ", "))
	}
	return strings.Join(uses, " and ")
}
