package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Kueue release the rig runs; tools/kueue/go.mod pins the same (a test
// keeps them equal).
const (
	KueueModule  = "sigs.k8s.io/kueue"
	KueueVersion = "v0.17.0"
)

// kueueNamespace is where Kueue's manifests install it.
const kueueNamespace = "kueue-system"

// InstallKueue installs Kueue on a running full rig, as its kustomize
// manifests (config/default) do: its CRDs, five of them converted between
// v1beta1 and v1beta2 by its webhook server, the kueue-system namespace
// (or opts.Namespace), the controller process with its webhooks registered
// by URL (their certificates in the Secret its certificate manager keeps,
// filled by the rig), and the kueue-controller-manager Deployment. Install
// it last: its webhooks see the pods, Jobs, JobSets, RayClusters and
// Kubeflow jobs of every namespace but kube-system and its own.
func (c *Cluster) InstallKueue(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, kueueSpec(opts.namespaceOr(kueueNamespace)), opts)
}

func kueueSpec(ns string) operatorSpec {
	labels := map[string]string{"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
	return operatorSpec{
		name:            "kueue",
		binary:          "kueue",
		module:          KueueModule,
		version:         KueueVersion,
		crdDir:          "config/components/crd/bases",
		webhookManifest: "config/components/webhook/manifests.yaml",
		// config/default's namePrefix; its certificate manager injects its
		// CA into these names (derived from the Service's).
		configNames: map[string]string{
			"validating-webhook-configuration": "kueue-validating-webhook-configuration",
			"mutating-webhook-configuration":   "kueue-mutating-webhook-configuration",
		},
		// config/components/crd/kustomization.yaml's webhook_in_ patches;
		// the certificate manager will not start until it has injected its
		// CA into each of them.
		conversionCRDs: []string{
			"localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io",
			"workloads.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io",
		},
		certSecret:       &certSecret{name: "kueue-webhook-server-cert", caName: "kueue-ca", service: "kueue-webhook-service"},
		fixedCertDir:     true,
		podNamespaceFile: true,
		namespace:        ns,
		deployment:       "kueue-controller-manager",
		serviceAccount:   "kueue-controller-manager",
		container:        "manager",
		image:            "registry.k8s.io/kueue/kueue:" + KueueVersion,
		labels:           labels,
		selector:         labels,
		// leaderElection.resourceName of its shipped configuration.
		lease: "c1f6bfd2.kueue.x-k8s.io",
		// config/components/webhook/kustomization.yaml's patches: the
		// webhooks on plain pods, Deployments and StatefulSets leave
		// kube-system and Kueue's own namespace alone.
		namespaceSelectors: map[string]*metav1.LabelSelector{
			"mpod.kb.io": notIn(ns), "mdeployment.kb.io": notIn(ns), "mstatefulset.kb.io": notIn(ns),
			"vpod.kb.io": notIn(ns), "vdeployment.kb.io": notIn(ns), "vstatefulset.kb.io": notIn(ns),
		},
		configFile: kueueConfig(ns),
		args: func(_, _, _ int) []string {
			// The on-demand visibility API is an APIService the rig does
			// not register (nothing aiconform reads); its server would
			// need in-cluster credentials and write to /visibility.
			return []string{"--feature-gates=VisibilityOnDemand=false"}
		},
	}
}

// notIn selects every namespace but kube-system and Kueue's own, ns.
func notIn(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", ns},
	}}}
}

// kueueConfig writes the configuration file the release's ConfigMap holds
// (config/components/manager/controller_manager_config.yaml, read from the
// module: the integrations it enables are the release's), with the rig's
// ports on loopback and Kueue's namespace ns.
func kueueConfig(ns string) func(dir, mod string, webhook, metrics, probe int) (string, error) {
	return func(dir, mod string, webhook, metrics, probe int) (string, error) {
		return writeKueueConfig(ns, dir, mod, webhook, metrics, probe)
	}
}

func writeKueueConfig(ns, dir, mod string, webhook, metrics, probe int) (string, error) {
	data, err := os.ReadFile(filepath.Join(mod, "config/components/manager/controller_manager_config.yaml"))
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("kueue configuration: %w", err)
	}
	cfg["namespace"] = ns
	cfg["health"] = map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", probe)}
	cfg["metrics"] = map[string]any{"bindAddress": fmt.Sprintf("127.0.0.1:%d", metrics)}
	cfg["webhook"] = map[string]any{"port": webhook}
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil || le["resourceName"] == nil {
		return "", fmt.Errorf("kueue configuration: no leaderElection.resourceName")
	}
	le["resourceNamespace"] = ns
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kueue-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}
