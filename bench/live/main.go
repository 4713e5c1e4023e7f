// Command live measures `aiconform check all` against kubectl on a real API
// server holding the production-size synthetic cluster of package bench:
// 2,000 nodes (500 with 8 GPUs), 50,000 pods, KServe and KubeRay healthy.
//
//	go run ./bench/live            # from the repository root; bin/ must hold the rig's binaries
//
// It starts a bare control plane (etcd and kube-apiserver from bin/, on
// 127.0.0.1), writes the "demo" scenario of fixtures/scenarios (the
// operators' real CRDs, controllers, webhooks, an InferenceService and a
// RayCluster) and then the bulk of the cluster, and times, three runs each:
// `kubectl get pods -A`; the nine kubectl calls of a hand-made report;
// `aiconform check all` and `check robust_controller`, built from this tree,
// with the CPU the API server spent while each ran. It prints the median
// wall time and the largest peak RSS of each and the scale budget's ratios,
// beside two floors: reading the GPU nodes' pods alone (the part of check
// all's time that the accelerator checks' truth sets), and making every
// request of a check all run again with nothing done with the answers (the
// part that what the checks read sets; replay.go). It then times single
// LISTs of the kinds a run makes, and stops the control plane at the end,
// on error and on Ctrl-C too. -profile DIR adds one run of
// the same checks in a child process of this program that writes its CPU
// and heap profiles; -hold keeps the cluster up afterwards, for measuring by
// hand, until Ctrl-C.
//
// Writing the cluster is the slow part. On this machine (2 cores, shared by
// etcd, kube-apiserver and the writer) the 50,000 pods take 3.5 to 4.25
// minutes (create plus status update, about 200 to 235 pods a second with
// 32 writers); the 2,000 nodes 5 to 7 seconds, the 4,200 Deployments and
// ReplicaSets 26 to 35 seconds. A whole run, measurements included, takes
// 6.5 to 7 minutes. bench/README.md has the figures measured.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aiconform/aiconform/bench"
	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/builtin"
	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures/scenarios"
	"github.com/aiconform/aiconform/report"
	"github.com/aiconform/aiconform/rig"
	"github.com/aiconform/aiconform/simulate"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

type options struct {
	size    bench.Size
	runs    int
	workers int
	// profiled, when set, is a directory: this process runs check all once
	// against $KUBECONFIG, writes its profiles there and exits. -profile
	// runs this program so.
	profiled string
	// profile is where the profiled run writes, when set.
	profile string
	// recordRequests, when set, is a file: this process runs check all
	// once against $KUBECONFIG, writes the requests it made there and
	// exits. replayRequests, when set, is such a file: this process makes
	// its requests again and exits. Each measured run does, as a floor.
	recordRequests, replayRequests string
	// hold keeps the cluster up after the measurements until Ctrl-C.
	hold bool
	// memLimit, when set, adds a run of check all with GOMEMLIMIT set to
	// it to each round: what a tighter heap costs in time.
	memLimit string
	// perRequirement adds one run of `check ID` per requirement of the
	// catalog: what each costs of check all's budget.
	perRequirement bool
}

func run() (err error) {
	var o options
	flag.IntVar(&o.size.Nodes, "nodes", bench.Production.Nodes, "nodes to write")
	flag.IntVar(&o.size.GPUNodes, "gpu-nodes", bench.Production.GPUNodes, "how many of the nodes have GPUs")
	flag.IntVar(&o.size.PodsPerNode, "pods-per-node", bench.Production.PodsPerNode, "pods on each node")
	flag.IntVar(&o.size.Namespaces, "namespaces", bench.Production.Namespaces, "namespaces the pods are spread over")
	flag.IntVar(&o.runs, "runs", 3, "runs of each measurement (0: none, with -hold)")
	flag.IntVar(&o.workers, "workers", 32, "concurrent writers")
	flag.StringVar(&o.profiled, "profiled-check-all", "", "(internal) run check all once against $KUBECONFIG and write its profiles into this directory")
	flag.StringVar(&o.recordRequests, "record-requests", "", "(internal) run check all once against $KUBECONFIG and write the requests it made into this file")
	flag.StringVar(&o.replayRequests, "replay-requests", "", "(internal) make the requests recorded in this file again against "+
		"$KUBECONFIG, reading the answers and decoding none")
	flag.StringVar(&o.profile, "profile", "", "after the measurements, run check all once more, writing cpu.pprof and heap.pprof into this directory")
	flag.StringVar(&o.memLimit, "memlimit", "", "also time check all with GOMEMLIMIT set to this (100MiB, say) in each run")
	flag.BoolVar(&o.perRequirement, "per-requirement", true, "after the measurements, time `check ID` once for each requirement of the catalog")
	flag.BoolVar(&o.hold, "hold", false, "keep the cluster up after the measurements, until Ctrl-C, and print its kubeconfig")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.profiled != "" {
		return profiledCheckAll(ctx, o.profiled)
	}
	if o.recordRequests != "" {
		return recordCheckAll(ctx, o.recordRequests)
	}
	if o.replayRequests != "" {
		return replayRequests(ctx, o.replayRequests)
	}
	if o.profile != "" {
		if o.profile, err = filepath.Abs(o.profile); err != nil {
			return err
		}
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}

	root, err := repoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "aiconform-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The operators' modules come from the module cache, or through the Go
	// module proxy on a machine that has not read them yet, as the rig's
	// own do.

	step := stepper()
	aiconform := filepath.Join(tmp, "aiconform")
	build := exec.CommandContext(ctx, "go", "build", "-o", aiconform, "./cmd/aiconform")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/aiconform: %w", err)
	}
	step("built %s", aiconform)
	mods, err := scenarios.OperatorModules()
	if err != nil {
		return err
	}

	// The demo's control plane: etcd, kube-apiserver and the metrics
	// adapter behind its APIServices.
	demo := scenarios.All()[0]
	demo.Profiling = true // settle collects its heap
	c, err := scenarios.Start(ctx, filepath.Join(tmp, "rig"), filepath.Join(root, "bin"), demo)
	if err != nil {
		return err
	}
	defer func() {
		if serr := c.Stop(); serr != nil && err == nil {
			err = fmt.Errorf("stop the control plane: %w", serr)
		}
		step("control plane stopped")
	}()

	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.WarningHandler = rest.NoWarnings{}
	if err := scenarios.Build(ctx, cfg, mods, demo); err != nil {
		return fmt.Errorf("scenario demo: %w", err)
	}
	step("the demo scenario written: KServe, KubeRay, Kubeflow Trainer with JobSet, and Kueue with an admitted gang")

	objs := bench.Workload(o.size, time.Now())
	kube, err := write(ctx, cfg, objs, o.workers, step)
	if err != nil {
		return err
	}
	// What the GPU nodes' DCGM Exporter pods serve, behind their addresses,
	// for the API server's pod proxy.
	for _, mt := range objs.Metrics {
		if err := c.ServeVirtual(mt.Addr, simulate.MetricsHandler(mt.Body)); err != nil {
			return err
		}
	}
	step("the metrics of %d DCGM Exporter pods served behind their addresses", len(objs.Metrics))
	// A real Prometheus in place of the demo's recorded one, behind its
	// pod's address: it discovers the exporter pods among all the pods and
	// scrapes them, and the checks query it once where they would read
	// each exporter.
	prom, err := c.ServePrometheus(ctx, rig.OperatorOptions{BinDir: filepath.Join(root, "bin")}, "app.kubernetes.io/name=nvidia-dcgm-exporter",
		// Every minute, as Prometheus does by default: a few scrapes a
		// second, which take little of the machine's two cores from what
		// is measured.
		time.Minute, netip.AddrPortFrom(scenarios.PrometheusIP, rig.PrometheusPort))
	if err != nil {
		return err
	}
	defer func() { _ = prom.Stop() }()
	if err := prom.WaitUp(ctx, len(objs.Metrics)); err != nil {
		return err
	}
	step("Prometheus scrapes the %d DCGM Exporter pods", len(objs.Metrics))

	m := &measurer{memLimit: o.memLimit, root: root, kubeconfig: c.Kubeconfig(), home: filepath.Join(tmp, "home"), step: step, apiserver: c.PIDs()["kube-apiserver"], kube: kube,
		renew: func(ctx context.Context) error { return renewLeases(ctx, kube) }, gpuNodes: gpuNodes(objs)}
	if err := os.MkdirAll(m.home, 0o755); err != nil {
		return err
	}
	if o.runs > 0 {
		if err := m.all(ctx, o.runs, aiconform, filepath.Join(tmp, "report"), c.PIDs()); err != nil {
			return err
		}
		if o.perRequirement {
			if err := m.each(ctx, aiconform, filepath.Join(tmp, "report-each")); err != nil {
				return err
			}
		}
		if err := probe(ctx, kube, objs); err != nil {
			return err
		}
	}
	if o.profile != "" {
		if err := m.renew(ctx); err != nil {
			return err
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		var out bytes.Buffer
		s, err := m.time(ctx, &out, self, "-profiled-check-all", o.profile)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out.String())
		}
		step("check all, profiled: %s, %d MiB; cpu.pprof and heap.pprof in %s", s.wall.Round(10*time.Millisecond), s.rssKB/1024, o.profile)
	}
	if o.hold {
		step("holding the cluster until Ctrl-C: KUBECONFIG=%s", c.Kubeconfig())
		// Its Leases are renewed while it is held, as the controllers
		// this cluster has no process of would keep them.
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
				if err := m.renew(ctx); err != nil && ctx.Err() == nil {
					return err
				}
			}
		}
	}
	return nil
}

// gpuNodes are the names of objs' nodes with GPUs.
func gpuNodes(objs *bench.Objects) []string {
	var names []string
	for _, n := range objs.Nodes {
		if _, ok := n.Status.Capacity["nvidia.com/gpu"]; ok {
			names = append(names, n.Name)
		}
	}
	return names
}

// nodePods reads the pods of every GPU node as check all does, and no
// more: one LIST each by spec.nodeName, in protobuf, eight at a time
// (checks.EachNodePods), the bodies read and not decoded. Its wall time
// and kube-apiserver's CPU are the part of check all's that no change to
// aiconform can take away while the accelerator checks judge every pod of
// every accelerator node.
func (m *measurer) nodePods(ctx context.Context) (sample, int64, error) {
	server := cpuTime(m.apiserver)
	start := time.Now()
	n, err := readAll(ctx, m.gpuNodes, 8, m.readNodePods)
	return sample{wall: time.Since(start), server: cpuTime(m.apiserver) - server}, n, err
}

// readNodePods reads one LIST of a node's pods, as aiconform asks for it,
// to its end, and gives its size.
func (m *measurer) readNodePods(ctx context.Context, node string) (int64, error) {
	body, err := m.kube.CoreV1().RESTClient().Get().Resource("pods").
		Param("fieldSelector", "spec.nodeName="+node).Param("limit", "500").
		SetHeader("Accept", "application/vnd.kubernetes.protobuf, application/json").Stream(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the pods of %s: %w", node, err)
	}
	defer func() { _ = body.Close() }()
	n, err := io.Copy(io.Discard, body)
	if err != nil {
		return n, fmt.Errorf("list the pods of %s: %w", node, err)
	}
	return n, nil
}

// record runs check all once in a child process that records its
// requests (-record-requests), and gives the file they are in.
func (m *measurer) record(ctx context.Context) (string, error) {
	if err := m.renew(ctx); err != nil {
		return "", err
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	file := filepath.Join(m.home, "requests.jsonl")
	var out bytes.Buffer
	if _, err := m.time(ctx, &out, self, "-record-requests", file); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out.String())
	}
	reqs, err := readRequests(file)
	if err != nil {
		return "", err
	}
	c, err := chains(reqs)
	if err != nil {
		return "", err
	}
	m.step("check all's %d requests recorded, %d lists and reads", len(reqs), len(c))
	return file, nil
}

// replay makes the requests of file again in a child process
// (-replay-requests), timed as the commands are, and gives the bytes it
// read.
func (m *measurer) replay(ctx context.Context, file string) (sample, int64, error) {
	self, err := os.Executable()
	if err != nil {
		return sample{}, 0, err
	}
	var out bytes.Buffer
	s, err := m.time(ctx, &out, self, "-replay-requests", file)
	if err != nil {
		return s, 0, fmt.Errorf("%w\n%s", err, out.String())
	}
	n, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
	return s, n, err
}

// probe times, one request at a time, the kinds of LIST a check all run
// makes, to tell the API server's share from aiconform's.
func probe(ctx context.Context, kube kubernetes.Interface, objs *bench.Objects) error {
	gpus := gpuNodes(objs)
	const n = 20
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintf(w, "one LIST, sequential (mean of %d)\titems\ttime\n", n)
	for _, q := range []struct {
		what string
		ns   string
		opts func(i int) metav1.ListOptions
	}{
		{"pods -A --field-selector spec.nodeName=GPU-NODE, limit=500 (as paginated)", "", func(i int) metav1.ListOptions {
			return metav1.ListOptions{FieldSelector: "spec.nodeName=" + gpus[i%len(gpus)], Limit: 500}
		}},
		{"pods -A --field-selector spec.nodeName=GPU-NODE, no limit", "", func(i int) metav1.ListOptions {
			return metav1.ListOptions{FieldSelector: "spec.nodeName=" + gpus[i%len(gpus)]}
		}},
		{"pods -A -l serving.kserve.io/inferenceservice, limit=500", "", func(int) metav1.ListOptions {
			return metav1.ListOptions{LabelSelector: "serving.kserve.io/inferenceservice", Limit: 500}
		}},
		{"pods -n kserve -l control-plane=kserve-controller-manager, limit=500", "kserve", func(int) metav1.ListOptions {
			return metav1.ListOptions{LabelSelector: "control-plane=kserve-controller-manager", Limit: 500}
		}},
	} {
		var total time.Duration
		items := 0
		for i := range n {
			start := time.Now()
			l, err := kube.CoreV1().Pods(q.ns).List(ctx, q.opts(i))
			if err != nil {
				return fmt.Errorf("probe %s: %w", q.what, err)
			}
			total += time.Since(start)
			items = len(l.Items)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\n", q.what, items, (total / n).Round(100*time.Microsecond))
	}
	return w.Flush()
}

// repoRoot is the enclosing directory with go.mod.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s: run from the repository", wd)
		}
	}
}

func stepper() func(format string, args ...any) {
	began := time.Now()
	return func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "live: [%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
}

// write creates objs with the statuses kubelets and controllers would
// write, since none runs on a bare control plane. Owner references get the
// UIDs the server gave the owners.
func write(ctx context.Context, cfg *rest.Config, objs *bench.Objects, workers int, step func(string, ...any)) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return kube, writeAll(ctx, kube, objs, workers, step)
}

func writeAll(ctx context.Context, kube kubernetes.Interface, objs *bench.Objects, workers int, step func(string, ...any)) error {
	began := time.Now()

	err := forEach(ctx, workers, objs.Namespaces, func(ctx context.Context, ns *corev1.Namespace) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name, Labels: ns.Labels}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
		// Pods need their ServiceAccount; the controller that makes
		// "default" does not run here.
		_, err = kube.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("serviceaccount %s/default: %w", ns.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	step("%d namespaces with their default ServiceAccount", len(objs.Namespaces))

	t := time.Now()
	err = forEach(ctx, workers, objs.Nodes, func(ctx context.Context, n *corev1.Node) error {
		st := n.Status
		created, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		created.Status = st
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of node %s: %w", n.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	step("%d nodes in %s", len(objs.Nodes), time.Since(t).Round(time.Second))

	t = time.Now()
	depUIDs := &uids{m: map[string]types.UID{}}
	err = forEach(ctx, workers, objs.Deployments, func(ctx context.Context, d *appsv1.Deployment) error {
		st := d.Status
		created, err := kube.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		depUIDs.set(d.Namespace+"/"+d.Name, created.UID)
		st.ObservedGeneration = created.Generation
		created.Status = st
		if _, err := kube.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	rsUIDs := &uids{m: map[string]types.UID{}}
	err = forEach(ctx, workers, objs.ReplicaSets, func(ctx context.Context, rs *appsv1.ReplicaSet) error {
		rs = rs.DeepCopy()
		rs.OwnerReferences[0].UID = depUIDs.get(rs.Namespace + "/" + rs.OwnerReferences[0].Name)
		st := rs.Status
		created, err := kube.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		rsUIDs.set(rs.Namespace+"/"+rs.Name, created.UID)
		created.Status = st
		if _, err := kube.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	step("%d Deployments and %d ReplicaSets in %s", len(objs.Deployments), len(objs.ReplicaSets), time.Since(t).Round(time.Second))

	dsUIDs := &uids{m: map[string]types.UID{}}
	err = forEach(ctx, workers, objs.DaemonSets, func(ctx context.Context, ds *appsv1.DaemonSet) error {
		st := ds.Status
		created, err := kube.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The demo scenario has the same device plugin for its own GPU
			// node: one DaemonSet serves both, as on a real cluster.
			created, err = kube.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
			st.CurrentNumberScheduled++
			st.DesiredNumberScheduled++
			st.NumberReady++
			st.UpdatedNumberScheduled++
			st.NumberAvailable++
		}
		if err != nil {
			return fmt.Errorf("daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		dsUIDs.set(ds.Namespace+"/"+ds.Name, created.UID)
		st.ObservedGeneration = created.Generation
		created.Status = st
		if _, err := kube.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	step("%d DaemonSets", len(objs.DaemonSets))

	t = time.Now()
	var done atomic.Int64
	err = forEach(ctx, workers, objs.Pods, func(ctx context.Context, p *corev1.Pod) error {
		p = p.DeepCopy()
		switch ref := &p.OwnerReferences[0]; ref.Kind {
		case "ReplicaSet":
			ref.UID = rsUIDs.get(p.Namespace + "/" + ref.Name)
		case "DaemonSet":
			ref.UID = dsUIDs.get(p.Namespace + "/" + ref.Name)
		}
		st := p.Status
		created, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		created.Status = st
		if _, err := kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if n := done.Add(1); n%5000 == 0 {
			step("%d pods (%.0f a second)", n, float64(n)/time.Since(t).Seconds())
		}
		return nil
	})
	if err != nil {
		return err
	}
	step("%d pods in %s", len(objs.Pods), time.Since(t).Round(time.Second))

	// NVIDIA's DRA driver and DRANET on every GPU node: their classes
	// (the demo scenario may have made them), a slice per node and
	// driver, and the claims allocated.
	for _, c := range objs.DeviceClasses {
		c = c.DeepCopy()
		c.UID = ""
		if _, err := kube.ResourceV1().DeviceClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("DeviceClass %s: %w", c.Name, err)
		}
	}
	for _, c := range objs.RuntimeClasses {
		c = c.DeepCopy()
		c.UID = ""
		if _, err := kube.NodeV1().RuntimeClasses().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("RuntimeClass %s: %w", c.Name, err)
		}
	}
	err = forEach(ctx, workers, objs.ResourceSlices, func(ctx context.Context, sl *resourcev1.ResourceSlice) error {
		sl = sl.DeepCopy()
		sl.UID = ""
		_, err := kube.ResourceV1().ResourceSlices().Create(ctx, sl, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	err = forEach(ctx, workers, objs.ResourceClaims, func(ctx context.Context, c *resourcev1.ResourceClaim) error {
		c = c.DeepCopy()
		c.UID = ""
		st := c.Status
		created, err := kube.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ResourceClaim %s/%s: %w", c.Namespace, c.Name, err)
		}
		created.Status = st
		_, err = kube.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	step("%d ResourceSlices and %d ResourceClaims; the whole cluster in %s", len(objs.ResourceSlices), len(objs.ResourceClaims), time.Since(began).Round(time.Second))
	return nil
}

type uids struct {
	mu sync.Mutex
	m  map[string]types.UID
}

func (u *uids) set(k string, v types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.m[k] = v
}

func (u *uids) get(k string) types.UID {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[k]
}

// forEach runs f on every item with n workers and returns the first error,
// after which the remaining items are skipped.
func forEach[T any](ctx context.Context, n int, items []T, f func(context.Context, T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	ch := make(chan T)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := f(ctx, it); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case ch <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// profiledCheckAll runs the checks as `aiconform check all` does, on the
// clients cluster.NewLive builds from $KUBECONFIG, with the CPU profiled
// throughout and the heap profiled when the most was live: what the run
// holds at its peak, by where it was allocated.
func profiledCheckAll(ctx context.Context, dir string) (err error) {
	live, err := cluster.NewLive(cluster.NewFlags(), time.Now)
	if err != nil {
		return err
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := cpu.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return err
	}
	peak := watchPeak(ctx)
	r, err := bench.CheckAll(ctx, live)
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "heap.pprof"), peak(), 0o644); err != nil {
		return err
	}
	return unmetBeyondProbes(r.Report)
}

// watchPeak samples the live heap (as of the last GC) every few
// milliseconds and keeps a heap profile of the largest; the function it
// returns stops the sampling and gives that profile.
func watchPeak(ctx context.Context) func() []byte {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu   sync.Mutex
		best []byte
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var most uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if live := sample[0].Value.Uint64(); live > most+most/20 {
				most = live
				var buf bytes.Buffer
				if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
					mu.Lock()
					best = buf.Bytes()
					mu.Unlock()
				}
			}
		}
	}()
	return func() []byte {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return best
	}
}

// sample is one timed command.
type sample struct {
	wall  time.Duration
	rssKB int64
	// cpu is the command's own user and system time; server is what
	// kube-apiserver spent meanwhile: on two shared cores, the split of a
	// run's wall time between the client and the server.
	cpu, server time.Duration
}

type measurer struct {
	// memLimit is -memlimit; env is what the next timed command gets in
	// its environment beyond the run's own.
	memLimit               string
	env                    []string
	root, kubeconfig, home string
	step                   func(string, ...any)
	// apiserver is kube-apiserver's PID, for its CPU time.
	apiserver int
	// kube reads the API server's own metrics, for the requests a run
	// made.
	kube kubernetes.Interface
	// renew stands in for the controllers this cluster has no process
	// of: their leader Leases are renewed before each measured check, as
	// a running controller keeps them.
	renew func(context.Context) error
	// gpuNodes are the nodes whose pods the accelerator checks read, one
	// LIST each.
	gpuNodes []string
	// uncollected is set once kube-apiserver refused to collect its heap
	// (settle).
	uncollected bool
}

// renewLeases sets every Lease's renewTime to now.
func renewLeases(ctx context.Context, kube kubernetes.Interface) error {
	leases, err := kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	now := metav1.NewMicroTime(time.Now())
	for i := range leases.Items {
		l := &leases.Items[i]
		l.Spec.RenewTime = &now
		_, err := kube.CoordinationV1().Leases(l.Namespace).Update(ctx, l, metav1.UpdateOptions{})
		// A conflict is its holder renewing it meanwhile (kube-apiserver
		// renews its own identity Lease): it is fresh.
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("renew lease %s/%s: %w", l.Namespace, l.Name, err)
		}
	}
	return nil
}

// The nine kubectl calls of a hand-made robust_controller and GPU report:
// the seed's five, with the demo's names, and what such a report adds.
var handMade = [][]string{
	{"get", "crd"},
	{"get", "pods", "-n", "kserve", "-o", "wide"},
	{"get", "validatingwebhookconfigurations,mutatingwebhookconfigurations"},
	{"-n", "models", "get", "inferenceservice"},
	{"-n", "models", "get", "deploy,svc,pod", "-l", "serving.kserve.io/inferenceservice=sklearn-iris"},
	{"get", "endpointslices", "-n", "kserve", "-l", "kubernetes.io/service-name=kserve-webhook-server-service"},
	{"-n", "ray", "get", "raycluster"},
	{"get", "nodes", "-o", "wide"},
	{"describe", "node", "gpu-node-1"},
}

func (m *measurer) all(ctx context.Context, runs int, aiconform, reportDir string, pids map[string]int) error {
	kubectl := filepath.Join(m.root, "bin", "kubectl")
	// kubectl caches discovery under $HOME/.kube; a warm cache is what a
	// person running a report has.
	if _, err := m.time(ctx, io.Discard, kubectl, "api-resources"); err != nil {
		return err
	}
	recorded, err := m.record(ctx)
	if err != nil {
		return err
	}
	var podsA, nine, ours, rc, limited, floor, replayed []sample
	var requests map[string]int
	for r := 1; r <= runs; r++ {
		s, err := m.time(ctx, io.Discard, kubectl, "get", "pods", "-A")
		if err != nil {
			return err
		}
		podsA = append(podsA, s)
		m.step("run %d: kubectl get pods -A: %s, %d MiB", r, s.wall.Round(10*time.Millisecond), s.rssKB/1024)

		var sum sample
		m.settle(ctx)
		for _, args := range handMade {
			s, err := m.time(ctx, io.Discard, kubectl, args...)
			if err != nil {
				return err
			}
			sum.wall += s.wall
			sum.cpu += s.cpu
			sum.server += s.server
			sum.rssKB = max(sum.rssKB, s.rssKB)
		}
		nine = append(nine, sum)
		m.step("run %d: nine kubectl calls: %s, %d MiB", r, sum.wall.Round(10*time.Millisecond), sum.rssKB/1024)

		var out bytes.Buffer
		checkAll := func() error {
			if err := m.renew(ctx); err != nil {
				return err
			}
			before, err := requestCounts(ctx, m.kube)
			if err != nil {
				return err
			}
			out.Reset()
			m.settle(ctx)
			// Exit 1 is a run that finished: on a cluster like this one,
			// the MUSTs only a probe shows are not met without --probe.
			s, err := m.timeExit(ctx, &out, 1, aiconform, "check", "all", "--out", fmt.Sprintf("%s-%d", reportDir, r))
			if err == nil {
				err = onlyUnprobed(filepath.Join(fmt.Sprintf("%s-%d", reportDir, r), "report.json"))
			}
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out.String())
			}
			if r == 1 {
				after, err := requestCounts(ctx, m.kube)
				if err != nil {
					return err
				}
				requests = diffCounts(before, after)
			}
			ours = append(ours, s)
			m.step("run %d: aiconform check all: %s, %d MiB", r, s.wall.Round(10*time.Millisecond), s.rssKB/1024)
			return nil
		}
		nodePods := func() error {
			m.settle(ctx)
			s, n, err := m.nodePods(ctx)
			if err != nil {
				return err
			}
			floor = append(floor, s)
			m.step("run %d: the pods of the %d GPU nodes alone: %s, %d MiB of protobuf, kube-apiserver's CPU %s", r, len(m.gpuNodes),
				s.wall.Round(10*time.Millisecond), n>>20, s.server.Round(10*time.Millisecond))
			return nil
		}
		again := func() error {
			m.settle(ctx)
			s, n, err := m.replay(ctx, recorded)
			if err != nil {
				return err
			}
			replayed = append(replayed, s)
			m.step("run %d: check all's requests again, not decoded: %s, %d MiB read, its CPU %s, kube-apiserver's %s", r,
				s.wall.Round(10*time.Millisecond), n>>20, s.cpu.Round(10*time.Millisecond), s.server.Round(10*time.Millisecond))
			return nil
		}
		// In a new order each run: kube-apiserver's collector, over its
		// heap of gigabytes, runs once in a while for all that came before
		// and lands in whichever of these is running then. In one fixed
		// order the later ones met it in most runs.
		measures := []func() error{checkAll, nodePods, again}
		for i := range measures {
			if err := measures[(i+r-1)%len(measures)](); err != nil {
				return err
			}
		}

		if m.memLimit != "" {
			if err := m.renew(ctx); err != nil {
				return err
			}
			out.Reset()
			m.env = []string{"GOMEMLIMIT=" + m.memLimit}
			m.settle(ctx)
			s, err = m.timeExit(ctx, &out, 1, aiconform, "check", "all", "--out", fmt.Sprintf("%s-limited-%d", reportDir, r))
			m.env = nil
			if err != nil {
				return fmt.Errorf("%w\n%s", err, out.String())
			}
			limited = append(limited, s)
			m.step("run %d: aiconform check all, GOMEMLIMIT=%s: %s, %d MiB", r, m.memLimit, s.wall.Round(10*time.Millisecond), s.rssKB/1024)
		}

		if err := m.renew(ctx); err != nil {
			return err
		}
		out.Reset()
		m.settle(ctx)
		s, err = m.time(ctx, &out, aiconform, "check", "robust_controller", "--out", fmt.Sprintf("%s-rc-%d", reportDir, r))
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out.String())
		}
		rc = append(rc, s)
		m.step("run %d: aiconform check robust_controller: %s, %d MiB", r, s.wall.Round(10*time.Millisecond), s.rssKB/1024)

	}
	if data, err := os.ReadFile(reportDir + "-1/report.md"); err == nil {
		m.step("aiconform's report.md: %d KiB", len(data)/1024)
	}
	// Where the accelerator metrics were read from: the monitoring
	// system's one query, or the exporters one by one.
	if rep, err := report.ReadFile(reportDir + "-1/report.json"); err == nil {
		for _, req := range rep.Requirements {
			for _, c := range req.Checks {
				if c.ID == "accelerator-metrics" {
					m.step("accelerator-metrics: %s", c.Reason)
				}
			}
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintf(w, "what (%d runs)\tmedian wall\tmax RSS\tits CPU\tkube-apiserver CPU\n", runs)
	rows := []struct {
		what string
		s    []sample
	}{
		{"kubectl get pods -A", podsA},
		{"nine kubectl calls (sequential)", nine},
		{"aiconform check all", ours},
		{"aiconform check robust_controller", rc},
		{"the GPU nodes' pods alone (a LIST each, 8 at a time, not decoded)", floor},
		{"check all's requests again (a process of its own, 32 at a time, not decoded)", replayed},
	}
	if len(limited) > 0 {
		rows = append(rows, struct {
			what string
			s    []sample
		}{"aiconform check all, GOMEMLIMIT=" + m.memLimit, limited})
	}
	for _, row := range rows {
		wall, rss := summary(row.s)
		mem, cpu := fmt.Sprintf("%d MiB", rss/1024), median(row.s, func(s sample) time.Duration { return s.cpu }).Round(10*time.Millisecond).String()
		if rss == 0 {
			// Read in this process: neither is the reads' own.
			mem, cpu = "-", "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", row.what, wall.Round(10*time.Millisecond), mem, cpu,
			median(row.s, func(s sample) time.Duration { return s.server }).Round(10*time.Millisecond))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	printRequests(requests)
	// The scale budget, as ratios of the same run's figures: the nine
	// calls are what a person does by hand today.
	nineWall, _ := summary(nine)
	allWall, allRSS := summary(ours)
	rcWall, _ := summary(rc)
	fmt.Printf("budget: check robust_controller / nine calls = %.2f (at most 0.50)\n", rcWall.Seconds()/nineWall.Seconds())
	fmt.Printf("budget: check all / nine calls = %.2f (at most 1.00)\n", allWall.Seconds()/nineWall.Seconds())
	fmt.Printf("budget: check all peak RSS = %.2f of 150 MiB\n", float64(allRSS)/1024/150)
	floorWall, _ := summary(floor)
	fmt.Printf("floor: the GPU nodes' pods alone / nine calls = %.2f (kube-apiserver's CPU %s; check all's %s)\n", floorWall.Seconds()/nineWall.Seconds(),
		median(floor, func(s sample) time.Duration { return s.server }).Round(10*time.Millisecond),
		median(ours, func(s sample) time.Duration { return s.server }).Round(10*time.Millisecond))
	replayedWall, _ := summary(replayed)
	fmt.Printf("floor: check all's requests again, not decoded / nine calls = %.2f (its CPU "+
		"%s, check all's %s; kube-apiserver's %s)\n", replayedWall.Seconds()/nineWall.Seconds(),
		median(replayed, func(s sample) time.Duration { return s.cpu }).Round(10*time.Millisecond),
		median(ours, func(s sample) time.Duration { return s.cpu }).Round(10*time.Millisecond),
		median(replayed, func(s sample) time.Duration { return s.server }).Round(10*time.Millisecond))
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if pid, ok := pids[name]; ok {
			if hwm, rss, err := procMemory(pid); err == nil {
				fmt.Printf("%s: peak RSS %d MiB, RSS now %d MiB\n", name, hwm/1024, rss/1024)
			}
		}
	}
	return nil
}

// each runs `check ID` once for every requirement of the catalog and
// prints what each cost: wall time, CPU (its own and kube-apiserver's),
// peak RSS and requests, the dearest first. The requirements share reads
// in check all, so the rows add up to more than check all's figures; a
// row is what that requirement costs on its own.
func (m *measurer) each(ctx context.Context, aiconform, reportDir string) error {
	catalog, err := checks.Catalog(builtin.Registry())
	if err != nil {
		return err
	}
	type row struct {
		id       string
		s        sample
		requests int
	}
	var rows []row
	for _, req := range catalog {
		if err := m.renew(ctx); err != nil {
			return err
		}
		before, err := requestCounts(ctx, m.kube)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		m.settle(ctx)
		// Exit 1 is a run that finished with a MUST not met (without
		// --probe, those only a probe shows).
		s, err := m.timeExit(ctx, &out, 1, aiconform, "check", req.ID, "--out", reportDir+"-"+req.ID)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out.String())
		}
		after, err := requestCounts(ctx, m.kube)
		if err != nil {
			return err
		}
		n := 0
		for _, d := range diffCounts(before, after) {
			n += d
		}
		rows = append(rows, row{req.ID, s, n})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].s.wall > rows[j].s.wall })
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "check REQUIREMENT (1 run each)\twall\tmax RSS\tits CPU\tkube-apiserver CPU\trequests")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%d MiB\t%s\t%s\t%d\n", r.id, r.s.wall.Round(10*time.Millisecond), r.s.rssKB/1024,
			r.s.cpu.Round(10*time.Millisecond), r.s.server.Round(10*time.Millisecond), r.requests)
	}
	return w.Flush()
}

func summary(s []sample) (time.Duration, int64) {
	var rss int64
	for _, x := range s {
		rss = max(rss, x.rssKB)
	}
	return median(s, func(s sample) time.Duration { return s.wall }), rss
}

func median(s []sample, of func(sample) time.Duration) time.Duration {
	d := make([]time.Duration, len(s))
	for i, x := range s {
		d[i] = of(x)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// settle readies kube-apiserver for the command timed next: it has it
// collect its heap, then waits until it is done with what came before, its
// CPU at most a tenth of a core in two quarter seconds in a row, or
// settleAtMost. Its collector, over a heap of gigabytes (the watch cache of
// 50,000 pods), takes seconds of CPU once in a while for all the reads
// before it: left to itself it landed in whichever command was running then,
// or ran on into the next (check robust_controller, always timed after the
// three heavy measurements of a run, waited on it for most of its time).
// Each command is then timed from the same state, without a share of the
// collection that its own allocations would some day bring on.
func (m *measurer) settle(ctx context.Context) {
	if _, err := m.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil && !m.uncollected {
		m.uncollected = true
		m.step("kube-apiserver's heap is not collected before each measurement: %v", err)
	}
	const window, quiet = 250 * time.Millisecond, 25 * time.Millisecond
	deadline := time.Now().Add(settleAtMost)
	for calm := 0; calm < 2 && time.Now().Before(deadline); {
		before := cpuTime(m.apiserver)
		select {
		case <-ctx.Done():
			return
		case <-time.After(window):
		}
		calm++
		if cpuTime(m.apiserver)-before > quiet {
			calm = 0
		}
	}
}

// settleAtMost bounds settle: the idle cluster's own work (Prometheus
// scraping 500 pods and watching 50,000) may never leave it quiet.
const settleAtMost = 15 * time.Second

// time runs a command against the control plane and measures its wall time
// and peak RSS: with GNU time where installed, else from the child's
// rusage.
func (m *measurer) time(ctx context.Context, stdout io.Writer, name string, args ...string) (sample, error) {
	return m.timeExit(ctx, stdout, 0, name, args...)
}

// timeExit is time for a command that may also end with exit code ok
// (0 for none): aiconform's 1, a MUST not met, is a run that finished.
func (m *measurer) timeExit(ctx context.Context, stdout io.Writer, ok int, name string, args ...string) (sample, error) {
	stats := filepath.Join(m.home, "time.txt")
	gnuTime := "/usr/bin/time"
	useTime := false
	if _, err := os.Stat(gnuTime); err == nil {
		useTime = true
	}
	argv := append([]string{name}, args...)
	if useTime {
		argv = append([]string{gnuTime, "-v", "-o", stats}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(env(m.home, m.kubeconfig), m.env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	server := cpuTime(m.apiserver)
	start := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(start), server: cpuTime(m.apiserver) - server}
	if cmd.ProcessState != nil {
		s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var exit *exec.ExitError
	if ok != 0 && errors.As(err, &exit) && exit.ExitCode() == ok {
		err = nil
	}
	if err != nil {
		return s, fmt.Errorf("%s: %w: %s", strings.Join(append([]string{filepath.Base(name)}, args...), " "), err, tail(stderr.String()))
	}
	if useTime {
		rss, err := maxRSS(stats)
		if err != nil {
			return s, err
		}
		s.rssKB = rss
	} else if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rssKB = ru.Maxrss // kilobytes on Linux
	}
	return s, nil
}

// env is ours without proxies or another kubeconfig, with a HOME of the
// run's own.
func env(home, kubeconfig string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "KUBECONFIG", "HOME":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "NO_PROXY=*", "HOME="+home, "KUBECONFIG="+kubeconfig)
}

func maxRSS(statsFile string) (int64, error) {
	f, err := os.Open(statsFile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Maximum resident set size (kbytes):"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no maximum resident set size in the output of /usr/bin/time -v")
}

// requestCounts reads kube-apiserver's apiserver_request_total, summed
// by verb and resource ("LIST pods", "GET pods/proxy"): the requests the
// server answered so far, from every client.
func requestCounts(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse the API server's metrics: %w", err)
	}
	out := map[string]float64{}
	f, ok := families["apiserver_request_total"]
	if !ok {
		return nil, errors.New("the API server's metrics have no apiserver_request_total")
	}
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		what := l["resource"]
		if l["subresource"] != "" {
			what += "/" + l["subresource"]
		}
		if l["group"] != "" {
			what += "." + l["group"]
		}
		out[l["verb"]+" "+what] += m.GetCounter().GetValue()
	}
	return out, nil
}

// diffCounts is what after counted beyond before.
func diffCounts(before, after map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

// printRequests prints the requests of one check all run by verb and
// resource, the most first. They are every client's: while a run is
// measured only Prometheus also talks to the server, through watches
// opened before it.
func printRequests(counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	keys := make([]string, 0, len(counts))
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	fmt.Printf("requests of the first check all run, %d in all, by verb and resource:\n", total)
	for _, k := range keys {
		fmt.Printf("  %6d  %s\n", counts[k], k)
	}
}

// cpuTime is a process's user and system time so far, from
// /proc/PID/stat; zero when it cannot be read.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid == 0 || err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	_, rest, ok := bytes.Cut(data, []byte(") "))
	f := strings.Fields(string(rest))
	if !ok || len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// USER_HZ is 100 on Linux.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procMemory reads a process's peak and current RSS in KiB.
func procMemory(pid int) (hwm, rss int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			hwm = n
		case "VmRSS":
			rss = n
		}
	}
	return hwm, rss, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// onlyUnprobed reads the report.json at path for unmetBeyondProbes.
func onlyUnprobed(path string) error {
	rep, err := report.ReadFile(path)
	if err != nil {
		return err
	}
	if err := unmetBeyondProbes(rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// unmetBeyondProbes fails unless every MUST of the report is met, but for
// those only a probe can show, which a benchmark never runs.
func unmetBeyondProbes(rep *report.Report) error {
	for _, req := range rep.Requirements {
		if req.Level != "MUST" || req.Status == "Implemented" || req.Status == "N/A" {
			continue
		}
		if !strings.HasPrefix(req.Conclusion, "not shown at work") || !strings.Contains(req.Conclusion, "probes are off") {
			return fmt.Errorf("a MUST requirement is not met: %s is %s: %s", req.ID, req.Status, req.Conclusion)
		}
	}
	return nil
}
