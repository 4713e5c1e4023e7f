package operator

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// certWarning is how close to expiry a webhook's CA makes the check warn.
const certWarning = 30 * 24 * time.Hour

// WebhooksServed checks that an operator's admission webhooks are registered
// and have something to answer them.
type WebhooksServed struct{}

// Meta implements checks.Check.
func (WebhooksServed) Meta() checks.Meta {
	return checks.Meta{
		ID:          "webhooks-served",
		Title:       "Webhooks registered and served",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "The operator's own validating and mutating webhooks are registered: those in a configuration " +
			"the profile knows by name (installers name them differently), and those whose rules name the " +
			"operator's API groups and whose Service is in the namespace where its controller was found; " +
			"every webhook the profile requires is among them, whatever its configuration is called. An " +
			"operator that registers none, and of which the profile requires none (KubeRay's Helm chart " +
			"registers none), skips: the webhook leg of the requirement does not apply, which the verdict " +
			"says, and the evidence lists the configurations there are. Webhooks of other components that " +
			"intercept the operator's kinds (Kueue's on TrainJobs) are listed as context and not judged. " +
			"Each own webhook has a caBundle holding an unexpired certificate; a webhook backed by a Service " +
			"has ready endpoints in that Service's EndpointSlices. A webhook reached by URL has no Service " +
			"to inspect: it warns until probes show it answers. Registration and endpoints show a webhook " +
			"can be reached, not that it answers.",
		Remediation: "Re-create the webhook configurations from the operator's manifests; renew the serving " +
			"certificate and its caBundle (cert-manager's Certificate, or the operator's own cert rotation); " +
			"make sure the webhook Service selects the controller pods.",
	}
}

type webhookRef struct {
	config, kind, name string
	rules              []admissionregistrationv1.RuleWithOperations
	cc                 admissionregistrationv1.WebhookClientConfig
}

// registeredWebhooks flattens every validating and mutating webhook:
// their configurations hold different Go types with the same fields the
// checks read.
func registeredWebhooks(ctx context.Context, env *checks.Env) ([]webhookRef, error) {
	vwcs, err := checks.List[*admissionregistrationv1.ValidatingWebhookConfiguration](ctx, env, cluster.Query{Resource: cluster.ValidatingWebhookConfigurations})
	if err != nil {
		return nil, err
	}
	mwcs, err := checks.List[*admissionregistrationv1.MutatingWebhookConfiguration](ctx, env, cluster.Query{Resource: cluster.MutatingWebhookConfigurations})
	if err != nil {
		return nil, err
	}
	var all []webhookRef
	for _, c := range vwcs {
		for _, w := range c.Webhooks {
			all = append(all, webhookRef{c.Name, "validating", w.Name, w.Rules, w.ClientConfig})
		}
	}
	for _, c := range mwcs {
		for _, w := range c.Webhooks {
			all = append(all, webhookRef{c.Name, "mutating", w.Name, w.Rules, w.ClientConfig})
		}
	}
	return all, nil
}

// operatorWebhooks splits the webhooks that concern an operator into its own
// and the others. Its own are those in a configuration the profile knows by
// name, and those whose rules name its API groups and whose Service lives in
// ns, the namespace its controller was found in ("" when found nowhere). The others also name its groups in their rules
// but are served from elsewhere: another operator watching its kinds, as
// Kueue does for TrainJobs and RayClusters. A configuration name alone is no
// identity: installers (kustomize, Helm) name configurations differently,
// and one configuration can hold the webhooks of many operators' groups.
func operatorWebhooks(all []webhookRef, p *checks.Profile, ns string) (own, others []webhookRef) {
	for _, h := range all {
		switch {
		case checks.Contains(p.Webhooks, h.config):
			own = append(own, h)
		case !rulesName(h.rules, p.Groups):
		case h.cc.Service != nil && ns != "" && h.cc.Service.Namespace == ns:
			own = append(own, h)
		default:
			others = append(others, h)
		}
	}
	return own, others
}

// installNamespace is where the profile's controller was found, "" when
// it was found nowhere.
func installNamespace(env *checks.Env) string {
	if env.Install == nil {
		return ""
	}
	return env.Install.Namespace
}

// noWebhook says that p registers no admission webhook, and where one was
// looked for. Installers differ: KubeRay's Helm chart and its
// config/default register none.
func noWebhook(p *checks.Profile, ns string) string {
	var where []string
	if len(p.Webhooks) > 0 {
		where = append(where, "no configuration named "+strings.Join(p.Webhooks, " or "))
	}
	if ns != "" {
		where = append(where, fmt.Sprintf("none served from namespace %s, where its controller runs, names %s", ns, strings.Join(p.Groups, ", ")))
	}
	s := fmt.Sprintf("%s registers no admission webhook", p.Title)
	if len(where) > 0 {
		s += " (" + strings.Join(where, "; ") + ")"
	}
	return s
}

// describe names a webhook for a reader: kind, name and configuration.
func (h webhookRef) describe() string {
	return fmt.Sprintf("%s webhook %s (configuration %s)", h.kind, h.name, h.config)
}

// servedBy says where a webhook's requests go: a Service or a URL.
func (h webhookRef) servedBy() string {
	switch {
	case h.cc.Service != nil:
		return "Service " + h.cc.Service.Namespace + "/" + h.cc.Service.Name
	case h.cc.URL != nil:
		return "URL " + *h.cc.URL
	}
	return "nothing"
}

// Run implements checks.Check.
func (WebhooksServed) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p := env.Profile
	all, err := registeredWebhooks(ctx, env)
	if err != nil {
		return r, err
	}
	hooks, others := operatorWebhooks(all, p, installNamespace(env))
	configs := map[string]bool{}
	for _, h := range hooks {
		configs[h.config] = true
	}
	names := checks.SortedKeys(configs)
	if len(names) > 0 {
		r.AddEvidence(ctx, env, cluster.Get{
			Resources: []cluster.Resource{cluster.ValidatingWebhookConfigurations, cluster.MutatingWebhookConfigurations},
			Grep:      `/(` + cluster.GrepAny(names...) + `) `,
		}, "")
	}
	var fails []string
	for _, n := range p.RequiredWebhooks {
		if !slices.ContainsFunc(hooks, func(h webhookRef) bool { return h.name == n }) {
			fails = append(fails, "webhook "+n+" is not registered")
		}
	}
	// Other operators' webhooks on these kinds are context, not a verdict:
	// a fault in Kueue's webhooks is Kueue's.
	var alsoSeen []string
	for _, h := range others {
		alsoSeen = append(alsoSeen, fmt.Sprintf("not judged, another component's: %s, served by %s, also intercepts %s", h.describe(), h.servedBy(), strings.Join(p.Groups, ", ")))
	}
	if len(hooks) == 0 {
		// Every configuration, so that the evidence shows none is the
		// operator's.
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.ValidatingWebhookConfigurations, cluster.MutatingWebhookConfigurations}},
			"no configuration here holds a webhook of "+p.Title)
		r.Details = append(append(r.Details, fails...), alsoSeen...)
		if len(fails) > 0 {
			// The profile says every install registers these.
			r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
			return r, nil
		}
		r.Finish(checks.Skip, "%s: the webhook leg does not apply, there is no webhook to be operational", noWebhook(p, installNamespace(env)))
		return r, nil
	}

	now := env.Now()
	var warns []string
	services := map[string]bool{}
	for _, h := range hooks {
		id := h.describe()
		f, w := caBundleHealth(h.cc.CABundle, now)
		for _, s := range f {
			fails = append(fails, id+": "+s)
		}
		for _, s := range w {
			warns = append(warns, id+": "+s)
		}
		switch {
		case h.cc.Service != nil:
			services[h.cc.Service.Namespace+"/"+h.cc.Service.Name] = true
		case h.cc.URL != nil:
			warns = append(warns, fmt.Sprintf("%s is reached by URL %s: there is no Service to inspect, and only a probe can show it answers", id, *h.cc.URL))
		}
	}
	for _, key := range checks.SortedKeys(services) {
		ns, name, _ := strings.Cut(key, "/")
		get := cluster.Get{Resources: []cluster.Resource{cluster.EndpointSlices}, Namespace: ns,
			LabelSelector: discoveryv1.LabelServiceName + "=" + name}
		r.AddEvidence(ctx, env, get, "")
		slices, err := checks.List[*discoveryv1.EndpointSlice](ctx, env, get.Queries()[0])
		if err != nil {
			return r, err
		}
		if ready := checks.ReadyEndpoints(slices); ready == 0 {
			fails = append(fails, fmt.Sprintf("Service %s/%s has no ready endpoint: no pod is there to answer its webhooks", ns, name))
		}
	}
	r.Details = append(append(append([]string(nil), fails...), warns...), alsoSeen...)
	notJudged := ""
	if len(others) > 0 {
		notJudged = fmt.Sprintf(" (%s of other components on its kinds not judged)", checks.Plural(len(others), "webhook"))
	}
	switch {
	case len(fails) > 0:
		r.Finish(checks.Fail, "%s", strings.Join(fails, "; "))
	case len(warns) > 0:
		r.Finish(checks.Warn, "%s in %s registered%s, but %s", checks.Plural(len(hooks), "webhook"), checks.Plural(len(names), "configuration"), notJudged, strings.Join(warns, "; "))
	default:
		r.Finish(checks.Pass, "%s in %s registered with valid CA bundles; their Services have ready endpoints (registered and served, not exercised)%s",
			checks.Plural(len(hooks), "webhook"), checks.Plural(len(names), "configuration"), notJudged)
	}
	return r, nil
}

// rulesName is true when a webhook's rules name one of the groups.
func rulesName(rules []admissionregistrationv1.RuleWithOperations, groups []string) bool {
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			if checks.Contains(groups, g) {
				return true
			}
		}
	}
	return false
}

// caBundleHealth reads a caBundle: it must hold at least one certificate,
// none expired; one expiring soon warns.
func caBundleHealth(bundle []byte, now time.Time) (fails, warns []string) {
	if len(strings.TrimSpace(string(bundle))) == 0 {
		return []string{"caBundle is empty: the API server cannot verify the webhook's certificate"}, nil
	}
	var certs []*x509.Certificate
	rest := bundle
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return []string{fmt.Sprintf("caBundle holds a certificate that does not parse: %v", err)}, nil
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return []string{"caBundle holds no PEM certificate"}, nil
	}
	for _, c := range certs {
		exp := c.NotAfter.UTC().Format(time.RFC3339)
		switch left := c.NotAfter.Sub(now); {
		case left <= 0:
			fails = append(fails, fmt.Sprintf("CA %q expired at %s", c.Subject.CommonName, exp))
		case left < certWarning:
			warns = append(warns, fmt.Sprintf("CA %q expires at %s, in %s", c.Subject.CommonName, exp, kube.Age(left)))
		}
	}
	return fails, warns
}
