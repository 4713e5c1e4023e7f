package rig

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllowed(t *testing.T) {
	tests := []struct {
		target string
		ok     bool
	}{
		{"127.0.0.1:443", true},
		{"127.0.10.1:10250", true},
		{"10.96.0.10:443", false},
		{"10.244.1.2:8080", false},
		{"192.168.1.1:80", false},
		{"[::1]:443", false}, // only IPv4 loopback is ours
		{"localhost:443", false},
		{"kubernetes.default.svc:443", false},
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			_, err := allowed(tt.target)
			assert.Equal(t, tt.ok, err == nil, "err: %v", err)
		})
	}
}

// connect sends one CONNECT over the unix socket and returns the status
// line and the connection for further use.
func connect(t *testing.T, sock, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	require.NoError(t, err)
	return resp, conn, br
}

// getThrough sends a GET through a tunnel to target, opened over the
// proxy's socket, and returns the body of the answer.
func getThrough(t *testing.T, sock, target string) string {
	t.Helper()
	resp, conn, br := connect(t, sock, target)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	require.NoError(t, err)
	inner, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(inner.Body)
	require.NoError(t, err)
	return string(body)
}

func TestEgressProxy(t *testing.T) {
	// A short path: t.TempDir() can exceed the unix socket path limit.
	dir, err := os.MkdirTemp("", "egress")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	var logBuf syncBuffer
	p, err := ListenEgressProxy(sock, &logBuf)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello from loopback")
	}))
	t.Cleanup(backend.Close)

	t.Run("loopback is tunnelled", func(t *testing.T) {
		target := strings.TrimPrefix(backend.URL, "http://")
		assert.Equal(t, "hello from loopback", getThrough(t, sock, target))
		assert.Contains(t, logBuf.String(), "ALLOWED target="+target)
	})

	t.Run("a real node's range goes through the node's own proxy", func(t *testing.T) {
		// The node's proxy, with the backend standing in for a pod of its.
		nodeSock := filepath.Join(dir, "n")
		var nodeLog syncBuffer
		backendAP := netip.MustParseAddrPort(strings.TrimPrefix(backend.URL, "http://"))
		node, err := listenConnect(nodeSock, &nodeLog, func(target string) (upstream, error) {
			if target != "10.250.201.5:8080" {
				return upstream{}, fmt.Errorf("%s is not the pod", target)
			}
			return tcpUpstream(backendAP), nil
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = node.Close() })
		require.NoError(t, os.MkdirAll(virtualDir(sock), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(virtualDir(sock), "net-10.250.201.0_24"), []byte("unix:"+nodeSock+"\n"), 0o600))

		assert.Equal(t, "hello from loopback", getThrough(t, sock, "10.250.201.5:8080"))
		assert.Contains(t, logBuf.String(), "ALLOWED target=10.250.201.5:8080 via=unix:"+nodeSock)
		assert.Contains(t, nodeLog.String(), "ALLOWED target=10.250.201.5:8080 via="+backendAP.String())

		// What the node's proxy refuses, the egress proxy answers as a
		// failed dial, not as a tunnel.
		resp, _, _ := connect(t, sock, "10.250.201.6:8080")
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.Contains(t, nodeLog.String(), egressRefusedMarker+" target=10.250.201.6:8080")
	})

	t.Run("service address is refused without dialling", func(t *testing.T) {
		resp, _, _ := connect(t, sock, "10.96.0.10:443")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Contains(t, logBuf.String(), egressRefusedMarker+" target=10.96.0.10:443")
	})

	t.Run("plain requests are refused", func(t *testing.T) {
		conn, err := net.Dial("unix", sock)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET http://10.0.0.1/ HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
}

// syncBuffer is a bytes.Buffer safe for the proxy's goroutines and the
// test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestResolveVirtual(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "virtual")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "10.250.0.2:9400"), []byte("127.0.0.1:41234\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "10.250.0.3:9400"), []byte("10.244.0.3:9400\n"), 0o600))
	// A real node's network: its whole range goes to its own proxy.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "net-10.250.201.0_24"), []byte("unix:/rig/nodes/n1/connect.sock\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "net-10.250.202.0_24"), []byte("127.0.0.1:80\n"), 0o600))
	for _, tt := range []struct {
		target, via, err string
	}{
		{target: "10.250.0.2:9400", via: "127.0.0.1:41234"},
		{target: "10.250.0.2:9401", err: "10.250.0.2:9401: no listener registered for this virtual address"},
		{target: "10.250.0.9:9400", err: "no listener registered"},
		// A registration that leaves loopback is refused like any target.
		{target: "10.250.0.3:9400", err: "10.244.0.3 is outside 127.0.0.0/8"},
		{target: "10.251.0.2:9400", err: "10.251.0.2 is outside 127.0.0.0/8"},
		{target: "127.0.0.1:6443", via: "127.0.0.1:6443"},
		{target: "10.250.201.7:8080", via: "unix:/rig/nodes/n1/connect.sock"},
		{target: "10.250.202.7:8080", err: "names no unix socket"},
		{target: "10.250.203.7:8080", err: "no listener registered"},
	} {
		t.Run(tt.target, func(t *testing.T) {
			up, err := resolve(dir, tt.target)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.via, up.via)
		})
	}
}

func TestNodeRoute(t *testing.T) {
	route := nodeRoute(RealNodeIP(1), RealNodePodCIDR(1))
	for _, tt := range []struct {
		target, err string
	}{
		{target: "10.250.200.1:10250"},
		{target: "10.250.201.9:8080"},
		{target: "10.250.200.2:10250", err: "neither the node 10.250.200.1 nor its pods 10.250.201.0/24"},
		{target: "10.250.202.9:8080", err: "neither"},
		{target: "127.0.0.1:6443", err: "neither"},
		{target: "rig-node-1:10250", err: "not an IP:port"},
	} {
		t.Run(tt.target, func(t *testing.T) {
			up, err := route(tt.target)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.target, up.via)
		})
	}
}
