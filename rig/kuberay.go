package rig

import (
	"context"
	"strconv"
	"strings"
)

// The KubeRay release the rig runs; tools/kuberay/go.mod pins the same (a
// test keeps them equal).
const (
	KubeRayModule  = "github.com/ray-project/kuberay/ray-operator"
	KubeRayVersion = "v1.5.0"
)

// kubeRayWebhookPort is fixed: the operator takes the controller-runtime
// default and has no flag to change it. It runs in a network namespace of
// its own, where the port is free whatever holds it on the machine
// (Operator.ownNetwork).
const kubeRayWebhookPort = 9443

// kubeRayNamespace is where KubeRay's kustomize manifests install it.
const kubeRayNamespace = "ray-system"

// InstallKubeRay installs KubeRay on a running full rig, as its
// config/default-with-webhooks manifests do, and starts its operator: the
// CRDs of config/crd/bases, the ray-system namespace (or opts.Namespace),
// the operator process with webhooks enabled and the RayCluster webhook
// registered by URL (the only one it serves), and the kuberay-operator
// Deployment.
func (c *Cluster) InstallKubeRay(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, kubeRaySpec(opts.namespaceOr(kubeRayNamespace)), opts)
}

// InstallKubeRayChart installs KubeRay as its Helm chart (kuberay-operator)
// lays it out for a release named release: in opts.Namespace, the
// release's namespace ("default" when empty, as `helm install` without
// --namespace), a Deployment named after the release, the chart's pod
// labels, and no admission webhook: the chart registers none, and its
// operator runs without ENABLE_WEBHOOKS. The CRDs are the same.
func (c *Cluster) InstallKubeRayChart(ctx context.Context, release string, opts OperatorOptions) (*Operator, error) {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	return c.install(ctx, kubeRayChartSpec(release, opts.Namespace), opts)
}

func kubeRaySpec(ns string) operatorSpec {
	labels := map[string]string{
		"app.kubernetes.io/name":      "kuberay",
		"app.kubernetes.io/component": "kuberay-operator",
	}
	return operatorSpec{
		name:            "kuberay",
		binary:          "kuberay-operator",
		module:          KubeRayModule,
		version:         KubeRayVersion,
		crdDir:          "config/crd/bases",
		webhookManifest: "config/webhook/manifests.yaml",
		// As config/default-with-webhooks names it (its webhook/
		// kustomization's namePrefix), the install that has webhooks.
		configNames:    map[string]string{"validating-webhook-configuration": "kuberay-validating-webhook-configuration"},
		namespace:      ns,
		deployment:     "kuberay-operator",
		serviceAccount: "kuberay-operator",
		container:      "kuberay-operator",
		image:          "quay.io/kuberay/operator:" + KubeRayVersion,
		labels:         labels,
		selector:       labels,
		webhookPort:    kubeRayWebhookPort,
		// LeaderElectionID of ray-operator's main.go.
		lease: "ray-operator-leader",
		args: func(_, metrics, probe int) []string {
			return []string{
				"--metrics-addr", "127.0.0.1:" + strconv.Itoa(metrics),
				"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
				// On by default; out of a pod, the namespace must be named.
				"--enable-leader-election=true",
				"--leader-election-namespace", ns,
			}
		},
		env: []string{"ENABLE_WEBHOOKS=true"},
	}
}

// kubeRayChart is the chart's name, which its templates name the
// Deployment and the pods' labels after.
const kubeRayChart = "kuberay-operator"

// kubeRayChartSpec is KubeRay as its Helm chart installs it for release in
// ns: no webhook manifest, no ENABLE_WEBHOOKS, so no webhook server and no
// port of its own to hold.
func kubeRayChartSpec(release, ns string) operatorSpec {
	s := kubeRaySpec(ns)
	// The chart's full name: the release's name when it holds the chart's,
	// else "<release>-kuberay-operator" (at most 63 characters).
	name := release
	if !strings.Contains(release, kubeRayChart) {
		name = release + "-" + kubeRayChart
	}
	if len(name) > 63 {
		name = strings.TrimSuffix(name[:63], "-")
	}
	s.deployment = name
	s.labels = map[string]string{
		"app.kubernetes.io/name":      kubeRayChart,
		"app.kubernetes.io/instance":  release,
		"app.kubernetes.io/component": kubeRayChart,
	}
	s.selector = map[string]string{"app.kubernetes.io/name": kubeRayChart, "app.kubernetes.io/instance": release}
	s.webhookManifest, s.configNames, s.webhookPort, s.env = "", nil, 0, nil
	return s
}
