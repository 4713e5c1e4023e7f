package rig

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The KServe release the rig runs; tools/kserve/go.mod pins the same (a
// test keeps them equal).
const (
	KServeModule  = "github.com/kserve/kserve"
	KServeVersion = "v0.15.0"
)

// kserveDeploy makes RawDeployment the default mode: Serverless needs
// Knative and Istio, which the rig does not run.
const kserveDeploy = `{"defaultDeploymentMode":"RawDeployment"}`

// kserveNamespace is where KServe's manifests install it.
const kserveNamespace = "kserve"

// InstallKServe installs KServe on a running full rig and starts its
// controller manager: the CRDs of config/crd/full, the kserve namespace
// (or opts.Namespace), the inferenceservice-config ConfigMap
// (RawDeployment), the manager process with its webhooks registered by
// URL, the kserve-controller-manager Deployment, then the sklearn
// ClusterServingRuntime and the default ClusterStorageContainer, which
// its webhooks validate.
func (c *Cluster) InstallKServe(ctx context.Context, opts OperatorOptions) (*Operator, error) {
	return c.install(ctx, kserveSpec(opts.namespaceOr(kserveNamespace)), opts)
}

func kserveSpec(ns string) operatorSpec {
	labels := map[string]string{
		"app.kubernetes.io/name":  "kserve-controller-manager",
		"control-plane":           "kserve-controller-manager",
		"controller-tools.k8s.io": "1.0",
	}
	return operatorSpec{
		name:            "kserve",
		binary:          "kserve-manager",
		module:          KServeModule,
		version:         KServeVersion,
		crdDir:          "config/crd/full",
		webhookManifest: "config/webhook/manifests.yaml",
		namespace:       ns,
		namespaceDoc:    "config/manager/service.yaml",
		deployment:      "kserve-controller-manager",
		serviceAccount:  "kserve-controller-manager",
		container:       "manager",
		image:           "kserve/kserve-controller:" + KServeVersion,
		labels:          labels,
		selector:        map[string]string{"control-plane": "kserve-controller-manager", "controller-tools.k8s.io": "1.0"},
		// cmd/manager's LeaderLockName; --leader-elect as in KServe's
		// manager manifest.
		lease:            "kserve-controller-manager-leader-lock",
		podNamespaceFile: true,
		args: func(webhook, metrics, probe int) []string {
			return []string{
				"--leader-elect",
				"--webhook-port", strconv.Itoa(webhook),
				"--metrics-addr", "127.0.0.1:" + strconv.Itoa(metrics),
				"--health-probe-addr", "127.0.0.1:" + strconv.Itoa(probe),
			}
		},
		// Where it reads inferenceservice-config; its Deployment sets the
		// same from the pod's namespace.
		env: []string{"POD_NAMESPACE=" + ns},
		beforeStart: func(ctx context.Context, in *installer, mod string) error {
			_, err := in.applyFile(ctx, filepath.Join(mod, "config/configmap/inferenceservice.yaml"), nil, func(u *unstructured.Unstructured) error {
				if u.GetKind() != "ConfigMap" || u.GetName() != "inferenceservice-config" {
					return fmt.Errorf("unexpected %s %s", u.GetKind(), u.GetName())
				}
				// The file names the manifests' namespace; the manager
				// reads it from its own.
				u.SetNamespace(ns)
				return unstructured.SetNestedField(u.Object, kserveDeploy, "data", "deploy")
			})
			return err
		},
		afterReady: func(ctx context.Context, in *installer, mod string) error {
			// The module's files carry kustomize placeholders for images;
			// the release manifests pin them to the release's tag.
			if _, err := in.applyFile(ctx, filepath.Join(mod, "config/runtimes/kserve-sklearnserver.yaml"), nil,
				setImages("kserve/sklearnserver:"+KServeVersion, "spec", "containers")); err != nil {
				return err
			}
			_, err := in.applyFile(ctx, filepath.Join(mod, "config/storagecontainers/default.yaml"), nil,
				setImages("kserve/storage-initializer:"+KServeVersion, "spec", "container"))
			return err
		},
	}
}

// setImages sets the image of the container (a map) or containers (a
// list) at path.
func setImages(image string, path ...string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...)
		if err != nil || !found {
			return fmt.Errorf("%s %s: no %v", u.GetKind(), u.GetName(), path)
		}
		switch v := v.(type) {
		case map[string]any:
			v["image"] = image
		case []any:
			for _, c := range v {
				if m, ok := c.(map[string]any); ok {
					m["image"] = image
				}
			}
		default:
			return fmt.Errorf("%s %s: %v is %T", u.GetKind(), u.GetName(), path, v)
		}
		return nil
	}
}
