package networking

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/aiconform/aiconform/probe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

const routeRun = "20261203-150405-ab12"

var routeNSLabels = labels.Set{probe.RunLabel: routeRun, corev1.LabelMetadataName: probe.NamespacePrefix + routeRun}

// listener sets the first listener of g.
func listener(g *unstructured.Unstructured, l map[string]any) *unstructured.Unstructured {
	l["name"], l["protocol"] = "web", "HTTP"
	if _, ok := l["port"]; !ok {
		l["port"] = int64(8000)
	}
	g.Object["spec"].(map[string]any)["listeners"] = []any{l}
	return g
}

func fromAll() map[string]any {
	return map[string]any{"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
}

func TestPlanRoute(t *testing.T) {
	classes := []*unstructured.Unstructured{
		checkstest.GatewayClass("envoy", "gateway.envoyproxy.io/gatewayclass-controller", "True"),
		checkstest.GatewayClass("old", "example.com/old", "False"),
	}
	for _, tc := range []struct {
		name     string
		classes  []*unstructured.Unstructured
		gateways []*unstructured.Unstructured
		want     routeParent
		skip     string
	}{
		{name: "a shared listener open to every namespace", classes: classes,
			gateways: []*unstructured.Unstructured{listener(checkstest.Gateway("infra", "shared", "envoy", "True", "10.96.14.7"), fromAll())},
			want:     routeParent{namespace: "infra", name: "shared", section: "web", class: "envoy", controller: "gateway.envoyproxy.io/gatewayclass-controller", address: "10.96.14.7", port: 8000}},
		{name: "a listener selecting the run's namespace", classes: classes,
			gateways: []*unstructured.Unstructured{listener(checkstest.Gateway("infra", "shared", "envoy", "True", "10.96.14.7"), map[string]any{
				"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "Selector", "selector": map[string]any{"matchExpressions": []any{
					map[string]any{"key": probe.RunLabel, "operator": "Exists"}}}}}})},
			want: routeParent{namespace: "infra", name: "shared", section: "web", class: "envoy", controller: "gateway.envoyproxy.io/gatewayclass-controller", address: "10.96.14.7", port: 8000}},
		{name: "listeners that admit no route of the run's: its own Gateway on their port", classes: classes,
			gateways: []*unstructured.Unstructured{
				listener(checkstest.Gateway("infra", "same", "envoy", "True", "10.96.14.7"), map[string]any{"port": int64(8080)}),
				listener(checkstest.Gateway("infra", "hostnamed", "envoy", "True", "10.96.14.8"), map[string]any{"hostname": "models.example.com", "allowedRoutes": fromAll()["allowedRoutes"]}),
				listener(checkstest.Gateway("infra", "grpc-only", "envoy", "True", "10.96.14.9"), map[string]any{"allowedRoutes": map[string]any{
					"namespaces": map[string]any{"from": "All"}, "kinds": []any{map[string]any{"kind": "GRPCRoute"}}}}),
				listener(checkstest.Gateway("infra", "selector", "envoy", "True", "10.96.14.10"), map[string]any{"allowedRoutes": map[string]any{
					"namespaces": map[string]any{"from": "Selector", "selector": map[string]any{"matchLabels": map[string]any{"team": "ml"}}}}}),
			},
			want: routeParent{own: true, name: routeName, section: "http", class: "envoy", controller: "gateway.envoyproxy.io/gatewayclass-controller", port: 8000}},
		{name: "an open listener of a Gateway not programmed is not used", classes: classes,
			gateways: []*unstructured.Unstructured{listener(checkstest.Gateway("infra", "shared", "envoy", "False", ""), fromAll())},
			want:     routeParent{own: true, name: routeName, section: "http", class: "envoy", controller: "gateway.envoyproxy.io/gatewayclass-controller", port: 80}},
		{name: "a class with a programmed Gateway comes first", classes: append([]*unstructured.Unstructured{checkstest.GatewayClass("alpha", "example.com/alpha", "True")}, classes...),
			gateways: []*unstructured.Unstructured{listener(checkstest.Gateway("infra", "same", "envoy", "True", "10.96.14.7"), map[string]any{"port": int64(8080)})},
			want:     routeParent{own: true, name: routeName, section: "http", class: "envoy", controller: "gateway.envoyproxy.io/gatewayclass-controller", port: 8080}},
		{name: "no accepted class", classes: classes[1:], skip: "no GatewayClass is accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skip := planRoute(tc.classes, tc.gateways, routeNSLabels)
			if tc.skip != "" {
				assert.Contains(t, skip, tc.skip)
				return
			}
			require.Empty(t, skip)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRouteObjects(t *testing.T) {
	s := probe.NewSession(nil, nil, routeRun, 0)
	shared := routeParent{namespace: "infra", name: "shared", section: "web", class: "envoy", port: 8000, address: "10.96.14.7"}
	objs, err := routeObjects(s, shared)
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.obj.GetKind()+"/"+o.obj.GetName())
	}
	assert.Equal(t, []string{"Service/aiconform-stable", "Pod/aiconform-stable", "Service/aiconform-canary", "Pod/aiconform-canary", "HTTPRoute/aiconform-route"}, kinds)

	route := objs[len(objs)-1].obj
	parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	assert.Equal(t, []any{map[string]any{"name": "shared", "namespace": "infra", "sectionName": "web"}}, parents)
	hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
	assert.Equal(t, []string{routeRun + ".aiconform.invalid"}, hosts)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	require.Len(t, rules, 2)
	assert.Equal(t, "header canary -> aiconform-canary:1", ruleText(rules[0]))
	assert.Equal(t, "all -> aiconform-stable:80 aiconform-canary:20", ruleText(rules[1]))

	own, err := routeObjects(s, routeParent{own: true, name: routeName, section: "http", class: "envoy", port: 80})
	require.NoError(t, err)
	gw := own[0].obj
	assert.Equal(t, "Gateway", gw.GetKind())
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	assert.Equal(t, []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80)}}, listeners)
	parents, _, _ = unstructured.NestedSlice(own[len(own)-1].obj.Object, "spec", "parentRefs")
	assert.Equal(t, []any{map[string]any{"name": routeName}}, parents)

	// The pods: non-root, limited, ended by a deadline, Ready once httpd
	// answers.
	var pod corev1.Pod
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].obj.Object, &pod))
	assert.Equal(t, "100m", pod.Spec.Containers[0].Resources.Limits.Cpu().String())
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.NotNil(t, pod.Spec.ActiveDeadlineSeconds)
	assert.Contains(t, pod.Spec.Containers[0].Command[2], "echo aiconform-stable > /www/index.html")
	assert.Equal(t, "http", pod.Spec.Containers[0].ReadinessProbe.HTTPGet.Port.StrVal)
}

// ruleText says what a rule of the route does: "header V -> NAME:WEIGHT".
func ruleText(x any) string {
	rule := x.(map[string]any)
	out := "all ->"
	if m, ok := rule["matches"].([]any); ok {
		h := m[0].(map[string]any)["headers"].([]any)[0].(map[string]any)
		out = "header " + h["value"].(string) + " ->"
		if h["name"] != routeHeader {
			out = "wrong header " + h["name"].(string)
		}
	}
	for _, r := range rule["backendRefs"].([]any) {
		ref := r.(map[string]any)
		out += " " + ref["name"].(string) + ":" + strconv.FormatInt(ref["weight"].(int64), 10)
	}
	return out
}

func TestClientScript(t *testing.T) {
	script := clientScript("http://[fd00::7]:8000/", "x.aiconform.invalid")
	assert.Contains(t, script, `url="http://[fd00::7]:8000/"`)
	assert.Contains(t, script, `host="Host: x.aiconform.invalid"`)
	assert.Contains(t, script, `while [ "$i" -lt 200 ]`)
	assert.Contains(t, script, `pin='x-aiconform-route: canary'`)
	assert.Equal(t, "[fd00::7]:8000", hostPort("fd00::7", 8000))
	assert.Equal(t, "10.0.0.1:80", hostPort("10.0.0.1", 80))
}

func TestRouteWatch(t *testing.T) {
	var clock int
	now := func() (at time.Time) { clock++; return checkstest.Clock.Add(time.Duration(clock) * time.Second) }
	own := routeParent{own: true, name: routeName, section: "http", class: "traefik", controller: "traefik.io/gateway-controller", port: 8000}
	ns := probe.NamespacePrefix + routeRun
	w := &routeWatch{now: now, tl: &probe.Timeline{T0: checkstest.Clock}, parent: own, probeNS: ns, pods: map[string]*corev1.Pod{}}
	pod := func(name string, ready corev1.ConditionStatus) probe.Event {
		p := &corev1.Pod{}
		p.Name, p.Labels = name, map[string]string{RouteLabel: name}
		p.Spec.NodeName = "rig-node-1"
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.250.201.4"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		require.NoError(t, err)
		return probe.Event{Tag: "pods", Event: watch.Event{Type: watch.Modified, Object: &unstructured.Unstructured{Object: m}}}
	}
	obj := func(tag string, u *unstructured.Unstructured) probe.Event {
		return probe.Event{Tag: tag, Event: watch.Event{Type: watch.Modified, Object: u}}
	}
	w.apply(pod(stableName, corev1.ConditionTrue))
	w.apply(pod(canaryName, corev1.ConditionFalse))
	w.apply(obj("gateways", checkstest.Gateway(ns, routeName, "traefik", "False", "")))
	w.apply(obj("routes", checkstest.HTTPRoute(ns, routeName, ns+"/"+routeName, "traefik.io/gateway-controller", "True", "False", []int64{80, 20}, "")))
	assert.False(t, w.ready())
	assert.Equal(t, "pod aiconform-canary Running", w.backendsWhy())
	assert.Contains(t, w.pendingWhy(), "the probe's Gateway "+ns+"/aiconform-route of class traefik was not programmed: Programmed is False Programmed")
	assert.Contains(t, w.pendingWhy(), "the probe's HTTPRoute aiconform-route was not accepted by the probe's Gateway "+ns+"/aiconform-route (class traefik, controller traefik.io/gateway-controller): ResolvedRefs is False ResolvedRefs")

	w.apply(pod(canaryName, corev1.ConditionTrue))
	w.apply(obj("gateways", checkstest.Gateway(ns, routeName, "traefik", "True", "10.250.200.1")))
	w.apply(obj("routes", checkstest.HTTPRoute(ns, routeName, ns+"/"+routeName, "traefik.io/gateway-controller", "True", "True", []int64{80, 20}, "")))
	assert.True(t, w.ready())
	assert.Equal(t, "10.250.200.1", w.address)
	var events []string
	for _, row := range w.tl.Rows {
		events = append(events, row[0])
	}
	assert.Equal(t, []string{
		"pod aiconform-stable Ready on rig-node-1 (10.250.201.4)",
		"pod aiconform-canary Ready on rig-node-1 (10.250.201.4)",
		"gateway aiconform-route Programmed at 10.250.200.1",
		"httproute aiconform-route Accepted, its references resolved (controller traefik.io/gateway-controller)",
	}, events)
}

func clientOutput(t *testing.T, name string) traffic {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "route-client-"+name+".txt"))
	require.NoError(t, err)
	return parseTraffic(string(b))
}

func TestJudgeTraffic(t *testing.T) {
	pass := clientOutput(t, "pass")
	assert.Equal(t, traffic{printed: true, answered: true, retries: 2,
		split:  map[string]int{stableName: 160, canaryName: 40},
		header: map[string]int{canaryName: 20}}, pass)
	for _, tc := range []struct {
		name   string
		in     traffic
		status checks.Status
		reason string
	}{
		{"split and matched", pass, checks.Pass, "200 requests split 160/40 between aiconform-stable and aiconform-canary (20.0% to the canary; the route's weights say 80/20, tolerance ±10 points); all 20 requests with x-aiconform-route: canary reached aiconform-canary (both backends answered after 2 retries)"},
		{"no answer", clientOutput(t, "unanswered"), checks.Fail, "the gateway did not bring the route's host to both backends within 60 s; the last answers: wget: server returned error: HTTP/1.1 503 Service Unavailable; with the header: wget: can't connect to remote host (10.96.14.7): Connection refused"},
		{"errors", clientOutput(t, "errors"), checks.Fail, "13 of 200 requests were not answered by a backend: 13 × wget: server returned error: HTTP/1.1 503 Service Unavailable"},
		{"weights ignored", clientOutput(t, "unweighted"), checks.Fail, "200 requests split 100/100 between aiconform-stable and aiconform-canary (50.0% to the canary; the route's weights say 80/20, tolerance ±10 points): the split does not follow the weights"},
		{"header ignored", clientOutput(t, "header-ignored"), checks.Fail, "16 of 20 requests with x-aiconform-route: canary reached aiconform-stable: the header match is not honoured"},
		{"output cut short", clientOutput(t, "cut"), checks.Error, "the client pod printed 200 of its 220 answers"},
		{"no shell", parseTraffic("exec /bin/sh: no such file or directory\n"), checks.Error, "printed nothing of the probe's script"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, why := judgeTraffic(tc.in)
			assert.Equal(t, tc.status, st, why)
			assert.Contains(t, why, tc.reason)
		})
	}
}

// runRouteProbe runs the probe on the healthy world as edited, with a
// session on the fakes.
func runRouteProbe(t *testing.T, edit func(w *checkstest.World), react func(f *checkstest.FakeCluster), probing bool) (checks.Result, error) {
	t.Helper()
	w := checkstest.NewWorld(t)
	if edit != nil {
		edit(w)
	}
	f := w.Serve()
	if react != nil {
		react(f)
	}
	env := &checks.Env{Cluster: f.Cache(), Now: checkstest.FixedNow}
	if probing {
		mapper := meta.NewDefaultRESTMapper(nil)
		mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
		mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
		// "gateways": the guess from the kind would be "gatewaies".
		mapper.AddSpecific(schema.GroupVersionKind{Group: gatewayGroup, Version: gatewayVersion, Kind: "Gateway"},
			checkstest.GatewaysGVR, checkstest.GatewaysGVR.GroupVersion().WithResource("gateway"), meta.RESTScopeNamespace)
		mapper.Add(schema.GroupVersionKind{Group: gatewayGroup, Version: gatewayVersion, Kind: "HTTPRoute"}, meta.RESTScopeNamespace)
		env.Probe = probe.NewSession(f.Dyn, mapper, routeRun, time.Minute)
	}
	return RouteProbe{}.Run(context.Background(), env)
}

func TestRouteProbeCannotRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(w *checkstest.World)
		react   func(f *checkstest.FakeCluster)
		probing bool
		status  checks.Status
		reason  string
	}{
		{name: "probes off", status: checks.Skip, reason: "probes are off"},
		{name: "no Gateway API", probing: true, status: checks.Skip, reason: notServed,
			edit: func(w *checkstest.World) {
				w.CRDs = slices.DeleteFunc(w.CRDs, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Spec.Group == gatewayGroup })
				w.Gateways = nil
			}},
		{name: "no class accepted", probing: true, status: checks.Skip, reason: "no GatewayClass is accepted",
			edit: func(w *checkstest.World) {
				w.Gateways = []*unstructured.Unstructured{checkstest.GatewayClass("example", "example.com/gateway-controller", "False")}
			}},
		{name: "the Service refused", probing: true, status: checks.Error, reason: "cannot create the probe's Service",
			react: func(f *checkstest.FakeCluster) {
				f.Dyn.PrependReactor("create", "services", checkstest.Forbidden("", "services"))
			}},
		{name: "the Gateway rejected", probing: true, status: checks.Fail, reason: "the probe's Gateway aiconform-route could not be created: Gateway.gateway.networking.k8s.io \"aiconform-route\" is invalid: listeners[0].port: Invalid value: 80: port is in use",
			react: func(f *checkstest.FakeCluster) {
				f.Dyn.PrependReactor("create", "gateways", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: gatewayGroup, Kind: "Gateway"}, "aiconform-route",
						field.ErrorList{field.Invalid(field.NewPath("listeners").Index(0).Child("port"), 80, "port is in use")})
				})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runRouteProbe(t, tc.edit, tc.react, tc.probing)
			if tc.status == checks.Error {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.status, r.Status, r.Reason)
			assert.Contains(t, r.Reason, tc.reason)
		})
	}
}
