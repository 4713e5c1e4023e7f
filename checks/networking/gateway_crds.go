package networking

import (
	"context"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
)

// GatewayAPICRDs checks that the Gateway API's kinds are served.
type GatewayAPICRDs struct{}

// Meta implements checks.Check.
func (GatewayAPICRDs) Meta() checks.Meta {
	return checks.Meta{
		ID: "gateway-api-crds", Title: "The Gateway API is served",
		Requirement: "ai_inference",
		Description: "Reads the CRDs and finds the Gateway API's GatewayClass, Gateway and HTTPRoute " +
			"(gateway.networking.k8s.io): each must be Established and serve v1. The release and channel the " +
			"Gateway API project stamps on its CRDs (the annotations " +
			"gateway.networking.k8s.io/bundle-version and /channel) are reported, and the group's other " +
			"kinds named. Passes when all three are served at v1; fails otherwise. CRDs are where an " +
			"implementation starts: what it does with them is judged by gateways-programmed and " +
			"httproutes-accepted.",
		Remediation: "Install the Gateway API CRDs of a release your implementation supports (the standard channel " +
			"holds GatewayClass, Gateway and HTTPRoute at v1), usually with the implementation itself.",
	}
}

// Run implements checks.Check.
func (GatewayAPICRDs) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	api, err := readGatewayAPI(ctx, env)
	if err != nil {
		return r, err
	}
	names := []string{classesCRD, gatewaysCRD, routesCRD}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: names,
		Columns: `NAME:.metadata.name,BUNDLE:.metadata.annotations.gateway\.networking\.k8s\.io/bundle-version,CHANNEL:.metadata.annotations.gateway\.networking\.k8s\.io/channel,SERVED:.spec.versions[?(@.served==true)].name,ESTABLISHED:.status.conditions[?(@.type=="Established")].status`},
		"")
	var problems []string
	for _, n := range names {
		if _, why := api.served(n); why != "" {
			problems = append(problems, why)
		}
	}
	if len(api.others) > 0 {
		r.Details = append(r.Details, "further Gateway API kinds: "+strings.Join(api.others, ", "))
	}
	if len(problems) == len(names) && len(api.crds) == 0 {
		r.Finish(checks.Fail, "the Gateway API is not installed: no GatewayClass, Gateway or HTTPRoute CRD of %s", gatewayGroup)
		return r, nil
	}
	if len(problems) > 0 {
		r.Finish(checks.Fail, "the Gateway API is not fully served: %s", strings.Join(problems, "; "))
		return r, nil
	}
	release := "Gateway API"
	c := api.crds[gatewaysCRD]
	if v := c.Annotations[bundleVersionAnnotation]; v != "" {
		release += " " + v
	}
	if ch := c.Annotations[channelAnnotation]; ch != "" {
		release += ", " + ch + " channel"
	} else {
		release += " (release not stamped on its CRDs)"
	}
	r.Finish(checks.Pass, "%s: GatewayClass, Gateway and HTTPRoute served at %s", release, gatewayVersion)
	return r, nil
}
