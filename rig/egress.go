package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The API server dials "cluster" addresses (Service-backed webhooks and
// APIServices, the pods/services/nodes proxy, logs, exec). On the rig
// those are fake 10.x addresses nothing of ours listens on, and dialling
// private ranges is forbidden on the machines this runs on. The apiserver
// is therefore configured to send all cluster traffic through this proxy,
// which only lets loopback through.
//
// Some reads must reach something, though: an exporter's /metrics through
// the pod proxy, which the API server refuses for a loopback pod IP. The
// rig therefore owns a virtual range: an object may carry an address of
// it (a pod's IP), and a listener of the rig's own on 127.0.0.1 stands
// behind it. The proxy forwards a virtual address only to the loopback
// listener registered for it (a file in the virtual/ folder beside its
// socket, named by the address), and refuses one that has none.

// loopback is the only destination range the egress proxy forwards to.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// VirtualRange is the rig's virtual range. No network of the machine's uses
// it, and nothing in it is ever dialled: each address leads only to the
// loopback listener registered for it.
var VirtualRange = netip.MustParsePrefix("10.250.0.0/16")

// virtualDir is where the proxy whose socket is socketPath finds the
// virtual addresses registered for it.
func virtualDir(socketPath string) string { return filepath.Join(filepath.Dir(socketPath), "virtual") }

// EgressProxy is an HTTP CONNECT proxy on a unix socket that forwards only
// to 127.0.0.0/8, and a virtual address only to the loopback listener
// registered for it, and answers 403 to everything else. Every decision
// is written as one line to its log.
type EgressProxy struct {
	ln  net.Listener
	srv *http.Server
	// route decides where a CONNECT goes: the machine's loopback (and the
	// virtual range) for the API server's egress, one node's own network
	// for a real node's proxy (nodenet.go).
	route func(target string) (upstream, error)

	mu  sync.Mutex
	log io.Writer
}

// upstream is where a CONNECT is forwarded: how to open the connection,
// and what to log of it when that is not the target itself.
type upstream struct {
	dial func() (net.Conn, error)
	via  string
}

// tcpUpstream dials ap directly.
func tcpUpstream(ap netip.AddrPort) upstream {
	return upstream{dial: func() (net.Conn, error) { return net.DialTimeout("tcp", ap.String(), 5*time.Second) }, via: ap.String()}
}

// egressRefusedMarker starts the log line of a refused CONNECT; tests and
// people grep for it.
const egressRefusedMarker = "REFUSED"

// ListenEgressProxy starts the proxy on the unix socket at socketPath and
// appends its decisions to logw.
func ListenEgressProxy(socketPath string, logw io.Writer) (*EgressProxy, error) {
	dir := virtualDir(socketPath)
	return listenConnect(socketPath, logw, func(target string) (upstream, error) { return resolve(dir, target) })
}

// listenConnect serves CONNECT on the unix socket at socketPath, forwarding
// as route says.
func listenConnect(socketPath string, logw io.Writer, route func(string) (upstream, error)) (*EgressProxy, error) {
	// A stale socket from a killed rig would make Listen fail with
	// "address in use"; nothing else can own a path inside the rig dir.
	if err := os.Remove(socketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", socketPath, err)
	}
	p := &EgressProxy{ln: ln, log: logw, route: route}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops accepting connections and closes the idle ones; tunnels
// already spliced end when either side closes.
func (p *EgressProxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

func (p *EgressProxy) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.log, time.Now().UTC().Format(time.RFC3339Nano)+" "+format+"\n", args...)
}

// allowed reports whether host:port may be dialled. Only IP literals are
// accepted: resolving a name here would itself be traffic, and the API
// server always hands over an address.
func allowed(hostport string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("not an IP:port: %w", err)
	}
	if !loopback.Contains(ap.Addr().Unmap()) {
		return netip.AddrPort{}, fmt.Errorf("%s is outside %s", ap.Addr(), loopback)
	}
	return ap, nil
}

// resolve is where a CONNECT to hostport goes: loopback as it is, a
// virtual address to what is registered for it in dir.
func resolve(dir, hostport string) (upstream, error) {
	if ap, err := netip.ParseAddrPort(hostport); err == nil && VirtualRange.Contains(ap.Addr().Unmap()) {
		return resolveVirtual(dir, ap)
	}
	ap, err := allowed(hostport)
	if err != nil {
		return upstream{}, err
	}
	return tcpUpstream(ap), nil
}

// ServeHTTP handles one CONNECT request.
func (p *EgressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		p.logf("%s method=%s target=%q reason=%q", egressRefusedMarker, r.Method, r.RequestURI, "only CONNECT is served")
		http.Error(w, "only CONNECT is served", http.StatusMethodNotAllowed)
		return
	}
	target := r.Host
	up, err := p.route(target)
	if err != nil {
		p.logf("%s target=%s reason=%q", egressRefusedMarker, target, err.Error())
		http.Error(w, "aiconform rig egress proxy: "+err.Error(), http.StatusForbidden)
		return
	}
	upstream, err := up.dial()
	if err != nil {
		p.logf("FAILED target=%s reason=%q", target, err.Error())
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "connection cannot be hijacked", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		p.logf("FAILED target=%s reason=%q", target, err.Error())
		return
	}
	if up.via != target {
		p.logf("ALLOWED target=%s via=%s", target, up.via)
	} else {
		p.logf("ALLOWED target=%s", target)
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = conn.Close()
		_ = upstream.Close()
		return
	}
	splice(conn, buf, upstream)
}

// splice copies both ways until either side is done, then closes both.
// Bytes the client sent right after the CONNECT headers may already sit in
// buf, so the client side is read through it.
func splice(client net.Conn, buf *bufio.ReadWriter, upstream net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, buf)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
	_ = client.Close()
	_ = upstream.Close()
	<-done
}
