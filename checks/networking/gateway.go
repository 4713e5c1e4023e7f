package networking

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// gatewayGroup is the Gateway API's group; its kinds have been GA at v1
// since Gateway API v1.0.
const (
	gatewayGroup   = "gateway.networking.k8s.io"
	gatewayVersion = "v1"
)

// The CRDs ai_inference rests on: a class an implementation accepts, the
// gateways it programs, and the routes that split and match traffic.
var (
	classesCRD  = "gatewayclasses." + gatewayGroup
	gatewaysCRD = "gateways." + gatewayGroup
	routesCRD   = "httproutes." + gatewayGroup
)

// The annotations the Gateway API project puts on the CRDs it releases.
const (
	bundleVersionAnnotation = gatewayGroup + "/bundle-version"
	channelAnnotation       = gatewayGroup + "/channel"
)

// gatewayAPI is what the cluster serves of the Gateway API.
type gatewayAPI struct {
	crds map[string]*apiextensionsv1.CustomResourceDefinition
	// others are the group's further CRDs (GRPCRoute, ListenerSet...).
	others []string
}

// readGatewayAPI finds the Gateway API's CRDs among the cluster's.
func readGatewayAPI(ctx context.Context, env *checks.Env) (gatewayAPI, error) {
	api := gatewayAPI{crds: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return api, err
	}
	for _, c := range crds {
		switch {
		case c.Name == classesCRD || c.Name == gatewaysCRD || c.Name == routesCRD:
			api.crds[c.Name] = c
		case c.Spec.Group == gatewayGroup:
			api.others = append(api.others, c.Name)
		}
	}
	slices.Sort(api.others)
	return api, nil
}

// served is the resource of a Gateway API CRD at v1, or why it cannot be
// read there.
func (a gatewayAPI) served(name string) (cluster.Resource, string) {
	return servedAt(a.crds[name], name, gatewayVersion)
}

// list reads every object of a Gateway API kind; ok is false when the
// cluster does not serve it at v1.
func (a gatewayAPI) list(ctx context.Context, env *checks.Env, name string) (objs []*unstructured.Unstructured, res cluster.Resource, ok bool, err error) {
	res, why := a.served(name)
	if why != "" {
		return nil, res, false, nil
	}
	objs, err = checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	return objs, res, true, err
}

// notServed is the reason of a check that has nothing to read without the
// Gateway API.
const notServed = "the Gateway API is not served at " + gatewayVersion + " (see gateway-api-crds)"

// condition says whether a Gateway API status condition of type t is True
// for the object's current generation, and if not, why not. An
// implementation that has not caught up with a change still reports the
// generation it judged: that answer is about another spec.
func condition(conds []any, t string, generation int64) (bool, string) {
	for _, x := range conds {
		m, ok := x.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		status, _ := m["status"].(string)
		observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if status != "True" {
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return false, strings.TrimSpace(fmt.Sprintf("%s is %s %s %s", t, status, reason, msg))
		}
		if observed != 0 && observed < generation {
			return false, fmt.Sprintf("%s is True for generation %d, the object is at %d", t, observed, generation)
		}
		return true, ""
	}
	return false, t + " is not reported"
}

// acceptingParents reads the status.parents of a route or an
// InferencePool: the parents (Gateways) whose implementation reports
// Accepted and ResolvedRefs True for obj's current generation, as "NS/NAME
// (controller C)", and why each other parent does not. A parent's
// namespace defaults to obj's. With refsOptional, a parent that does not
// report ResolvedRefs at all still accepts: implementations of GAIE v1.0
// set only Accepted on a pool.
func acceptingParents(obj *unstructured.Unstructured, refsOptional bool) (accepted, rejected []string) {
	parents, _, _ := unstructured.NestedSlice(obj.Object, "status", "parents")
	for _, p := range parents {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(m, "conditions")
		ns := str(m, "parentRef", "namespace")
		if ns == "" {
			ns = obj.GetNamespace()
		}
		parent := ns + "/" + str(m, "parentRef", "name")
		if k := str(m, "parentRef", "kind"); k != "" && k != "Gateway" {
			parent = k + " " + parent
		}
		acc, why := condition(conds, "Accepted", obj.GetGeneration())
		if acc && (!refsOptional || hasCondition(conds, "ResolvedRefs")) {
			acc, why = condition(conds, "ResolvedRefs", obj.GetGeneration())
		}
		if acc {
			accepted = append(accepted, fmt.Sprintf("%s (controller %s)", parent, str(m, "controllerName")))
		} else {
			rejected = append(rejected, parent+": "+why)
		}
	}
	return accepted, rejected
}

// hasCondition is true when conds has a condition of type t.
func hasCondition(conds []any, t string) bool {
	return slices.ContainsFunc(conds, func(x any) bool {
		m, ok := x.(map[string]any)
		return ok && m["type"] == t
	})
}

// statusConditions are an object's status.conditions.
func statusConditions(u *unstructured.Unstructured) []any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	return conds
}

// str reads a string field of an object.
func str(u map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(u, fields...)
	return s
}
