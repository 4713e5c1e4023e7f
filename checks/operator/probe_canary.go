package operator

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"k8s.io/apimachinery/pkg/watch"
)

// CanaryReconciled proves the controller reconciles now, not only that it
// once did: a fresh custom resource, created in the run's own namespace,
// must become Ready with children it owns, and those children must be
// garbage-collected once it is deleted.
type CanaryReconciled struct{}

// Meta implements checks.Check.
func (CanaryReconciled) Meta() checks.Meta {
	return checks.Meta{
		ID: "canary-reconciled", Title: "A fresh custom resource is reconciled: Ready, owning its children, and collected once deleted",
		Requirement: "robust_controller", PerOperator: true, Probe: true,
		Description: "Under --probe only. Creates the profile's canary (KServe: a small sklearn InferenceService; " +
			"KubeRay: a RayCluster with one worker; Kubeflow Trainer: a one-node TrainJob; Training " +
			"Operator: a one-master PyTorchJob) in the run's namespace aiconform-probe-RUN (a cluster-scoped " +
			"kind, such as Kueue's empty ClusterQueue, is named after the run instead), labelled " +
			"aiconform.io/run=RUN, and watches it and its children (no polling) until the conditions it must " +
			"reach are True (its kind's ready conditions, or the probe's own, such as a TrainJob's " +
			"Complete), recording a timeline: created, status first written, first child, every child kind " +
			"present, Ready. Its children must be owned by it, directly or through one another (TrainJob -> " +
			"JobSet -> Job -> Pod), as crs-reconciled judges existing resources; a failed condition " +
			"(Failed=True) ends the wait with its reason. Then deletes it and watches its children until the " +
			"garbage collector has removed them (a kind that owns nothing, such as a queue, until it is " +
			"gone: Kueue releases its queues' finalizer). When it is not Ready in time, the check names the " +
			"likely cause from the resource's conditions, its pods' states and the namespace's Warning " +
			"events. The namespace, and any cluster-scoped canary, is deleted at the end of the run, however " +
			"it ends.",
		Remediation: "Read the diagnosis: a controller that wrote no status is not running or not watching the " +
			"namespace (see controller-ready and controller-lease); a Pending pod names the resource the " +
			"cluster lacks; an image that cannot be pulled needs a registry or a mirror; a model format " +
			"without a serving runtime needs a ServingRuntime.",
	}
}

// childResources are the kinds a profile may name as children, as kubectl
// names them, and their resources for watches.
var childResources = map[string]cluster.Resource{
	"Deployment": cluster.Deployments, "Service": cluster.Services, "Pod": cluster.Pods, "Job": cluster.Jobs,
}

// Run implements checks.Check.
func (CanaryReconciled) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	p, s := env.Profile, env.Probe
	switch {
	case s == nil:
		r.Finish(checks.Skip, "probes are off: --probe creates a canary resource for %s to reconcile", p.Title)
		return r, nil
	case p.Probe == nil || p.Probe.CanaryObject() == nil:
		r.Finish(checks.Skip, "the %s profile has no canary resource", p.Name)
		return r, nil
	}
	crd, err := kindOf(ctx, env, p.Probe.CanaryObject())
	if err != nil {
		return r, fmt.Errorf("cannot probe: %w", err)
	}
	var k *checks.ResourceKind
	for i := range p.Resources {
		if p.Resources[i].CRD == crd.Name {
			k = &p.Resources[i]
		}
	}
	if k == nil {
		return r, fmt.Errorf("the %s profile's canary is a %s, which is not among its resources", p.Name, crd.Name)
	}
	m, err := s.Mapping(p.Probe.CanaryObject().GroupVersionKind())
	if err != nil {
		return r, err
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()

	canary := p.Probe.CanaryObject().DeepCopy()
	ns := s.NamespaceOf(m)
	where := "in the run's own namespace"
	if ns == "" {
		where = "cluster-scoped, named after the run"
	}
	created, err := pr.Create(ctx, canary, fmt.Sprintf("a canary %s, created %s", canary.GetKind(), where))
	t0 := env.Now()
	var refused *checks.CreateError
	if err != nil && !errors.As(err, &refused) {
		return r, err
	}
	if err != nil {
		cerr := refused.Err
		st, why := judgeCallError(cerr)
		if errors.Is(cerr, probe.ErrClosed) || ctx.Err() != nil {
			return r, cerr
		}
		r.Finish(st, "the canary could not be created: %s", why)
		r.Details = diagnoseCreate(cerr)
		return r, nil
	}

	w := &canaryWatch{env: env, k: k, name: canary.GetName(), timeline: &pr.Timeline, children: map[string]bool{}, kinds: map[string]bool{}}
	w.want, w.anyOf = k.ReadyConditions, k.AnyCondition
	if len(p.Probe.ReadyConditions) > 0 {
		w.want, w.anyOf = p.Probe.ReadyConditions, false
	}
	if len(w.want) == 0 {
		return r, fmt.Errorf("the %s profile names no condition its canary must reach (probe.readyConditions)", p.Name)
	}
	w.custom = map[string]cluster.Resource{}
	for _, child := range k.Children {
		if checks.CustomChild(child) {
			if w.custom[child], err = customResource(ctx, env, child); err != nil {
				return r, fmt.Errorf("cannot probe: %w", err)
			}
		}
	}
	if err := w.start(ctx, pr, m, ns != ""); err != nil {
		return r, err
	}
	ready, err := pr.Phase(ctx, func() bool { return w.ready || len(w.failed) > 0 })
	if err != nil {
		return r, err
	}
	fresh := env.Fresh()
	cr := w.cr
	if cr == nil {
		cr = created
	}
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{kube.CRDResource(crd)}, Namespace: ns, Names: []string{cr.GetName()}},
		"the canary as it stands")
	if len(w.failed) > 0 {
		r.Details = w.diagnose(ctx, fresh, ns, r.AddEvidence)
		r.Finish(checks.Fail, "the canary %s failed %s after creation: %s", canary.GetKind(), probe.Seconds(w.failedAt.Sub(t0)), r.Details[0])
		return r, nil
	}
	if !ready {
		r.Details = w.diagnose(ctx, fresh, ns, r.AddEvidence)
		r.Finish(checks.Fail, "the canary %s was not reconciled within %s: %s", canary.GetKind(), s.Timeout, r.Details[0])
		return r, nil
	}
	var fam family
	if len(k.Children) > 0 {
		r.AddEvidence(ctx, fresh, ownersGet(*k, cr), "who owns the canary's children: each must name it, or its Deployment's ReplicaSet")
		if fam, err = readFamily(ctx, fresh, *k, ns, k.ChildLabel+"="+cr.GetName()); err != nil {
			return r, err
		}
		if err := customChildrenEvidence(ctx, &r, fresh, *k, cr, fam); err != nil {
			return r, err
		}
	}
	if problems := judgeCR(cr, *k, fam); len(problems) > 0 {
		r.Details = problems
		r.Finish(checks.Fail, "the canary %s reports Ready, but %s", canary.GetKind(), strings.Join(problems, "; "))
		return r, nil
	}

	// Deletion: the children must follow their owner.
	derr := s.Delete(ctx, m, cr.GetName())
	dout := probe.DeletedText(m, ns, cr.GetName())
	if derr != nil {
		dout = probe.ErrorText("deleting", "", derr)
	}
	note := "deleting the canary; the garbage collector must remove what it owned"
	if len(k.Children) == 0 {
		note = "deleting the canary; it must be gone once the controller has released it (removed its finalizers)"
	}
	r.Evidence = append(r.Evidence, checks.Step{Command: probe.DeleteCommand(ns, m, cr.GetName()), Output: dout, CapturedAt: env.Now().UTC(),
		Note: note})
	if derr != nil {
		return r, fmt.Errorf("delete the canary: %w", derr)
	}
	w.deletedAt = env.Now()
	w.addAt(w.deletedAt, "deleted")
	collected, err := pr.Phase(ctx, func() bool { return w.gone && len(w.children) == 0 })
	if err != nil {
		return r, err
	}
	if len(k.Children) == 0 {
		return w.childless(ctx, r, collected, crd, cr, canary.GetKind())
	}
	after := env.Fresh()
	r.AddEvidence(ctx, after, childrenGet(*k, cr), "what is left of the canary's children")
	if !collected {
		r.Finish(checks.Fail, "the canary was Ready in %s, but %s of its children were still there %s after it was deleted: %s",
			probe.Seconds(w.readyAt.Sub(t0)), checks.Plural(len(w.children), "object"), s.Timeout, strings.Join(checks.SortedKeys(w.children), ", "))
		return r, nil
	}
	r.Finish(checks.Pass, "the canary %s was Ready %s after creation, owning its %s; deleted, its children were collected in %s",
		canary.GetKind(), probe.Seconds(w.readyAt.Sub(t0)), strings.Join(w.kindList(), ", "), probe.Seconds(w.collectedAt.Sub(w.deletedAt)))
	return r, nil
}

// childless ends the check for a kind that owns no children (a queue):
// Ready, then gone once deleted, which needs the controller when it sets a
// finalizer, as Kueue does on its queues.
func (w *canaryWatch) childless(ctx context.Context, r checks.Result, gone bool, crd *apiextensionsv1.CustomResourceDefinition, cr *unstructured.Unstructured, kind string) (checks.Result, error) {
	s := w.env.Probe
	if !gone {
		after := w.env.Fresh()
		r.AddEvidence(ctx, after, cluster.Get{Resources: []cluster.Resource{kube.CRDResource(crd)}, Namespace: cr.GetNamespace(), Names: []string{cr.GetName()}},
			"the canary, still there after its deletion")
		why := "nothing removed it"
		if len(w.heldBy) > 0 {
			why = "the controller did not remove its finalizers " + strings.Join(w.heldBy, ", ")
		}
		r.Finish(checks.Fail, "the canary was Ready in %s, but was still there %s after it was deleted: %s", probe.Seconds(w.readyAt.Sub(w.timeline.T0)), s.Timeout, why)
		return r, nil
	}
	released := ""
	if len(w.heldBy) > 0 {
		released = ", once the controller had removed its finalizers " + strings.Join(w.heldBy, ", ")
	}
	r.Finish(checks.Pass, "the canary %s was Ready %s after creation; deleted, it was gone %s later%s",
		kind, probe.Seconds(w.readyAt.Sub(w.timeline.T0)), probe.Seconds(w.collectedAt.Sub(w.deletedAt)), released)
	return r, nil
}

// canaryWatch follows one canary and its children.
type canaryWatch struct {
	env  *checks.Env
	k    *checks.ResourceKind
	name string
	// want are the conditions the canary must reach, one of them with anyOf.
	want  []string
	anyOf bool
	// failed are its failed conditions (Failed=True), once one is seen.
	failed   []string
	failedAt time.Time
	// custom are the custom child kinds' resources, by CRD name.
	custom map[string]cluster.Resource

	cr         *unstructured.Unstructured
	statusSeen bool
	ready      bool
	gone       bool
	// heldBy are the finalizers its deletion waited on, once seen.
	heldBy []string
	// children are the live children, "Kind/name"; kinds those ever seen.
	children map[string]bool
	kinds    map[string]bool

	readyAt, deletedAt, collectedAt time.Time
	timeline                        *probe.Timeline
}

// start watches the canary (by name) and each child kind (by the child
// label) from the canary's creation on.
func (w *canaryWatch) start(ctx context.Context, pr *checks.Probing, m *meta.RESTMapping, namespaced bool) error {
	sources := []probe.Source{{Tag: "", GVR: m.Resource, Namespaced: namespaced, Options: metav1.ListOptions{FieldSelector: "metadata.name=" + w.name}}}
	for _, kind := range w.childKinds() {
		if res, ok := w.custom[kind]; ok {
			// Matched by ownership, in apply: nothing labels them.
			sources = append(sources, probe.Source{Tag: kind, GVR: res.GVR, Namespaced: true})
			continue
		}
		sources = append(sources, probe.Source{Tag: kind, GVR: childResources[kind].GVR, Namespaced: true,
			Options: metav1.ListOptions{LabelSelector: w.k.ChildLabel + "=" + w.name}})
	}
	return pr.Watch(ctx, w.apply, sources...)
}

// childKinds are the kinds watched: the profile's, and pods always, since
// a resource that runs nothing is not served; none for a kind that owns
// nothing (a queue).
func (w *canaryWatch) childKinds() []string {
	if len(w.k.Children) == 0 {
		return nil
	}
	kinds := append([]string(nil), w.k.Children...)
	if !checks.Contains(kinds, "Pod") {
		kinds = append(kinds, "Pod")
	}
	return kinds
}

func (w *canaryWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return // bookmarks and errors carry no object of ours
	}
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return
	}
	if e.Tag == "" {
		if e.Type == watch.Deleted {
			w.gone = true
			w.add("%s gone", w.name)
			w.finishCollect()
			return
		}
		w.cr = u
		if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) > 0 && w.heldBy == nil {
			w.heldBy = u.GetFinalizers()
			w.add("deletion waits on finalizers %s", strings.Join(w.heldBy, ", "))
		}
		if _, found := u.Object["status"]; found && !w.statusSeen {
			w.statusSeen = true
			w.add("status first written")
		}
		if !w.ready && conditionsMet(u, w.want, w.anyOf) {
			w.ready = true
			w.readyAt = w.env.Now()
			what := strings.Join(w.want, ", ")
			if w.anyOf && len(w.want) > 1 {
				what = "one of " + what
			}
			w.addAt(w.readyAt, "Ready (%s)", what)
		}
		if failed := trueConditions(kube.Conditions(u), w.k.FailedConditions); len(failed) > 0 && len(w.failed) == 0 {
			w.failed, w.failedAt = failed, w.env.Now()
			w.addAt(w.failedAt, "failed (%s)", strings.Join(failed, ", "))
		}
		return
	}
	if _, custom := w.custom[e.Tag]; custom && !ownedByName(u, w.name) {
		return // another resource's, in the same namespace
	}
	key := w.kindName(e.Tag) + "/" + u.GetName()
	if e.Type == watch.Deleted {
		delete(w.children, key)
		w.finishCollect()
		return
	}
	if !w.children[key] && w.deletedAt.IsZero() {
		if len(w.kinds) == 0 {
			w.add("first child: %s", key)
		}
		if !w.kinds[e.Tag] {
			w.kinds[e.Tag] = true
			if len(w.kinds) == len(w.childKinds()) {
				w.add("every child kind present: %s", strings.Join(w.kindList(), ", "))
			}
		}
	}
	w.children[key] = true
}

func (w *canaryWatch) finishCollect() {
	if w.gone && len(w.children) == 0 && !w.deletedAt.IsZero() && w.collectedAt.IsZero() {
		w.collectedAt = w.env.Now()
		if len(w.k.Children) > 0 {
			w.addAt(w.collectedAt, "children collected")
		}
	}
}

func (w *canaryWatch) kindList() []string {
	var out []string
	for _, k := range w.childKinds() {
		if w.kinds[k] {
			out = append(out, w.kindName(k))
		}
	}
	return out
}

// kindName is what a person calls a child kind: JobSet, not its CRD.
func (w *canaryWatch) kindName(kind string) string {
	if res, ok := w.custom[kind]; ok {
		return res.Kind
	}
	return kind
}

// add records a timeline event at the current time.
func (w *canaryWatch) add(format string, args ...any) {
	w.addAt(w.env.Now(), format, args...)
}

func (w *canaryWatch) addAt(at time.Time, format string, args ...any) {
	w.timeline.Add(at, format, args...)
}

// ownedByName is true when one of u's owners is called name.
func ownedByName(u *unstructured.Unstructured, name string) bool {
	for _, o := range u.GetOwnerReferences() {
		if o.Name == name {
			return true
		}
	}
	return false
}

// conditionsMet is the Ready half of judgeCR, read from a watch event:
// every condition of want True, or with anyOf one of them.
func conditionsMet(cr *unstructured.Unstructured, want []string, anyOf bool) bool {
	conds := kube.Conditions(cr)
	n := 0
	for _, t := range want {
		if c, ok := kube.FindCondition(conds, t); ok && c.Status == string(metav1.ConditionTrue) {
			n++
		}
	}
	if og, found, _ := unstructured.NestedInt64(cr.Object, "status", "observedGeneration"); found && og != cr.GetGeneration() {
		return false
	}
	return n == len(want) || (anyOf && n > 0)
}

// diagnose names the likely causes of a canary that did not get Ready, from
// what the timeline saw, the resource's conditions and its pods' states,
// showing the reads as evidence.
func (w *canaryWatch) diagnose(ctx context.Context, env *checks.Env, ns string, show func(context.Context, *checks.Env, cluster.Get, string)) []string {
	var causes []string
	waited := probe.Seconds(w.env.Now().Sub(w.timeline.T0))
	if !w.statusSeen {
		causes = append(causes, fmt.Sprintf("the controller wrote no status in %s: it is not reconciling (is it running "+
			"and holding its lease? see controller-ready and controller-lease)", waited))
	}
	if w.cr != nil {
		causes = append(causes, conditionCauses(w.cr, *w.k)...)
	}
	if len(w.k.Children) > 0 {
		sel := w.k.ChildLabel + "=" + w.name
		show(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: ns, LabelSelector: sel, Wide: true}, "the canary's pods")
		pods, err := checks.List[*corev1.Pod](ctx, env, cluster.Query{Resource: cluster.Pods, Namespace: ns, LabelSelector: sel})
		if err != nil {
			causes = append(causes, fmt.Sprintf("its pods could not be read: %v", err))
		}
		for _, p := range pods {
			causes = append(causes, podCauses(p)...)
		}
		if w.statusSeen && len(pods) == 0 && err == nil {
			causes = append(causes, "no pod was created for it")
		}
	}
	warnings := cluster.Query{Resource: cluster.Events, Namespace: ns, FieldSelector: "type=Warning"}
	about := "Warning events in the run's namespace"
	if ns == "" {
		// A cluster-scoped object's events are in default, or wherever its
		// controller wrote them: found by the object's name.
		warnings.FieldSelector = "involvedObject.name=" + w.name + ",type=Warning"
		about = "Warning events about the canary"
	}
	show(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.Events}, Namespace: ns, FieldSelector: warnings.FieldSelector}, about)
	events, err := checks.List[*corev1.Event](ctx, env, warnings)
	if err != nil {
		causes = append(causes, fmt.Sprintf("its namespace's events could not be read: %v", err))
	}
	causes = append(causes, eventCauses(events)...)
	if len(causes) == 0 {
		causes = append(causes, fmt.Sprintf("no cause found in its conditions or pods after %s; it may only need longer (--probe-timeout)", waited))
	}
	return causes
}

// maxEventCauses bounds the events a diagnosis quotes: the first few say
// what went wrong, the rest repeat it.
const maxEventCauses = 5

// eventCauses quotes Warning events, once per reason and object.
func eventCauses(events []*corev1.Event) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range events {
		obj := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if seen[e.Reason+" "+obj] || len(out) == maxEventCauses {
			continue
		}
		seen[e.Reason+" "+obj] = true
		out = append(out, fmt.Sprintf("event %s on %s: %s", e.Reason, obj, strings.TrimSpace(e.Message)))
	}
	return out
}

var noRuntimeRE = regexp.MustCompile(`(?i)no ?supporting ?runtime|runtime ?not ?recognized|no runtime found|no .*serving ?runtime`)

// conditionCauses lists the resource's ready conditions that are not True,
// with their reasons, naming a missing serving runtime where that is the
// reason.
func conditionCauses(cr *unstructured.Unstructured, k checks.ResourceKind) []string {
	out := trueConditions(kube.Conditions(cr), k.FailedConditions)
	for _, c := range kube.Conditions(cr) {
		if c.Status == string(metav1.ConditionTrue) {
			continue
		}
		line := strings.TrimSpace(fmt.Sprintf("condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		if noRuntimeRE.MatchString(c.Reason + " " + c.Message) {
			line = "no ServingRuntime supports the model format: " + line
		}
		if checks.Contains(k.ReadyConditions, c.Type) || c.Reason != "" || c.Message != "" {
			out = append(out, line)
		}
	}
	return out
}

var insufficientRE = regexp.MustCompile(`Insufficient ([A-Za-z0-9./_-]*[A-Za-z0-9])`)

// podCauses lists what keeps a pod from running.
func podCauses(p *corev1.Pod) []string {
	var out []string
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			line := fmt.Sprintf("pod %s is %s, unschedulable: %s", p.Name, p.Status.Phase, c.Message)
			var res []string
			for _, m := range insufficientRE.FindAllStringSubmatch(c.Message, -1) {
				if !checks.Contains(res, m[1]) {
					res = append(res, m[1])
				}
			}
			if len(res) > 0 {
				line = fmt.Sprintf("insufficient %s: %s", strings.Join(res, ", "), line)
			}
			out = append(out, line)
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if wt := cs.State.Waiting; wt != nil {
			switch wt.Reason {
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName":
				out = append(out, fmt.Sprintf("pod %s container %s cannot pull image %s: %s %s", p.Name, cs.Name, cs.Image, wt.Reason, wt.Message))
			case "CrashLoopBackOff":
				out = append(out, fmt.Sprintf("pod %s container %s is crash-looping (%d restarts)", p.Name, cs.Name, cs.RestartCount))
			case "CreateContainerConfigError", "CreateContainerError":
				out = append(out, fmt.Sprintf("pod %s container %s cannot start: %s %s", p.Name, cs.Name, wt.Reason, wt.Message))
			}
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.Reason == "OOMKilled" {
				out = append(out, fmt.Sprintf("pod %s container %s was OOMKilled: its memory limit is too low for the model", p.Name, cs.Name))
				break
			}
		}
	}
	return out
}

// runtimeNotFoundRE is Kueue's word for a TrainJob whose runtime it cannot
// read; its webhook on TrainJobs may answer before Trainer's.
var runtimeNotFoundRE = regexp.MustCompile(`runtime '[^']*' not found`)

// diagnoseCreate names the cause of a canary the API server refused.
func diagnoseCreate(err error) []string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "x509") || strings.Contains(msg, "tls:") || strings.Contains(msg, "certificate"):
		return []string{"webhook TLS failure: the API server does not trust the webhook's serving certificate (caBundle): " + msg}
	case strings.Contains(msg, "failed calling webhook"):
		return []string{"the operator's webhook cannot be called, so nothing of its kind can be created: " + msg}
	case strings.Contains(msg, "must be created before") || runtimeNotFoundRE.MatchString(msg):
		return []string{"the runtime the canary names does not exist (install the operator's runtimes, or name another in the profile's canary): " + msg}
	case strings.Contains(msg, "denied the request"):
		return []string{"a webhook denied the canary: " + msg}
	}
	return []string{msg}
}
