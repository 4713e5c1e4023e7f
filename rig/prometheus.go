package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aiconform/aiconform/simulate"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The monitoring system the rig runs: a Prometheus server, built by
// tools/build from tools/prometheus (same pin; a test keeps them equal).
const (
	PrometheusModule  = "github.com/prometheus/prometheus"
	PrometheusVersion = "v0.316.0" // Prometheus 3.16.0
)

// Where the rig's Prometheus shows in the cluster: a pod of the
// prometheus-community chart's shape on the GPU node, whose address (of
// the virtual range) has the server's loopback listener behind it, and
// the chart's Service in front of it.
const (
	PrometheusNamespace = "monitoring"
	PrometheusService   = "prometheus-server"
	PrometheusPort      = 9090
)

// PrometheusServiceLabels are the chart's labels of its server Service.
var PrometheusServiceLabels = map[string]string{"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"}

// PrometheusScrapeInterval is how often the rig's Prometheus scrapes:
// short, so that a test sees a change within seconds.
const PrometheusScrapeInterval = time.Second

// Prometheus is a real Prometheus server, a process of the rig's (its
// pod on the GPU node only stands for it), discovering the rig's pods with
// its Kubernetes discovery and scraping those annotated
// prometheus.io/scrape=true (on prometheus.io/port), the convention of the
// community chart's kubernetes-pods job, or those of one label
// (ServePrometheus). A pod's address is a fake one
// unless it is in the virtual range with a listener registered behind it
// (ServeVirtual): Prometheus scrapes through a forward proxy of the rig's
// that goes there and nowhere else, so such a target is up and every
// other is down, as on a cluster where the pod does not serve.
//
// Stop stops the server; its Service stays, and the API server's proxy
// then finds no one behind it, as on a cluster whose Prometheus crashed.
type Prometheus struct {
	component
	port  int // where the server's API listens, on loopback
	proxy *http.Server
	// keep, when set, is the label (key=value) of the pods scraped, in
	// place of the annotation; interval is how often.
	keep     string
	interval time.Duration
	// configured, when set, is the whole configuration in place of the
	// kubernetes-pods job (the Prometheus Operator's, rewritten).
	configured []byte
}

// InstallPrometheus starts Prometheus and creates its pod and Service in
// the cluster, waiting until it is ready. The rig needs its nodes.
func (c *Cluster) InstallPrometheus(ctx context.Context, opts OperatorOptions) (*Prometheus, error) {
	p, err := c.startPrometheus(ctx, opts, "", PrometheusScrapeInterval)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.createPod(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// ServePrometheus starts Prometheus scraping the pods labelled keep
// (key=value) every interval and puts it behind addr, an address of the
// virtual range a pod of the caller's has; it creates nothing in the
// cluster.
func (c *Cluster) ServePrometheus(ctx context.Context, opts OperatorOptions, keep string, interval time.Duration, addr netip.AddrPort) (*Prometheus, error) {
	p, err := c.startPrometheus(ctx, opts, keep, interval)
	if err != nil {
		return nil, err
	}
	if err := c.registerVirtual(addr, "127.0.0.1:"+strconv.Itoa(p.port)); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

func (c *Cluster) startPrometheus(ctx context.Context, opts OperatorOptions, keep string, interval time.Duration) (*Prometheus, error) {
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	base, err := c.newComponent(ctx, opts, "prometheus", "prometheus", PrometheusModule, PrometheusVersion)
	if err != nil {
		return nil, err
	}
	p := &Prometheus{component: base, keep: keep, interval: interval}
	if _, err := p.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// Start runs Prometheus (again, on the same port and storage) and waits
// until it is ready.
func (p *Prometheus) Start(ctx context.Context) error {
	if err := p.notRunning(); err != nil {
		return err
	}
	if p.proxy == nil {
		proxy, err := p.c.serveScrapeProxy()
		if err != nil {
			return err
		}
		p.proxy = proxy
	}
	if p.port == 0 {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		p.port = ports[0]
	}
	config := filepath.Join(p.dir, "prometheus.yml")
	if err := os.WriteFile(config, p.config(), 0o600); err != nil {
		return err
	}
	args := []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(p.dir, "data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(p.port),
		"--log.level=info",
		// On loopback only: what the operator's config-reloader calls.
		"--web.enable-lifecycle",
	}
	if err := p.launch(args, childEnv()); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return waitStatus(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/-/ready", p.port), p.proc, "prometheus", http.StatusOK)
}

// WaitUp waits until at least n of Prometheus' targets are up, as its own
// API says.
func (p *Prometheus) WaitUp(ctx context.Context, n int) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	last := 0
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/api/v1/targets?state=active", p.port), nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		defer func() { _ = resp.Body.Close() }()
		var a struct {
			Data struct {
				ActiveTargets []simulate.PrometheusTarget `json:"activeTargets"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return false, nil
		}
		last = 0
		for _, t := range a.Data.ActiveTargets {
			if t.Health == "up" {
				last++
			}
		}
		return last >= n, nil
	})
	if err != nil {
		return fmt.Errorf("prometheus: %d of %d targets up: %w", last, n, err)
	}
	return nil
}

// Stop stops Prometheus and its scrape proxy.
func (p *Prometheus) Stop() error {
	if p.proxy != nil {
		_ = p.proxy.Close()
		p.proxy = nil
	}
	return p.component.Stop()
}

// config is the server's configuration: one job, the community chart's
// kubernetes-pods, scraping through the rig's scrape proxy (unless it is
// configured otherwise).
func (p *Prometheus) config() []byte {
	if p.configured != nil {
		return p.configured
	}
	keepLabel, keepValue := "__meta_kubernetes_pod_annotation_prometheus_io_scrape", "true"
	if k, v, ok := strings.Cut(p.keep, "="); ok {
		keepLabel, keepValue = "__meta_kubernetes_pod_label_"+simulate.PromLabelName(k), v
	}
	return fmt.Appendf(nil, `global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
scrape_configs:
- job_name: kubernetes-pods
  kubernetes_sd_configs:
  - role: pod
    kubeconfig_file: %[2]q
  proxy_url: http://%[3]s
  relabel_configs:
  - source_labels: [%[4]s]
    action: keep
    regex: %[5]q
  - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
    action: replace
    regex: '([^:]+)(?::\d+)?;(\d+)'
    replacement: $1:$2
    target_label: __address__
  - source_labels: [__meta_kubernetes_namespace]
    target_label: namespace
  - source_labels: [__meta_kubernetes_pod_name]
    target_label: pod
  - source_labels: [__meta_kubernetes_pod_node_name]
    target_label: node
`, model.Duration(p.interval), p.kubeconfig(), p.proxy.Addr, keepLabel, keepValue)
}

// createPod creates the server's pod on the GPU node and its Service,
// and registers the server behind the pod's address once kwok gave it
// one. The API server's service proxy goes only to an endpoint that is a
// pod of that address, so the server needs a pod, not only a Service.
func (p *Prometheus) createPod(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(p.c.RESTConfig())
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PrometheusNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: PrometheusNamespace, Name: PrometheusService + "-0", Labels: PrometheusServiceLabels},
		Spec: corev1.PodSpec{
			NodeName:    GPUNodeName,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "prometheus-server", Image: "quay.io/prometheus/prometheus:v3.16.0",
				Ports: []corev1.ContainerPort{{ContainerPort: PrometheusPort, Protocol: corev1.ProtocolTCP}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(PrometheusNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var ip netip.Addr
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods(PrometheusNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || got.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		ip, err = netip.ParseAddr(got.Status.PodIP)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("pod %s/%s: waiting for an address: %w", PrometheusNamespace, pod.Name, err)
	}
	if err := p.c.registerVirtual(netip.AddrPortFrom(ip, PrometheusPort), "127.0.0.1:"+strconv.Itoa(p.port)); err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: PrometheusNamespace, Name: PrometheusService, Labels: PrometheusServiceLabels},
		Spec: corev1.ServiceSpec{Selector: PrometheusServiceLabels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt(PrometheusPort), Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := cs.CoreV1().Services(PrometheusNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// serveScrapeProxy starts the forward proxy Prometheus scrapes through: a
// plain HTTP request for a virtual address goes to the listener
// registered behind it, anything else is refused. It serves until the rig
// stops.
func (c *Cluster) serveScrapeProxy() (*http.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	dir := virtualDir(c.state.EgressSocket)
	// Each connection goes where the virtual address leads: a listener of
	// the rig's, or a real node's network.
	transport := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, err
		}
		up, err := resolveVirtual(dir, ap)
		if err != nil {
			return nil, err
		}
		return up.dial()
	}}
	rp := &httputil.ReverseProxy{Transport: transport, Rewrite: func(r *httputil.ProxyRequest) {}, ErrorHandler: scrapeFailed}
	srv := &http.Server{Addr: ln.Addr().String(), ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.URL.Host)
		if r.Method != http.MethodGet || r.URL.Scheme != "http" || err != nil || !VirtualRange.Contains(ap.Addr()) {
			http.Error(w, "aiconform rig scrape proxy: only GETs of the virtual range", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.virtual = append(c.virtual, srv)
	c.mu.Unlock()
	return srv, nil
}

// scrapeFailed answers a scrape the proxy could not carry with 502, as
// httputil's default does, but logs only what a test reader needs: a
// scrape Prometheus gave up on (its timeout, or its shutdown when the rig
// stops) is routine, and logged by the default handler it buried a failing
// test's output under hundreds of "context canceled" lines.
func scrapeFailed(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, context.Canceled) && !errors.Is(r.Context().Err(), context.Canceled) {
		log.Printf("rig scrape proxy: %s %s: %v", r.Method, r.URL, err)
	}
	w.WriteHeader(http.StatusBadGateway)
}
