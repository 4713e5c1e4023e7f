package operator

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// maxCREvidence bounds how many custom resources get a block of children;
// the verdict covers them all.
const maxCREvidence = 3

// CRsReconciled checks that the operator's custom resources are reconciled
// into healthy children.
type CRsReconciled struct{}

// Meta implements checks.Check.
func (CRsReconciled) Meta() checks.Meta {
	return checks.Meta{
		ID:          "crs-reconciled",
		Title:       "Custom resources reconciled into children",
		Requirement: "robust_controller",
		PerOperator: true,
		Description: "Every custom resource of the kinds the profile names has its ready condition(s) True (Unknown " +
			"is not True), status.observedGeneration equal to metadata.generation where it is reported, and " +
			"owns the child kinds the profile names by ownerReferences (pods through Deployment -> " +
			"ReplicaSet -> Pod), with those children healthy: Deployments Available, at least one pod " +
			"Running and Ready. Children are found by the profile's label, one LIST per kind in each " +
			"namespace that holds such resources (one for the whole cluster when they are in more than 8 " +
			"namespaces, or cluster-scoped). Resources an aiconform probe made (labelled aiconform.io/run, " +
			"or in an aiconform-probe- namespace) are listed but not judged. No custom resource at all " +
			"fails: nothing shows the controller reconciles.",
		Remediation: "Read the resource's conditions and events (`kubectl describe`), and the controller's logs; a " +
			"resource that never gets a status means the controller is not reconciling it at all. With no " +
			"resource in the cluster, create a small one (for KServe, the sklearn iris InferenceService) or " +
			"run with --probe when available.",
	}
}

// crTarget is a kind of custom resource resolved against its CRD.
type crTarget struct {
	kind checks.ResourceKind
	res  cluster.Resource
}

// Run implements checks.Check.
func (CRsReconciled) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	p := env.Profile
	if len(p.Resources) == 0 {
		r.Finish(checks.Skip, "profile %s names no custom resource kind to judge", p.Name)
		return r, nil
	}
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	var fails, passed, missing, probes []string
	var shown int
	total := 0
	for _, k := range p.Resources {
		crd := kube.FindCRD(crds, k.CRD)
		if crd == nil {
			missing = append(missing, k.CRD)
			r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: []string{k.CRD}}, "")
			continue
		}
		t := crTarget{kind: k, res: kube.CRDResource(crd)}
		get := cluster.Get{Resources: []cluster.Resource{t.res}, AllNamespaces: t.res.Namespaced}
		r.AddEvidence(ctx, env, get, "")
		listed, err := checks.List[*unstructured.Unstructured](ctx, env, get.Queries()[0])
		if err != nil {
			return r, err
		}
		var crs []*unstructured.Unstructured
		for _, cr := range listed {
			if run, ok := checks.ProbeRun(cr.GetLabels(), cr.GetNamespace()); ok {
				probes = append(probes, fmt.Sprintf("%s %s (probe run %s)", crd.Spec.Names.Kind, kube.ObjectName(cr), run))
				continue
			}
			crs = append(crs, cr)
		}
		total += len(crs)
		fam, err := readChildren(ctx, env, k, crs)
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
			id := fmt.Sprintf("%s %s", crd.Spec.Names.Kind, kube.ObjectName(j.cr))
			if len(j.problems) > 0 {
				fails = append(fails, id+": "+strings.Join(j.problems, ", "))
			} else {
				passed = append(passed, id)
			}
			if shown < maxCREvidence && len(k.Children) > 0 {
				shown++
				r.AddEvidence(ctx, env, childrenGet(k, j.cr), "")
				note := "who owns each child (metadata.ownerReferences)"
				if checks.Contains(k.Children, "Deployment") {
					note += ": the resource itself, or for pods their ReplicaSet, which the Deployment owns"
				}
				r.AddEvidence(ctx, env, ownersGet(k, j.cr), note)
				if err := customChildrenEvidence(ctx, &r, env, k, j.cr, fam); err != nil {
					return r, err
				}
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
		r.Finish(checks.Fail, "CRD %s not installed, so none of its resources can be reconciled", strings.Join(missing, ", "))
	case len(fails) > 0:
		r.Finish(checks.Fail, "%d of %s not reconciled: %s", len(fails), checks.Plural(total, "custom resource"), strings.Join(fails, "; "))
	case total == 0 && env.Probe != nil && p.Probe != nil && p.Probe.CanaryObject() != nil:
		// Under --probe, canary-reconciled makes one and watches it: that
		// is the proof this check looks for, and it is judged there.
		r.Finish(checks.Skip, "no %s exists; canary-reconciled creates one to show the controller reconciles", kinds(p))
	case total == 0:
		r.Finish(checks.Fail, "no %s exists: nothing shows the controller reconciles (create one, or run with --probe)", kinds(p))
	default:
		r.Finish(checks.Pass, "%s reconciled and Ready: %s", checks.Plural(total, "custom resource"), strings.Join(passed, ", "))
	}
	return r, nil
}

// customChildrenEvidence shows the custom children cr owns (a TrainJob's
// JobSet) with their owners, by name: a controller need not label them, so
// no selector finds them.
func customChildrenEvidence(ctx context.Context, r *checks.Result, env *checks.Env, k checks.ResourceKind, cr *unstructured.Unstructured, fam family) error {
	d := fam.descendantsOf(cr, k)
	for _, child := range k.Children {
		if !checks.CustomChild(child) {
			continue
		}
		res, err := customResource(ctx, env, child)
		if err != nil {
			return err
		}
		var names []string
		for _, o := range d.custom[child] {
			names = append(names, o.GetName())
		}
		note := fmt.Sprintf("the %s objects %s owns", res.Kind, kube.ObjectName(cr))
		if len(names) == 0 {
			note = fmt.Sprintf("%s owns no %s: those of its namespace, with their owners", kube.ObjectName(cr), res.Kind)
		}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, Namespace: cr.GetNamespace(), Names: names, Columns: ownerColumns}, note)
	}
	return nil
}

// family holds what may descend from a profile's resources: the objects of
// the built-in child kinds that carry its child label, and every custom
// resource of the custom child kinds (a controller need not label those).
type family struct {
	deployments []*appsv1.Deployment
	replicaSets []*appsv1.ReplicaSet
	services    []*corev1.Service
	jobs        []*batchv1.Job
	pods        []*corev1.Pod
	// custom are the custom children by CRD name, kinds their kinds.
	custom map[string][]*unstructured.Unstructured
	kinds  map[string]string
}

// maxChildNamespaces is how many namespaces crs-reconciled reads children
// in one by one; beyond it, one cluster-wide LIST per kind costs less.
const maxChildNamespaces = 8

// readChildren lists the objects of each child kind that carry the child
// label, in the namespaces of crs: a namespace's LIST is answered from the
// API server's cache of that namespace alone, where a cluster-wide label
// selector makes it filter every pod of the cluster. With the resources
// spread over more namespaces, or cluster-scoped (their children may be
// anywhere), it is one LIST per kind for the whole cluster. Never every
// pod of the cluster.
func readChildren(ctx context.Context, env *checks.Env, k checks.ResourceKind, crs []*unstructured.Unstructured) (family, error) {
	if len(k.Children) == 0 || len(crs) == 0 {
		return family{}, nil
	}
	var namespaces []string
	for _, cr := range crs {
		if cr.GetNamespace() == "" {
			return readFamily(ctx, env, k, "", k.ChildLabel)
		}
		if !checks.Contains(namespaces, cr.GetNamespace()) {
			namespaces = append(namespaces, cr.GetNamespace())
		}
	}
	if len(namespaces) > maxChildNamespaces {
		return readFamily(ctx, env, k, "", k.ChildLabel)
	}
	sort.Strings(namespaces)
	var all family
	for _, ns := range namespaces {
		f, err := readFamily(ctx, env, k, ns, k.ChildLabel)
		if err != nil {
			return all, err
		}
		all.add(f)
	}
	return all, nil
}

// add puts g's objects into f.
func (f *family) add(g family) {
	f.deployments = append(f.deployments, g.deployments...)
	f.replicaSets = append(f.replicaSets, g.replicaSets...)
	f.services = append(f.services, g.services...)
	f.jobs = append(f.jobs, g.jobs...)
	f.pods = append(f.pods, g.pods...)
	if f.custom == nil {
		f.custom, f.kinds = map[string][]*unstructured.Unstructured{}, map[string]string{}
	}
	for crd, objs := range g.custom {
		f.custom[crd] = append(f.custom[crd], objs...)
	}
	for crd, kind := range g.kinds {
		f.kinds[crd] = kind
	}
}

// readFamily lists the child kinds of k: the built-in ones that match
// selector and the custom ones whole, in one namespace or ("") in all.
func readFamily(ctx context.Context, env *checks.Env, k checks.ResourceKind, namespace, selector string) (family, error) {
	f := family{custom: map[string][]*unstructured.Unstructured{}, kinds: map[string]string{}}
	var err error
	q := func(r cluster.Resource) cluster.Query {
		return cluster.Query{Resource: r, Namespace: namespace, LabelSelector: selector}
	}
	if checks.Contains(k.Children, "Deployment") {
		if f.deployments, err = checks.List[*appsv1.Deployment](ctx, env, q(cluster.Deployments)); err != nil {
			return f, err
		}
		if f.replicaSets, err = checks.List[*appsv1.ReplicaSet](ctx, env, q(cluster.ReplicaSets)); err != nil {
			return f, err
		}
	}
	if checks.Contains(k.Children, "Service") {
		if f.services, err = checks.List[*corev1.Service](ctx, env, q(cluster.Services)); err != nil {
			return f, err
		}
	}
	if checks.Contains(k.Children, "Job") {
		if f.jobs, err = checks.List[*batchv1.Job](ctx, env, q(cluster.Jobs)); err != nil {
			return f, err
		}
	}
	for _, child := range k.Children {
		if !checks.CustomChild(child) {
			continue
		}
		res, err := customResource(ctx, env, child)
		if err != nil {
			return f, err
		}
		f.kinds[child] = res.Kind
		if f.custom[child], err = checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res, Namespace: namespace}); err != nil {
			return f, err
		}
	}
	f.pods, err = checks.List[*corev1.Pod](ctx, env, q(cluster.Pods))
	return f, err
}

// customResource resolves a custom child kind, named by its CRD, against
// the CRDs the cluster serves.
func customResource(ctx context.Context, env *checks.Env, crdName string) (cluster.Resource, error) {
	res, err := checks.CustomResource(ctx, env, crdName)
	if err != nil {
		return res, fmt.Errorf("child kind %w", err)
	}
	return res, nil
}

// descendants are what one resource owns, directly or through one another.
type descendants struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	jobs        []*batchv1.Job
	pods        []*corev1.Pod
	custom      map[string][]*unstructured.Unstructured
}

// descendantsOf follows ownerReferences down from cr through f, whatever
// chain the operator builds: Deployment -> ReplicaSet -> Pod,
// JobSet -> Job -> Pod. Built-in objects count only when their child label
// names cr; custom children by ownership alone.
func (f family) descendantsOf(cr *unstructured.Unstructured, k checks.ResourceKind) descendants {
	ns := cr.GetNamespace()
	// A cluster-scoped resource's children may live in any namespace.
	here := func(m metav1.Object) bool { return ns == "" || m.GetNamespace() == ns }
	labelled := func(m metav1.Object) bool { return here(m) && m.GetLabels()[k.ChildLabel] == cr.GetName() }
	var candidates []metav1.Object
	candidates = append(candidates, objects(filter(f.deployments, labelled))...)
	candidates = append(candidates, objects(filter(f.replicaSets, labelled))...)
	candidates = append(candidates, objects(filter(f.services, labelled))...)
	candidates = append(candidates, objects(filter(f.jobs, labelled))...)
	candidates = append(candidates, objects(filter(f.pods, labelled))...)
	for _, kind := range checks.SortedKeys(f.custom) {
		candidates = append(candidates, objects(filter(f.custom[kind], here))...)
	}
	// owners are the UIDs owned so far, cr's first; owned the candidates
	// found to descend from it.
	owners := map[types.UID]bool{cr.GetUID(): true}
	owned := map[metav1.Object]bool{}
	for grew := true; grew; {
		grew = false
		for _, m := range candidates {
			if owned[m] {
				continue
			}
			for _, o := range m.GetOwnerReferences() {
				if owners[o.UID] {
					owned[m], grew = true, true
					if m.GetUID() != "" {
						owners[m.GetUID()] = true
					}
					break
				}
			}
		}
	}
	isOwned := func(m metav1.Object) bool { return owned[m] }
	d := descendants{
		deployments: filter(f.deployments, isOwned),
		services:    filter(f.services, isOwned),
		jobs:        filter(f.jobs, isOwned),
		pods:        filter(f.pods, isOwned),
		custom:      map[string][]*unstructured.Unstructured{},
	}
	for kind, objs := range f.custom {
		d.custom[kind] = filter(objs, isOwned)
	}
	return d
}

// filter keeps the objects of src that keep holds for.
func filter[T metav1.Object](src []T, keep func(metav1.Object) bool) []T {
	var out []T
	for _, o := range src {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// objects are src as metav1.Objects.
func objects[T metav1.Object](src []T) []metav1.Object {
	out := make([]metav1.Object, len(src))
	for i, o := range src {
		out[i] = o
	}
	return out
}

// trueConditions are those of the types that are True, as
// "Type=True Reason: message".
func trueConditions(conds []kube.Condition, types []string) []string {
	var out []string
	for _, t := range types {
		if c, ok := kube.FindCondition(conds, t); ok && c.Status == string(metav1.ConditionTrue) {
			s := strings.TrimSpace(fmt.Sprintf("%s=True %s", c.Type, c.Reason))
			if c.Message != "" {
				s += ": " + shorten(c.Message, maxEventMessage)
			}
			out = append(out, s)
		}
	}
	return out
}

// judgeCR lists what keeps cr from counting as reconciled.
func judgeCR(cr *unstructured.Unstructured, k checks.ResourceKind, f family) []string {
	var problems []string
	conds := kube.Conditions(cr)
	if failed := trueConditions(conds, k.FailedConditions); len(failed) > 0 {
		problems = append(problems, strings.Join(failed, ", "))
	}
	idle := len(trueConditions(conds, k.IdleConditions)) > 0
	var ok, notOK []string
	for _, t := range k.ReadyConditions {
		c, found := kube.FindCondition(conds, t)
		switch {
		case !found:
			notOK = append(notOK, t+" absent")
		case c.Status != string(metav1.ConditionTrue):
			notOK = append(notOK, strings.TrimSpace(fmt.Sprintf("%s=%s %s", t, c.Status, c.Reason)))
		default:
			ok = append(ok, t)
		}
	}
	if !idle && len(k.ReadyConditions) > 0 && ((k.AnyCondition && len(ok) == 0) || (!k.AnyCondition && len(notOK) > 0)) {
		problems = append(problems, strings.Join(notOK, ", "))
	}
	if og, found, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); found && og != cr.GetGeneration() {
		problems = append(problems, fmt.Sprintf("observedGeneration %d behind generation %d", og, cr.GetGeneration()))
	}
	if len(k.Children) == 0 {
		return problems
	}
	d := f.descendantsOf(cr, k)
	for _, child := range k.Children {
		if idle && !checks.CustomChild(child) {
			// Finished or held: its pods, Jobs and Services may be cleaned
			// up or never made, by the operator's own policy.
			continue
		}
		switch {
		case child == "Deployment":
			if len(d.deployments) == 0 {
				problems = append(problems, "owns no Deployment")
			}
			for _, dep := range d.deployments {
				if st, msg := deploymentAvailable(dep); st != corev1.ConditionTrue && !idle {
					problems = append(problems, fmt.Sprintf("Deployment %s Available=%s %s", dep.Name, st, msg))
				}
			}
		case child == "Service":
			if len(d.services) == 0 {
				problems = append(problems, "owns no Service")
			}
		case child == "Job":
			if len(d.jobs) == 0 {
				problems = append(problems, "owns no Job")
			}
			for _, j := range d.jobs {
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
						problems = append(problems, fmt.Sprintf("Job %s Failed=True %s", j.Name, c.Reason))
					}
				}
			}
		case checks.CustomChild(child):
			if len(d.custom[child]) == 0 {
				problems = append(problems, "owns no "+f.kindOf(child))
			}
		}
	}
	if idle {
		return problems
	}
	ready := 0
	for _, p := range d.pods {
		if p.Status.Phase == corev1.PodRunning && kube.PodReady(p) {
			ready++
		}
	}
	switch {
	case len(d.pods) == 0:
		problems = append(problems, "owns no Pod")
	case ready == 0:
		problems = append(problems, fmt.Sprintf("none of its %d pod(s) Running and Ready", len(d.pods)))
	}
	return problems
}

// kindOf is the kind of a custom child, or its CRD's plural when it was
// not resolved.
func (f family) kindOf(crdName string) string {
	if k := f.kinds[crdName]; k != "" {
		return k
	}
	plural, _, _ := strings.Cut(crdName, ".")
	return plural
}

// ownerColumns print each object's kind and its owners, from
// metadata.ownerReferences: the chain a reconcile leaves behind.
const ownerColumns = "KIND:.kind,NAME:.metadata.name,OWNER_KIND:.metadata.ownerReferences[*].kind,OWNER:.metadata.ownerReferences[*].name"

// ownersGet shows who owns one resource's children, ReplicaSets included
// where pods come through a Deployment.
func ownersGet(k checks.ResourceKind, cr *unstructured.Unstructured) cluster.Get {
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
func childrenGet(k checks.ResourceKind, cr *unstructured.Unstructured) cluster.Get {
	var res []cluster.Resource
	for _, child := range k.Children {
		switch child {
		case "Deployment":
			res = append(res, cluster.Deployments)
		case "Service":
			res = append(res, cluster.Services)
		case "Job":
			res = append(res, cluster.Jobs)
		}
	}
	res = append(res, cluster.Pods)
	return cluster.Get{Resources: res, Namespace: cr.GetNamespace(), LabelSelector: k.ChildLabel + "=" + cr.GetName()}
}

func kinds(p *checks.Profile) string {
	var ks []string
	for _, r := range p.Resources {
		ks = append(ks, r.CRD)
	}
	return strings.Join(ks, " or ")
}
