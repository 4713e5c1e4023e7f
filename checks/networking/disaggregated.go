package networking

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

//go:embed disaggregated.yaml
var disaggregatedYAML []byte

var _ = checks.RegisterData[disaggData]("disaggregated.yaml", disaggregatedYAML)

// disaggData is disaggregated.yaml.
type disaggData struct {
	Labelled  []labelledStack `yaml:"labelled"`
	Resources []resourceStack `yaml:"resources"`
}

// labelledStack is a stack whose workloads say their phase in a label.
type labelledStack struct {
	Name       string   `yaml:"name"`
	RoleLabels []string `yaml:"roleLabels"`
	Prefill    []string `yaml:"prefill"`
	Decode     []string `yaml:"decode"`
	GroupLabel string   `yaml:"groupLabel"`
}

// resourceStack is a stack declared as one custom resource.
type resourceStack struct {
	Name   string          `yaml:"name"`
	CRD    string          `yaml:"crd"`
	Phases []resourcePhase `yaml:"phases"`
}

// resourcePhase is where a stack's custom resource declares one phase.
type resourcePhase struct {
	Role      string   `yaml:"role"`
	Present   []string `yaml:"present"`
	Replicas  []string `yaml:"replicas"`
	Condition string   `yaml:"condition"`
}

func loadDisaggregated() (disaggData, error) {
	return checks.Data[disaggData]("disaggregated.yaml", disaggregatedYAML)
}

// The two phases a disaggregated stack runs apart.
const (
	phasePrefill = "prefill"
	phaseDecode  = "decode"
)

// The CRDs read besides the stacks' own: LeaderWorkerSet, the unit of a
// multi-node prefill or decode group, and the Inference Extension's
// InferencePool, which may select the model servers.
const (
	lwsCRD           = "leaderworkersets.leaderworkerset.x-k8s.io"
	inferencePoolCRD = "inferencepools.inference.networking.k8s.io"
	// poolVersion is the InferencePool's GA version; the older
	// inference.networking.x-k8s.io alpha is not read.
	poolVersion = "v1"
)

// DisaggregatedServing checks that a serving stack runs the prefill and
// decode phases of inference as separate components, each ready.
type DisaggregatedServing struct{}

// Meta implements checks.Check.
func (DisaggregatedServing) Meta() checks.Meta {
	return checks.Meta{
		ID: "disaggregated-serving", Title: "A serving stack runs prefill and decode as separate components",
		Requirement: "disaggregated_inference",
		Description: "Reads the Deployments, StatefulSets and (when their CRD is served) LeaderWorkerSets, and the " +
			"custom resources of the stacks aiconform knows (disaggregated.yaml). A workload's phase is a " +
			"label on its pod template or on itself: llm-d.ai/role for llm-d, the Dynamo operator's " +
			"component-type labels, a RoleBasedGroup's role label; workloads of one stack are tied by the " +
			"stack's group label (a Dynamo graph, a RoleBasedGroup) or, without one, by their namespace. A " +
			"KServe LLMInferenceService with a prefill section is a stack of its own, its phases judged by " +
			"its MainWorkloadReady and PrefillWorkloadReady conditions. A phase is ready when one of its " +
			"workloads has a ready replica. The InferencePool or HTTPRoute in front of a stack, when one " +
			"selects or points at its components, is named. Passes when a stack has both phases ready; warns " +
			"when stacks have both phases but one is not ready or scaled to zero; fails when no stack runs " +
			"both phases apart.",
		Remediation: "Deploy a model with prefill and decode as separate workloads, each scaled on its own: llm-d's " +
			"P/D disaggregation guide, a KServe LLMInferenceService with spec.prefill, an NVIDIA Dynamo " +
			"graph with prefill and decode workers, or an SGLang RoleBasedGroup. `kubectl get deploy,sts -n " +
			"NS -o wide --show-labels` shows which phase each workload carries and how many replicas are " +
			"ready.",
	}
}

// workload is a Deployment, StatefulSet or LeaderWorkerSet as the check
// sees it.
type workload struct {
	res             cluster.Resource
	namespace, name string
	labels          map[string]string
	template        map[string]string // the pod template's labels
	owners          []types.UID
	desired, ready  int64
}

// label is a label of the pod template, or else of the workload.
func (w workload) label(key string) string {
	if v := w.template[key]; v != "" {
		return v
	}
	return w.labels[key]
}

// component is one phase's workload of a stack, or the phase a custom
// resource declares.
type component struct {
	role  string
	text  string // what it is and how ready, for messages
	ready bool
}

// servingStack is one serving stack: its components, and the workloads
// behind them for what is in front.
type servingStack struct {
	kind, namespace, name string
	components            []component
	members               []workload
	// crd names the custom resource the stack is, "" for a labelled one.
	crd string
}

// title names the stack in messages.
func (s *servingStack) title() string {
	switch {
	case s.crd != "":
		return fmt.Sprintf("%s %s/%s", s.kind, s.namespace, s.name)
	case s.name != "":
		return fmt.Sprintf("%s stack %s/%s", s.kind, s.namespace, s.name)
	default:
		return fmt.Sprintf("%s stack in namespace %s", s.kind, s.namespace)
	}
}

// phase says whether the stack has the phase, and whether it is ready.
func (s *servingStack) phase(role string) (found, ready bool) {
	for _, c := range s.components {
		if c.role == role {
			found = true
			ready = ready || c.ready
		}
	}
	return found, ready
}

// describe lists the components by phase.
func (s *servingStack) describe() string {
	var parts []string
	for _, role := range []string{phasePrefill, phaseDecode} {
		var texts []string
		for _, c := range s.components {
			if c.role == role {
				texts = append(texts, c.text)
			}
		}
		parts = append(parts, role+": "+strings.Join(texts, ", "))
	}
	return strings.Join(parts, "; ")
}

// Run implements checks.Check.
func (DisaggregatedServing) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	data, err := loadDisaggregated()
	if err != nil {
		return r, err
	}
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	stacks, owned, err := data.resourceStacks(ctx, env, crds)
	if err != nil {
		return r, err
	}
	workloads, err := readWorkloads(ctx, env, crds)
	if err != nil {
		return r, err
	}
	var kept []workload
	for _, w := range workloads {
		if owner := ownedBy(w, owned); owner != nil {
			owner.members = append(owner.members, w)
			continue
		}
		kept = append(kept, w)
	}
	stacks = append(stacks, data.labelledStacks(kept)...)

	var both, single []*servingStack
	for _, s := range stacks {
		pf, _ := s.phase(phasePrefill)
		df, _ := s.phase(phaseDecode)
		if pf && df {
			both = append(both, s)
		} else {
			single = append(single, s)
		}
	}
	// A custom resource of one phase is the plain way to serve with it;
	// workloads labelled with one phase are worth a line.
	for _, s := range single {
		if s.crd == "" {
			only := phaseDecode
			if f, _ := s.phase(phasePrefill); f {
				only = phasePrefill
			}
			r.Details = append(r.Details, fmt.Sprintf("%s has %s only (%s): not disaggregated", s.title(), only, s.describe()))
		}
	}
	addStackEvidence(ctx, env, &r, data, crds, both)
	if len(both) == 0 {
		data.addSearchEvidence(ctx, env, &r, crds, slices.DeleteFunc(single, func(s *servingStack) bool { return s.crd != "" }))
		r.Finish(checks.Fail, "no serving stack runs prefill and decode as separate components: %s", data.lookedFor())
		return r, nil
	}

	fronts, err := readFronts(ctx, env, crds)
	if err != nil {
		return r, err
	}
	var ready, unready []string
	for _, s := range both {
		_, p := s.phase(phasePrefill)
		_, d := s.phase(phaseDecode)
		line := fmt.Sprintf("%s (%s)", s.title(), s.describe())
		front := fronts.describe(s)
		if p && d {
			if front != "" {
				line += ", in front: " + front
			} else {
				r.Details = append(r.Details, fmt.Sprintf("nothing in front of %s: no InferencePool selects its components and no HTTPRoute points at them", s.title()))
			}
			ready = append(ready, line)
			continue
		}
		var missing []string
		if !p {
			missing = append(missing, phasePrefill)
		}
		if !d {
			missing = append(missing, phaseDecode)
		}
		unready = append(unready, fmt.Sprintf("%s has no ready %s (%s)", s.title(), strings.Join(missing, " or "), s.describe()))
	}
	switch {
	case len(ready) > 0:
		r.Details = append(r.Details, unready...)
		r.Finish(checks.Pass, "%s", checks.CapLines(ready, 2, "; "))
	default:
		r.Finish(checks.Warn, "%s", checks.CapLines(unready, 2, "; "))
	}
	return r, nil
}

// lookedFor says what the check looked for, for a Fail.
func (data disaggData) lookedFor() string {
	var labels, kinds []string
	for _, l := range data.Labelled {
		labels = append(labels, fmt.Sprintf("%s (%s)", strings.Join(l.RoleLabels, " or "), l.Name))
	}
	for _, res := range data.Resources {
		kinds = append(kinds, res.Name)
	}
	return fmt.Sprintf("no Deployment, StatefulSet or LeaderWorkerSet of one stack carries both phases in %s, and no %s declares both",
		strings.Join(labels, ", "), strings.Join(kinds, ", "))
}

// readWorkloads reads the Deployments, StatefulSets and, when served,
// LeaderWorkerSets of every namespace, leaving out probes'.
func readWorkloads(ctx context.Context, env *checks.Env, crds []*apiextensionsv1.CustomResourceDefinition) ([]workload, error) {
	var out []workload
	for _, r := range []cluster.Resource{cluster.Deployments, cluster.StatefulSets} {
		ws, _, err := env.Cluster.Workloads(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			out = append(out, workload{res: r, namespace: w.Namespace, name: w.Name, labels: w.Labels,
				template: w.TemplateLabels, owners: ownerUIDs(w.Owners), desired: int64(w.Replicas), ready: int64(w.Ready)})
		}
	}
	if crd := kube.FindCRD(crds, lwsCRD); crd != nil {
		res := kube.CRDResource(crd)
		sets, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
		if err != nil {
			return nil, err
		}
		for _, s := range sets {
			out = append(out, lwsWorkload(res, s))
		}
	}
	return slices.DeleteFunc(out, func(w workload) bool {
		_, probe := checks.ProbeRun(w.labels, w.namespace)
		return probe
	}), nil
}

// lwsWorkload is a LeaderWorkerSet: its replicas are groups, a leader and
// its workers, and its template labels the workers' merged over the
// leader's.
func lwsWorkload(res cluster.Resource, s *unstructured.Unstructured) workload {
	w := workload{res: res, namespace: s.GetNamespace(), name: s.GetName(), labels: s.GetLabels(), template: map[string]string{}}
	w.owners = ownerUIDs(s.GetOwnerReferences())
	for _, t := range []string{"leaderTemplate", "workerTemplate"} {
		l, _, _ := unstructured.NestedStringMap(s.Object, "spec", "leaderWorkerTemplate", t, "metadata", "labels")
		maps.Copy(w.template, l)
	}
	w.desired = 1 // the API's default
	if n, found, _ := unstructured.NestedInt64(s.Object, "spec", "replicas"); found {
		w.desired = n
	}
	w.ready, _, _ = unstructured.NestedInt64(s.Object, "status", "readyReplicas")
	return w
}

func ownerUIDs(refs []metav1.OwnerReference) []types.UID {
	var out []types.UID
	for _, r := range refs {
		out = append(out, r.UID)
	}
	return out
}

// ownedBy is the custom resource stack that owns w, or nil.
func ownedBy(w workload, owned map[types.UID]*servingStack) *servingStack {
	for _, uid := range w.owners {
		if s := owned[uid]; s != nil {
			return s
		}
	}
	return nil
}

// labelledStacks groups the workloads that carry a phase into stacks.
func (data disaggData) labelledStacks(workloads []workload) []*servingStack {
	var order []string
	byKey := map[string]*servingStack{}
	for _, w := range workloads {
		for _, l := range data.Labelled {
			role := l.role(w)
			if role == "" {
				continue
			}
			group := ""
			if l.GroupLabel != "" {
				group = w.label(l.GroupLabel)
			}
			key := l.Name + "|" + w.namespace + "|" + group
			s := byKey[key]
			if s == nil {
				s = &servingStack{kind: l.Name, namespace: w.namespace, name: group}
				byKey[key] = s
				order = append(order, key)
			}
			s.members = append(s.members, w)
			s.components = append(s.components, workloadComponent(role, w))
			break
		}
	}
	slices.Sort(order)
	out := make([]*servingStack, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

// role is the phase w runs in this stack, "" when it carries none of the
// stack's labels or another value (a server of both phases).
func (l labelledStack) role(w workload) string {
	for _, key := range l.RoleLabels {
		v := w.label(key)
		switch {
		case v == "":
			continue
		case slices.Contains(l.Prefill, v):
			return phasePrefill
		case slices.Contains(l.Decode, v):
			return phaseDecode
		}
		return ""
	}
	return ""
}

func workloadComponent(role string, w workload) component {
	text := fmt.Sprintf("%s %s/%s %d/%d ready", w.res.Kind, w.namespace, w.name, w.ready, w.desired)
	if w.desired == 0 {
		text = fmt.Sprintf("%s %s/%s scaled to 0", w.res.Kind, w.namespace, w.name)
	}
	return component{role: role, text: text, ready: w.ready > 0}
}

// resourceStacks reads the stacks' custom resources whose CRDs are served;
// owned maps each object's UID to its stack.
func (data disaggData) resourceStacks(ctx context.Context, env *checks.Env, crds []*apiextensionsv1.CustomResourceDefinition) ([]*servingStack, map[types.UID]*servingStack, error) {
	var stacks []*servingStack
	owned := map[types.UID]*servingStack{}
	for _, rs := range data.Resources {
		crd := kube.FindCRD(crds, rs.CRD)
		if crd == nil {
			continue
		}
		objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: kube.CRDResource(crd)})
		if err != nil {
			return nil, nil, err
		}
		for _, o := range objs {
			s := &servingStack{kind: crd.Spec.Names.Kind, namespace: o.GetNamespace(), name: o.GetName(), crd: rs.CRD}
			for _, p := range rs.Phases {
				if c, ok := p.component(o); ok {
					s.components = append(s.components, c)
				}
			}
			stacks = append(stacks, s)
			owned[o.GetUID()] = s
		}
	}
	return stacks, owned, nil
}

// component is the phase as o declares it, false when o does not run it
// apart.
func (p resourcePhase) component(o *unstructured.Unstructured) (component, bool) {
	if len(p.Present) > 0 {
		if v, found, _ := unstructured.NestedFieldNoCopy(o.Object, p.Present...); !found || v == nil {
			return component{}, false
		}
	}
	n, known, _ := unstructured.NestedInt64(o.Object, p.Replicas...)
	reps := "replicas not set"
	if known {
		reps = checks.Plural(int(n), "replica")
	}
	cond, ok := kube.FindCondition(kube.Conditions(o), p.Condition)
	state := p.Condition + " not reported"
	if ok {
		state = strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Condition, cond.Status, cond.Reason))
	}
	return component{role: p.Role, text: fmt.Sprintf("%s, %s", reps, state),
		ready: ok && cond.Status == "True" && (!known || n > 0)}, true
}

// fronts are what may stand in front of a stack: InferencePools, the
// Services that select model servers, and HTTPRoutes.
type fronts struct {
	pools    []*unstructured.Unstructured
	services []*corev1.Service
	routes   []*unstructured.Unstructured
}

// readFronts reads InferencePools at v1 and HTTPRoutes when served, and
// the Services of every namespace.
func readFronts(ctx context.Context, env *checks.Env, crds []*apiextensionsv1.CustomResourceDefinition) (fronts, error) {
	var f fronts
	var err error
	if crd := kube.FindCRD(crds, inferencePoolCRD); crd != nil && slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return v.Name == poolVersion && v.Served
	}) {
		res := kube.CRDResource(crd)
		res.GVR.Version = poolVersion
		if f.pools, err = checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res}); err != nil {
			return f, err
		}
	}
	api, err := readGatewayAPI(ctx, env)
	if err != nil {
		return f, err
	}
	if f.routes, _, _, err = api.list(ctx, env, routesCRD); err != nil {
		return f, err
	}
	f.services, err = checks.List[*corev1.Service](ctx, env, cluster.Query{Resource: cluster.Services})
	return f, err
}

// describe names what is in front of s: the HTTPRoutes that point at an
// InferencePool or a Service selecting its components, else the pools that
// select them; "" for nothing.
func (f fronts) describe(s *servingStack) string {
	selects := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		return slices.ContainsFunc(s.members, func(w workload) bool {
			for k, v := range sel {
				if w.template[k] != v {
					return false
				}
			}
			return true
		})
	}
	var pools, services []string
	for _, p := range f.pools {
		sel, _, _ := unstructured.NestedStringMap(p.Object, "spec", "selector", "matchLabels")
		if p.GetNamespace() == s.namespace && selects(sel) {
			pools = append(pools, p.GetName())
		}
	}
	for _, svc := range f.services {
		if svc.Namespace == s.namespace && selects(svc.Spec.Selector) {
			services = append(services, svc.Name)
		}
	}
	var out []string
	for _, rt := range f.routes {
		rules, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
		for _, x := range rules {
			rule, _ := x.(map[string]any)
			refs, _, _ := unstructured.NestedSlice(rule, "backendRefs")
			for _, ref := range refs {
				m, _ := ref.(map[string]any)
				if m == nil || cmpOr(str(m, "namespace"), rt.GetNamespace()) != s.namespace {
					continue
				}
				name := str(m, "name")
				switch kind := cmpOr(str(m, "kind"), "Service"); {
				case kind == "InferencePool" && slices.Contains(pools, name):
					out = append(out, fmt.Sprintf("HTTPRoute %s -> InferencePool %s/%s", kube.ObjectName(rt), s.namespace, name))
				case kind == "Service" && str(m, "group") == "" && slices.Contains(services, name):
					out = append(out, fmt.Sprintf("HTTPRoute %s -> Service %s/%s", kube.ObjectName(rt), s.namespace, name))
				}
			}
		}
	}
	out = slices.Compact(out)
	if len(out) > 0 {
		return checks.CapLines(out, 2, ", ")
	}
	if len(pools) > 0 {
		return fmt.Sprintf("InferencePool %s/%s (no HTTPRoute points at it)", s.namespace, strings.Join(pools, ", "))
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// maxStackEvidence bounds the evidence steps: one per namespace and kind
// of the stacks found.
const maxStackEvidence = 6

// addStackEvidence shows the stacks' workloads and custom resources, by
// name in their namespaces, with their phase labels and replicas.
func addStackEvidence(ctx context.Context, env *checks.Env, r *checks.Result, data disaggData, crds []*apiextensionsv1.CustomResourceDefinition, stacks []*servingStack) {
	type step struct {
		res             cluster.Resource
		namespace, kind string
		crd             string
	}
	names := map[step][]string{}
	var order []step
	add := func(k step, name string) {
		if _, ok := names[k]; !ok {
			order = append(order, k)
		}
		if !slices.Contains(names[k], name) {
			names[k] = append(names[k], name)
		}
	}
	for _, s := range stacks {
		if s.crd != "" {
			add(step{res: kube.CRDResource(kube.FindCRD(crds, s.crd)), namespace: s.namespace, kind: s.kind, crd: s.crd}, s.name)
		}
		for _, w := range s.members {
			add(step{res: w.res, namespace: w.namespace, kind: s.kind}, w.name)
		}
	}
	for i, k := range order {
		if i == maxStackEvidence {
			r.Details = append(r.Details, fmt.Sprintf("evidence shown for %d of %d namespaces and kinds", maxStackEvidence, len(order)))
			break
		}
		var columns string
		switch l, ok := data.labelled(k.kind); {
		case k.crd != "":
			columns = data.resourceColumns(k.crd)
		case ok:
			columns = workloadColumns(k.res, append(slices.Clone(l.RoleLabels), l.GroupLabel))
		default: // a custom resource's own workloads
			columns = workloadColumns(k.res, nil)
		}
		r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{k.res}, Namespace: k.namespace, Names: names[k], Columns: columns}, "")
	}
}

// labelled is the labelled stack called name.
func (data disaggData) labelled(name string) (labelledStack, bool) {
	for _, l := range data.Labelled {
		if l.Name == name {
			return l, true
		}
	}
	return labelledStack{}, false
}

// workloadColumns show a workload's replicas and the label keys of its pod
// template.
func workloadColumns(res cluster.Resource, keys []string) string {
	template := ".spec.template.metadata.labels."
	if res.Kind == "LeaderWorkerSet" {
		template = ".spec.leaderWorkerTemplate.workerTemplate.metadata.labels."
	}
	cols := []string{"NAME:.metadata.name", "READY:.status.readyReplicas", "REPLICAS:.spec.replicas"}
	for _, k := range keys {
		if k != "" {
			cols = append(cols, columnName(k)+":"+template+strings.ReplaceAll(k, ".", `\.`))
		}
	}
	return strings.Join(cols, ",")
}

// resourceColumns show a stack's custom resource: each phase's replicas
// and ready condition.
func (data disaggData) resourceColumns(crd string) string {
	cols := []string{"NAME:.metadata.name"}
	for _, rs := range data.Resources {
		if rs.CRD != crd {
			continue
		}
		for _, p := range rs.Phases {
			phase := strings.ToUpper(p.Role)
			cols = append(cols, phase+":."+strings.Join(p.Replicas, "."),
				fmt.Sprintf(`%s_READY:.status.conditions[?(@.type=="%s")].status`, phase, p.Condition))
		}
	}
	cols = append(cols, `READY:.status.conditions[?(@.type=="Ready")].status`)
	return strings.Join(cols, ",")
}

// columnName is a column header for a label key: the key upper case, with
// an underscore for every other character.
func columnName(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, key)
}

// addSearchEvidence shows, when no stack was found, the CRDs looked for
// (kubectl says which are not found) and the workloads of the stacks that
// run one phase only.
func (data disaggData) addSearchEvidence(ctx context.Context, env *checks.Env, r *checks.Result, crds []*apiextensionsv1.CustomResourceDefinition, single []*servingStack) {
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Names: append([]string{lwsCRD, inferencePoolCRD}, resourceCRDs(data)...)}, "")
	addStackEvidence(ctx, env, r, data, crds, single)
}

func resourceCRDs(data disaggData) []string {
	var out []string
	for _, rs := range data.Resources {
		out = append(out, rs.CRD)
	}
	return out
}
