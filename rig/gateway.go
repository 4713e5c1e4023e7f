package rig

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The Gateway API implementation the rig runs: Traefik, whose Kubernetes
// Gateway provider and data plane are one Go program. tools/traefik/go.mod
// pins the same version (a test keeps them equal).
const (
	TraefikModule  = "github.com/traefik/traefik/v3"
	TraefikVersion = "v3.6.12"
)

// The Gateway API release whose CRDs the rig installs: the one Traefik's
// go.mod requires, so that its clients and the CRDs agree.
const (
	GatewayAPIModule  = "sigs.k8s.io/gateway-api"
	GatewayAPIVersion = "v1.4.0"
)

// GatewayController is the controller name Traefik accepts GatewayClasses
// under; GatewayClassName the class the rig creates for it.
const (
	GatewayController = "traefik.io/gateway-controller"
	GatewayClassName  = "traefik"
)

// GatewayClassesGVR and the other Gateway API resources, at v1.
var (
	GatewayClassesGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	GatewaysGVR       = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	HTTPRoutesGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// Gateway is Traefik running as the rig's Gateway API implementation: it
// accepts the GatewayClass traefik, programs Gateways whose listener port
// is its entrypoint's (ListenerPort), and reports on HTTPRoutes as on any
// cluster. Its entrypoint listens on loopback; the addresses of the pods
// behind a route are the rig's fake ones, so no request is ever routed.
//
// Stop stops Traefik; the Gateway API's objects and the statuses it wrote
// stay, as on a cluster whose implementation crashed.
type Gateway struct {
	component
	// web is the entrypoint's port, which a Gateway's listener names;
	// ping serves Traefik's health check.
	web, ping int
}

// InstallGateway installs the Gateway API's standard CRDs from their
// module, starts Traefik with its Gateway provider and creates the
// GatewayClass traefik, waiting until Traefik accepts it.
func (c *Cluster) InstallGateway(ctx context.Context, opts OperatorOptions) (_ *Gateway, err error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	base, err := c.newComponent(ctx, opts, "traefik", "traefik", TraefikModule, TraefikVersion)
	if err != nil {
		return nil, err
	}
	g := &Gateway{component: base}
	api, err := moduleDir(ctx, GatewayAPIModule, GatewayAPIVersion)
	if err != nil {
		return nil, err
	}
	in, err := c.newInstaller()
	if err != nil {
		return nil, err
	}
	crds, err := in.applyDir(ctx, filepath.Join(api, "config", "crd", "standard"), func(u *unstructured.Unstructured) bool {
		// The release's admission policy guards upgrades, not the rig.
		return u.GetKind() == "CustomResourceDefinition"
	})
	if err != nil {
		return nil, err
	}
	if err := in.waitCRDsEstablished(ctx, crds); err != nil {
		return nil, err
	}
	if _, err := g.writeKubeconfig(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = g.Stop()
		}
	}()
	if err := g.Start(ctx); err != nil {
		return nil, err
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": GatewayClassName},
		"spec":     map[string]any{"controllerName": GatewayController},
	}}
	if err := in.apply(ctx, class); err != nil {
		return nil, err
	}
	return g, g.waitCondition(ctx, GatewayClassesGVR, "", GatewayClassName, "Accepted")
}

// ListenerPort is the port a Gateway's listener must name for Traefik to
// program it: its entrypoint's.
func (g *Gateway) ListenerPort() int { return g.web }

// Start runs Traefik (again, on the same ports) and waits until its ping
// answers.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.notRunning(); err != nil {
		return err
	}
	if g.web == 0 {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		g.web, g.ping = ports[0], ports[1]
	}
	args := []string{
		"--entryPoints.web.address=127.0.0.1:" + strconv.Itoa(g.web),
		"--entryPoints.ping.address=127.0.0.1:" + strconv.Itoa(g.ping),
		"--ping.entryPoint=ping",
		"--providers.kubernetesGateway=true",
		// The address it reports in Gateways' status: where the
		// entrypoint listens.
		"--providers.kubernetesGateway.statusAddress.ip=127.0.0.1",
		"--providers.kubernetesGateway.throttleDuration=0s",
		"--log.level=INFO",
		// No version check or usage report: nothing leaves the machine.
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
	}
	env := append(childEnv(), "KUBECONFIG="+g.kubeconfig())
	if err := g.launch(args, env); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return waitAnswers(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/ping", g.ping), g.proc, "traefik")
}

// waitCondition waits until the object's condition of type t is True for
// its current generation.
func (g *Gateway) waitCondition(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, t string) error {
	in, err := g.c.newInstaller()
	if err != nil {
		return err
	}
	last := "not read yet"
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := in.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] != t {
				continue
			}
			observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			last = fmt.Sprintf("%s=%v (%v) for generation %d of %d", t, m["status"], m["reason"], observed, u.GetGeneration())
			return m["status"] == "True" && observed == u.GetGeneration(), nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: waiting for %s: %w (last: %s)", gvr.Resource, name, t, err, last)
	}
	return nil
}
