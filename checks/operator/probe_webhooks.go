package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// WebhooksAnswer proves the operator's admission webhooks answer, which a
// listing of their configurations cannot: an invalid custom resource must
// be denied by the operator's own webhook, and a valid one admitted. Both
// are server-side dry runs, so nothing is stored.
type WebhooksAnswer struct{}

// Meta implements checks.Check.
func (WebhooksAnswer) Meta() checks.Meta {
	return checks.Meta{
		ID: "webhooks-answer", Title: "The operator's webhooks answer: an invalid resource is denied, a valid one admitted",
		Requirement: "robust_controller", PerOperator: true, Probe: true,
		Description: "Under --probe only. Sends the profile's invalid custom resource as a server-side dry-run create " +
			"(nothing is stored) into the run's probe namespace; it passes when the API server's answer says " +
			"the profile's webhook denied it (`admission webhook \"NAME\" denied the request`), that webhook " +
			"being one of the operator's own (webhooks-served says which are), whatever its configuration is " +
			"called. Where another component registers a webhook of the same name on the same kinds, the " +
			"denial must also carry the profile's own message (deniedWith); a denial by another webhook is " +
			"an error, since the operator's answer was not seen. Then sends the profile's canary the same " +
			"way: it must be admitted, and what came back is compared with what was sent (the mutating " +
			"webhooks' and the schema's defaults). A webhook that cannot be called fails with the API " +
			"server's error; one whose sideEffects forbid dry runs is an error saying so. Without --probe it " +
			"is skipped, and so it is, with or without, for an operator that registers no webhook and of " +
			"which the profile requires none: there is nothing to answer.",
		Remediation: "If the webhook cannot be called, check its Service, endpoints and serving certificate " +
			"(webhooks-served) and the controller's logs. If the invalid resource was admitted, the webhook " +
			"is not registered for CREATE on that resource or its failurePolicy is Ignore while it is down.",
	}
}

// Run implements checks.Check.
func (WebhooksAnswer) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p, s := env.Profile, env.Probe
	hooks, err := registeredWebhooks(ctx, env)
	if err != nil {
		return r, err
	}
	own, others := operatorWebhooks(hooks, p, installNamespace(env))
	switch {
	case len(own) == 0 && len(p.RequiredWebhooks) == 0:
		// Not a probe unrun: there is nothing to answer, with or without
		// --probe (webhooks-served says what was looked for).
		r.Finish(checks.Skip, "%s: the webhook leg does not apply, there is no webhook to answer", noWebhook(p, installNamespace(env)))
		return r, nil
	case s == nil:
		r.Finish(checks.Skip, "probes are off: --probe sends %s's webhooks a resource they must deny", p.Title)
		return r, nil
	case p.Probe == nil || p.Probe.InvalidObject() == nil:
		r.Finish(checks.Skip, "the %s profile has no invalid resource to probe its webhooks with", p.Name)
		return r, nil
	}
	pr := p.Probe
	kind := pr.InvalidObject().GetKind()
	group := pr.InvalidObject().GroupVersionKind().Group
	denier, ok := named(own, pr.DeniedBy)
	if !ok {
		why := fmt.Sprintf("webhook %s of %s is not registered: nothing of %s can deny an invalid %s", pr.DeniedBy.Webhook, p.Title, p.Title, kind)
		if ts := twins(others, webhookRef{name: pr.DeniedBy.Webhook}, group); len(ts) > 0 {
			why += fmt.Sprintf(" (a webhook of that name in %s is another component's)", strings.Join(ts, ", "))
		}
		r.Finish(checks.Fail, "%s", why)
		return r, nil
	}
	deniedBy := checks.WebhookName{Configuration: denier.config, Webhook: denier.name}
	if _, err := kindOf(ctx, env, pr.InvalidObject()); err != nil {
		return r, fmt.Errorf("cannot probe: %w", err)
	}
	m, err := s.Mapping(pr.InvalidObject().GroupVersionKind())
	if err != nil {
		return r, err
	}
	if _, err := s.EnsureNamespace(ctx); err != nil {
		return r, err
	}

	invalid := pr.InvalidObject().DeepCopy()
	s.Label(invalid, m)
	_, denyErr := s.DryRun(ctx, m, invalid)
	if err := writeStep(&r, env, s.NamespaceOf(m), invalid, nil, denyErr, false,
		fmt.Sprintf("an invalid %s, sent as a dry run: webhook %s must deny it", kind, deniedBy)); err != nil {
		return r, err
	}
	status, reason := judgeDenial(denyErr, deniedBy, twins(others, denier, group), pr.DeniedWith, kind)
	if status != checks.Pass || pr.CanaryObject() == nil {
		r.Finish(status, "%s", reason)
		return r, nil
	}

	cm, err := s.Mapping(pr.CanaryObject().GroupVersionKind())
	if err != nil {
		return r, err
	}
	canary := pr.CanaryObject().DeepCopy()
	s.Label(canary, cm)
	// canary-reconciled creates the canary itself, maybe at this moment:
	// the dry run must not collide with it by name.
	canary.SetName(canary.GetName() + "-dry-run")
	got, admitErr := s.DryRun(ctx, cm, canary)
	if err := writeStep(&r, env, s.NamespaceOf(cm), canary, got, admitErr, true,
		fmt.Sprintf("a valid %s, sent as a dry run: it must be admitted; what comes back shows "+
			"the defaults the webhooks and schema added", canary.GetKind())); err != nil {
		return r, err
	}
	if admitErr != nil {
		st, why := judgeCallError(admitErr)
		r.Finish(st, "the invalid %s was denied, but the valid canary was refused too: %s", kind, why)
		return r, nil
	}
	changes := objectDiff(canary, got)
	if len(changes) > 0 {
		r.Table = &checks.Table{Header: []string{"FIELD", "SENT", "RETURNED"}, Rows: changes}
	}
	if pr.MutatedBy != nil {
		if _, ok := named(own, *pr.MutatedBy); !ok {
			r.Finish(checks.Warn, "%s; but mutating webhook %s is not registered", reason, *pr.MutatedBy)
			return r, nil
		}
		if len(changes) == 0 {
			r.Finish(checks.Warn, "%s; but the canary came back unchanged through mutating webhook %s", reason, *pr.MutatedBy)
			return r, nil
		}
	}
	r.Finish(checks.Pass, "%s; the valid %s was admitted (%s changed on the way)", reason, canary.GetKind(), checks.Plural(len(changes), "field"))
	return r, nil
}

// writeStep adds to r a create as kubectl shows it: the created line (or
// the object, with -o yaml) on success, kubectl's error text on failure.
func writeStep(r *checks.Result, env *checks.Env, namespace string, sent, got *unstructured.Unstructured, werr error, showYAML bool, note string) error {
	cmd, err := probe.CreateCommand(namespace, sent, true, showYAML)
	if err != nil {
		return err
	}
	var out string
	switch {
	case werr != nil:
		out = probe.ErrorText("creating", "STDIN", werr)
		if msg := werr.Error(); strings.Contains(msg, "admission webhook") && !strings.Contains(out, "admission webhook") {
			// kubectl prints only the causes of an Invalid answer; the
			// webhook that gave it is in the status message.
			note += fmt.Sprintf(". The API's status message, which kubectl does not print for Invalid: %q", msg)
		}
	case showYAML:
		if out, err = probe.YAMLText(got); err != nil {
			return err
		}
	default:
		if out, err = probe.CreatedText(sent, true); err != nil {
			return err
		}
	}
	r.Evidence = append(r.Evidence, checks.Step{Command: cmd, Output: out, CapturedAt: env.Now().UTC(), Note: note})
	return nil
}

// judgeDenial reads the API server's answer to the invalid resource.
// twins are configurations of other components holding a webhook of the
// same name on the group; deniedWith, when set, is a part of the
// operator's own denial message, which tells its answer from theirs.
func judgeDenial(err error, want checks.WebhookName, twins []string, deniedWith, kind string) (checks.Status, string) {
	if err == nil {
		return checks.Fail, fmt.Sprintf("the invalid %s was admitted: webhook %s did not deny it", kind, want)
	}
	msg := err.Error()
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", want.Webhook)
	if i := strings.Index(msg, deniedBy); i >= 0 {
		why := strings.TrimPrefix(strings.TrimSpace(msg[i+len(deniedBy):]), ": ")
		switch {
		case len(twins) == 0:
			return checks.Pass, fmt.Sprintf("webhook %s denied the invalid %s (%s)", want, kind, firstLine(why))
		case deniedWith != "" && strings.Contains(why, deniedWith):
			return checks.Pass, fmt.Sprintf("webhook %s denied the invalid %s (%s); the message is its own, not that of the webhook of the same name in %s",
				want, kind, firstLine(why), strings.Join(twins, ", "))
		case deniedWith != "":
			return checks.Error, fmt.Sprintf("a webhook named %q denied the invalid %s, but with %q, not the operator's "+
				"%q: the same-named webhook in %s may have answered first, so the operator's answer is unseen",
				want.Webhook, kind, firstLine(why), deniedWith, strings.Join(twins, ", "))
		}
		return checks.Warn, fmt.Sprintf("a webhook named %q denied the invalid %s, but configurations %s and %s share that name",
			want.Webhook, kind, want.Configuration, strings.Join(twins, ", "))
	}
	if strings.Contains(msg, "denied the request") {
		return checks.Error, "another webhook denied the invalid resource before the operator's answer could be seen: " + msg
	}
	if apierrors.IsInvalid(err) && !strings.Contains(msg, "webhook") {
		return checks.Error, "the API server refused the invalid resource before any webhook saw it " +
			"(schema validation); the profile's invalid resource must pass the CRD's schema: " + msg
	}
	return judgeCallError(err)
}

// judgeCallError reads a write that failed for a reason other than a
// denial.
func judgeCallError(err error) (checks.Status, string) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "does not support dry run"):
		return checks.Error, "a webhook on the path cannot be called in a dry run (its sideEffects are not None or NoneOnDryRun), so the probe cannot tell: " + msg
	case strings.Contains(msg, "failed calling webhook"):
		return checks.Fail, "cannot call the webhook: " + msg
	case apierrors.IsForbidden(err) && strings.Contains(msg, "cannot create"):
		return checks.Error, "not allowed to create (dry run) the probe's resource: " + msg
	}
	return checks.Fail, msg
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// serverSet are metadata fields every create fills in; they say nothing of
// what admission changed.
var serverSet = []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "namespace"}

// objectDiff lists the fields whose values differ between what was sent
// and what the API server returned, apart from those every create sets and
// the status, as rows of path, sent and returned values.
func objectDiff(sent, got *unstructured.Unstructured) [][]string {
	a, b := flatten(strip(sent.Object)), flatten(strip(got.Object))
	var paths []string
	for k := range a {
		paths = append(paths, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			paths = append(paths, k)
		}
	}
	sort.Strings(paths)
	var rows [][]string
	for _, k := range paths {
		va, okA := a[k]
		vb, okB := b[k]
		if okA && okB && va == vb {
			continue
		}
		if !okA {
			va = "(absent)"
		}
		if !okB {
			vb = "(absent)"
		}
		rows = append(rows, []string{k, va, vb})
	}
	return rows
}

func strip(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k != "status" {
			out[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := map[string]any{}
		for k, v := range md {
			if !checks.Contains(serverSet, k) {
				m[k] = v
			}
		}
		out["metadata"] = m
	}
	return out
}

// flatten maps each leaf's dotted path (lists indexed: containers[0]) to
// its JSON value.
func flatten(v any) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 && path != "" {
				out[path] = "{}"
			}
			for k, c := range t {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, c)
			}
		case []any:
			if len(t) == 0 {
				out[path] = "[]"
			}
			for i, c := range t {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		default:
			b, _ := json.Marshal(t) // leaves of decoded JSON always encode
			out[path] = string(b)
		}
	}
	walk("", v)
	return out
}

// named is the first of hooks called name, in a configuration called as
// n says when it says.
func named(hooks []webhookRef, n checks.WebhookName) (webhookRef, bool) {
	for _, h := range hooks {
		if h.name == n.Webhook && (n.Configuration == "" || h.config == n.Configuration) {
			return h, true
		}
	}
	for _, h := range hooks {
		if h.name == n.Webhook {
			return h, true // the configuration is named otherwise by this install
		}
	}
	return webhookRef{}, false
}

// twins are the configurations of other components' webhooks called like
// own on the group: a denial quoting that name could be theirs.
func twins(others []webhookRef, own webhookRef, group string) []string {
	var out []string
	for _, h := range others {
		if h.name == own.name && rulesName(h.rules, []string{group}) {
			out = append(out, h.config)
		}
	}
	return out
}

// kindOf finds the custom resource kind of obj among the CRDs the cluster
// serves, for the profile's resource entry and kubectl's resource name.
func kindOf(ctx context.Context, env *checks.Env, obj *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return nil, err
	}
	gvk := obj.GroupVersionKind()
	for _, crd := range crds {
		if crd.Spec.Group == gvk.Group && crd.Spec.Names.Kind == gvk.Kind {
			return crd, nil
		}
	}
	return nil, fmt.Errorf("the cluster serves no CRD of kind %s", gvk.GroupKind())
}
