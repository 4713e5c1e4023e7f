package networking

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/probe"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// RouteLabel marks the route probe's pods; its value says which one:
// a backend's name, or "client".
const RouteLabel = "aiconform.io/route"

// The route probe's objects: its HTTPRoute (and Gateway, when it makes
// one), the two backends the route splits between, each a pod and a
// Service, and the client pod that sends the requests.
const (
	routeName  = "aiconform-route"
	stableName = "aiconform-stable"
	canaryName = "aiconform-canary"
	clientName = "aiconform-route-client"
	clientRole = "client"
)

// The route the probe writes: a rule that sends requests carrying
// routeHeader: canary to the canary backend only, and a rule that splits
// every other request stableWeight to canaryWeight.
const (
	routeHeader  = "x-aiconform-route"
	stableWeight = 80
	canaryWeight = 20
)

// What the client sends: splitRequests without the header, whose split is
// compared with the weights within tolerance percentage points, and
// headerRequests with it, which must all reach the canary. With 200
// requests a picker that draws at random with the route's weights lands
// outside ±10 points once in about two thousand runs (3.5 standard
// deviations); a weighted round robin lands on 80/20 exactly.
const (
	splitRequests  = 200
	headerRequests = 20
	tolerance      = 10
	// answerWait is how many seconds the client waits for both backends
	// to answer through the gateway: an implementation may report a route
	// Accepted a moment before its data plane serves it.
	answerWait = 60
)

// backendPort is where the backends' httpd listens; the Services expose
// it on port 80.
const backendPort = 8080

// RouteProbe writes a route of the run's own that splits traffic by weight
// and matches a header, and sends requests through the gateway from a pod
// to see that the implementation does both.
type RouteProbe struct{}

// Meta implements checks.Check.
func (RouteProbe) Meta() checks.Meta {
	return checks.Meta{
		ID: "route-probe", Title: "A route of the run's own splits traffic by weight and matches a header, through the gateway",
		Requirement: "ai_inference", Probe: true,
		Description: "Under --probe only. Picks where the route attaches: an HTTP listener without a hostname of a " +
			"programmed Gateway of an accepted class that admits routes from the run's namespace " +
			"(allowedRoutes from All, or a selector the namespace matches); failing that, a Gateway of the " +
			"run's own on the first accepted GatewayClass, its listener on the port a programmed Gateway of " +
			"that class listens on (80 when none does). Runs two backends, aiconform-stable and " +
			"aiconform-canary (--probe-shell-image's BusyBox httpd answering its own name; non-root, no " +
			"privilege, all capabilities dropped, CPU and memory limits, a deadline), each behind a Service, " +
			"and an HTTPRoute for a hostname of the run's own only (RUN.aiconform.invalid, which no one " +
			"else's traffic carries): requests with the header x-aiconform-route: canary go to the canary, " +
			"all others split 80/20 by weight. Once the backends are Ready, the route is Accepted with its " +
			"references resolved and the Gateway programmed with an address, a client pod sends 200 requests " +
			"and 20 with the header to that address and prints how many each backend answered; the output is " +
			"read back through the API server, as `kubectl logs` does. Passes when every request is " +
			"answered, the split lies within 10 percentage points of 80/20 and every request with the header " +
			"reached the canary. Fails naming what did not happen: the route not accepted or the Gateway not " +
			"programmed within --probe-timeout (with the implementation's reason), the gateway not " +
			"answering, requests failing, the split off its weights, the header ignored. Skips when the " +
			"Gateway API is not served or no GatewayClass is accepted; an error when a write is refused or " +
			"the pods do not run.",
		Remediation: "A route not accepted: `kubectl describe httproute -n NS aiconform-route` during the run shows " +
			"the implementation's reason (NotAllowedByListeners, BackendNotFound...). The gateway not " +
			"answering from a pod: its address must be reachable inside the cluster (a LoadBalancer without " +
			"hairpin, a NetworkPolicy). A split off its weights or a header ignored: the implementation does " +
			"not support weighted backendRefs or header matches of the Gateway API's core conformance; check " +
			"its release notes and conformance report.",
	}
}

// routeParent is the listener the probe's route attaches to.
type routeParent struct {
	// own is true when the probe makes the Gateway itself, in its
	// namespace; namespace is then "" until the session names it.
	own       bool
	namespace string
	name      string
	// section is the listener's name, for an existing Gateway.
	section string
	class   string
	// controller is the implementation that accepted the class.
	controller string
	// address is the existing Gateway's first address; port the
	// listener's.
	address string
	port    int64
}

// ref is the parent as the route's parentRefs name it.
func (p routeParent) ref() map[string]any {
	ref := map[string]any{"name": p.name}
	if !p.own {
		ref["namespace"] = p.namespace
		ref["sectionName"] = p.section
	}
	return ref
}

// key is the parent as acceptingParents says it: NS/NAME.
func (p routeParent) key(probeNamespace string) string {
	return cmp.Or(p.namespace, probeNamespace) + "/" + p.name
}

// describe names the parent for the reasons.
func (p routeParent) describe(probeNamespace string) string {
	if p.own {
		return fmt.Sprintf("the probe's Gateway %s (class %s, controller %s)", p.key(probeNamespace), p.class, p.controller)
	}
	return fmt.Sprintf("listener %s of Gateway %s (class %s, controller %s)", p.section, p.key(probeNamespace), p.class, p.controller)
}

// planRoute picks the route's parent among the cluster's GatewayClasses
// and Gateways, or says why the probe cannot run. nsLabels are the
// labels of the run's namespace, which a listener's namespace selector
// matches.
func planRoute(classes, gateways []*unstructured.Unstructured, nsLabels labels.Set) (routeParent, string) {
	accepted := map[string]string{} // class -> controller
	for _, c := range classes {
		if ok, _ := condition(statusConditions(c), "Accepted", c.GetGeneration()); ok {
			accepted[c.GetName()] = str(c.Object, "spec", "controllerName")
		}
	}
	if len(accepted) == 0 {
		return routeParent{}, "no GatewayClass is accepted: nothing would program the probe's route (see gateways-programmed)"
	}
	gateways = slices.Clone(gateways)
	slices.SortFunc(gateways, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(kube.ObjectName(a), kube.ObjectName(b))
	})
	// portOf is the port of the first HTTP listener of a programmed
	// Gateway of each class: one the implementation is known to serve.
	portOf := map[string]int64{}
	for _, g := range gateways {
		class := str(g.Object, "spec", "gatewayClassName")
		controller, ok := accepted[class]
		if !ok {
			continue
		}
		if ok, _ := condition(statusConditions(g), "Programmed", g.GetGeneration()); !ok {
			continue
		}
		address := firstAddress(g)
		listeners, _, _ := unstructured.NestedSlice(g.Object, "spec", "listeners")
		for _, x := range listeners {
			l, ok := x.(map[string]any)
			if !ok || str(l, "protocol") != "HTTP" {
				continue
			}
			port, _, _ := unstructured.NestedInt64(l, "port")
			if _, seen := portOf[class]; !seen {
				portOf[class] = port
			}
			if address == "" || str(l, "hostname") != "" || !admitsHTTPRoutes(l, g.GetNamespace(), nsLabels) {
				continue
			}
			return routeParent{namespace: g.GetNamespace(), name: g.GetName(), section: str(l, "name"),
				class: class, controller: controller, address: address, port: port}, ""
		}
	}
	// A class with a programmed Gateway first: its port is one the
	// implementation serves.
	names := checks.SortedKeys(accepted)
	slices.SortStableFunc(names, func(a, b string) int {
		_, okA := portOf[a]
		_, okB := portOf[b]
		switch {
		case okA && !okB:
			return -1
		case okB && !okA:
			return 1
		}
		return 0
	})
	class := names[0]
	port, ok := portOf[class]
	if !ok {
		port = 80
	}
	return routeParent{own: true, name: routeName, section: "http", class: class, controller: accepted[class], port: port}, ""
}

// admitsHTTPRoutes says whether a listener (of a Gateway in namespace)
// admits HTTPRoutes from a namespace other than its own, labelled
// nsLabels.
func admitsHTTPRoutes(l map[string]any, namespace string, nsLabels labels.Set) bool {
	kinds, _, _ := unstructured.NestedSlice(l, "allowedRoutes", "kinds")
	if len(kinds) > 0 && !slices.ContainsFunc(kinds, func(x any) bool {
		k, ok := x.(map[string]any)
		return ok && str(k, "kind") == "HTTPRoute" && cmp.Or(str(k, "group"), gatewayGroup) == gatewayGroup
	}) {
		return false
	}
	switch str(l, "allowedRoutes", "namespaces", "from") {
	case "All":
		return true
	case "Selector":
		raw, _, _ := unstructured.NestedMap(l, "allowedRoutes", "namespaces", "selector")
		var sel metav1.LabelSelector
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &sel) != nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(&sel)
		return err == nil && !s.Empty() && s.Matches(nsLabels)
	}
	// Same, the default: only routes of the Gateway's own namespace.
	return false
}

// firstAddress is the first address a Gateway's implementation reported.
func firstAddress(g *unstructured.Unstructured) string {
	raw, _, _ := unstructured.NestedSlice(g.Object, "status", "addresses")
	for _, a := range raw {
		if m, ok := a.(map[string]any); ok {
			if v := str(m, "value"); v != "" {
				return v
			}
		}
	}
	return ""
}

// routeHostname is the route's only hostname: one no request but the
// probe's carries, so that a route on a shared listener takes nobody
// else's traffic. .invalid is reserved (RFC 2606).
func routeHostname(runID string) string { return runID + ".aiconform.invalid" }

// Run implements checks.Check.
func (RouteProbe) Run(ctx context.Context, env *checks.Env) (r checks.Result, _ error) {
	s := env.Probe
	if s == nil {
		r.Finish(checks.Skip, "probes are off: --probe writes a route that splits 80/20 and matches a header, and sends requests through the gateway from a pod")
		return r, nil
	}
	api, err := readGatewayAPI(ctx, env)
	if err != nil {
		return r, err
	}
	classes, _, ok, err := api.list(ctx, env, classesCRD)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", notServed)
		return r, err
	}
	gateways, gatewayRes, ok, err := api.list(ctx, env, gatewaysCRD)
	if err != nil || !ok {
		r.Finish(checks.Skip, "%s", notServed)
		return r, err
	}
	routeRes, why := api.served(routesCRD)
	if why != "" {
		r.Finish(checks.Skip, "%s", notServed)
		return r, nil
	}
	parent, skip := planRoute(classes, gateways, labels.Set{probe.RunLabel: s.RunID, corev1.LabelMetadataName: s.Namespace})
	if skip != "" {
		r.Finish(checks.Skip, "%s", skip)
		return r, nil
	}
	objs, err := routeObjects(s, parent)
	if err != nil {
		return r, err
	}
	pr, err := checks.StartProbing(ctx, env, &r)
	if err != nil {
		return r, err
	}
	defer pr.Stop()
	for _, o := range objs {
		if _, err := pr.Create(ctx, o.obj, o.note); err != nil {
			return pr.Refused(err)
		}
	}

	// The backends Ready, the route accepted, the Gateway programmed.
	w := &routeWatch{now: env.Now, tl: &pr.Timeline, parent: parent, probeNS: s.Namespace, pods: map[string]*corev1.Pod{}}
	sources := []probe.Source{
		{Tag: "pods", GVR: cluster.Pods.GVR, Namespaced: true, Options: metav1.ListOptions{LabelSelector: RouteLabel}},
		{Tag: "routes", GVR: routeRes.GVR, Namespaced: true},
	}
	if parent.own {
		sources = append(sources, probe.Source{Tag: "gateways", GVR: gatewayRes.GVR, Namespaced: true})
	}
	if err := pr.Watch(ctx, w.apply, sources...); err != nil {
		return r, err
	}
	ok, err = pr.Phase(ctx, w.ready)
	pr.EndWatch()
	if err != nil {
		return r, err
	}
	fresh := env.Fresh()
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{cluster.Pods}, Namespace: s.Namespace, LabelSelector: RouteLabel, Wide: true}, "the backends and the node they run on")
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{routeRes}, Namespace: s.Namespace, Columns: routeColumns}, "what the implementation says of the probe's route")
	r.AddEvidence(ctx, fresh, cluster.Get{Resources: []cluster.Resource{gatewayRes}, Namespace: cmp.Or(parent.namespace, s.Namespace), Names: []string{parent.name}}, "the Gateway the route attaches to")
	if !ok {
		if why := w.backendsWhy(); why != "" {
			return r, fmt.Errorf("the route probe's backends were not Ready within %s: %s", s.Timeout, why)
		}
		r.Finish(checks.Fail, "within %s, %s", s.Timeout, w.pendingWhy())
		return r, nil
	}
	address, port := parent.address, parent.port
	if parent.own {
		address = w.address
	}

	// The traffic.
	client, err := clientPod(s, address, port)
	if err != nil {
		return r, err
	}
	target := hostPort(address, port)
	outputs, err := pr.PrintingPods(ctx, RouteLabel+"="+clientRole, []*unstructured.Unstructured{client}, func(pod, container string) string {
		if container == "" {
			return fmt.Sprintf("sends %d requests, then %d with %s: canary, to %s for host %s", splitRequests, headerRequests, routeHeader, target, routeHostname(s.RunID))
		}
		return "how many requests each backend answered"
	})
	if err != nil {
		return pr.Refused(err)
	}
	st, reason := judgeTraffic(parseTraffic(outputs[clientName+"/probe"]))
	if st == checks.Error {
		return r, errors.New(reason)
	}
	r.Finish(st, "through %s at %s: %s", parent.describe(s.Namespace), target, reason)
	return r, nil
}

// hostPort joins an address and a port as a URL's authority: an IPv6
// address in brackets.
func hostPort(address string, port int64) string {
	if strings.Contains(address, ":") {
		return fmt.Sprintf("[%s]:%d", address, port)
	}
	return fmt.Sprintf("%s:%d", address, port)
}

// probeObject is one object the probe creates, with what its evidence
// says of it.
type probeObject struct {
	obj  *unstructured.Unstructured
	note string
}

// routeObjects are what the probe creates before its client: the Gateway
// (when its own), each backend's Service and pod, and the route.
func routeObjects(s *probe.Session, parent routeParent) ([]probeObject, error) {
	var out []probeObject
	if parent.own {
		out = append(out, probeObject{ownGateway(parent), fmt.Sprintf("a Gateway of class %s, whose implementation is %s", parent.class, parent.controller)})
	}
	for _, name := range []string{stableName, canaryName} {
		svc, err := checks.Unstructured(backendService(name), corev1.SchemeGroupVersion.WithKind("Service"))
		if err != nil {
			return nil, err
		}
		pod, err := checks.Unstructured(backendPod(s.ShellImage, name, s.Timeout), corev1.SchemeGroupVersion.WithKind("Pod"))
		if err != nil {
			return nil, err
		}
		out = append(out, probeObject{svc, "port 80 of backend " + name}, probeObject{pod, "answers every request with its name, " + name})
	}
	out = append(out, probeObject{httpRoute(s.RunID, parent), fmt.Sprintf("for host %s: %s: canary to %s only, every other request %d/%d to %s and %s",
		routeHostname(s.RunID), routeHeader, canaryName, stableWeight, canaryWeight, stableName, canaryName)})
	return out, nil
}

// ownGateway is the probe's Gateway: one HTTP listener on the port
// planRoute chose, for routes of its own namespace.
func ownGateway(p routeParent) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"gatewayClassName": p.class,
			"listeners":        []any{map[string]any{"name": p.section, "protocol": "HTTP", "port": p.port}},
		},
	}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: gatewayGroup, Version: gatewayVersion, Kind: "Gateway"})
	u.SetName(p.name)
	return u
}

// httpRoute is the probe's route: the header rule, then the split.
func httpRoute(runID string, p routeParent) *unstructured.Unstructured {
	ref := func(name string, weight int64) map[string]any {
		return map[string]any{"name": name, "port": int64(80), "weight": weight}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"parentRefs": []any{p.ref()},
			"hostnames":  []any{routeHostname(runID)},
			"rules": []any{
				map[string]any{
					"matches":     []any{map[string]any{"headers": []any{map[string]any{"name": routeHeader, "value": "canary"}}}},
					"backendRefs": []any{ref(canaryName, 1)},
				},
				map[string]any{
					"backendRefs": []any{ref(stableName, stableWeight), ref(canaryName, canaryWeight)},
				},
			},
		},
	}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: gatewayGroup, Version: gatewayVersion, Kind: "HTTPRoute"})
	u.SetName(routeName)
	return u
}

// backendService exposes a backend on port 80.
func backendService(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{RouteLabel: name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(backendPort), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// backendCPU and clientResources are what the backends and the client are
// given: BusyBox's httpd forks a process per request, and the client two
// (timeout, wget) besides its subshell, which 10m of CPU would make take
// minutes. The client's 220 requests take some 15 s of its 250m. What
// its processes use is charged to its memory too: within the 16Mi of
// other probe pods the kernel (Linux 6.18, the rig's real node) killed it
// after its first answers, every time.
var (
	backendCPU      = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	clientResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
)

// backendPod answers every request with name, from BusyBox's httpd, Ready
// once it answers.
func backendPod(image, name string, timeout time.Duration) *corev1.Pod {
	spec := checks.ProbePodSpec(image, backendCPU)
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.ActiveDeadlineSeconds = checks.ProbeDeadline(timeout)
	ctr := &spec.Containers[0]
	ctr.Command = []string{"sh", "-c", fmt.Sprintf("echo %s > /www/index.html && exec busybox httpd -f -p %d -h /www", name, backendPort)}
	ctr.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: backendPort, Protocol: corev1.ProtocolTCP}}
	ctr.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 1,
	}
	ctr.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: "www", MountPath: "/www"}}
	spec.Volumes = []corev1.Volume{{Name: "www", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RouteLabel: name}}, Spec: spec}
}

// clientScript waits until both backends answer through the gateway for
// the route's host (the stable one to a request without the header, the
// canary to one with it), then sends the requests and prints, per kind,
// how many answers each body (a backend's name, or wget's error) had:
// "split 160 aiconform-stable". An implementation may report a route
// Accepted, and serve it, before it knows every backend's endpoints: the
// measure starts once it does. Every program is called as a BusyBox
// applet, as the other probes' scripts do: an image may hold the busybox
// binary without its links. Each request is bounded by BusyBox's timeout,
// not wget's own -T, with which Debian's static BusyBox 1.35 crashes (seen
// on the rig's real node).
func clientScript(url, host string) string {
	return fmt.Sprintf(`url=%q
host=%q
pin='%s: canary'
nl='
'
ask() { out=$(busybox timeout 5 busybox wget -q -O - "$@" "$url" 2>&1) || [ -n "$out" ] || out="no answer within 5 s"; out=${out%%%%"$nl"*}; echo "${out:-(empty answer)}"; }
tries=0
while :; do
  plain=$(ask --header "$host"); pinned=$(ask --header "$host" --header "$pin")
  [ "$plain" = %s ] && [ "$pinned" = %s ] && break
  tries=$((tries+1))
  if [ "$tries" -ge %d ]; then echo "unanswered $plain; with the header: $pinned"; exit 1; fi
  busybox sleep 1
done
echo "answered after $tries retries"
i=0; while [ "$i" -lt %d ]; do i=$((i+1)); ask --header "$host"; done | busybox sort | busybox uniq -c | busybox sed 's/^ */split /'
i=0; while [ "$i" -lt %d ]; do i=$((i+1)); ask --header "$host" --header "$pin"; done | busybox sort | busybox uniq -c | busybox sed 's/^ */header /'
`, url, "Host: "+host, routeHeader, stableName, canaryName, answerWait, splitRequests, headerRequests)
}

// clientPod sends the probe's requests to the gateway at address:port.
func clientPod(s *probe.Session, address string, port int64) (*unstructured.Unstructured, error) {
	spec := checks.ProbePodSpec(s.ShellImage, clientResources)
	spec.Containers[0].Command = []string{"sh", "-c", clientScript("http://"+hostPort(address, port)+"/", routeHostname(s.RunID))}
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.ActiveDeadlineSeconds = checks.ProbeDeadline(s.Timeout)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: clientName, Labels: map[string]string{RouteLabel: clientRole}}, Spec: spec}
	return checks.Unstructured(pod, corev1.SchemeGroupVersion.WithKind("Pod"))
}

// routeWatch follows the backends, the route and the probe's own Gateway
// until the traffic can be sent.
type routeWatch struct {
	now     func() time.Time
	tl      *probe.Timeline
	parent  routeParent
	probeNS string
	pods    map[string]*corev1.Pod
	// readyPods are the backends seen Ready.
	readyPods map[string]bool
	// accepted is set once the route's parent accepts it; routeWhy is
	// why not, as last reported.
	accepted bool
	routeWhy string
	// address is the probe's Gateway's once programmed; gatewayWhy why it
	// is not.
	address    string
	gatewayWhy string
}

func (w *routeWatch) apply(e probe.Event) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok || e.Type == watch.Deleted {
		return
	}
	switch e.Tag {
	case "pods":
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) != nil || p.Labels[RouteLabel] == clientRole {
			return
		}
		w.pods[p.Name] = &p
		if w.readyPods == nil {
			w.readyPods = map[string]bool{}
		}
		if !w.readyPods[p.Name] && kube.PodReady(&p) {
			w.readyPods[p.Name] = true
			w.tl.Add(w.now(), "pod %s Ready on %s (%s)", p.Name, p.Spec.NodeName, p.Status.PodIP)
		}
	case "routes":
		if u.GetName() != routeName || w.accepted {
			return
		}
		accepted, rejected := acceptingParents(u, false)
		key := w.parent.key(w.probeNS)
		for _, a := range accepted {
			if strings.HasPrefix(a, key+" ") {
				w.accepted = true
				w.tl.Add(w.now(), "httproute %s Accepted, its references resolved %s", routeName, strings.TrimPrefix(a, key+" "))
				return
			}
		}
		w.routeWhy = "not reported by its parent"
		for _, r := range rejected {
			if strings.HasPrefix(r, key+": ") {
				w.routeWhy = strings.TrimPrefix(r, key+": ")
			}
		}
	case "gateways":
		if u.GetName() != w.parent.name || w.address != "" {
			return
		}
		ok, why := condition(statusConditions(u), "Programmed", u.GetGeneration())
		switch {
		case !ok:
			w.gatewayWhy = why
		case firstAddress(u) == "":
			w.gatewayWhy = "Programmed, with no address"
		default:
			w.address = firstAddress(u)
			w.tl.Add(w.now(), "gateway %s Programmed at %s", u.GetName(), w.address)
		}
	}
}

// ready is true once both backends are Ready, the route accepted and the
// Gateway, when the probe's own, programmed with an address.
func (w *routeWatch) ready() bool {
	return len(w.readyPods) == 2 && w.accepted && (!w.parent.own || w.address != "")
}

// backendsWhy says where each backend stands that is not Ready; "" when
// both are.
func (w *routeWatch) backendsWhy() string {
	var out []string
	for _, name := range []string{stableName, canaryName} {
		if w.readyPods[name] {
			continue
		}
		p := w.pods[name]
		if p == nil {
			out = append(out, "pod "+name+" not seen")
			continue
		}
		out = append(out, fmt.Sprintf("pod %s %s%s", name, cmp.Or(string(p.Status.Phase), "Pending"), checks.PodWhy(p)))
	}
	return strings.Join(out, "; ")
}

// pendingWhy says what of the route and the Gateway did not happen.
func (w *routeWatch) pendingWhy() string {
	var out []string
	if w.parent.own && w.address == "" {
		out = append(out, fmt.Sprintf("the probe's Gateway %s/%s of class %s was not programmed: %s", w.probeNS, w.parent.name, w.parent.class, cmp.Or(w.gatewayWhy, "no status reported")))
	}
	if !w.accepted {
		out = append(out, fmt.Sprintf("the probe's HTTPRoute %s was not accepted by %s: %s", routeName, w.parent.describe(w.probeNS), cmp.Or(w.routeWhy, "no status reported")))
	}
	return strings.Join(out, "; ")
}

// traffic is what the client printed.
type traffic struct {
	// printed is false when the output has no line of the script's.
	printed bool
	// retries is how many times the client tried both backends before
	// each answered; answered false when they never did, with unanswered
	// the last answers of each.
	retries    int
	answered   bool
	unanswered string
	// split and header count the answers of each kind by body.
	split, header map[string]int
}

var (
	answeredLine = regexp.MustCompile(`^answered after (\d+) retries$`)
	countLine    = regexp.MustCompile(`^(split|header) (\d+) (.*)$`)
)

// parseTraffic reads the client's output.
func parseTraffic(out string) traffic {
	t := traffic{split: map[string]int{}, header: map[string]int{}}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := answeredLine.FindStringSubmatch(line); m != nil {
			t.printed, t.answered = true, true
			t.retries, _ = strconv.Atoi(m[1])
			continue
		}
		if rest, ok := strings.CutPrefix(line, "unanswered"); ok {
			t.printed, t.unanswered = true, cmp.Or(strings.TrimSpace(rest), "no answer")
			continue
		}
		if m := countLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			if m[1] == "split" {
				t.split[m[3]] += n
			} else {
				t.header[m[3]] += n
			}
		}
	}
	return t
}

// failures are the answers that are no backend's name, as "N × BODY".
func failures(counts map[string]int) (n int, out []string) {
	for _, body := range checks.SortedKeys(counts) {
		if body != stableName && body != canaryName {
			n += counts[body]
			out = append(out, fmt.Sprintf("%d × %s", counts[body], body))
		}
	}
	return n, out
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// judgeTraffic decides on what the client printed.
func judgeTraffic(t traffic) (checks.Status, string) {
	switch {
	case !t.printed:
		return checks.Error, "the client pod printed nothing of the probe's script: its image has no shell or wget (--probe-shell-image)"
	case !t.answered:
		return checks.Fail, fmt.Sprintf("the gateway did not bring the route's host to both backends within %d s; the last answers: %s", answerWait, t.unanswered)
	}
	if got, want := total(t.split)+total(t.header), splitRequests+headerRequests; got != want {
		return checks.Error, fmt.Sprintf("the client pod printed %d of its %d answers", got, want)
	}
	if n, why := failures(t.split); n > 0 {
		return checks.Fail, fmt.Sprintf("%d of %d requests were not answered by a backend: %s", n, splitRequests, checks.CapLines(why, 3, "; "))
	}
	if n, why := failures(t.header); n > 0 {
		return checks.Fail, fmt.Sprintf("%d of %d requests with %s: canary were not answered by a backend: %s", n, headerRequests, routeHeader, checks.CapLines(why, 3, "; "))
	}
	stable, canary := t.split[stableName], t.split[canaryName]
	share := 100 * float64(canary) / float64(splitRequests)
	split := fmt.Sprintf("%d requests split %d/%d between %s and %s (%.1f%% to the canary; the route's weights say %d/%d, tolerance ±%d points)",
		splitRequests, stable, canary, stableName, canaryName, share, stableWeight, canaryWeight, tolerance)
	if share < canaryWeight-tolerance || share > canaryWeight+tolerance {
		return checks.Fail, split + ": the split does not follow the weights"
	}
	if wrong := t.header[stableName]; wrong > 0 {
		return checks.Fail, fmt.Sprintf("%s; %d of %d requests with %s: canary reached %s: the header match is not honoured", split, wrong, headerRequests, routeHeader, stableName)
	}
	return checks.Pass, fmt.Sprintf("%s; all %d requests with %s: canary reached %s (both backends answered after %d retries)", split, headerRequests, routeHeader, canaryName, t.retries)
}
