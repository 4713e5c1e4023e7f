package scheduling

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/hardware"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ScaleUpLabel marks the scale-up probe's pods.
const ScaleUpLabel = "aiconform.io/scale-up"

// scaleUpPodPrefix starts the names of the probe's pods.
const scaleUpPodPrefix = "aiconform-scale-up-"

// maxFilled bounds the nodes the probe fills before the pod that must wait
// for a new one: past it, the probe would hold too many accelerators of the
// cluster's own.
const maxFilled = 4

// The watch tags of the scale-up probe besides pods.
const (
	nodesTag      = "nodes"
	nodeClaimsTag = "nodeclaims"
	eventsTag     = "events"
)

// ScaleUpProbe makes the cluster's autoscaler add an accelerator node for
// pods no node can take, runs them on it, and watches the node go once
// they are deleted.
type ScaleUpProbe struct{}

// Meta implements checks.Check.
func (ScaleUpProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "scale-up-probe", Title: "The autoscaler adds an accelerator node for pending pods, and removes it",
		Requirement: "cluster_autoscaling", Probe: true, OptIn: "--probe-scale-up",
		Description: fmt.Sprintf("Under --probe with --probe-scale-up only: it costs a node for minutes. Picks the accelerator "+
			"and per-node count of a node group that accelerator-node-groups found able to grow (from its "+
			"NodeClaims or nodes, else its limit, else the accelerator the Ready nodes offer most). Reads "+
			"what the pods of every Ready, schedulable node with that accelerator request (one LIST per "+
			"node, spec.nodeName field selector) to find what each has free. When no node has a whole node's "+
			"worth free, creates one pod requesting one more than the most any node has free; otherwise one "+
			"pod of a whole node's worth per node that has it free (at most %d) and one more, so that one "+
			"pod can only run on a node the autoscaler adds. Each pod tolerates a taint named after the "+
			"accelerator, runs --probe-image non-root with CPU and memory limits and a deadline. Watches the "+
			"pods, the nodes, Karpenter's NodeClaims and the events of the run's namespace (no polling), "+
			"with a timeline. Passes when a node is added, a pod runs on it, and the node is removed after "+
			"the pods are deleted, each within the probe timeout; warns when the node stays past it (the "+
			"autoscaler's own scale-down delay may be longer: raise --probe-timeout); fails when no node is "+
			"added, or the pod does not run on it. The pods are deleted with the run's namespace however the "+
			"run ends; the node is the autoscaler's to remove.", maxFilled),
		Remediation: "No node added: read the autoscaler's events on the probe's pods (Karpenter: the NodePool's " +
			"limits and requirements, its instance types' offerings; cluster-autoscaler: NotTriggerScaleUp " +
			"says which group could not fit the pod and why, such as max size reached). A node added on " +
			"which the pod does not run: read the node's conditions and taints.",
	}
}

// scaleUpPlan is what the probe asks for.
type scaleUpPlan struct {
	resource corev1.ResourceName
	perPod   int64
	pods     int
	why      string
}

// planScaleUp decides the probe's pods from what each node has free and
// what one node of the group holds: enough that the last pod fits no node
// there is, but fits a new one.
func planScaleUp(res corev1.ResourceName, perNode int64, nodes []hardware.FreeNode) (scaleUpPlan, error) {
	p := scaleUpPlan{resource: res}
	var most int64
	whole := 0
	for _, n := range nodes {
		most = max(most, n.Free)
		if n.Free >= perNode {
			whole++
		}
	}
	switch {
	case most < perNode:
		p.perPod, p.pods = most+1, 1
		p.why = fmt.Sprintf("one pod requesting %d %s: no Ready node has more than %d free, a new node has %d", p.perPod, res, most, perNode)
	case whole > maxFilled:
		return p, fmt.Errorf("%d Ready nodes have a whole node's %d %s free: the probe fills at most %d "+
			"before the pod that must wait for a new node", whole, perNode, res, maxFilled)
	default:
		p.perPod, p.pods = perNode, whole+1
		p.why = fmt.Sprintf("%d pods requesting %d %s each: %s it free, so the last must wait for a new node", p.pods, perNode, res, checks.Plural(whole, "Ready node has"))
	}
	return p, nil
}

// scaleUpWatch follows the probe's pods, the nodes and the autoscaler.
type scaleUpWatch struct {
	now      func() time.Time
	timeline *probe.Timeline
	known    map[string]bool // nodes before the probe
	added    map[string]*corev1.Node
	addedAt  map[string]time.Time // when the watch saw each added node
	removed  map[string]bool
	pods     map[string]*corev1.Pod
	want     int               // the probe's pods: all must be seen running
	claims   map[string]string // NodeClaim -> conditions said
	said     map[string]bool   // event reason+message already in the timeline
	// since is when the API server created the first pod: NodeClaims
	// created before it are not the probe's doing.
	since time.Time
	// scheduler and autoscaler are their last words on a pending pod.
	scheduler, autoscaler string
}

// Run implements checks.Check.
func (ScaleUpProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	switch {
	case s == nil:
		r.Finish(checks.Skip, "probes are off: --probe --probe-scale-up makes the autoscaler add an accelerator node for pods no node can take")
		return r, nil
	case !s.ScaleUp:
		r.Finish(checks.Skip, "the scale-up probe is off: it adds a node for minutes, and runs only with --probe-scale-up")
		return r, nil
	}
	a, err := detectSome(ctx, env, &r)
	if a == nil {
		return r, err
	}
	r.Evidence = nil // detect's reads are the read-only checks' evidence
	if err := a.readNodes(ctx, env); err != nil {
		return r, err
	}
	res, perNode, group, err := scaleUpTarget(ctx, env, a)
	if err != nil {
		return r, err
	}
	free, err := hardware.FreeAccelerators(ctx, env, a.nodes, res)
	if err != nil {
		return r, err
	}
	plan, err := planScaleUp(res, perNode, free)
	if err != nil {
		return r, fmt.Errorf("cannot judge: %w", err)
	}
	if group != "" {
		r.Details = append(r.Details, fmt.Sprintf("the accelerator and a new node's count of it are those of %s", group))
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	w := &scaleUpWatch{now: env.Now, timeline: &pr.Timeline, known: map[string]bool{}, added: map[string]*corev1.Node{}, addedAt: map[string]time.Time{}, removed: map[string]bool{},
		pods: map[string]*corev1.Pod{}, want: plan.pods, claims: map[string]string{}, said: map[string]bool{}}
	for _, n := range a.nodes {
		w.known[n.Name] = true
	}
	for i := range plan.pods {
		pod, err := scaleUpPod(scaleUpPodPrefix+fmt.Sprint(i), s.Image, plan, s.Timeout)
		if err != nil {
			return r, err
		}
		created, err := pr.Create(ctx, pod, plan.why)
		if err != nil {
			return pr.Refused(err)
		}
		if i == 0 {
			w.since = created.GetCreationTimestamp().Time
		}
	}
	sources := []probe.Source{
		{Tag: podsTag, GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: ScaleUpLabel}},
		{Tag: nodesTag, GVR: cluster.Nodes.GVR},
		{Tag: eventsTag, GVR: cluster.Events.GVR, Namespaced: true},
	}
	if a.karpenter != nil {
		claims, err := checks.CustomResource(ctx, env, a.data.Karpenter.NodeClaims)
		if err != nil {
			return r, err
		}
		sources = append(sources, probe.Source{Tag: nodeClaimsTag, GVR: claims.GVR})
	}
	if err := pr.Watch(ctx, w.apply, sources...); err != nil {
		return r, err
	}
	phase := func(done func() bool) (bool, error) { return pr.Phase(ctx, done) }
	end := func() {
		fresh := env.Fresh()
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: ScaleUpLabel, Wide: true}, "the probe's pods and the nodes they are bound to")
		r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Events}, Namespace: s.Namespace}, "what the scheduler and the autoscaler said about them")
		if names := w.addedNames(); len(names) > 0 {
			r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Nodes}, Names: names, LabelColumns: a.data.NodeGroupLabels}, "the nodes the autoscaler added (NotFound once removed)")
		}
	}
	finish := func(st checks.Status, format string, args ...any) (checks.Result, error) {
		end()
		r.Finish(st, format, args...)
		return r, nil
	}

	ok, err := phase(w.allRunning)
	if err != nil {
		return r, err
	}
	if !ok {
		if len(w.added) == 0 {
			return finish(checks.Fail, "no node was added within %s for %s (%s)", s.Timeout, plan.why, w.pendingWhy())
		}
		return finish(checks.Fail, "the autoscaler added %s, but the probe's pods were not all running on nodes within %s (%s)", strings.Join(w.addedNames(), ", "), s.Timeout, w.pendingWhy())
	}
	on := w.onAddedNode()
	if on == nil {
		end()
		return r, errors.New("cannot judge: every probe pod ran on a node that was there before (capacity was freed while the probe ran); run it again")
	}
	node := w.added[on.Spec.NodeName]
	upAfter := w.addedAt[node.Name].Sub(w.timeline.T0)
	by := addedBy(node, a.data)
	for _, p := range w.podNames() {
		if err := pr.Delete(ctx, corev1.SchemeGroupVersion.WithKind("Pod"), p, "the probe's pods go; the node added for them is then empty"); err != nil {
			return finish(checks.Error, "the probe's pod %s could not be deleted: %v", p, err)
		}
	}
	deleted := env.Now()
	up := fmt.Sprintf("%s added node %s (%s) for %s, %s after the first pod was created; pod %s ran on it", by, node.Name, nodeAccelerators(node, plan.resource), plan.why, probe.Seconds(upAfter), on.Name)
	if ok, err := phase(func() bool { return w.removed[node.Name] }); err != nil {
		return r, err
	} else if !ok {
		return finish(checks.Warn, "%s; the node was still there %s after the pods were deleted: the "+
			"autoscaler's scale-down delay may be longer (raise --probe-timeout to see it)", up, s.Timeout)
	}
	return finish(checks.Pass, "%s; the node was removed %s after the pods were deleted", up, probe.Seconds(env.Now().Sub(deleted)))
}

// scaleUpTarget picks the accelerator the probe requests and how many of
// it a new node would have: from a node group that can grow first, then
// from any accelerator group (one at its maximum shows it refusing).
func scaleUpTarget(ctx context.Context, env *checks.Env, a *autoscalers) (corev1.ResourceName, int64, string, error) {
	groups := a.groups()
	sort.SliceStable(groups, func(i, j int) bool {
		return !groups[i].atMax && !groups[i].unhealthy && (groups[j].atMax || groups[j].unhealthy)
	})
	var res corev1.ResourceName
	var perNode int64
	group := ""
	for _, g := range groups {
		if g.accelerator == "" || g.accelerator == "?" || g.resource == "" {
			continue
		}
		res, perNode, group = g.resource, g.perNode, g.name
		break
	}
	if res == "" {
		best, err := probeAccelerator(ctx, env)
		if err != nil {
			return "", 0, "", err
		}
		if best == "" {
			return "", 0, "", errors.New("cannot judge: no node group tells which accelerator its nodes have, and no Ready node offers one")
		}
		res = corev1.ResourceName(best)
	}
	if perNode == 0 {
		// A node like the largest there is of that accelerator.
		for _, n := range a.nodes {
			q := n.Status.Allocatable[res]
			perNode = max(perNode, q.Value())
		}
		perNode = max(perNode, 1)
	}
	return res, perNode, group, nil
}

// scaleUpPod is one of the probe's pods, asking for what the plan says.
func scaleUpPod(name, image string, p scaleUpPlan, timeout time.Duration) (*unstructured.Unstructured, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ScaleUpLabel: "probe"}},
		Spec:       checks.ProbePodSpec(image, corev1.ResourceList{p.resource: *resource.NewQuantity(p.perPod, resource.DecimalSI)}, string(p.resource)),
	}
	pod.Spec.ActiveDeadlineSeconds = checks.ProbeDeadline(timeout)
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

func (w *scaleUpWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok {
		return
	}
	switch e.Tag {
	case nodesTag:
		w.applyNode(e.Type, u)
	case nodeClaimsTag:
		w.applyClaim(e.Type, u)
	case eventsTag:
		var ev corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev) != nil || ev.InvolvedObject.Kind != "Pod" {
			return
		}
		key := ev.InvolvedObject.Name + ev.Reason + ev.Message
		if w.said[key] || ev.Reason == "Scheduled" {
			return
		}
		w.said[key] = true
		w.timeline.Add(w.now(), "pod %s: %s: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message)
		if p := w.pods[ev.InvolvedObject.Name]; p == nil || p.Spec.NodeName == "" {
			word := fmt.Sprintf("pod %s: %s: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message)
			if ev.Source.Component == corev1.DefaultSchedulerName || ev.ReportingController == corev1.DefaultSchedulerName {
				w.scheduler = word
			} else {
				w.autoscaler = word
			}
		}
	default:
		var pod corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pod) != nil {
			return
		}
		prev := w.pods[pod.Name]
		if e.Type == watch.Deleted {
			delete(w.pods, pod.Name)
			return
		}
		w.pods[pod.Name] = &pod
		if pod.Spec.NodeName != "" && (prev == nil || prev.Spec.NodeName == "") {
			where := "a node that was there before"
			if _, ok := w.added[pod.Spec.NodeName]; ok {
				where = "the added node"
			}
			w.timeline.Add(w.now(), "pod %s bound to %s (%s)", pod.Name, pod.Spec.NodeName, where)
		}
		if pod.Status.Phase == corev1.PodRunning && (prev == nil || prev.Status.Phase != corev1.PodRunning) {
			w.timeline.Add(w.now(), "pod %s Running", pod.Name)
		}
	}
}

func (w *scaleUpWatch) applyNode(t watch.EventType, u *unstructured.Unstructured) {
	name := u.GetName()
	if w.known[name] {
		return
	}
	if t == watch.Deleted {
		if !w.removed[name] {
			w.removed[name] = true
			w.timeline.Add(w.now(), "node %s removed", name)
		}
		return
	}
	var n corev1.Node
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n) != nil {
		return
	}
	prev, seen := w.added[name]
	w.added[name] = &n
	if !seen {
		w.addedAt[name] = w.now()
		w.timeline.Add(w.addedAt[name], "node %s added", name)
	}
	was := corev1.ConditionUnknown
	if prev != nil {
		was, _ = kube.NodeReady(prev)
	}
	if now, _ := kube.NodeReady(&n); now == corev1.ConditionTrue && was != corev1.ConditionTrue {
		w.timeline.Add(w.now(), "node %s Ready", name)
	}
}

// applyClaim puts each NodeClaim's creation and its conditions turning
// True in the timeline.
func (w *scaleUpWatch) applyClaim(t watch.EventType, u *unstructured.Unstructured) {
	name := u.GetName()
	said, seen := w.claims[name]
	if t == watch.Deleted {
		if seen {
			w.timeline.Add(w.now(), "NodeClaim %s deleted", name)
		}
		return
	}
	if !seen {
		// A NodeClaim of before the probe shows up only when it changes.
		if u.GetCreationTimestamp().Time.Before(w.since) {
			return
		}
		w.timeline.Add(w.now(), "NodeClaim %s created by NodePool %s", name, u.GetLabels()["karpenter.sh/nodepool"])
	}
	var now []string
	for _, c := range kube.Conditions(u) {
		if c.Status == "True" && c.Type != "Ready" {
			now = append(now, c.Type)
		}
	}
	slices.Sort(now)
	for _, c := range now {
		if !strings.Contains(said, ","+c+",") {
			w.timeline.Add(w.now(), "NodeClaim %s %s", name, c)
		}
	}
	w.claims[name] = "," + strings.Join(now, ",") + ","
}

func (w *scaleUpWatch) allRunning() bool {
	// The watch starts after the first pod was created: a pod is seen
	// first on a change, and the others may come later.
	if len(w.pods) < w.want {
		return false
	}
	for _, p := range w.pods {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			return false
		}
	}
	return true
}

// onAddedNode is a pod bound to a node the probe saw added, nil for none.
func (w *scaleUpWatch) onAddedNode() *corev1.Pod {
	for _, name := range w.podNames() {
		if p := w.pods[name]; w.added[p.Spec.NodeName] != nil {
			return p
		}
	}
	return nil
}

func (w *scaleUpWatch) podNames() []string {
	return checks.SortedKeys(w.pods)
}

func (w *scaleUpWatch) addedNames() []string {
	return checks.SortedKeys(w.added)
}

// pendingWhy is the autoscaler's last word on a pending pod, else the
// scheduler's.
func (w *scaleUpWatch) pendingWhy() string {
	return cmp.Or(w.autoscaler, cmp.Or(w.scheduler, "nothing said why"))
}

// addedBy names what added a node, from the labels autoscalers put on
// their nodes.
func addedBy(n *corev1.Node, d *autoscalerData) string {
	if pool := n.Labels["karpenter.sh/nodepool"]; pool != "" {
		return "Karpenter (NodePool " + pool + ")"
	}
	for _, l := range d.NodeGroupLabels {
		if g := n.Labels[l]; g != "" {
			return "the autoscaler (node group " + g + ")"
		}
	}
	return "the autoscaler"
}

// nodeAccelerators is how many of res a node has allocatable.
func nodeAccelerators(n *corev1.Node, res corev1.ResourceName) string {
	q := n.Status.Allocatable[res]
	if q.IsZero() {
		q = n.Status.Capacity[res]
	}
	return fmt.Sprintf("%s: %s", res, q.String())
}
