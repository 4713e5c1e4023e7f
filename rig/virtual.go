package rig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ServeVirtual serves h on a loopback port of its own and registers it
// behind addr, an address of VirtualRange: a pod whose IP and port are
// addr is then reachable through the API server's pod proxy (`kubectl get
// --raw .../pods/NAME:PORT/proxy/...`), and only so. It serves until the
// rig stops.
func (c *Cluster) ServeVirtual(addr netip.AddrPort, h http.Handler) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	if err := c.registerVirtual(addr, ln.Addr().String()); err != nil {
		_ = srv.Close()
		return err
	}
	c.mu.Lock()
	c.virtual = append(c.virtual, srv)
	c.mu.Unlock()
	return nil
}

// registerVirtual puts listener, a loopback address, behind addr.
func (c *Cluster) registerVirtual(addr netip.AddrPort, listener string) error {
	if !VirtualRange.Contains(addr.Addr()) {
		return fmt.Errorf("%s is outside the rig's virtual range %s", addr, VirtualRange)
	}
	return c.writeRegistration(addr.String(), listener)
}

// registerVirtualNet puts every address of prefix, a part of VirtualRange,
// behind the CONNECT proxy on the unix socket sock: a real node's own
// network (nodenet.go), where its kubelet and its pods listen.
func (c *Cluster) registerVirtualNet(prefix netip.Prefix, sock string) error {
	if !VirtualRange.Contains(prefix.Addr()) || prefix.Bits() < VirtualRange.Bits() {
		return fmt.Errorf("%s is outside the rig's virtual range %s", prefix, VirtualRange)
	}
	return c.writeRegistration(netFilePrefix+strings.ReplaceAll(prefix.String(), "/", "_"), unixPrefix+sock)
}

// writeRegistration writes one registration file of the egress proxy's
// virtual folder: whole, then renamed, so that the proxy never reads half.
func (c *Cluster) writeRegistration(name, to string) error {
	dir := virtualDir(c.state.EgressSocket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	file := filepath.Join(dir, name)
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(to+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// A registration names a loopback listener, or a CONNECT proxy on a unix
// socket after unixPrefix; a whole prefix is registered in a file named
// netFilePrefix and the prefix with "_" for "/".
const (
	unixPrefix    = "unix:"
	netFilePrefix = "net-"
)

// resolveVirtual is what is registered behind a virtual address in dir:
// the address itself first, else a network that holds it.
func resolveVirtual(dir string, ap netip.AddrPort) (upstream, error) {
	if data, err := os.ReadFile(filepath.Join(dir, ap.String())); err == nil {
		l, err := allowed(strings.TrimSpace(string(data)))
		if err != nil {
			return upstream{}, err
		}
		return tcpUpstream(l), nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, netFilePrefix+"*"))
	for _, f := range files {
		prefix, err := netip.ParsePrefix(strings.ReplaceAll(strings.TrimPrefix(filepath.Base(f), netFilePrefix), "_", "/"))
		if err != nil || !prefix.Contains(ap.Addr()) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sock, ok := strings.CutPrefix(strings.TrimSpace(string(data)), unixPrefix)
		if !ok {
			return upstream{}, fmt.Errorf("%s: registration %s names no unix socket", ap, filepath.Base(f))
		}
		return upstream{dial: func() (net.Conn, error) { return dialConnect(sock, ap.String()) }, via: unixPrefix + sock}, nil
	}
	return upstream{}, fmt.Errorf("%s: no listener registered for this virtual address", ap)
}

// dialConnect opens a tunnel to target through the CONNECT proxy on the
// unix socket sock.
func dialConnect(sock, target string) (net.Conn, error) {
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		_ = conn.Close()
		return nil, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_ = conn.Close()
		return nil, fmt.Errorf("CONNECT %s through %s: %s", target, sock, resp.Status)
	}
	_ = conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// Nothing speaks before the client does over these tunnels; bytes
		// here would be lost, so refuse rather than corrupt.
		_ = conn.Close()
		return nil, fmt.Errorf("CONNECT %s through %s: unexpected bytes after the answer", target, sock)
	}
	return conn, nil
}

// stopVirtual closes the listeners behind the virtual addresses.
func (c *Cluster) stopVirtual() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range c.virtual {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	c.virtual = nil
	return errors.Join(errs...)
}
