package rig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A real node (realnode.go) lives in a network namespace of its own, with
// a mount namespace of its own beside it: its kubelet, its containerd and
// its pods see only the node's address and the pods' range there, and
// their mounts never reach the machine's. Nothing of that network is
// routed anywhere, so a pod that tries to leave it (an image pull, say)
// finds no route.
//
// Two doors, both kept by the rig's proxies, join it to the control plane:
// the API server's address inside the namespace forwards to the egress
// proxy's unix socket (which reaches loopback only), and the node's own
// CONNECT proxy on a unix socket takes the API server's egress (logs,
// exec, the pod proxy) to the node's address and its pods, and nowhere
// else. Unix sockets are files, not addresses: they cross namespaces.

// An operator whose port is fixed (KubeRay's webhook, 9443) runs in such a
// network namespace too, with no node in it: the port is then its own,
// whatever else on the machine holds 9443, and a loopback listener of the
// rig's on a free port, handed to the holder, leads to it.

// NodeNetConfig is what `rig node-net` needs, the process that holds a real
// node's namespaces, or an operator's.
type NodeNetConfig struct {
	// NodeIP, when valid, is the node's address, put on the namespace's
	// loopback link.
	NodeIP netip.Addr
	// PodCIDR is the range of the node's pods, on the CNI bridge.
	PodCIDR netip.Prefix
	// APIServer is the API server's loopback address; the same address
	// inside the namespace leads to it, through EgressSocket.
	APIServer    netip.AddrPort
	EgressSocket string
	// Socket is where the node's CONNECT proxy listens, once the namespace
	// is set up: what the rig waits for. Without a node it lets nothing
	// through.
	Socket string
	// Publish are listeners of the machine's loopback, opened by the rig
	// and inherited, each forwarded to an address inside the namespace.
	Publish []Published
	// KubeletDir, a folder of the node's, is mounted on the kubelet's own
	// folder, where paths are fixed: the device-plugin API's sockets, and
	// the stand-in devices a DaemonSet's hostPath names on every node.
	KubeletDir string
	Log        io.Writer
}

// Published is a listener outside the namespace and where it leads inside.
type Published struct {
	Listener net.Listener
	To       netip.AddrPort
}

// kubeletRoot is the kubelet's folder.
const kubeletRoot = "/var/lib/kubelet"

// RunNodeNet sets up the namespace it runs in and serves both doors until
// ctx ends. It refuses to touch a namespace that already has a link besides
// loopback: that would be the machine's own network, not a new one.
func RunNodeNet(ctx context.Context, cfg NodeNetConfig) error {
	// Both namespaces must be new, not the machine's: what follows adds an
	// address and a mount.
	for _, ns := range []string{"net", "mnt"} {
		own, err1 := os.Readlink("/proc/self/ns/" + ns)
		parent, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", os.Getppid(), ns))
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if own == parent {
			return fmt.Errorf("node-net runs only in %s namespaces of its own (start it under `unshare --net --mount`)", ns)
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return fmt.Errorf("node-net runs only in a network namespace of its own; this one has link %s", i.Name)
		}
	}
	if cfg.KubeletDir != "" {
		if err := privateMounts(cfg.KubeletDir); err != nil {
			return err
		}
	}
	ipArgs := [][]string{{"link", "set", "lo", "up"}}
	if cfg.NodeIP.IsValid() {
		ipArgs = append(ipArgs, []string{"addr", "add", netip.PrefixFrom(cfg.NodeIP, 32).String(), "dev", "lo"})
	}
	for _, args := range ipArgs {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}

	api, err := net.Listen("tcp", cfg.APIServer.String())
	if err != nil {
		return fmt.Errorf("the API server's address in the node's namespace: %w", err)
	}
	defer api.Close()
	go forwardAll(api, func() (net.Conn, error) { return dialConnect(cfg.EgressSocket, cfg.APIServer.String()) })

	for _, p := range cfg.Publish {
		defer p.Listener.Close()
		go forwardAll(p.Listener, func() (net.Conn, error) { return net.DialTimeout("tcp", p.To.String(), 5*time.Second) })
	}
	proxy, err := listenConnect(cfg.Socket, cfg.Log, nodeRoute(cfg.NodeIP, cfg.PodCIDR))
	if err != nil {
		return err
	}
	<-ctx.Done()
	return proxy.Close()
}

// privateMounts covers /run and /var/lib with empty tmpfs in this
// (private) mount namespace, and mounts kubeletDir on the kubelet's folder
// there. What containerd's shims and runc keep under /run, and the
// kubelet's mount point, are then the node's own: nothing is created on
// the machine's disk, where another rig's node would see it come and go,
// and it all vanishes with the namespace.
func privateMounts(kubeletDir string) error {
	for _, dir := range []string{"/run", filepath.Dir(kubeletRoot)} {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", dir, err)
		}
	}
	if err := os.Mkdir(kubeletRoot, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(kubeletDir, kubeletRoot, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", kubeletDir, kubeletRoot, err)
	}
	return nil
}

// nodeRoute lets a CONNECT through to the node's address and its pods'
// range only; without a node (an invalid address, an empty range), to
// nothing.
func nodeRoute(nodeIP netip.Addr, pods netip.Prefix) func(string) (upstream, error) {
	return func(target string) (upstream, error) {
		ap, err := netip.ParseAddrPort(target)
		if err != nil {
			return upstream{}, fmt.Errorf("not an IP:port: %w", err)
		}
		if ap.Addr() != nodeIP && !pods.Contains(ap.Addr()) {
			return upstream{}, fmt.Errorf("%s is neither the node %s nor its pods %s", ap.Addr(), nodeIP, pods)
		}
		return tcpUpstream(ap), nil
	}
}

// forwardAll pipes every connection ln accepts to a connection dial opens,
// until ln is closed.
func forwardAll(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			up, err := dial()
			if err != nil {
				_ = conn.Close()
				return
			}
			pipe(conn, up)
		}()
	}
}

// pipe copies both ways until either side is done, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}

// startNetHolder starts `rig node-net` (rigBin) under unshare, in new
// network and mount namespaces, with args and the inherited files, and
// waits until it serves its socket: the namespaces are then set up, and
// the holder's PID names them for nsenter. Its socket is a short path in
// dir.
func (c *Cluster) startNetHolder(ctx context.Context, name, rigBin, dir, logDir string, detached bool, args []string, files ...*os.File) (*process, string, error) {
	sock, err := shortSocket(dir, "connect.sock")
	if err != nil {
		return nil, "", err
	}
	args = append([]string{"--net", "--mount", "--propagation", "private", "--", rigBin, "node-net",
		"--api-server", strings.TrimPrefix(c.state.Server, "https://"), "--egress-socket", c.state.EgressSocket,
		"--socket", sock, "--log", filepath.Join(logDir, name+"-proxy.log")}, args...)
	c.mu.Lock()
	p, err := c.start(name, "unshare", args, logDir, childEnv(), detached, files...)
	if err == nil {
		p.Exe = rigBin // unshare execs it: the PID runs rigBin
		err = c.saveState()
	}
	c.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	if err := waitSocket(ctx, p, sock); err != nil {
		return nil, "", err
	}
	return p, sock, nil
}
