// Command rig starts and stops aiconform's loopback test cluster for make
// targets and people: `rig up` leaves it running and prints the kubeconfig
// path, `rig down` stops exactly the processes `rig up` recorded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aiconform/aiconform/rig"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rig:", err)
		os.Exit(1)
	}
}

const usage = `usage: rig <command> [flags]

commands:
  up            start the rig detached (with KServe, KubeRay, Trainer, the
                Training Operator, Kueue, a metrics adapter and Karpenter
                unless --no-operators) and print its kubeconfig path
  down          stop the processes recorded by up
  status        print the recorded processes and their RSS
  egress-proxy  run the loopback-only egress proxy (started by up)
  node-net      hold a real node's namespaces and serve its two doors
                (started by up under unshare)
`

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", ".rig", "state directory")
	switch cmd {
	case "up":
		bin := fs.String("bin", "", "directory with the binaries (default: bin/ of the repository)")
		cpOnly := fs.Bool("control-plane-only", false, "start etcd and kube-apiserver only")
		noOperators := fs.Bool("no-operators", false, "do not install KServe, KubeRay, Kubeflow Trainer (with JobSet), the "+
			"Training Operator, Kueue, the metrics adapter and Karpenter on the full rig")
		timeout := fs.Duration("timeout", 3*time.Minute, "start-up timeout (the control plane, then each operator)")
		realNodes := fs.Int("real-nodes", 0, "real nodes (kubelet, containerd, runc; needs root and tools/host-packages) beside the kwok nodes")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return up(*dir, *bin, *cpOnly, !*cpOnly && !*noOperators, *realNodes, *timeout, stdout, stderr)
	case "down":
		if err := fs.Parse(args); err != nil {
			return err
		}
		if err := rig.StopDir(*dir); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "rig: stopped")
		return nil
	case "status":
		if err := fs.Parse(args); err != nil {
			return err
		}
		return status(*dir, stdout)
	case "egress-proxy":
		socket := fs.String("socket", "", "unix socket to listen on")
		logPath := fs.String("log", "", "file to append decisions to")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return egressProxy(*socket, *logPath)
	case "node-net":
		var cfg rig.NodeNetConfig
		nodeIP := fs.String("node-ip", "", "the node's address")
		podCIDR := fs.String("pod-cidr", "", "the range of the node's pods")
		api := fs.String("api-server", "", "the API server's loopback IP:port")
		fs.StringVar(&cfg.EgressSocket, "egress-socket", "", "the rig's egress proxy")
		fs.StringVar(&cfg.Socket, "socket", "", "unix socket of the node's CONNECT proxy")
		fs.StringVar(&cfg.KubeletDir, "kubelet-dir", "", "folder to mount on the kubelet's own, /var/lib/kubelet")
		logPath := fs.String("log", "", "file to append the proxy's decisions to")
		var publish []string
		fs.Func("publish", "FD=IP:PORT: forward the inherited listener FD to IP:PORT in the namespace (repeatable)", func(v string) error {
			publish = append(publish, v)
			return nil
		})
		if err := fs.Parse(args); err != nil {
			return err
		}
		for _, p := range publish {
			pub, err := published(p)
			if err != nil {
				return fmt.Errorf("--publish %s: %w", p, err)
			}
			cfg.Publish = append(cfg.Publish, pub)
		}
		return nodeNet(cfg, *nodeIP, *podCIDR, *api, *logPath)
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func up(dir, bin string, cpOnly, operators bool, realNodes int, timeout time.Duration, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Re-running `make cluster-up` reuses a healthy rig instead of failing.
	if c, err := rig.Attach(ctx, dir); err == nil {
		if c.ControlPlaneOnly() != cpOnly {
			return fmt.Errorf("the rig in %s has ControlPlaneOnly=%v: run `make cluster-down` first", dir, c.ControlPlaneOnly())
		}
		fmt.Fprintln(stderr, "rig: already up")
		fmt.Fprintln(stdout, c.Kubeconfig())
		return nil
	}
	// Whatever is left of a rig that is no longer healthy is stopped
	// before a fresh one starts in the same directory.
	if err := rig.StopDir(dir); err != nil {
		return err
	}
	began := time.Now()
	c, err := rig.Start(ctx, rig.Options{
		Dir:              dir,
		BinDir:           bin,
		ControlPlaneOnly: cpOnly,
		Detached:         true,
		ProxyCommand:     []string{self, "egress-proxy"},
		RealNodes:        realNodes,
		Timeout:          timeout,
		Progress:         stderr,
	})
	if err != nil {
		return err
	}
	if operators {
		opts := rig.OperatorOptions{BinDir: bin, Detached: true, Timeout: timeout, Progress: stderr}
		trainer := func(ctx context.Context, opts rig.OperatorOptions) (*rig.Operator, error) {
			t, _, err := c.InstallTrainer(ctx, opts)
			return t, err
		}
		adapter := func(ctx context.Context, opts rig.OperatorOptions) (*rig.Operator, error) {
			_, err := c.InstallMetricsAdapter(ctx, opts)
			return nil, err
		}
		karpenter := func(ctx context.Context, opts rig.OperatorOptions) (*rig.Operator, error) {
			_, err := c.InstallKarpenter(ctx, opts)
			return nil, err
		}
		gateway := func(ctx context.Context, opts rig.OperatorOptions) (*rig.Operator, error) {
			_, err := c.InstallGateway(ctx, opts)
			return nil, err
		}
		for _, install := range []func(context.Context, rig.OperatorOptions) (*rig.Operator, error){c.InstallKServe, c.InstallKubeRay, trainer, c.InstallTrainingOperator, adapter, c.InstallKueue, karpenter, gateway} {
			if _, err := install(ctx, opts); err != nil {
				// Half a rig is worse than none: a person would point
				// aiconform at it and read failures that are the rig's.
				return errors.Join(err, c.Stop())
			}
		}
	}
	if !cpOnly {
		// The GPU node's devices as NVIDIA's DRA driver would publish
		// them, for dra_support.
		if err := c.PublishDRADevices(ctx); err != nil {
			return errors.Join(err, c.Stop())
		}
	}
	fmt.Fprintf(stderr, "rig: up in %.1fs; stop it with `make cluster-down`\n", time.Since(began).Seconds())
	fmt.Fprintln(stdout, c.Kubeconfig())
	return nil
}

func status(dir string, w io.Writer) error {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(w, "no rig recorded in", dir)
		return nil
	}
	if err != nil {
		return err
	}
	c, err := rig.Attach(context.Background(), dir)
	if err != nil {
		return fmt.Errorf("recorded rig is not healthy: %w (state: %s)", err, data)
	}
	fmt.Fprintln(w, "kubeconfig:", c.Kubeconfig())
	fmt.Fprintln(w, "server:    ", c.Server())
	pids := c.PIDs()
	names := make([]string, 0, len(pids))
	for n := range pids {
		names = append(names, n)
	}
	sort.Strings(names)
	var total, totalPeak int
	for _, n := range names {
		kb, peak := rig.ProcessMemory(pids[n])
		total += kb
		totalPeak += peak
		fmt.Fprintf(w, "%-24s pid %-8d rss %6d MiB  peak %6d MiB\n", n, pids[n], kb/1024, peak/1024)
	}
	fmt.Fprintf(w, "%-24s %-12s rss %6d MiB  peak %6d MiB\n", "total", "", total/1024, totalPeak/1024)
	return nil
}

// egressProxy serves until SIGTERM or SIGINT.
func egressProxy(socket, logPath string) error {
	if socket == "" || logPath == "" {
		return errors.New("egress-proxy needs --socket and --log")
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := rig.ListenEgressProxy(socket, f)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return p.Close()
}

// nodeNet serves a real node's doors until SIGTERM or SIGINT.
func nodeNet(cfg rig.NodeNetConfig, nodeIP, podCIDR, api, logPath string) error {
	var err error
	if nodeIP != "" {
		if cfg.NodeIP, err = netip.ParseAddr(nodeIP); err != nil {
			return fmt.Errorf("--node-ip: %w", err)
		}
		if cfg.PodCIDR, err = netip.ParsePrefix(podCIDR); err != nil {
			return fmt.Errorf("--pod-cidr: %w", err)
		}
	}
	if cfg.APIServer, err = netip.ParseAddrPort(api); err != nil {
		return fmt.Errorf("--api-server: %w", err)
	}
	if cfg.EgressSocket == "" || logPath == "" || nodeIP != "" && cfg.Socket == "" {
		return errors.New("node-net needs --egress-socket and --log, and --socket with --node-ip")
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg.Log = f
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return rig.RunNodeNet(ctx, cfg)
}

// published is the listener a --publish FD=IP:PORT names.
func published(v string) (rig.Published, error) {
	fd, to, ok := strings.Cut(v, "=")
	if !ok {
		return rig.Published{}, errors.New("not FD=IP:PORT")
	}
	n, err := strconv.Atoi(fd)
	if err != nil {
		return rig.Published{}, err
	}
	addr, err := netip.ParseAddrPort(to)
	if err != nil {
		return rig.Published{}, err
	}
	f := os.NewFile(uintptr(n), "published")
	ln, err := net.FileListener(f)
	_ = f.Close() // FileListener holds its own copy
	if err != nil {
		return rig.Published{}, fmt.Errorf("inherited descriptor %d: %w", n, err)
	}
	return rig.Published{Listener: ln, To: addr}, nil
}
