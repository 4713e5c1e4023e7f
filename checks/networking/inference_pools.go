package networking

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// InferencePoolsReady checks that an InferencePool can take requests: its
// endpoint picker runs, its model servers are ready, and a gateway
// implementation accepted it.
type InferencePoolsReady struct{}

// Meta implements checks.Check.
func (InferencePoolsReady) Meta() checks.Meta {
	return checks.Meta{
		ID: "inference-pools-ready", Title: "InferencePools have an endpoint picker, ready model servers and an accepting gateway",
		Requirement: "advanced_inference_ingress",
		Description: "Reads the InferencePools (inference.networking.k8s.io/v1) and judges each on three things. Its " +
			"endpoint picker, the service that chooses a model server for each request from the servers' " +
			"metrics (queue depth, KV-cache use, loaded adapters), named by spec.endpointPickerRef: a " +
			"Service of the pool's namespace that exists, is not ExternalName, has the port named, and has " +
			"ready endpoints in its EndpointSlices. Its model servers, the pods spec.selector selects in its " +
			"namespace: counted from the Deployments and StatefulSets whose pod template the selector " +
			"matches (their ready replicas), or, when none does, from the pods the selector lists there. Its " +
			"parents, the Gateways in status.parents: the implementation reports Accepted True for the " +
			"pool's current generation, and ResolvedRefs True when it reports it. Passes when every pool is " +
			"usable this way; warns when some are not; fails when none is; says nothing when the API is not " +
			"served or there is no pool. The picker's own routing decisions are not observed: a ready picker " +
			"behind an accepting gateway is what can make them.",
		Remediation: "`kubectl describe inferencepool -n NS NAME` shows each gateway's Accepted and ResolvedRefs " +
			"conditions and why. Deploy the endpoint picker (GAIE's chart installs one beside each pool) and " +
			"check its Service's endpoints with `kubectl get endpointslices -n NS -l " +
			"kubernetes.io/service-name=NAME`; make sure the pool's selector matches the model server pods' " +
			"labels and that an HTTPRoute of a Gateway whose implementation supports InferencePool sends to " +
			"it.",
	}
}

// maxPoolNamespaces bounds the namespaces whose workloads are read, so that
// a cluster with pools everywhere costs a bounded number of LISTs.
const maxPoolNamespaces = 20

// poolColumns show a pool's selector, picker and what its gateways say;
// kubectl's own columns show only its age.
const poolColumns = `NAMESPACE:.metadata.namespace,NAME:.metadata.name,` +
	`SELECTOR:.spec.selector.matchLabels,PICKER:.spec.endpointPickerRef.name,` +
	`PICKER_PORT:.spec.endpointPickerRef.port.number,` +
	`FAILURE_MODE:.spec.endpointPickerRef.failureMode,` +
	`PARENTS:.status.parents[*].parentRef.name,` +
	`ACCEPTED:.status.parents[*].conditions[?(@.type=="Accepted")].status,` +
	`RESOLVED_REFS:.status.parents[*].conditions[?(@.type=="ResolvedRefs")].status`

// Run implements checks.Check.
func (InferencePoolsReady) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	api, err := readInferenceAPI(ctx, env)
	if err != nil {
		return r, err
	}
	pools, res, ok, err := api.pools(ctx, env)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", poolsNotServed)
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true, Columns: poolColumns}, "")
	if len(pools) == 0 {
		// A pool is what a model's owner creates, not the platform, as a
		// route is (httproutes-accepted skips without one too): without
		// one nothing shows the extension at work either way, and the
		// requirement, shown only by a usable pool or route, is not met
		// on its CRDs alone.
		r.Finish(checks.Skip, "there is no InferencePool: nothing shows an endpoint picker routing to model servers")
		return r, nil
	}
	services, err := checks.List[*corev1.Service](ctx, env, cluster.Query{Resource: cluster.Services})
	if err != nil {
		return r, err
	}
	byName := map[string]*corev1.Service{}
	for _, s := range services {
		byName[s.Namespace+"/"+s.Name] = s
	}
	w := &poolWorkloads{read: map[string]bool{}}
	var usable, unusable []string
	unread := 0
	for _, p := range pools {
		if !w.read[p.GetNamespace()] && len(w.read) >= maxPoolNamespaces {
			unread++
			continue
		}
		if err := w.readNamespace(ctx, env, p.GetNamespace()); err != nil {
			return r, err
		}
		line, problems, err := judgePool(ctx, env, &r, p, byName, w)
		if err != nil {
			return r, err
		}
		if len(problems) > 0 {
			unusable = append(unusable, fmt.Sprintf("InferencePool %s: %s", kube.ObjectName(p), strings.Join(problems, "; ")))
		} else {
			usable = append(usable, line)
		}
	}
	r.Details = append(r.Details, unusable...)
	if unread > 0 {
		r.Details = append(r.Details, fmt.Sprintf("%s in more than %d namespaces not judged", checks.Plural(unread, "InferencePool"), maxPoolNamespaces))
	}
	switch {
	case len(usable) == 0:
		r.Finish(checks.Fail, "no InferencePool is usable: %s", checks.CapLines(unusable, 3, "; "))
	case len(unusable) > 0:
		r.Finish(checks.Warn, "%d of %d InferencePools usable (%s); not usable: %s", len(usable), len(usable)+len(unusable),
			checks.CapLines(usable, 2, "; "), checks.CapLines(unusable, 3, "; "))
	default:
		r.Finish(checks.Pass, "%s usable: %s", checks.Plural(len(usable), "InferencePool"), checks.CapLines(usable, 3, "; "))
	}
	return r, nil
}

// judgePool says what makes a pool usable, or what does not.
func judgePool(ctx context.Context, env *checks.Env, r *checks.Result, p *unstructured.Unstructured, services map[string]*corev1.Service, w *poolWorkloads) (string, []string, error) {
	var problems []string
	picker, why, err := endpointPicker(ctx, env, r, p, services)
	if err != nil {
		return "", nil, err
	}
	if why != "" {
		problems = append(problems, why)
	}
	servers, why, err := w.modelServers(ctx, env, r, p)
	if err != nil {
		return "", nil, err
	}
	if why != "" {
		problems = append(problems, why)
	}
	accepted, rejected := acceptingParents(p, true)
	switch {
	case len(accepted) > 0:
	case len(rejected) == 0:
		problems = append(problems, "no gateway reports on it (status.parents is empty): no implementation routes to it")
	default:
		problems = append(problems, "no gateway accepts it: "+strings.Join(rejected, "; "))
	}
	line := fmt.Sprintf("InferencePool %s (%s; %s; accepted by %s)", kube.ObjectName(p), picker, servers, strings.Join(accepted, ", "))
	return line, problems, nil
}

// endpointPicker judges a pool's endpointPickerRef: what it is when it
// can pick, or why it cannot.
func endpointPicker(ctx context.Context, env *checks.Env, r *checks.Result, p *unstructured.Unstructured, services map[string]*corev1.Service) (string, string, error) {
	ref, found, _ := unstructured.NestedMap(p.Object, "spec", "endpointPickerRef")
	if !found {
		return "", "it has no endpointPickerRef: nothing picks its model servers on their metrics", nil
	}
	kind, group, name := str(ref, "kind"), str(ref, "group"), str(ref, "name")
	if kind == "" {
		kind = "Service" // the API's default
	}
	if kind != "Service" || group != "" {
		return "", fmt.Sprintf("its endpoint picker is a %s of group %q, which this check does not read", kind, group), nil
	}
	mode := str(ref, "failureMode")
	if mode == "" {
		mode = "FailClose" // the API's default
	}
	port, _, _ := unstructured.NestedInt64(ref, "port", "number")
	svcName := p.GetNamespace() + "/" + name
	svc := services[svcName]
	switch {
	case svc == nil:
		return "", fmt.Sprintf("its endpoint picker Service %s does not exist", svcName), nil
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return "", fmt.Sprintf("its endpoint picker Service %s is ExternalName, which implementations must not send to", svcName), nil
	case port != 0 && !servicePort(svc, port):
		return "", fmt.Sprintf("its endpoint picker Service %s has no port %d", svcName, port), nil
	}
	get := cluster.Get{Resources: []cluster.Resource{cluster.EndpointSlices}, Namespace: p.GetNamespace(),
		LabelSelector: discoveryv1.LabelServiceName + "=" + name}
	r.AddEvidence(ctx, env, get, "the endpoint picker of InferencePool "+kube.ObjectName(p))
	eps, err := checks.List[*discoveryv1.EndpointSlice](ctx, env, get.Queries()[0])
	if err != nil {
		return "", "", err
	}
	ready := checks.ReadyEndpoints(eps)
	if ready == 0 {
		return "", fmt.Sprintf("its endpoint picker Service %s has no ready endpoint", svcName), nil
	}
	return fmt.Sprintf("endpoint picker %s:%d with %s, %s", svcName, port, checks.Plural(ready, "ready endpoint"), mode), "", nil
}

// servicePort is true when svc serves port.
func servicePort(svc *corev1.Service, port int64) bool {
	for _, p := range svc.Spec.Ports {
		if int64(p.Port) == port {
			return true
		}
	}
	return false
}

// poolWorkloads are the Deployments and StatefulSets of the pools'
// namespaces, read once per namespace through the queries every check of
// workloads shares.
type poolWorkloads struct {
	read         map[string]bool
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
}

func (w *poolWorkloads) readNamespace(ctx context.Context, env *checks.Env, ns string) error {
	if w.read[ns] {
		return nil
	}
	w.read[ns] = true
	deps, err := checks.List[*appsv1.Deployment](ctx, env, cluster.Query{Resource: cluster.Deployments, Namespace: ns})
	if err != nil {
		return err
	}
	sets, err := checks.List[*appsv1.StatefulSet](ctx, env, cluster.Query{Resource: cluster.StatefulSets, Namespace: ns})
	if err != nil {
		return err
	}
	w.deployments = append(w.deployments, deps...)
	w.statefulSets = append(w.statefulSets, sets...)
	return nil
}

// modelServers counts the ready pods a pool selects: from the workloads
// whose pod template it matches, or, when none does (pods of a
// LeaderWorkerSet, of an operator of its own), from the pods it lists in
// its namespace.
func (w *poolWorkloads) modelServers(ctx context.Context, env *checks.Env, r *checks.Result, p *unstructured.Unstructured) (string, string, error) {
	match, _, _ := unstructured.NestedStringMap(p.Object, "spec", "selector", "matchLabels")
	if len(match) == 0 {
		return "", "its selector is empty: it selects no model server", nil
	}
	sel := labels.SelectorFromSet(match)
	ns := p.GetNamespace()
	get := cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: ns, LabelSelector: sel.String()}
	r.AddEvidence(ctx, env, get, "the model servers of InferencePool "+kube.ObjectName(p))
	var ready, want int32
	var owners []string
	for _, d := range w.deployments {
		if d.Namespace == ns && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			ready += d.Status.ReadyReplicas
			want += replicas(d.Spec.Replicas)
			owners = append(owners, "Deployment "+d.Name)
		}
	}
	for _, s := range w.statefulSets {
		if s.Namespace == ns && sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			ready += s.Status.ReadyReplicas
			want += replicas(s.Spec.Replicas)
			owners = append(owners, "StatefulSet "+s.Name)
		}
	}
	if len(owners) == 0 {
		pods, err := checks.List[*corev1.Pod](ctx, env, get.Queries()[0])
		if err != nil {
			return "", "", err
		}
		for _, pod := range pods {
			if _, probe := checks.ProbeRun(pod.Labels, pod.Namespace); probe || pod.DeletionTimestamp != nil {
				continue
			}
			want++
			if kube.PodReady(pod) {
				ready++
			}
		}
		if want == 0 {
			return "", fmt.Sprintf("no pod of %s matches its selector %s", ns, sel), nil
		}
		owners = []string{"pods " + sel.String()}
	}
	counted := fmt.Sprintf("%d/%d model servers ready (%s)", ready, want, strings.Join(owners, ", "))
	if ready == 0 {
		return "", "none of its model servers is ready: " + counted, nil
	}
	return counted, "", nil
}

// replicas is a workload's desired replicas; unset means one.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
