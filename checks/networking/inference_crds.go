package networking

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// InferenceExtensionCRDs checks that the Gateway API Inference Extension's
// InferencePool is served.
type InferenceExtensionCRDs struct{}

// Meta implements checks.Check.
func (InferenceExtensionCRDs) Meta() checks.Meta {
	return checks.Meta{
		ID: "inference-extension-crds", Title: "The Gateway API Inference Extension is served",
		Requirement: "advanced_inference_ingress",
		Description: "Reads the CRDs and finds the Gateway API Inference Extension's InferencePool of " +
			"inference.networking.k8s.io, the kind a gateway routes to when an endpoint picker chooses the " +
			"model server for each request: it must be Established and serve v1. The release the project " +
			"stamps on its CRDs (the annotation inference.networking.k8s.io/bundle-version) is reported, and " +
			"the kinds of the experimental group inference.networking.x-k8s.io (InferenceObjective, " +
			"InferenceModelRewrite, InferencePoolImport...) are named. Passes when InferencePool is served " +
			"at v1; warns when only the InferencePool of the releases before v1.0 " +
			"(inference.networking.x-k8s.io) is served, which current implementations no longer read; fails " +
			"otherwise. CRDs say nothing of routing: inference-pools-ready and inference-routes-accepted " +
			"judge what an implementation does with them.",
		Remediation: "Install the CRDs of a Gateway API Inference Extension release (v1.0 or later) that your gateway " +
			"implementation supports, and move pools of the pre-GA group to inference.networking.k8s.io/v1.",
	}
}

// Run implements checks.Check.
func (InferenceExtensionCRDs) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	api, err := readInferenceAPI(ctx, env)
	if err != nil {
		return r, err
	}
	names := []string{poolsCRD}
	var kinds []string
	for _, c := range api.experimental {
		names = append(names, c.Name)
		kinds = append(kinds, fmt.Sprintf("%s (%s)", c.Spec.Names.Kind, strings.Join(servedVersions(c), ", ")))
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: names,
		Columns: `NAME:.metadata.name,BUNDLE:.metadata.annotations.inference\.networking\.k8s\.io/bundle-version,SERVED:.spec.versions[?(@.served==true)].name,ESTABLISHED:.status.conditions[?(@.type=="Established")].status`},
		"")
	if len(kinds) > 0 {
		r.Details = append(r.Details, "experimental kinds of "+inferenceXGroup+": "+strings.Join(kinds, ", "))
	}
	_, why := servedAt(api.pool, poolsCRD, inferenceVersion)
	if why == "" {
		r.Finish(checks.Pass, "%s: InferencePool served at %s/%s", inferenceRelease(api.pool), inferenceGroup, inferenceVersion)
		return r, nil
	}
	if api.pool == nil && api.xPool == nil {
		r.Finish(checks.Fail, "the Gateway API Inference Extension is not installed: no InferencePool CRD of %s", inferenceGroup)
		return r, nil
	}
	if xres, xwhy := servedAt(api.xPool, xPoolsCRD, ""); xwhy == "" {
		release := "release not stamped"
		if v := api.xPool.Annotations[inferenceBundleAnnotation]; v != "" {
			release = "GAIE " + v
		}
		r.Finish(checks.Warn, "only the pre-GA InferencePool is served: %s at %s (%s), which implementations of GAIE v1.0 and later do not route to; %s",
			xPoolsCRD, xres.GVR.Version, release, why)
		return r, nil
	}
	r.Finish(checks.Fail, "InferencePool is not served at %s/%s: %s", inferenceGroup, inferenceVersion, why)
	return r, nil
}

// inferenceRelease names the GAIE release a CRD was shipped with.
func inferenceRelease(c *apiextensionsv1.CustomResourceDefinition) string {
	if v := c.Annotations[inferenceBundleAnnotation]; v != "" {
		return "Gateway API Inference Extension " + v
	}
	return "Gateway API Inference Extension (release not stamped on its CRD)"
}
