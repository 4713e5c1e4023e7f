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
// v1beta1 and v1beta2 by its webhook server, the kueue-system namespace,
// the controller process with its webhooks registered by URL (their
// certificates in the Secret its certificate manager keeps, filled by the
// rig), and the kueue-controller-manager Deployment. Install it last: its
// webhooks see the pods, Jobs, JobSets, RayClusters and Kubeflow jobs of
// every namespace but kube-system and its own.
func (c *Cluster) InstallKueue(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, kueueSpec(), opts)
}

func kueueSpec() operatorSpec {
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
		namespace:        kueueNamespace,
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
			"mpod.kb.io": notInSystem, "mdeployment.kb.io": notInSystem, "mstatefulset.kb.io": notInSystem,
			"vpod.kb.io": notInSystem, "vdeployment.kb.io": notInSystem, "vstatefulset.kb.io": notInSystem,
		},
		configFile: kueueConfig,
		args: func(_, _, _ int) []string {
			// The on-demand visibility API is an APIService the rig does
			// not register (nothing aiconform reads); its server would
			// need in-cluster credentials and write to /visibility.
			return []string{"--feature-gates=VisibilityOnDemand=false"}
		},
	}
}

var notInSystem = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
	Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", kueueNamespace},
}}}

// kueueConfig writes the configuration file the release's ConfigMap holds
// (config/components/manager/controller_manager_config.yaml, read from the
// module: the integrations it enables are the release's), with the rig's
// ports on loopback.
func kueueConfig(dir, mod string, webhook, metrics, probe int) (string, error) {
	data, err := os.ReadFile(filepath.Join(mod, "config/components/manager/controller_manager_config.yaml"))
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("kueue configuration: %w", err)
	}
	cfg["namespace"] = kueueNamespace
	cfg["health"] = map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", probe)}
	cfg["metrics"] = map[string]any{"bindAddress": fmt.Sprintf("127.0.0.1:%d", metrics)}
	cfg["webhook"] = map[string]any{"port": webhook}
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil || le["resourceName"] == nil {
		return "", fmt.Errorf("kueue configuration: no leaderElection.resourceName")
	}
	le["resourceNamespace"] = kueueNamespace
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kueue-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}
