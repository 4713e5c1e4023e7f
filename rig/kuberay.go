package rig

import (
	"context"
	"strconv"
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

// InstallKubeRay installs KubeRay on a running full rig and starts its
// operator: the CRDs of config/crd/bases, the ray-system namespace, the
// operator process with webhooks enabled and the RayCluster webhook
// registered by URL (the only one it serves), and the
// ray-system/kuberay-operator Deployment.
func (c *Cluster) InstallKubeRay(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, kubeRaySpec(), opts)
}

func kubeRaySpec() operatorSpec {
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
		namespace:      "ray-system",
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
				"--leader-election-namespace", "ray-system",
			}
		},
		env: []string{"ENABLE_WEBHOOKS=true"},
	}
}
