package rig

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator the rig runs, built by tools/build from
// tools/prometheus-operator (same pin; a test keeps them equal). Its CRDs
// are the module's own.
const (
	PrometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	PrometheusOperatorVersion = "v0.85.0"
)

// The Prometheus object the rig gives the operator: kube-prometheus-stack's
// name and shape, selecting the PodMonitors and ServiceMonitors of its
// release label in every namespace.
const (
	OperatedPrometheus = "k8s"
	OperatedRelease    = "aiconform-rig"
)

// PrometheusOperator is the real Prometheus Operator, a process of the
// rig's, reconciling a Prometheus object into a StatefulSet, its Service
// (prometheus-operated) and the configuration Secret it generates from
// PodMonitors and ServiceMonitors. kwok runs the StatefulSet's pod on the
// GPU node, where no Prometheus can run; the rig's Prometheus server stands
// behind the pod's address instead and runs the configuration the operator
// generated, reloaded whenever the operator changes it, as the
// StatefulSet's config-reloader would. Only what a process outside the
// cluster needs is changed in it: the Kubernetes discovery's credentials,
// the scrape proxy into the rig's virtual range, the variables the
// config-reloader expands, and no rule files.
type PrometheusOperator struct {
	component
	server *Prometheus
	stop   context.CancelFunc
	done   chan struct{}
}

// InstallPrometheusOperator installs the operator's CRDs, starts it,
// creates the Prometheus object and waits until its pod runs and the rig's
// server answers behind it with the operator's configuration. The rig
// needs its nodes.
func (c *Cluster) InstallPrometheusOperator(ctx context.Context, opts OperatorOptions) (*PrometheusOperator, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	base, err := c.newComponent(ctx, opts, "prometheus-operator", "prometheus-operator", PrometheusOperatorModule, PrometheusOperatorVersion)
	if err != nil {
		return nil, err
	}
	o := &PrometheusOperator{component: base}
	in, err := c.newInstaller()
	if err != nil {
		return nil, err
	}
	crds, err := in.applyDir(ctx, filepath.Join(o.moduleDir, "example", "prometheus-operator-crd"), nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus-operator CRDs: %w", err)
	}
	if err := in.waitCRDsEstablished(ctx, crds); err != nil {
		return nil, err
	}
	if err := o.Start(ctx); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = o.Stop()
		}
	}()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PrometheusNamespace}}
	if _, err := in.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := in.apply(ctx, operatedPrometheus()); err != nil {
		return nil, err
	}
	pod, err := o.waitPod(ctx, in.kube)
	if err != nil {
		return nil, err
	}
	if err := o.serve(ctx, in.kube, pod); err != nil {
		return nil, err
	}
	ok = true
	return o, nil
}

// operatedPrometheus is the Prometheus object: one replica, scraping every
// PrometheusScrapeInterval, its pod on the GPU node, whose pod addresses
// are of the virtual range.
func operatedPrometheus() *unstructured.Unstructured {
	release := map[string]any{"matchLabels": map[string]any{"release": OperatedRelease}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
		"metadata": map[string]any{"namespace": PrometheusNamespace, "name": OperatedPrometheus},
		"spec": map[string]any{
			"version":                         "v3.16.0",
			"replicas":                        int64(1),
			"scrapeInterval":                  PrometheusScrapeInterval.String(),
			"podMonitorSelector":              release,
			"podMonitorNamespaceSelector":     map[string]any{},
			"serviceMonitorSelector":          release,
			"serviceMonitorNamespaceSelector": map[string]any{},
			"nodeSelector":                    map[string]any{"nvidia.com/gpu.present": "true"},
			"tolerations":                     []any{map[string]any{"operator": "Exists"}},
		},
	}}
}

// Start runs the operator (again), on loopback, as a member of
// system:masters.
func (o *PrometheusOperator) Start(ctx context.Context) error {
	if err := o.notRunning(); err != nil {
		return err
	}
	ca, err := loadCA(filepath.Join(o.c.dir, "pki"))
	if err != nil {
		return fmt.Errorf("load rig CA: %w", err)
	}
	id, err := ca.issue(certSpec{cn: "aiconform-rig:" + o.name, orgs: []string{"system:masters"}, client: true})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	// The operator reads no kubeconfig: its client's files are flags.
	files := map[string][]byte{"client.crt": id.certPEM, "client.key": id.keyPEM, "ca.crt": ca.certPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(o.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	args := []string{
		"--apiserver=" + o.c.Server(),
		"--cert-file=" + filepath.Join(o.dir, "client.crt"),
		"--key-file=" + filepath.Join(o.dir, "client.key"),
		"--ca-file=" + filepath.Join(o.dir, "ca.crt"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(ports[0]),
		"--log-level=info",
	}
	if err := o.launch(args, childEnv()); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return waitStatus(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0]), o.proc, o.name, http.StatusOK)
}

// waitPod waits until the StatefulSet's pod runs, with an address.
func (o *PrometheusOperator) waitPod(ctx context.Context, cs kubernetes.Interface) (*corev1.Pod, error) {
	name := "prometheus-" + OperatedPrometheus + "-0"
	var pod *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(PrometheusNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			return false, nil
		}
		pod = p
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s of the operator's StatefulSet: %w", PrometheusNamespace, name, err)
	}
	return pod, nil
}

// serve starts the rig's server with the operator's configuration behind
// the pod's address, and keeps its configuration the operator's.
func (o *PrometheusOperator) serve(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return err
	}
	generated, err := o.generated(ctx, cs)
	if err != nil {
		return err
	}
	base, err := o.c.newComponent(ctx, o.opts, "prometheus-operated", "prometheus", PrometheusModule, PrometheusVersion)
	if err != nil {
		return err
	}
	base.dir = filepath.Join(o.c.dir, "operators", "prometheus-operated")
	p := &Prometheus{component: base}
	if _, err := p.writeKubeconfig(); err != nil {
		return err
	}
	proxy, err := o.c.serveScrapeProxy()
	if err != nil {
		return err
	}
	p.proxy = proxy
	if p.configured, err = o.rewrite(generated, p, pod.Name); err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return err
	}
	o.server = p
	if err := o.c.registerVirtual(netip.AddrPortFrom(ip, PrometheusPort), "127.0.0.1:"+strconv.Itoa(p.port)); err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	o.stop, o.done = stop, make(chan struct{})
	go o.reload(rctx, cs, p, pod.Name, generated)
	return nil
}

// generated is the configuration the operator generated, once it has.
func (o *PrometheusOperator) generated(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
	var out []byte
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(PrometheusNamespace).Get(ctx, "prometheus-"+OperatedPrometheus, metav1.GetOptions{})
		if err != nil || len(s.Data["prometheus.yaml.gz"]) == 0 {
			return false, nil
		}
		out = s.Data["prometheus.yaml.gz"]
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the operator's configuration Secret %s/prometheus-%s: %w", PrometheusNamespace, OperatedPrometheus, err)
	}
	return out, nil
}

// reload follows the operator's configuration Secret and reloads the
// server whenever it changes, until ctx ends.
func (o *PrometheusOperator) reload(ctx context.Context, cs kubernetes.Interface, p *Prometheus, podName string, last []byte) {
	defer close(o.done)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Secrets(PrometheusNamespace).Get(ctx, "prometheus-"+OperatedPrometheus, metav1.GetOptions{})
		if err != nil || bytes.Equal(s.Data["prometheus.yaml.gz"], last) {
			return false, nil
		}
		config, err := o.rewrite(s.Data["prometheus.yaml.gz"], p, podName)
		if err != nil {
			return false, nil
		}
		if err := os.WriteFile(filepath.Join(p.dir, "prometheus.yml"), config, 0o600); err != nil {
			return false, nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/-/reload", p.port), nil)
		if err != nil {
			return false, nil
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			last = s.Data["prometheus.yaml.gz"]
		}
		return false, nil
	})
}

// rewrite is the operator's gzipped configuration made runnable outside
// the cluster: the Kubernetes discovery authenticates with the server's
// kubeconfig (the operator's assumes a pod's service account), scrapes go
// through the rig's scrape proxy, the pod's name and shard replace the
// $(POD_NAME) and $(SHARD) the config-reloader would expand, and the rule
// files, which only the pod's volumes hold, are left out.
func (o *PrometheusOperator) rewrite(gz []byte, p *Prometheus, podName string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	// The variables the config-reloader expands from the pod's env: its
	// name, and its shard (the rig's Prometheus is one shard, 0).
	raw = bytes.ReplaceAll(raw, []byte("$(POD_NAME)"), []byte(podName))
	raw = bytes.ReplaceAll(raw, []byte("$(SHARD)"), []byte("0"))
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("the operator's configuration: %w", err)
	}
	delete(cfg, "rule_files")
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		job, ok := j.(map[string]any)
		if !ok {
			continue
		}
		job["proxy_url"] = "http://" + p.proxy.Addr
		sds, _ := job["kubernetes_sd_configs"].([]any)
		for _, s := range sds {
			if sd, ok := s.(map[string]any); ok {
				sd["kubeconfig_file"] = p.kubeconfig()
			}
		}
	}
	return yaml.Marshal(cfg)
}

// Server is the rig's Prometheus server standing behind the operator's pod.
func (o *PrometheusOperator) Server() *Prometheus { return o.server }

// Stop stops following the configuration, the server and the operator.
func (o *PrometheusOperator) Stop() error {
	if o.stop != nil {
		o.stop()
		<-o.done
		o.stop = nil
	}
	var errs []string
	if o.server != nil {
		if err := o.server.Stop(); err != nil {
			errs = append(errs, err.Error())
		}
		o.server = nil
	}
	if err := o.component.Stop(); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("prometheus-operator: %s", strings.Join(errs, "; "))
	}
	return nil
}
