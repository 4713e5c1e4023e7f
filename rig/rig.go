package rig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Binary names the rig expects in Options.BinDir (built by tools/build).
const (
	binEtcd      = "etcd"
	binAPIServer = "kube-apiserver"
	binKCM       = "kube-controller-manager"
	binScheduler = "kube-scheduler"
	binKwok      = "kwok"
	// kwokStagesFile is assembled by tools/build from the kwok module's
	// kustomize/stage defaults; the kwok binary has no stages built in.
	kwokStagesFile = "kwok-stages.yaml"
)

// Addresses the rig gives the cluster. They are fake: EndpointSlice
// validation rejects loopback addresses, so Services and Pods need
// non-loopback ones, and nothing ever dials them (see egress.go).
const (
	ServiceCIDR = "10.96.0.0/16"
	PodCIDR     = "10.244.0.0/16"
)

// Options configure a rig.
type Options struct {
	// Dir holds certificates, kubeconfigs, data, logs and state.json. It is
	// created if missing and owned by the rig: its etcd, logs and pki
	// subfolders are wiped at start. Empty means a new temporary
	// directory. Stop leaves it in place, logs included.
	Dir string
	// BinDir holds the binaries built by tools/build. Empty means
	// $AICONFORM_RIG_BIN, else the bin/ folder of the enclosing repository.
	BinDir string
	// ControlPlaneOnly starts etcd and kube-apiserver only: no controllers
	// overwrite statuses written by hand, no nodes exist, and no default
	// ServiceAccounts are created.
	ControlPlaneOnly bool
	// Detached starts every process in its own session so it outlives the
	// caller; Stop or StopDir ends them later.
	Detached bool
	// ProxyCommand, when set, runs the egress proxy as this command with
	// "--socket PATH --log PATH" appended, instead of inside the calling
	// process. Detached rigs need it: the proxy must outlive the caller.
	ProxyCommand []string
	// RealNodes is how many real nodes (realnode.go) join the full rig
	// beside the kwok ones: a kubelet with containerd and runc each, in
	// namespaces of their own, where pods really run. They need root and
	// the machine's packages tools/host-packages installs.
	RealNodes int
	// Profiling has kube-apiserver serve /debug/pprof to cluster admins:
	// bench/live has it collect its heap before each measurement.
	Profiling bool
	// Timeout bounds start-up as a whole. Zero means 2 minutes.
	Timeout time.Duration
	// Progress receives one line per start-up step. Nil discards them.
	Progress io.Writer
}

// Cluster is a running rig.
type Cluster struct {
	dir        string
	state      state
	restConfig *rest.Config
	caCert     []byte

	// mu guards procs and state once start-up is over: operators start,
	// stop and record webhooks while the rig runs.
	mu       sync.Mutex
	procs    []*process
	proxy    *EgressProxy // nil when the proxy runs as its own process
	proxyLog *os.File
	// virtual are the servers behind the rig's virtual addresses.
	virtual  []*http.Server
	stopOnce sync.Once
	stopErr  error
}

// state is what state.json records, so that `rig down` in another process
// can stop exactly the PIDs this rig started, and tests can reuse a rig.
type state struct {
	Server           string     `json:"server"`
	Kubeconfig       string     `json:"kubeconfig"`
	EgressSocket     string     `json:"egressSocket"`
	EgressLog        string     `json:"egressLog"`
	ControlPlaneOnly bool       `json:"controlPlaneOnly"`
	StartedAt        time.Time  `json:"startedAt"`
	Processes        []*process `json:"processes"`
	// Operators installed on the rig (operators.go), with the webhook
	// configurations to remove before their processes stop.
	Operators []*operatorRecord `json:"operators,omitempty"`
	// RealNodes whose containers are removed before their containerd stops.
	RealNodes []*realNode `json:"realNodes,omitempty"`
}

const stateFile = "state.json"

// Start brings up a rig and waits until it is usable: for the full rig,
// until /readyz answers, both kwok nodes are Ready and the default
// ServiceAccount exists; for ControlPlaneOnly, until /readyz answers. On
// error every process it started is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// Ports are picked free, then bound by the components a moment later;
	// another process (a parallel test package's rig) can take one in
	// between. That rare race costs a retry, not a failed suite.
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil || attempt == 3 || !errors.Is(err, errPortTaken) {
			return c, err
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "rig: retrying: %v\n", err)
		}
	}
}

func start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	began := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(progress, "rig: [%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	bins := []string{binEtcd, binAPIServer}
	if !opts.ControlPlaneOnly {
		bins = append(bins, binKCM, binScheduler, binKwok, kwokStagesFile)
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s (run `make tools`): %w", b, binDir, err)
		}
	}
	if opts.RealNodes > 0 {
		if opts.ControlPlaneOnly || opts.RealNodes > maxRealNodes {
			return nil, fmt.Errorf("real nodes: 1 to %d of them, on the full rig", maxRealNodes)
		}
		if err := checkRealNodeHost(binDir); err != nil {
			return nil, err
		}
		if _, err := rigImages(binDir); err != nil {
			return nil, err
		}
	}

	c := &Cluster{dir: dir}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	c.state.ControlPlaneOnly = opts.ControlPlaneOnly
	c.state.StartedAt = time.Now().UTC()

	pk, err := newPKI()
	if err != nil {
		return nil, err
	}
	files, err := pk.write(dir)
	if err != nil {
		return nil, fmt.Errorf("write certificates: %w", err)
	}
	c.caCert = pk.ca.certPEM
	step("certificates written to %s", filepath.Join(dir, "pki"))

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	c.state.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	logDir := filepath.Join(dir, "logs")
	env := childEnv()

	if err := c.startEgressProxy(ctx, opts, logDir); err != nil {
		return nil, err
	}
	step("egress proxy on %s", c.state.EgressSocket)

	etcd, err := c.start("etcd", filepath.Join(binDir, binEtcd), etcdArgs(dir, etcdClient, etcdPeer), logDir, env, opts.Detached)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, etcd, fmt.Sprintf("http://127.0.0.1:%d/health", etcdClient)); err != nil {
		return nil, fmt.Errorf("etcd health: %w", err)
	}
	step("etcd healthy on 127.0.0.1:%d", etcdClient)

	egressCfg := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(egressCfg, egressSelectorConfig(c.state.EgressSocket), 0o644); err != nil {
		return nil, err
	}
	api, err := c.start("kube-apiserver", filepath.Join(binDir, binAPIServer),
		apiserverArgs(files, etcdClient, apiPort, egressCfg, opts.Profiling), logDir, env, opts.Detached)
	if err != nil {
		return nil, err
	}

	c.state.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.state.Kubeconfig, c.state.Server, pk.ca.certPEM, pk.admin); err != nil {
		return nil, err
	}
	if c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.state.Kubeconfig); err != nil {
		return nil, err
	}
	if err := c.saveState(); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	if err := waitReadyz(ctx, api, cs); err != nil {
		return nil, err
	}
	step("kube-apiserver ready at %s", c.state.Server)
	if opts.ControlPlaneOnly {
		return c, nil
	}

	kubeconfigs := map[string]*keyPair{"kcm": pk.kcm, "scheduler": pk.scheduler, "kwok": pk.kwok}
	for name, id := range kubeconfigs {
		if err := writeKubeconfig(filepath.Join(dir, name+".kubeconfig"), c.state.Server, pk.ca.certPEM, id); err != nil {
			return nil, err
		}
	}
	kcm, err := c.start("kube-controller-manager", filepath.Join(binDir, binKCM),
		kcmArgs(dir, files), logDir, env, opts.Detached)
	if err != nil {
		return nil, err
	}
	sched, err := c.start("kube-scheduler", filepath.Join(binDir, binScheduler),
		schedulerArgs(dir), logDir, env, opts.Detached)
	if err != nil {
		return nil, err
	}
	// kwok loads ~/.kwok/kwok.yaml before any --config; a private HOME
	// keeps a developer's own kwok settings out of the rig.
	kwokHome := filepath.Join(dir, "kwok-home")
	if err := os.MkdirAll(kwokHome, 0o755); err != nil {
		return nil, err
	}
	kwokEnv := append(append([]string{}, env...), "HOME="+kwokHome)
	kwok, err := c.start("kwok", filepath.Join(binDir, binKwok),
		kwokArgs(dir, filepath.Join(binDir, kwokStagesFile)), logDir, kwokEnv, opts.Detached)
	if err != nil {
		return nil, err
	}
	step("kube-controller-manager, kube-scheduler and kwok started")

	if err := CreateNodes(ctx, cs); err != nil {
		return nil, err
	}
	watched := []*process{api, kcm, sched, kwok}
	if err := waitNodesReady(ctx, cs, watched, GPUNodeName, CPUNodeName); err != nil {
		return nil, err
	}
	step("nodes %s and %s Ready", GPUNodeName, CPUNodeName)
	if err := waitDefaultServiceAccount(ctx, cs, watched); err != nil {
		return nil, err
	}
	step("default ServiceAccount present")
	if err := createDevicePlugin(ctx, cs, watched); err != nil {
		return nil, err
	}
	step("device plugin DaemonSet %s/%s Ready on %s", DevicePluginNamespace, DevicePluginDaemonSet, GPUNodeName)
	for i := 1; i <= opts.RealNodes; i++ {
		if err := c.startRealNode(ctx, i, binDir, opts.Detached, step); err != nil {
			return nil, err
		}
	}
	step("rig ready")
	return c, nil
}

// StartControlPlane starts etcd and kube-apiserver only (Options'
// ControlPlaneOnly is forced): for fixtures whose statuses are written by
// hand and must not be overwritten by controllers.
func StartControlPlane(ctx context.Context, opts Options) (*Cluster, error) {
	opts.ControlPlaneOnly = true
	return Start(ctx, opts)
}

// ControlPlaneOnly reports whether the rig runs etcd and kube-apiserver
// only.
func (c *Cluster) ControlPlaneOnly() bool { return c.state.ControlPlaneOnly }

// Kubeconfig returns the path of the admin kubeconfig (system:masters).
func (c *Cluster) Kubeconfig() string { return c.state.Kubeconfig }

// RESTConfig returns a fresh copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Server returns the API server URL (https://127.0.0.1:PORT).
func (c *Cluster) Server() string { return c.state.Server }

// Dir returns the rig's state directory.
func (c *Cluster) Dir() string { return c.dir }

// CACert returns the PEM of the cluster CA; empty for an attached rig
// when the file cannot be read.
func (c *Cluster) CACert() []byte { return c.caCert }

// EgressLog returns the path of the egress proxy's decision log.
func (c *Cluster) EgressLog() string { return c.state.EgressLog }

// PIDs returns the PID of each component the rig started, by name.
func (c *Cluster) PIDs() map[string]int {
	m := map[string]int{}
	for _, p := range c.state.Processes {
		m[p.Name] = p.PID
	}
	return m
}

// EgressRefusals returns the egress proxy's log lines for refused
// connections, oldest first.
func (c *Cluster) EgressRefusals() ([]string, error) {
	data, err := os.ReadFile(c.state.EgressLog)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, " "+egressRefusedMarker+" ") {
			out = append(out, line)
		}
	}
	return out, nil
}

// Stop stops, in reverse start order, every process this rig started and
// nothing else. It is safe to call more than once. Operators' webhook
// configurations go first, while their servers still answer.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if len(c.state.Operators) > 0 && c.apiserverRunning() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if err := c.removeWebhooks(ctx, ""); err != nil {
				errs = append(errs, err)
			}
			cancel()
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if err := c.stopRealNodes(); err != nil {
			errs = append(errs, err)
		}
		for i := len(c.procs) - 1; i >= 0; i-- {
			if err := c.procs[i].stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if err := c.stopVirtual(); err != nil {
			errs = append(errs, fmt.Errorf("virtual addresses: %w", err))
		}
		if c.proxy != nil {
			if err := c.proxy.Close(); err != nil {
				errs = append(errs, fmt.Errorf("egress proxy: %w", err))
			}
		}
		if c.proxyLog != nil {
			_ = c.proxyLog.Close()
		}
		if len(c.procs) > 0 {
			if err := os.Remove(filepath.Join(c.dir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Attach returns the rig recorded in dir/state.json, after checking that
// its processes still run and /readyz answers. Stop on the result stops
// that rig, as StopDir does.
func Attach(ctx context.Context, dir string) (*Cluster, error) {
	c, err := loadState(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range c.procs {
		if !p.isOurs() {
			return nil, fmt.Errorf("rig in %s: %s (pid %d) is not running", dir, p.Name, p.PID)
		}
	}
	if c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.state.Kubeconfig); err != nil {
		return nil, err
	}
	c.caCert = c.restConfig.CAData
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := waitReadyz(ctx, nil, cs); err != nil {
		return nil, err
	}
	return c, nil
}

// StopDir stops the processes recorded in dir/state.json, checking each
// PID still runs the recorded executable before signalling it. A missing
// state file means there is nothing to stop.
func StopDir(dir string) error {
	c, err := loadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.Stop()
}

func loadState(dir string) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	if err := json.Unmarshal(data, &c.state); err != nil {
		return nil, fmt.Errorf("read %s: %w", stateFile, err)
	}
	c.procs = c.state.Processes
	return c, nil
}

func (c *Cluster) saveState() error {
	data, err := json.MarshalIndent(c.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(c.dir, stateFile))
}

// start runs one component and records its PID before anything else can
// fail, so a failed start still stops it.
func (c *Cluster) start(name, exe string, args []string, logDir string, env []string, detached bool, files ...*os.File) (*process, error) {
	p, err := startProcess(name, exe, args, logDir, env, detached, files...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.state.Processes = c.procs
	if err := c.saveState(); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *Cluster) startEgressProxy(ctx context.Context, opts Options, logDir string) error {
	sock, err := shortSocket(c.dir, "egress.sock")
	if err != nil {
		return err
	}
	c.state.EgressSocket = sock
	c.state.EgressLog = filepath.Join(logDir, "egress-proxy.log")
	if len(opts.ProxyCommand) > 0 {
		args := append(append([]string{}, opts.ProxyCommand[1:]...), "--socket", sock, "--log", c.state.EgressLog)
		p, err := c.start("egress-proxy", opts.ProxyCommand[0], args, logDir, childEnv(), opts.Detached)
		if err != nil {
			return err
		}
		// The apiserver fails its egress dials, not its start-up, when the
		// socket is missing; waiting here turns that into a clear error.
		return waitSocket(ctx, p, sock)
	}
	f, err := os.OpenFile(c.state.EgressLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c.proxyLog = f
	c.proxy, err = ListenEgressProxy(sock, f)
	return err
}

func prepareDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "aiconform-rig-"); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if old, err := loadState(abs); err == nil {
		for _, p := range old.procs {
			if p.isOurs() {
				return "", fmt.Errorf("a rig is already running in %s (%s pid %d): stop it first", abs, p.Name, p.PID)
			}
		}
	}
	// A previous rig's data would carry objects signed by a CA that no
	// longer exists; each start begins from empty etcd.
	for _, sub := range []string{"etcd", "logs", "pki"} {
		if err := os.RemoveAll(filepath.Join(abs, sub)); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(abs, "logs"), 0o755); err != nil {
		return "", err
	}
	return abs, nil
}

// resolveBinDir finds the binaries: explicit, then $AICONFORM_RIG_BIN,
// then bin/ in the nearest parent directory that has one with etcd in it
// (go test runs in the package directory, make in the repo root).
func resolveBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("AICONFORM_RIG_BIN")
	}
	if dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "bin", binEtcd)); err == nil {
			return filepath.Join(d, "bin"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no bin/%s above %s: run `make tools` or set AICONFORM_RIG_BIN", binEtcd, wd)
		}
	}
}

// freePorts asks the kernel for n distinct free loopback ports. All
// listeners stay open until every port is chosen, so the n are distinct;
// another process could still take one before the component binds it,
// which then fails loudly rather than silently.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// childEnv is the environment the components get: ours without proxy
// variables, which Go HTTP clients in the components would otherwise
// honour and send traffic off the machine.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "KUBECONFIG":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "NO_PROXY=*")
}

// waitHTTP polls a plain-HTTP loopback health URL until it answers 200.
func waitHTTP(ctx context.Context, p *process, url string) error {
	return waitOK(ctx, p, url, &http.Client{Timeout: time.Second})
}

// waitOK polls url with client until it answers 200, or p ends.
func waitOK(ctx context.Context, p *process, url string, client *http.Client) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := pause(ctx, 100*time.Millisecond, p); err != nil {
			return err
		}
	}
}

// waitReadyz polls /readyz until it answers "ok".
func waitReadyz(ctx context.Context, api *process, cs kubernetes.Interface) error {
	var last error
	for {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		if err := pause(ctx, 100*time.Millisecond, api); err != nil {
			return fmt.Errorf("kube-apiserver /readyz: %w (last: %v)", err, last)
		}
	}
}

// pause sleeps d, failing early when ctx ends or any watched process has
// exited: a crashed component must fail the start at once, with its log.
func pause(ctx context.Context, d time.Duration, watched ...*process) error {
	for _, p := range watched {
		if p != nil && !p.running() {
			return p.exitError()
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
