package checks

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
)

// maxCREvidence bounds how many custom resources get a block of children;
// the verdict covers them all.
const maxCREvidence = 3

// CRsReconciled checks that the operator's custom resources are reconciled
// into healthy children.
type CRsReconciled struct{}

// Meta implements Check.
func (CRsReconciled) Meta() Meta {
	return Meta{
		ID:          "crs-reconciled",
		Title:       "Custom resources reconciled into children",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "Every custom resource of the kinds the profile names has its ready condition(s) True (Unknown is not True), status.observedGeneration equal to metadata.generation where it is reported, and owns the child kinds the profile names by ownerReferences (pods through Deployment -> ReplicaSet -> Pod), with those children healthy: Deployments Available, at least one pod Running and Ready. Children are found by the profile's label, one LIST per kind for the whole cluster. Resources an aiconform probe made (labelled aiconform.io/run, or in an aiconform-probe- namespace) are listed but not judged. No custom resource at all fails: nothing shows the controller reconciles.",
		Remediation: "Read the resource's conditions and events (`kubectl describe`), and the controller's logs; a resource that never gets a status means the controller is not reconciling it at all. With no resource in the cluster, create a small one (for KServe, the sklearn iris InferenceService) or run with --probe when available.",
	}
}

// crTarget is a kind of custom resource resolved against its CRD.
type crTarget struct {
	kind ResourceKind
	res  cluster.Resource
}

// Run implements Check.
func (CRsReconciled) Run(ctx context.Context, env *Env) (Result, error) {
	var r Result
	p := env.Profile
	if len(p.Resources) == 0 {
		r.finish(Skip, "profile %s names no custom resource kind to judge", p.Name)
		return r, nil
	}
	crds, err := list[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	var fails, passed, missing, probes []string
	var shown int
	total := 0
	for _, k := range p.Resources {
		crd := findCRD(crds, k.CRD)
		if crd == nil {
			missing = append(missing, k.CRD)
			r.evidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: []string{k.CRD}}, "")
			continue
		}
		t := crTarget{kind: k, res: crdResource(crd)}
		get := cluster.Get{Resources: []cluster.Resource{t.res}, AllNamespaces: t.res.Namespaced}
		r.evidence(ctx, env, get, "")
		listed, err := list[*unstructured.Unstructured](ctx, env, get.Queries()[0])
		if err != nil {
			return r, err
		}
		var crs []*unstructured.Unstructured
		for _, cr := range listed {
			if run, ok := probeRun(cr.GetLabels(), cr.GetNamespace()); ok {
				probes = append(probes, fmt.Sprintf("%s %s (probe run %s)", crd.Spec.Names.Kind, objectName(cr), run))
				continue
			}
			crs = append(crs, cr)
		}
		total += len(crs)
		fam, err := readChildren(ctx, env, k)
		if err != nil {
			return r, err
		}
		// Unhealthy resources first, so that the evidence shows them.
		type judged struct {
			cr       *unstructured.Unstructured
			problems []string
		}
		var js []judged
		for _, cr := range crs {
			js = append(js, judged{cr, judgeCR(cr, k, fam)})
		}
		sort.SliceStable(js, func(i, j int) bool { return len(js[i].problems) > 0 && len(js[j].problems) == 0 })
		for _, j := range js {
			id := fmt.Sprintf("%s %s", crd.Spec.Names.Kind, objectName(j.cr))
			if len(j.problems) > 0 {
				fails = append(fails, id+": "+strings.Join(j.problems, ", "))
			} else {
				passed = append(passed, id)
			}
			if shown < maxCREvidence && len(k.Children) > 0 {
				shown++
				r.evidence(ctx, env, childrenGet(k, j.cr), "")
				note := "who owns each child (metadata.ownerReferences)"
				if contains(k.Children, "Deployment") {
					note += ": the resource itself, or for pods their ReplicaSet, which the Deployment owns"
				}
				r.evidence(ctx, env, ownersGet(k, j.cr), note)
			}
		}
	}
	r.Details = fails
	if len(probes) > 0 {
		r.Details = append(r.Details, "not judged, made by an aiconform probe: "+strings.Join(probes, ", "))
	}
	switch {
	case len(missing) > 0:
		r.Details = append(r.Details, "CRDs not installed: "+strings.Join(missing, ", "))
		r.finish(Fail, "CRD %s not installed, so none of its resources can be reconciled", strings.Join(missing, ", "))
	case len(fails) > 0:
		r.finish(Fail, "%d of %s not reconciled: %s", len(fails), plural(total, "custom resource"), strings.Join(fails, "; "))
	case total == 0 && env.Probe != nil && p.Probe != nil && p.Probe.canary != nil:
		// Under --probe, canary-reconciled makes one and watches it: that
		// is the proof this check looks for, and it is judged there.
		r.finish(Skip, "no %s exists; canary-reconciled creates one to show the controller reconciles", kinds(p))
	case total == 0:
		r.finish(Fail, "no %s exists: nothing shows the controller reconciles (create one, or run with --probe)", kinds(p))
	default:
		r.finish(Pass, "%s reconciled and Ready: %s", plural(total, "custom resource"), strings.Join(passed, ", "))
	}
	return r, nil
}

func findCRD(crds []*apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// crdResource is the resource kubectl would use for the CRD: its preferred
// version is the served one of highest priority, as discovery orders them.
func crdResource(crd *apiextensionsv1.CustomResourceDefinition) cluster.Resource {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v.Name)
		}
	}
	sort.Slice(served, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(served[i], served[j]) > 0 })
	v := ""
	if len(served) > 0 {
		v = served[0]
	}
	return cluster.Resource{
		GVR:        schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural},
		Kind:       crd.Spec.Names.Kind,
		Arg:        crd.Spec.Names.Plural + "." + crd.Spec.Group,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
	}
}

// family holds every object that carries a profile's child label.
type family struct {
	deployments []*appsv1.Deployment
	replicaSets []*appsv1.ReplicaSet
	services    []*corev1.Service
	pods        []*corev1.Pod
}

// readChildren lists, cluster-wide, the objects of each child kind that
// carry the child label: one LIST per kind, never every pod of the cluster.
func readChildren(ctx context.Context, env *Env, k ResourceKind) (family, error) {
	if len(k.Children) == 0 {
		return family{}, nil
	}
	return readFamily(ctx, env, k, "", k.ChildLabel)
}

// judgeCR lists what keeps cr from counting as reconciled.
func judgeCR(cr *unstructured.Unstructured, k ResourceKind, f family) []string {
	var problems []string
	conds := conditions(cr)
	var ok, notOK []string
	for _, t := range k.ReadyConditions {
		c, found := findCondition(conds, t)
		switch {
		case !found:
			notOK = append(notOK, t+" absent")
		case c.Status != string(metav1.ConditionTrue):
			notOK = append(notOK, strings.TrimSpace(fmt.Sprintf("%s=%s %s", t, c.Status, c.Reason)))
		default:
			ok = append(ok, t)
		}
	}
	if (k.AnyCondition && len(ok) == 0) || (!k.AnyCondition && len(notOK) > 0) {
		problems = append(problems, strings.Join(notOK, ", "))
	}
	if og, found, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); found && og != cr.GetGeneration() {
		problems = append(problems, fmt.Sprintf("observedGeneration %d behind generation %d", og, cr.GetGeneration()))
	}
	if len(k.Children) == 0 {
		return problems
	}
	uid, ns := cr.GetUID(), cr.GetNamespace()
	// A cluster-scoped resource's children may live in any namespace.
	mine := func(m metav1.Object) bool {
		return (ns == "" || m.GetNamespace() == ns) && m.GetLabels()[k.ChildLabel] == cr.GetName()
	}
	var deps []*appsv1.Deployment
	for _, d := range f.deployments {
		if mine(d) && ownedBy(d, uid) {
			deps = append(deps, d)
		}
	}
	var readyPods, pods int
	for _, p := range f.pods {
		if !mine(p) || !podOwnedThrough(p, uid, deps, f.replicaSets) {
			continue
		}
		pods++
		if p.Status.Phase == corev1.PodRunning && podReady(p) {
			readyPods++
		}
	}
	for _, child := range k.Children {
		switch child {
		case "Deployment":
			if len(deps) == 0 {
				problems = append(problems, "owns no Deployment")
			}
			for _, d := range deps {
				if st, msg := deploymentAvailable(d); st != corev1.ConditionTrue {
					problems = append(problems, fmt.Sprintf("Deployment %s Available=%s %s", d.Name, st, msg))
				}
			}
		case "Service":
			n := 0
			for _, s := range f.services {
				if mine(s) && ownedBy(s, uid) {
					n++
				}
			}
			if n == 0 {
				problems = append(problems, "owns no Service")
			}
		}
	}
	switch {
	case pods == 0:
		problems = append(problems, "owns no Pod")
	case readyPods == 0:
		problems = append(problems, fmt.Sprintf("none of its %d pod(s) Running and Ready", pods))
	}
	return problems
}

func ownedBy(m metav1.Object, uid types.UID) bool {
	for _, o := range m.GetOwnerReferences() {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// podOwnedThrough is true for a pod owned by the resource directly, or
// through one of its Deployments' ReplicaSets.
func podOwnedThrough(p *corev1.Pod, uid types.UID, deps []*appsv1.Deployment, rss []*appsv1.ReplicaSet) bool {
	if ownedBy(p, uid) {
		return true
	}
	for _, rs := range rss {
		if !ownedBy(p, rs.UID) {
			continue
		}
		for _, d := range deps {
			if ownedBy(rs, d.UID) {
				return true
			}
		}
	}
	return false
}

// ownerColumns print each object's kind and its owners, from
// metadata.ownerReferences: the chain a reconcile leaves behind.
const ownerColumns = "KIND:.kind,NAME:.metadata.name,OWNER_KIND:.metadata.ownerReferences[*].kind,OWNER:.metadata.ownerReferences[*].name"

// ownersGet shows who owns one resource's children, ReplicaSets included
// where pods come through a Deployment.
func ownersGet(k ResourceKind, cr *unstructured.Unstructured) cluster.Get {
	g := childrenGet(k, cr)
	var res []cluster.Resource
	for _, r := range g.Resources {
		res = append(res, r)
		if r == cluster.Deployments {
			res = append(res, cluster.ReplicaSets)
		}
	}
	g.Resources, g.Columns = res, ownerColumns
	return g
}

// childrenGet shows one resource's children as the seed's evidence does.
func childrenGet(k ResourceKind, cr *unstructured.Unstructured) cluster.Get {
	var res []cluster.Resource
	for _, child := range k.Children {
		switch child {
		case "Deployment":
			res = append(res, cluster.Deployments)
		case "Service":
			res = append(res, cluster.Services)
		}
	}
	res = append(res, cluster.Pods)
	return cluster.Get{Resources: res, Namespace: cr.GetNamespace(), LabelSelector: k.ChildLabel + "=" + cr.GetName()}
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

func kinds(p *Profile) string {
	var ks []string
	for _, r := range p.Resources {
		ks = append(ks, r.CRD)
	}
	return strings.Join(ks, " or ")
}
