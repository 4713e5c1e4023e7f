package rig

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The Kubeflow Trainer release the rig runs, and the JobSet release it is
// built against (its go.mod requires that one); tools/trainer/go.mod pins
// both (a test keeps them equal).
const (
	TrainerModule  = "github.com/kubeflow/trainer/v2"
	TrainerVersion = "v2.0.0"
	JobSetModule   = "sigs.k8s.io/jobset"
	JobSetVersion  = "v0.8.2"
)

// trainerNamespace is where Trainer's manifests put Trainer and the JobSet
// they bundle.
const trainerNamespace = "kubeflow-system"

// InstallTrainer installs Kubeflow Trainer on a running full rig: first
// JobSet, which turns the JobSets Trainer makes into Jobs (its CRD, its
// controller process, its webhooks, its Deployment), then Trainer itself
// (its CRDs, the controller process, its webhooks, its Deployment) and the
// torch-distributed ClusterTrainingRuntime of its manifests. Both keep
// their webhook certificates in a Secret, as released; the rig fills those
// first. Both go into kubeflow-system, or opts.Namespace. It returns
// Trainer and JobSet.
func (c *Cluster) InstallTrainer(ctx context.Context, opts OperatorOptions) (trainer, jobset *Operator, err error) {
	ns := opts.namespaceOr(trainerNamespace)
	if jobset, err = c.install(ctx, jobSetSpec(ns), opts); err != nil {
		return nil, nil, err
	}
	if trainer, err = c.install(ctx, trainerSpec(ns), opts); err != nil {
		return nil, jobset, err
	}
	return trainer, jobset, nil
}

// jobSetSpec is JobSet as Trainer's kustomize manifests install it: its
// release manifests, moved into Trainer's namespace ns.
func jobSetSpec(ns string) operatorSpec {
	labels := map[string]string{"control-plane": "controller-manager"}
	return operatorSpec{
		name:            "jobset",
		binary:          "jobset-controller",
		module:          JobSetModule,
		version:         JobSetVersion,
		crdDir:          "config/components/crd/bases",
		webhookManifest: "config/components/webhook/manifests.yaml",
		configNames: map[string]string{
			"validating-webhook-configuration": "jobset-validating-webhook-configuration",
			"mutating-webhook-configuration":   "jobset-mutating-webhook-configuration",
		},
		certSecret:   &certSecret{name: "jobset-webhook-server-cert", caName: "jobset-ca", service: "jobset-webhook-service"},
		fixedCertDir: true,
		// As the Training Operator: handlers set up once certificates are.
		lateWebhooks:   true,
		namespace:      ns,
		deployment:     "jobset-controller-manager",
		serviceAccount: "jobset-controller-manager",
		container:      "manager",
		image:          "registry.k8s.io/jobset/jobset:" + JobSetVersion,
		labels:         labels,
		selector:       labels,
		// DefaultLeaderElectionID of its configuration API.
		lease:            "6d4f6a47.jobset.x-k8s.io",
		podNamespaceFile: true,
		configFile: func(dir, _ string, webhook, metrics, probe int) (string, error) {
			// Its configuration file, as the release's ConfigMap holds it,
			// with the rig's ports on loopback.
			path := filepath.Join(dir, "jobset-config.yaml")
			cfg := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: true
  resourceNamespace: %s
webhook:
  port: %d
metrics:
  bindAddress: 127.0.0.1:%d
health:
  healthProbeBindAddress: 127.0.0.1:%d
internalCertManagement:
  enable: true
`, ns, webhook, metrics, probe)
			return path, os.WriteFile(path, []byte(cfg), 0o644)
		},
		args: func(_, _, _ int) []string { return nil },
	}
}

// trainerSpec is Trainer as its Helm chart names it (release
// kubeflow-trainer in kubeflow-system): the same Deployment and webhook
// configuration names as its kustomize manifests, other pod labels.
func trainerSpec(ns string) operatorSpec {
	labels := map[string]string{
		"app.kubernetes.io/name":      "kubeflow-trainer",
		"app.kubernetes.io/instance":  "kubeflow-trainer",
		"app.kubernetes.io/component": "manager",
		"app.kubernetes.io/part-of":   "kubeflow",
	}
	return operatorSpec{
		name:            "kubeflow-trainer",
		binary:          "trainer-controller-manager",
		module:          TrainerModule,
		version:         TrainerVersion,
		crdDir:          "manifests/base/crds",
		webhookManifest: "manifests/base/webhook/manifests.yaml",
		// Named by manifests/base/webhook/patch.yaml, and hard-coded in the
		// manager, which injects its CA into it.
		configNames:    map[string]string{"validating-webhook-configuration": "validator.trainer.kubeflow.org"},
		certSecret:     &certSecret{name: "kubeflow-trainer-webhook-cert", caName: "kubeflow-trainer-ca", service: "kubeflow-trainer-controller-manager"},
		fixedCertDir:   true,
		lateWebhooks:   true,
		namespace:      ns,
		deployment:     "kubeflow-trainer-controller-manager",
		serviceAccount: "kubeflow-trainer-controller-manager",
		container:      "manager",
		image:          "ghcr.io/kubeflow/trainer/trainer-controller-manager:" + TrainerVersion,
		labels:         labels,
		selector:       map[string]string{"app.kubernetes.io/name": "kubeflow-trainer", "app.kubernetes.io/instance": "kubeflow-trainer"},
		// v2.0.0 elects no leader: its --leader-elect flag is not wired up.
		podNamespaceFile: true,
		args: func(webhook, metrics, probe int) []string {
			return []string{
				"--webhook-server-port", strconv.Itoa(webhook),
				"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(metrics),
				"--metrics-secure=false",
				"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
			}
		},
		afterReady: func(ctx context.Context, in *installer, mod string) error {
			// The runtime the canary and the seeds' TrainJobs name; its
			// webhook validates it.
			_, err := in.applyFile(ctx, filepath.Join(mod, "manifests/base/runtimes/torch_distributed.yaml"), nil, nil)
			return err
		},
	}
}
