package checks

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Probe is what --probe sends for one operator. Objects are written as YAML
// in the profile, as a user would write them for kubectl.
type Probe struct {
	// Invalid is a custom resource the operator's validating webhook must
	// deny: it passes the CRD's schema, so only the webhook can refuse it.
	Invalid string `yaml:"invalid"`
	// DeniedBy is the webhook that must deny Invalid, found by name among
	// the operator's own webhooks (see operatorWebhooks in checks/operator).
	DeniedBy WebhookName `yaml:"deniedBy"`
	// DeniedWith is a part of the operator's denial message. When another
	// component registers a webhook of the same name on the same kinds
	// (kubebuilder names such as vraycluster.kb.io repeat), only this text
	// tells the operator's answer from the other's.
	DeniedWith string `yaml:"deniedWith"`
	// MutatedBy, when set, is a mutating webhook the canary passes through:
	// a dry run that comes back with the spec unchanged then warns.
	MutatedBy *WebhookName `yaml:"mutatedBy"`
	// Canary is a small valid custom resource: dry-run created first (the
	// webhooks must admit it), then created for real and watched until the
	// controller has reconciled it.
	Canary string `yaml:"canary"`
	// ReadyConditions, when set, are the conditions the canary must reach,
	// all of them True, in place of its kind's readyConditions: a job
	// reaches Complete, where a service reaches Ready.
	ReadyConditions []string `yaml:"readyConditions"`

	invalid, canary *unstructured.Unstructured
}

// WebhookName names one webhook of the operator. The name is what the API
// server quotes in a denial and what installers keep; the configuration
// holding it differs between installers, so it is optional and only shown.
type WebhookName struct {
	Configuration string `yaml:"configuration"`
	Webhook       string `yaml:"webhook"`
}

func (w WebhookName) String() string {
	if w.Configuration == "" {
		return w.Webhook
	}
	return w.Configuration + "/" + w.Webhook
}

// InvalidObject is Invalid parsed, or nil when the profile sends none. It is
// shared by every run: change only a DeepCopy of it.
func (pr *Probe) InvalidObject() *unstructured.Unstructured { return pr.invalid }

// CanaryObject is Canary parsed, or nil when the profile sends none. It is
// shared by every run: change only a DeepCopy of it.
func (pr *Probe) CanaryObject() *unstructured.Unstructured { return pr.canary }

// parse reads the probe's objects and checks they belong to the profile.
func (pr *Probe) parse(p *Profile) error {
	var err error
	if pr.Invalid != "" {
		if pr.invalid, err = parseObject(pr.Invalid, p); err != nil {
			return fmt.Errorf("invalid: %w", err)
		}
		if pr.DeniedBy.Webhook == "" {
			return fmt.Errorf("deniedBy: webhook is required with invalid")
		}
	}
	if pr.Canary != "" {
		if pr.canary, err = parseObject(pr.Canary, p); err != nil {
			return fmt.Errorf("canary: %w", err)
		}
	}
	if pr.invalid == nil && pr.canary == nil {
		return fmt.Errorf("neither invalid nor canary is set")
	}
	if pr.MutatedBy != nil && pr.canary == nil {
		return fmt.Errorf("mutatedBy needs a canary to send")
	}
	if pr.MutatedBy != nil && pr.MutatedBy.Webhook == "" {
		return fmt.Errorf("mutatedBy: webhook is required")
	}
	return nil
}

func parseObject(text string, p *Profile) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.UnmarshalStrict([]byte(text), &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	switch {
	case err != nil:
		return nil, fmt.Errorf("apiVersion %q: %w", u.GetAPIVersion(), err)
	case u.GetKind() == "" || u.GetName() == "":
		return nil, fmt.Errorf("kind and metadata.name are required")
	case !Contains(p.Groups, gv.Group):
		return nil, fmt.Errorf("%s is not in the profile's groups %v", u.GetAPIVersion(), p.Groups)
	case u.GetNamespace() != "":
		return nil, fmt.Errorf("metadata.namespace must be left out: probes use a namespace of their own")
	}
	return u, nil
}

// ProbeKinds are the kinds the profiles' probes send, each once: what
// `aiconform cleanup` looks through for cluster-scoped leftovers, which no
// probe namespace holds.
func ProbeKinds(ps []*Profile) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, p := range ps {
		var objs []*unstructured.Unstructured
		if p.Probe != nil {
			objs = append(objs, p.Probe.invalid, p.Probe.canary)
		}
		if p.Gang != nil && p.Gang.Probe != nil {
			// Validated when the profile was read: they parse.
			setup, fits, exceeds, _ := p.Gang.Probe.Objects("", "", "")
			objs = append(append(objs, setup...), fits, exceeds)
		}
		for _, u := range objs {
			if u != nil && !slices.Contains(out, u.GroupVersionKind()) {
				out = append(out, u.GroupVersionKind())
			}
		}
	}
	return out
}
