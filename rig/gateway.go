package rig

import (
	"context"
	"fmt"
	"net"
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
// cluster. It runs in one of two places:
//
//   - On the machine's loopback (InstallGateway): its entrypoint listens on
//     127.0.0.1, and the addresses of the pods behind a route are the rig's
//     fake ones (kwok's), so no request is ever routed. What it writes in
//     the cluster is what is tested.
//   - In a real node's network and mount namespaces (InstallGatewayOnNode):
//     its entrypoint listens on every address of the node's namespace, and
//     it reaches the pods' addresses on their bridge: a pod's request to
//     Address():ListenerPort() is routed to the pods behind the route.
//     Address is the bridge's own address, the pods' gateway, because the
//     pods have a route to their bridge's range only: the node's address
//     (on the namespace's loopback) is unreachable to them. From the
//     machine the namespace is reached only through the node's CONNECT
//     proxy, or the API server's node proxy to the node's address.
//
// Either way a Gateway's status.addresses is Address(). Stop stops
// Traefik; the Gateway API's objects and the statuses it wrote stay, as on
// a cluster whose implementation crashed. Start runs it again in the same
// place, on the same ports.
type Gateway struct {
	component
	// node is the real node whose namespaces Traefik runs in, counted
	// from 1; 0 is the machine's loopback.
	node int
	// web is the entrypoint's port, which a Gateway's listener names;
	// ping serves Traefik's health check.
	web, ping int
}

// InstallGateway installs the Gateway API's standard CRDs from their
// module, starts Traefik with its Gateway provider on the machine's
// loopback and creates the GatewayClass traefik, waiting until Traefik
// accepts it.
func (c *Cluster) InstallGateway(ctx context.Context, opts OperatorOptions) (*Gateway, error) {
	return c.installGateway(ctx, opts, 0)
}

// InstallGatewayOnNode is InstallGateway with Traefik inside real node
// node's namespaces (counted from 1; the rig must have been started with
// at least that many Options.RealNodes), where it carries the traffic of
// that node's pods. The rig's folder must be outside /run and /var/lib,
// which the node's mount namespace hides: Traefik reads its kubeconfig
// there.
func (c *Cluster) InstallGatewayOnNode(ctx context.Context, opts OperatorOptions, node int) (*Gateway, error) {
	if node < 1 {
		return nil, fmt.Errorf("real node %d: they are counted from 1", node)
	}
	return c.installGateway(ctx, opts, node)
}

// installGateway installs the Gateway API and Traefik, on real node node,
// or on the machine's loopback when node is 0.
func (c *Cluster) installGateway(ctx context.Context, opts OperatorOptions, node int) (_ *Gateway, err error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	name := "traefik"
	if node > 0 {
		// A missing node fails here, before anything is installed.
		if _, _, err := c.nodeEnter(node); err != nil {
			return nil, err
		}
		name = RealNodeName(node) + "-traefik"
	}
	base, err := c.newComponent(ctx, opts, name, "traefik", TraefikModule, TraefikVersion)
	if err != nil {
		return nil, err
	}
	g := &Gateway{component: base, node: node}
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

// Address is where Gateways are reached, and what Traefik reports in their
// status: 127.0.0.1 on the machine's loopback; on a real node, the first
// address of its pods' range, which the CNI bridge holds as their gateway
// (10.250.201.1 on node 1).
func (g *Gateway) Address() string {
	if g.node == 0 {
		return "127.0.0.1"
	}
	return RealNodePodCIDR(g.node).Addr().Next().String()
}

// listen is where the entrypoints web and ping listen. On a node, web
// listens on every address of its namespace: the bridge, and with it
// Address, exists only once a pod has been set up on it, and the node's
// address is where the API server's node proxy leads. Ping listens on the
// node's address, there from the start, for Start to wait on.
func (g *Gateway) listen() (web, ping string) {
	if g.node == 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(g.web)), net.JoinHostPort("127.0.0.1", strconv.Itoa(g.ping))
	}
	return ":" + strconv.Itoa(g.web), net.JoinHostPort(RealNodeIP(g.node).String(), strconv.Itoa(g.ping))
}

// Start runs Traefik (again, on the same ports, in the same place) and
// waits until its ping answers.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.notRunning(); err != nil {
		return err
	}
	if g.web == 0 {
		// Free on the machine's loopback; in a node's namespace, where
		// only the kubelet (10250) and the holder's door to the API
		// server listen, free as well.
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		g.web, g.ping = ports[0], ports[1]
	}
	web, ping := g.listen()
	args := []string{
		"--entryPoints.web.address=" + web,
		"--entryPoints.ping.address=" + ping,
		"--ping.entryPoint=ping",
		"--providers.kubernetesGateway=true",
		// The address it reports in Gateways' status: where clients
		// reach the entrypoint.
		"--providers.kubernetesGateway.statusAddress.ip=" + g.Address(),
		"--providers.kubernetesGateway.throttleDuration=0s",
		"--log.level=INFO",
		// No version check or usage report: nothing leaves the machine.
		"--global.checkNewVersion=false",
		"--global.sendAnonymousUsage=false",
	}
	// Inside a node's namespace the API server's address is the same as
	// outside (its holder forwards it): the kubeconfig holds either way.
	env := append(childEnv(), "KUBECONFIG="+g.kubeconfig())
	enter, hc, err := g.where()
	if err != nil {
		return err
	}
	if err := g.launchIn(enter, args, env); err != nil {
		return err
	}
	return waitAnswers(ctx, hc, "http://"+ping+"/ping", g.proc, g.name)
}

// where is how Traefik is started (nsenter's arguments, none on the
// machine's loopback) and the client that reaches its entrypoints from
// here: directly on loopback, through the node's CONNECT proxy on a node,
// whose address the machine has no route to.
func (g *Gateway) where() ([]string, *http.Client, error) {
	// No proxy from the environment: the entrypoints are the rig's own.
	tr := &http.Transport{Proxy: nil}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	if g.node == 0 {
		return nil, hc, nil
	}
	enter, sock, err := g.c.nodeEnter(g.node)
	if err != nil {
		return nil, nil, err
	}
	tr.DialContext = func(_ context.Context, _, addr string) (net.Conn, error) { return dialConnect(sock, addr) }
	return enter, hc, nil
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
