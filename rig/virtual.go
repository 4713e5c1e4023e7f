package rig

import (
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
	dir := virtualDir(c.state.EgressSocket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Written whole, then renamed: the proxy never reads half an address.
	file := filepath.Join(dir, addr.String())
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(listener+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// resolveVirtual is the loopback listener registered behind a virtual
// address, in dir.
func resolveVirtual(dir string, ap netip.AddrPort) (netip.AddrPort, error) {
	data, err := os.ReadFile(filepath.Join(dir, ap.String()))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s: no listener registered for this virtual address", ap)
	}
	return allowed(strings.TrimSpace(string(data)))
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
