package networking

import (
	"context"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Gateway API Inference Extension (GAIE). Its InferencePool has been GA
// at v1 in inferenceGroup since GAIE v1.0; the kinds still being designed
// (InferenceObjective, InferencePoolImport...), and the InferencePool of
// the releases before v1.0, live in inferenceXGroup.
const (
	inferenceGroup   = "inference.networking.k8s.io"
	inferenceXGroup  = "inference.networking.x-k8s.io"
	inferenceVersion = "v1"
	poolKind         = "InferencePool"
)

// The InferencePool CRDs: the GA one the checks read, and the pre-GA one a
// cluster may still serve.
var (
	poolsCRD  = "inferencepools." + inferenceGroup
	xPoolsCRD = "inferencepools." + inferenceXGroup
)

// inferenceBundleAnnotation is the release GAIE stamps on the CRDs it
// ships, since v1.0 (v0.x left them unstamped).
const inferenceBundleAnnotation = inferenceGroup + "/bundle-version"

// inferenceAPI is what the cluster serves of GAIE.
type inferenceAPI struct {
	pool, xPool *apiextensionsv1.CustomResourceDefinition
	// experimental are the experimental group's CRDs, the pre-GA
	// InferencePool among them, by name.
	experimental []*apiextensionsv1.CustomResourceDefinition
}

// readInferenceAPI finds GAIE's CRDs among the cluster's, from the list
// every CRD check shares.
func readInferenceAPI(ctx context.Context, env *checks.Env) (inferenceAPI, error) {
	var api inferenceAPI
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return api, err
	}
	for _, c := range crds {
		switch {
		case c.Name == poolsCRD:
			api.pool = c
		case c.Spec.Group == inferenceXGroup:
			if c.Name == xPoolsCRD {
				api.xPool = c
			}
			api.experimental = append(api.experimental, c)
		}
	}
	slices.SortFunc(api.experimental, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	return api, nil
}

// servedAt is the resource of CRD c (called name) at version, or why it
// cannot be read there; version "" takes the version kubectl would.
func servedAt(c *apiextensionsv1.CustomResourceDefinition, name, version string) (cluster.Resource, string) {
	if c == nil {
		return cluster.Resource{}, name + " is missing"
	}
	established := false
	for _, cond := range c.Status.Conditions {
		established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
	}
	if !established {
		return cluster.Resource{}, name + " is not Established"
	}
	r := kube.CRDResource(c)
	if version == "" {
		if r.GVR.Version == "" {
			return cluster.Resource{}, name + " serves no version"
		}
		return r, ""
	}
	if !slices.Contains(servedVersions(c), version) {
		return cluster.Resource{}, name + " does not serve " + version
	}
	// The checks read the version they know, whatever newer one a later
	// release serves.
	r.GVR.Version = version
	return r, ""
}

// servedVersions are the versions a CRD serves, in its own order.
func servedVersions(c *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range c.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// pools reads every InferencePool at v1; ok is false when the cluster does
// not serve them there.
func (a inferenceAPI) pools(ctx context.Context, env *checks.Env) (objs []*unstructured.Unstructured, res cluster.Resource, ok bool, err error) {
	res, why := servedAt(a.pool, poolsCRD, inferenceVersion)
	if why != "" {
		return nil, res, false, nil
	}
	objs, err = checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	slices.SortFunc(objs, func(x, y *unstructured.Unstructured) int {
		return strings.Compare(kube.ObjectName(x), kube.ObjectName(y))
	})
	return objs, res, true, err
}

// poolsNotServed is the reason of a check that has no InferencePool to read.
const poolsNotServed = "the InferencePool API is not served at " + inferenceGroup + "/" + inferenceVersion + " (see inference-extension-crds)"
