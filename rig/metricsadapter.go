package rig

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The adapter framework release the rig's metrics adapter is built from;
// tools/metrics-adapter/go.mod pins the same (a test keeps them equal).
const (
	MetricsAdapterModule  = "sigs.k8s.io/custom-metrics-apiserver"
	MetricsAdapterVersion = "v1.37.0"
)

// The names the module's deployment manifest gives the adapter.
const (
	MetricsAdapterNamespace = "custom-metrics"
	MetricsAdapterName      = "custom-metrics-apiserver"
	metricsAdapterManifest  = "test-adapter-deploy/testing-adapter.yaml"
)

// MetricsAdapterExternalMetric is an external metric the adapter serves in
// every namespace with a positive value, for an HPA to scale on.
const MetricsAdapterExternalMetric = "my-external-metric"

// MetricsAdapterPodMetric is the custom metric of pods the adapter serves
// of every pod that holds a GPU (bound, Running, requesting
// nvidia.com/gpu), MetricsAdapterPodValue for each, as prometheus-adapter
// serves NVIDIA's DCGM Exporter's: tools/metrics-adapter/gpu.go names the
// same (a test keeps them equal).
const (
	MetricsAdapterPodMetric = "DCGM_FI_DEV_GPU_UTIL"
	MetricsAdapterPodValue  = 40
)

// MetricsAdapterOptions say which APIs the adapter is registered for.
type MetricsAdapterOptions struct {
	// CustomOnly registers the custom metrics API alone, without the
	// external one, as on a cluster whose only adapter is
	// prometheus-adapter: the manifest's APIService of
	// external.metrics.k8s.io is not applied.
	CustomOnly bool
}

// apiServiceResource is the aggregator's own resource.
var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// MetricsAdapter is a custom and external metrics API server
// (custom.metrics.k8s.io, external.metrics.k8s.io, or the custom one
// alone with MetricsAdapterOptions.CustomOnly) running as a local process
// behind APIServices, as prometheus-adapter or KEDA serve them on a real
// cluster: the HPA controller of the rig's kube-controller-manager reads
// its metrics through the aggregator.
//
// Stop stops the process; its APIServices stay, and the aggregator soon
// reports them unavailable, as on a cluster whose adapter crashed. Start
// brings it back on the same port.
type MetricsAdapter struct {
	component
	opts     MetricsAdapterOptions
	port     int
	ca       []byte
	services []string // the APIServices of the manifest applied
}

// InstallMetricsAdapter installs the module's test adapter, on a full or a
// ControlPlaneOnly rig, the way its deployment manifest does, with two changes for the rig: its Service is
// an ExternalName of 127.0.0.1 (the aggregator then dials the process on
// loopback, through the egress guard, and checks its certificate against
// the Service's DNS name), and its APIServices verify that certificate
// against the rig's CA rather than skip verification.
func (c *Cluster) InstallMetricsAdapter(ctx context.Context, opts OperatorOptions) (*MetricsAdapter, error) {
	return c.InstallMetricsAdapterWith(ctx, opts, MetricsAdapterOptions{})
}

// InstallMetricsAdapterWith is InstallMetricsAdapter registering the APIs
// ao says.
func (c *Cluster) InstallMetricsAdapterWith(ctx context.Context, opts OperatorOptions, ao MetricsAdapterOptions) (_ *MetricsAdapter, err error) {
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	base, err := c.newComponent(ctx, opts, "metrics-adapter", "metrics-adapter", MetricsAdapterModule, MetricsAdapterVersion)
	if err != nil {
		return nil, err
	}
	m := &MetricsAdapter{component: base, opts: ao}
	if err := m.prepare(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = m.Stop()
		}
	}()
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	in, err := c.newInstaller()
	if err != nil {
		return nil, err
	}
	note := "the aiconform rig runs this adapter as a local process (metrics-adapter); kwok runs this pod"
	m.services, err = in.applyFile(ctx, filepath.Join(m.moduleDir, metricsAdapterManifest), m.keep, func(u *unstructured.Unstructured) error {
		return m.edit(u, note)
	})
	if err != nil {
		return nil, err
	}
	m.services = slices.DeleteFunc(m.services, func(n string) bool { return !strings.Contains(n, ".metrics.k8s.io") })
	if len(m.services) == 0 {
		return nil, fmt.Errorf("%s: no APIService", metricsAdapterManifest)
	}
	// A ControlPlaneOnly rig (the fixtures') runs no controller to make
	// the Deployment's pod; the APIServices are what it is there for.
	if !c.state.ControlPlaneOnly {
		if err := WaitDeploymentAvailable(ctx, in.kube, MetricsAdapterNamespace, MetricsAdapterName); err != nil {
			return nil, err
		}
	}
	if err := m.WaitAvailable(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// keep leaves out of the module's manifest the APIServices of the APIs
// the options do not register.
func (m *MetricsAdapter) keep(u *unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	return !(u.GetKind() == "APIService" && group == "external.metrics.k8s.io" && m.opts.CustomOnly)
}

// edit adapts one object of the module's manifest to the rig.
func (m *MetricsAdapter) edit(u *unstructured.Unstructured, note string) error {
	switch u.GetKind() {
	case "Service":
		unstructured.RemoveNestedField(u.Object, "spec", "selector")
		if err := unstructured.SetNestedField(u.Object, "ExternalName", "spec", "type"); err != nil {
			return err
		}
		return unstructured.SetNestedField(u.Object, "127.0.0.1", "spec", "externalName")
	case "APIService":
		unstructured.RemoveNestedField(u.Object, "spec", "insecureSkipTLSVerify")
		if err := unstructured.SetNestedField(u.Object, int64(m.port), "spec", "service", "port"); err != nil {
			return err
		}
		// caBundle is bytes: base64 in JSON.
		return unstructured.SetNestedField(u.Object, base64.StdEncoding.EncodeToString(m.ca), "spec", "caBundle")
	case "Deployment":
		u.SetAnnotations(map[string]string{standInAnnotation: note})
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			// The manifest leaves the registry to fill in.
			if img, _ := cm["image"].(string); strings.HasPrefix(img, "REGISTRY/") {
				cm["image"] = "registry.k8s.io/custom-metrics-apiserver/" + strings.TrimPrefix(img, "REGISTRY/")
			}
		}
		if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		return unstructured.SetNestedStringMap(u.Object, map[string]string{standInAnnotation: note}, "spec", "template", "metadata", "annotations")
	}
	return nil
}

// prepare writes the process's kubeconfig and its serving certificate,
// valid for the Service's DNS name that the aggregator verifies.
func (m *MetricsAdapter) prepare() error {
	if err := os.MkdirAll(filepath.Join(m.dir, "certs"), 0o700); err != nil {
		return err
	}
	ca, err := m.writeKubeconfig()
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := m.c.ServingCert(MetricsAdapterName + "." + MetricsAdapterNamespace + ".svc")
	if err != nil {
		return err
	}
	m.ca = ca.certPEM
	if err := os.WriteFile(filepath.Join(m.dir, "certs", "tls.crt"), certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m.dir, "certs", "tls.key"), keyPEM, 0o600)
}

// APIServices names the APIServices the adapter backs.
func (m *MetricsAdapter) APIServices() []string { return slices.Clone(m.services) }

// Start runs the adapter process (again) and waits until it serves. Its
// port is kept across restarts: the APIServices name it.
func (m *MetricsAdapter) Start(ctx context.Context) error {
	if err := m.notRunning(); err != nil {
		return err
	}
	if m.port == 0 {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		m.port = ports[0]
	} else if err := portFree(m.port); err != nil {
		return fmt.Errorf("metrics-adapter's port %d: %w", m.port, err)
	}
	kc := m.kubeconfig()
	args := []string{
		"--secure-port", strconv.Itoa(m.port),
		"--bind-address", "127.0.0.1",
		"--tls-cert-file", filepath.Join(m.dir, "certs", "tls.crt"),
		"--tls-private-key-file", filepath.Join(m.dir, "certs", "tls.key"),
		"--lister-kubeconfig", kc,
		"--authentication-kubeconfig", kc,
		"--authorization-kubeconfig", kc,
		"--cert-dir", filepath.Join(m.dir, "certs"),
	}
	if err := m.launch(args, childEnv()); err != nil {
		return err
	}
	return m.waitServing(ctx)
}

// waitServing waits until the adapter answers on its port.
func (m *MetricsAdapter) waitServing(ctx context.Context) error {
	hc, err := loopbackClient("metrics-adapter", m.ca)
	if err != nil {
		return err
	}
	return waitAnswers(ctx, hc, fmt.Sprintf("https://127.0.0.1:%d/readyz", m.port), m.proc, "metrics-adapter")
}

// WaitAvailable waits until the aggregator reports every APIService of the
// adapter Available=True.
func (m *MetricsAdapter) WaitAvailable(ctx context.Context) error {
	return m.waitAvailability(ctx, "True")
}

// WaitUnavailable waits until the aggregator reports them all not
// Available, as it does a while after the adapter stopped.
func (m *MetricsAdapter) WaitUnavailable(ctx context.Context) error {
	return m.waitAvailability(ctx, "False")
}

func (m *MetricsAdapter) waitAvailability(ctx context.Context, want string) error {
	in, err := m.c.newInstaller()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, n := range m.services {
			u, err := in.dyn.Resource(apiServiceResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			status := "no Available condition"
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Available" {
					status, _ = cm["status"].(string)
					last = fmt.Sprintf("%s: Available=%v %v", n, cm["status"], cm["message"])
				}
			}
			if status != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("APIServices %s Available=%s: %w (last: %s)", strings.Join(m.services, ", "), want, err, last)
	}
	return nil
}
