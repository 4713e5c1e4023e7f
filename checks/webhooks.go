package checks

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/cluster"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// certWarning is how close to expiry a webhook's CA makes the check warn.
const certWarning = 30 * 24 * time.Hour

// WebhooksServed checks that an operator's admission webhooks are registered
// and have something to answer them.
type WebhooksServed struct{}

// Meta implements Check.
func (WebhooksServed) Meta() Meta {
	return Meta{
		ID:          "webhooks-served",
		Title:       "Webhooks registered and served",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "The operator's validating and mutating webhook configurations exist (those the profile names, and any whose rules name the operator's API groups); each webhook has a caBundle holding an unexpired certificate; a webhook backed by a Service has ready endpoints in that Service's EndpointSlices. A webhook reached by URL has no Service to inspect: it warns until probes show it answers. Registration and endpoints show a webhook can be reached, not that it answers.",
		Remediation: "Re-create the webhook configurations from the operator's manifests; renew the serving certificate and its caBundle (cert-manager's Certificate, or the operator's own cert rotation); make sure the webhook Service selects the controller pods.",
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
func registeredWebhooks(ctx context.Context, env *Env) ([]webhookRef, error) {
	vwcs, err := list[*admissionregistrationv1.ValidatingWebhookConfiguration](ctx, env, cluster.Query{Resource: cluster.ValidatingWebhookConfigurations})
	if err != nil {
		return nil, err
	}
	mwcs, err := list[*admissionregistrationv1.MutatingWebhookConfiguration](ctx, env, cluster.Query{Resource: cluster.MutatingWebhookConfigurations})
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

// Run implements Check.
func (WebhooksServed) Run(ctx context.Context, env *Env) (Result, error) {
	var r Result
	p := env.Profile
	all, err := registeredWebhooks(ctx, env)
	if err != nil {
		return r, err
	}
	configs := map[string]bool{}
	for _, h := range all {
		if contains(p.Webhooks, h.config) || rulesName(h.rules, p.Groups) {
			configs[h.config] = true
		}
	}
	var hooks []webhookRef
	for _, h := range all {
		if configs[h.config] {
			hooks = append(hooks, h)
		}
	}
	names := sortedSet(configs)
	if len(names) > 0 {
		r.evidence(ctx, env, cluster.Get{
			Resources: []cluster.Resource{cluster.ValidatingWebhookConfigurations, cluster.MutatingWebhookConfigurations},
			Grep:      `/(` + cluster.GrepAny(names...) + `) `,
		}, "")
	}
	var fails []string
	for _, n := range p.Webhooks {
		if !configs[n] {
			fails = append(fails, "webhook configuration "+n+" is not registered")
		}
	}
	if len(hooks) == 0 {
		if len(fails) > 0 {
			r.finish(Fail, "%s", strings.Join(fails, "; "))
		} else {
			r.finish(Skip, "%s registers no admission webhook for %s", p.Title, strings.Join(p.Groups, ", "))
		}
		return r, nil
	}

	now := env.Now()
	var warns []string
	services := map[string]bool{}
	for _, h := range hooks {
		id := fmt.Sprintf("%s webhook %s (configuration %s)", h.kind, h.name, h.config)
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
	for _, key := range sortedSet(services) {
		ns, name, _ := strings.Cut(key, "/")
		get := cluster.Get{Resources: []cluster.Resource{cluster.EndpointSlices}, Namespace: ns,
			LabelSelector: discoveryv1.LabelServiceName + "=" + name}
		r.evidence(ctx, env, get, "")
		slices, err := list[*discoveryv1.EndpointSlice](ctx, env, get.Queries()[0])
		if err != nil {
			return r, err
		}
		if ready := readyEndpoints(slices); ready == 0 {
			fails = append(fails, fmt.Sprintf("Service %s/%s has no ready endpoint: no pod is there to answer its webhooks", ns, name))
		}
	}
	r.Details = append(append([]string(nil), fails...), warns...)
	switch {
	case len(fails) > 0:
		r.finish(Fail, "%s", strings.Join(fails, "; "))
	case len(warns) > 0:
		r.finish(Warn, "%s in %s registered, but %s", plural(len(hooks), "webhook"), plural(len(names), "configuration"), strings.Join(warns, "; "))
	default:
		r.finish(Pass, "%s in %s registered with valid CA bundles; their Services have ready endpoints (registered and served, not exercised)", plural(len(hooks), "webhook"), plural(len(names), "configuration"))
	}
	return r, nil
}

// rulesName is true when a webhook's rules name one of the groups.
func rulesName(rules []admissionregistrationv1.RuleWithOperations, groups []string) bool {
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			if contains(groups, g) {
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
			warns = append(warns, fmt.Sprintf("CA %q expires at %s, in %s", c.Subject.CommonName, exp, age(left)))
		}
	}
	return fails, warns
}

// readyEndpoints counts endpoints ready to serve. The API defines a missing
// ready condition as ready.
func readyEndpoints(slices []*discoveryv1.EndpointSlice) int {
	n := 0
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// plural counts a noun: "1 webhook", "7 webhooks".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
