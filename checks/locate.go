package checks

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/cluster"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Install is one install of an operator's controller, as found on the
// cluster: installers put it where they like (Helm in its release's
// namespace, under a name made from the release), so a profile's
// namespace and Deployment name are hints, and this is what was found.
type Install struct {
	Namespace string
	// Deployment is the controller's Deployment.
	Deployment string
	// Selector selects the controller's pods: the Deployment's own
	// spec.selector, whatever labels the profile knows.
	Selector string
	// FoundBy are the ways that led to it, for the evidence: its pod
	// template's labels, a Service its webhooks or conversions call, the
	// Lease a pod of it holds.
	FoundBy []string
	// Others are further Deployments of the namespace found the same
	// ways, not judged: one install is one controller.
	Others []string
	// Missed are the reads the search was refused, which may hide
	// another install.
	Missed []string
}

// Where says where the install was found and how, for a note.
func (in *Install) Where() string {
	return fmt.Sprintf("Deployment %s/%s, found by %s", in.Namespace, in.Deployment, strings.Join(in.FoundBy, "; "))
}

// Hinted says how the install's place differs from the profile's hint,
// "" when it is where the hint says.
func (in *Install) Hinted(p *Profile) string {
	c := p.Controller
	switch {
	case c.Namespace != "" && in.Namespace != c.Namespace:
		return fmt.Sprintf(" (not in %s, where %s's own manifests put it)", c.Namespace, p.Title)
	case c.Deployment != "" && in.Deployment != c.Deployment:
		return fmt.Sprintf(" (not named %s, as %s's own manifests name it)", c.Deployment, p.Title)
	}
	return ""
}

// Searched says where an operator's controller was looked for, for a
// verdict that found none.
func Searched(p *Profile) string {
	s := fmt.Sprintf("no Deployment in any namespace has a pod template labelled %s", p.Controller.Selector)
	s += ", none backs a Service its webhooks or CRD conversions call"

	if p.Controller.Lease != "" {
		s += ", and no pod of a Deployment holds a Lease named " + p.Controller.Lease
	}
	return s
}

// Locate finds the installs of p's controller in every namespace, from
// what the operator is rather than where one installer puts it: the
// Deployments whose pod template carries the profile's selector (the
// cluster-wide list of Deployments, which the run reads once), the
// Deployments behind the Services that the operator's webhooks and its
// CRDs' conversions call, and the Deployment of the pod holding its
// leader Lease. One namespace holds one install; two namespaces, two.
// They come in a fixed order: the profile's namespace first, then by
// namespace.
func Locate(ctx context.Context, c *cluster.Cache, p *Profile, crds []*apiextensionsv1.CustomResourceDefinition) ([]Install, error) {
	sel, err := labels.Parse(p.Controller.Selector)
	if err != nil {
		return nil, fmt.Errorf("profile %s: controller selector: %w", p.Name, err)
	}
	deps, _, err := c.Workloads(ctx, cluster.Deployments)
	if err != nil {
		return nil, err
	}
	f := finder{found: map[string]*located{}}
	for _, d := range deps {
		if sel.Matches(labels.Set(d.TemplateLabels)) {
			f.add(d, "its pod template's labels "+p.Controller.Selector)
		}
	}
	// The other ways find what labels of another installer hide. A read
	// they are refused leaves the search short: it is said, and an error
	// only where nothing was found (a Fail then would not be honest).
	var missed []error
	if err := f.services(ctx, c, p, crds, deps); err != nil {
		missed = append(missed, err)
	}
	if p.Controller.Lease != "" {
		if err := f.leaseHolders(ctx, c, p.Controller.Lease, deps); err != nil {
			missed = append(missed, err)
		}
	}
	ins := f.installs(p)
	if len(ins) == 0 && len(missed) > 0 {
		return nil, errors.Join(missed...)
	}
	for i := range ins {
		for _, err := range missed {
			ins[i].Missed = append(ins[i].Missed, err.Error())
		}
	}
	return ins, nil
}

// services adds the Deployments whose pods back a Service that p's
// webhooks or CRD conversions call.
func (f *finder) services(ctx context.Context, c *cluster.Cache, p *Profile, crds []*apiextensionsv1.CustomResourceDefinition, deps []*cluster.Workload) error {
	services, err := operatorServices(ctx, c, p, crds)
	if err != nil {
		return err
	}
	for _, s := range services {
		svcs, err := listAs[*corev1.Service](ctx, c, cluster.Query{Resource: cluster.Services, Namespace: s.namespace})
		if err != nil {
			return err
		}
		for _, svc := range svcs {
			if svc.Name != s.name || len(svc.Spec.Selector) == 0 {
				continue
			}
			for _, d := range deps {
				if d.Namespace == s.namespace && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.TemplateLabels)) {
					f.add(d, fmt.Sprintf("its pods back Service %s/%s, which %s calls", s.namespace, s.name, s.caller))
				}
			}
		}
	}
	return nil
}

// located is a Deployment found, and each way it was.
type located struct {
	dep *cluster.Workload
	how []string
}

// finder gathers the Deployments found, by namespace/name.
type finder struct {
	found map[string]*located
}

func (f *finder) add(d *cluster.Workload, how string) {
	key := d.Namespace + "/" + d.Name
	c := f.found[key]
	if c == nil {
		c = &located{dep: d}
		f.found[key] = c
	}
	if !Contains(c.how, how) {
		c.how = append(c.how, how)
	}
}

// leaseHolders adds the Deployment of each pod holding a Lease of that
// name, in any namespace (controller-runtime keeps it in the
// controller's own namespace by default). Only a namespace where nothing
// was found yet is looked into: elsewhere the Lease adds no install.
func (f *finder) leaseHolders(ctx context.Context, c *cluster.Cache, name string, deps []*cluster.Workload) error {
	leases, err := listAs[*coordinationv1.Lease](ctx, c, cluster.Query{Resource: cluster.Leases}.Named(name))
	if err != nil {
		return err
	}
	for _, l := range leases {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || f.inNamespace(l.Namespace) {
			continue
		}
		// <hostname>_<uuid>, the hostname a pod's name unless it sets one.
		host, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		pods, err := listAs[*corev1.Pod](ctx, c, cluster.Query{Resource: cluster.Pods, Namespace: l.Namespace}.Named(host))
		if err != nil {
			return err
		}
		for _, pod := range pods {
			for _, d := range deps {
				if d.Namespace != pod.Namespace || d.Selector == nil {
					continue
				}
				if s, err := metav1.LabelSelectorAsSelector(d.Selector); err == nil && !s.Empty() && s.Matches(labels.Set(pod.Labels)) {
					f.add(d, fmt.Sprintf("its pod %s holds Lease %s/%s", pod.Name, l.Namespace, l.Name))
				}
			}
		}
	}
	return nil
}

func (f *finder) inNamespace(ns string) bool {
	for _, c := range f.found {
		if c.dep.Namespace == ns {
			return true
		}
	}
	return false
}

// installs makes one install of each namespace: the Deployment the
// profile names if it is among them, else the one found the most ways,
// else the first by name.
func (f *finder) installs(p *Profile) []Install {
	byNS := map[string][]*located{}
	for _, c := range f.found {
		byNS[c.dep.Namespace] = append(byNS[c.dep.Namespace], c)
	}
	namespaces := SortedKeys(byNS)
	sort.SliceStable(namespaces, func(i, j int) bool {
		return namespaces[i] == p.Controller.Namespace && namespaces[j] != p.Controller.Namespace
	})
	var out []Install
	for _, ns := range namespaces {
		cs := byNS[ns]
		sort.Slice(cs, func(i, j int) bool {
			a, b := cs[i], cs[j]
			if (a.dep.Name == p.Controller.Deployment) != (b.dep.Name == p.Controller.Deployment) {
				return a.dep.Name == p.Controller.Deployment
			}
			if len(a.how) != len(b.how) {
				return len(a.how) > len(b.how)
			}
			return a.dep.Name < b.dep.Name
		})
		in := Install{Namespace: ns, Deployment: cs[0].dep.Name, FoundBy: cs[0].how}
		if s, err := metav1.LabelSelectorAsSelector(cs[0].dep.Selector); err == nil && !s.Empty() {
			in.Selector = s.String()
		} else {
			// A Deployment without a selector is refused by the API
			// server; a recording's may lack it: the profile's labels.
			in.Selector = p.Controller.Selector
		}
		for _, c := range cs[1:] {
			in.Others = append(in.Others, c.dep.Name)
		}
		out = append(out, in)
	}
	return out
}

// service is a Service the operator's webhooks or conversions call.
type service struct {
	namespace, name string
	// caller names what calls it.
	caller string
}

// operatorServices are the Services that p's own webhooks call (those in
// configurations the profile names, and the webhooks it requires by
// name) and that its CRDs' conversion webhooks call. Webhooks of other
// components whose rules merely name p's groups (Kueue's on RayClusters)
// say nothing of where p runs.
func operatorServices(ctx context.Context, c *cluster.Cache, p *Profile, crds []*apiextensionsv1.CustomResourceDefinition) ([]service, error) {
	var out []service
	add := func(ref *admissionregistrationv1.ServiceReference, caller string) {
		if ref == nil {
			return
		}
		for _, s := range out {
			if s.namespace == ref.Namespace && s.name == ref.Name {
				return
			}
		}
		out = append(out, service{namespace: ref.Namespace, name: ref.Name, caller: caller})
	}
	if len(p.Webhooks) > 0 || len(p.RequiredWebhooks) > 0 {
		vwcs, err := listAs[*admissionregistrationv1.ValidatingWebhookConfiguration](ctx, c, cluster.Query{Resource: cluster.ValidatingWebhookConfigurations})
		if err != nil {
			return nil, err
		}
		mwcs, err := listAs[*admissionregistrationv1.MutatingWebhookConfiguration](ctx, c, cluster.Query{Resource: cluster.MutatingWebhookConfigurations})
		if err != nil {
			return nil, err
		}
		// Validating and mutating configurations hold different Go types
		// with the same fields: each webhook as (configuration, name,
		// client config).
		own := func(config, name string, cc admissionregistrationv1.WebhookClientConfig) {
			if Contains(p.Webhooks, config) || Contains(p.RequiredWebhooks, name) {
				add(cc.Service, "webhook "+name)
			}
		}
		for _, cfg := range vwcs {
			for _, w := range cfg.Webhooks {
				own(cfg.Name, w.Name, w.ClientConfig)
			}
		}
		for _, cfg := range mwcs {
			for _, w := range cfg.Webhooks {
				own(cfg.Name, w.Name, w.ClientConfig)
			}
		}
	}
	for _, crd := range crds {
		conv := crd.Spec.Conversion
		// A shared group (kubeflow.org) holds other operators' CRDs: a
		// profile that names its CRDs is located by those alone.
		mine := p.ownsCRD(crd.Name) && (len(p.CRDs) == 0 || Contains(p.CRDs, crd.Name))
		if !mine || conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil || conv.Webhook.ClientConfig.Service == nil {
			continue
		}
		s := conv.Webhook.ClientConfig.Service
		add(&admissionregistrationv1.ServiceReference{Namespace: s.Namespace, Name: s.Name}, "the conversion webhook of CRD "+crd.Name)
	}
	return out, nil
}

// listAs reads q through the cache as objects of type T.
func listAs[T any](ctx context.Context, c *cluster.Cache, q cluster.Query) ([]T, error) {
	objs, _, err := c.List(ctx, q)
	if err != nil {
		return nil, err
	}
	return Typed[T](objs, q.Resource)
}
