package rig

import (
	"context"
	"strconv"
)

// The Kubeflow Training Operator release the rig runs (v1, the last of
// its line); tools/training-operator/go.mod pins the same (a test keeps
// them equal).
const (
	TrainingOperatorModule  = "github.com/kubeflow/training-operator"
	TrainingOperatorVersion = "v1.9.4"
)

// trainingOperatorNamespace is where the Training Operator's standalone
// overlay installs it.
const trainingOperatorNamespace = "kubeflow"

// InstallTrainingOperator installs the Kubeflow Training Operator on a
// running full rig, as its manifests' standalone overlay does: its CRDs,
// the kubeflow namespace (or opts.Namespace), the operator process with
// its webhooks registered by URL (their certificates in the Secret its
// certificate manager keeps, filled by the rig), and the training-operator
// Deployment. Leader election stays off, as in the manifests.
func (c *Cluster) InstallTrainingOperator(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, trainingOperatorSpec(opts.namespaceOr(trainingOperatorNamespace)), opts)
}

func trainingOperatorSpec(ns string) operatorSpec {
	labels := map[string]string{"control-plane": "kubeflow-training-operator"}
	return operatorSpec{
		name:            "kubeflow-training",
		binary:          "training-operator",
		module:          TrainingOperatorModule,
		version:         TrainingOperatorVersion,
		crdDir:          "manifests/base/crds",
		webhookManifest: "manifests/base/webhook/manifests.yaml",
		// Named by manifests/base/webhook/patch.yaml, and hard-coded in the
		// operator, which injects its CA into it.
		configNames:      map[string]string{"validating-webhook-configuration": "validator.training-operator.kubeflow.org"},
		certSecret:       &certSecret{name: "training-operator-webhook-cert", caName: "training-operator-ca", service: "training-operator"},
		fixedCertDir:     true,
		podNamespaceFile: true,
		// Its certificate manager finds its namespace, and so its Secret,
		// in MY_POD_NAMESPACE (its manifests set it from the pod's), else
		// "kubeflow".
		env: []string{"MY_POD_NAMESPACE=" + ns},
		// Its handlers are set up once its certificates are ready, after
		// its server answers: a path that answers 404 is "not yet" (seen
		// under load: 3 of its 5 webhooks registered).
		lateWebhooks:   true,
		namespace:      ns,
		deployment:     "training-operator",
		serviceAccount: "training-operator",
		container:      "training-operator",
		image:          "ghcr.io/kubeflow/training-v1/training-operator:v1-93c5489",
		labels:         labels,
		selector:       labels,
		args: func(webhook, metrics, probe int) []string {
			return []string{
				"--webhook-server-port", strconv.Itoa(webhook),
				"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(metrics),
				"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probe),
			}
		},
	}
}
