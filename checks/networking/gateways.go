package networking

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// GatewaysProgrammed checks that a Gateway API implementation runs: it
// accepted a GatewayClass and programmed a Gateway of it.
type GatewaysProgrammed struct{}

// Meta implements checks.Check.
func (GatewaysProgrammed) Meta() checks.Meta {
	return checks.Meta{
		ID: "gateways-programmed", Title: "A Gateway API implementation programs gateways",
		Requirement: "ai_inference",
		Description: "Reads the GatewayClasses and Gateways. A GatewayClass is accepted when its Accepted condition " +
			"is True for its current generation: the implementation named by its controllerName has taken " +
			"it. A Gateway is programmed when its Programmed condition is True for its current generation; " +
			"its addresses are reported. Passes when every Gateway of an accepted class is programmed and at " +
			"least one is; warns when an accepted class has no programmed Gateway, or some Gateways are not " +
			"programmed; fails when no GatewayClass is accepted, since then no implementation acts on the " +
			"API.",
		Remediation: "Install a Gateway API implementation and its GatewayClass; `kubectl describe gatewayclass NAME` " +
			"and `kubectl describe gateway -n NS NAME` show the conditions it set and why.",
	}
}

// Run implements checks.Check.
func (GatewaysProgrammed) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	api, err := readGatewayAPI(ctx, env)
	if err != nil {
		return r, err
	}
	classes, classRes, ok, err := api.list(ctx, env, classesCRD)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", notServed)
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{classRes}}, "")
	gateways, gatewayRes, ok, err := api.list(ctx, env, gatewaysCRD)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", notServed)
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{gatewayRes}, AllNamespaces: true}, "")

	accepted := map[string]string{} // class -> controller
	var rejected []string
	for _, c := range classes {
		controller := str(c.Object, "spec", "controllerName")
		if ok, why := condition(statusConditions(c), "Accepted", c.GetGeneration()); ok {
			accepted[c.GetName()] = controller
		} else {
			rejected = append(rejected, fmt.Sprintf("GatewayClass %s (controller %s): %s", c.GetName(), controller, why))
		}
	}
	r.Details = append(r.Details, rejected...)
	if len(accepted) == 0 {
		if len(classes) == 0 {
			r.Finish(checks.Fail, "there is no GatewayClass: no Gateway API implementation is installed")
		} else {
			r.Finish(checks.Fail, "no GatewayClass is accepted by its controller: %s", checks.CapLines(rejected, 3, "; "))
		}
		return r, nil
	}

	var programmed, unprogrammed []string
	used := map[string]bool{}
	for _, g := range gateways {
		class := str(g.Object, "spec", "gatewayClassName")
		controller, ok := accepted[class]
		if !ok {
			continue
		}
		used[class] = true
		name := kube.ObjectName(g)
		if ok, why := condition(statusConditions(g), "Programmed", g.GetGeneration()); !ok {
			unprogrammed = append(unprogrammed, fmt.Sprintf("Gateway %s (class %s): %s", name, class, why))
			continue
		}
		at := addresses(g)
		if at == "" {
			at = "no address reported"
		}
		programmed = append(programmed, fmt.Sprintf("Gateway %s (class %s, controller %s) at %s", name, class, controller, at))
	}
	r.Details = append(r.Details, unprogrammed...)
	var idle []string
	for _, class := range checks.SortedKeys(accepted) {
		if !used[class] {
			idle = append(idle, fmt.Sprintf("%s (controller %s)", class, accepted[class]))
		}
	}
	switch {
	case len(programmed) == 0 && len(unprogrammed) == 0:
		r.Finish(checks.Warn, "GatewayClass %s is accepted, but there is no Gateway of it", strings.Join(idle, ", "))
	case len(programmed) == 0:
		r.Finish(checks.Warn, "no Gateway of an accepted class is programmed: %s", checks.CapLines(unprogrammed, 3, "; "))
	case len(unprogrammed) > 0:
		r.Finish(checks.Warn, "%d of %d Gateways programmed (%s); not programmed: %s", len(programmed), len(programmed)+len(unprogrammed),
			checks.CapLines(programmed, 2, "; "), checks.CapLines(unprogrammed, 3, "; "))
	default:
		r.Finish(checks.Pass, "%s programmed: %s", checks.Plural(len(programmed), "Gateway"), checks.CapLines(programmed, 3, "; "))
	}
	return r, nil
}

// addresses are the addresses a Gateway's implementation reported, joined.
func addresses(g *unstructured.Unstructured) string {
	raw, _, _ := unstructured.NestedSlice(g.Object, "status", "addresses")
	var out []string
	for _, a := range raw {
		if m, ok := a.(map[string]any); ok {
			if v := str(m, "value"); v != "" {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
