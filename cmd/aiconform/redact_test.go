package main

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/cluster"
	"github.com/aiconform/aiconform/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoIdentifiers are the node names and the IP addresses the demo recording
// holds, read from the recording itself: every string of every object and
// Table cell that parses as an address, but those --redact keeps
// (127.0.0.1, ::1, unspecified, documentation ranges).
func demoIdentifiers(t *testing.T) (nodes, ips []string) {
	t.Helper()
	data, err := fixtures.Read("demo")
	require.NoError(t, err)
	rec, err := cluster.LoadRecording("demo", data)
	require.NoError(t, err)
	seen := map[string]bool{}
	addIP := func(s string) {
		a, err := netip.ParseAddr(s)
		if err != nil || seen[s] || keptAddr(a) {
			return
		}
		seen[s] = true
		ips = append(ips, s)
	}
	for _, l := range rec.Lists {
		for _, it := range l.Items {
			var obj map[string]any
			require.NoError(t, json.Unmarshal(it.Raw, &obj))
			if l.Kind == "Node" {
				nodes = append(nodes, obj["metadata"].(map[string]any)["name"].(string))
			}
			eachString(obj, addIP)
		}
	}
	for _, tb := range rec.Tables {
		if tb.Table == nil {
			continue
		}
		for _, row := range tb.Table.Rows {
			for _, c := range row.Cells {
				eachString(c, addIP)
			}
		}
	}
	sort.Strings(nodes)
	sort.Strings(ips)
	return nodes, ips
}

func eachString(v any, f func(string)) {
	switch v := v.(type) {
	case string:
		f(v)
	case map[string]any:
		for _, e := range v {
			eachString(e, f)
		}
	case []any:
		for _, e := range v {
			eachString(e, f)
		}
	}
}

func keptAddr(a netip.Addr) bool {
	for _, p := range []string{"127.0.0.1/32", "::1/128", "0.0.0.0/32", "::/128", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"} {
		if netip.MustParsePrefix(p).Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// requireRan fails the test unless check ran to its end: whether the demo
// meets every requirement is not what these tests are about.
func requireRan(t *testing.T, code int, stderr string) {
	t.Helper()
	require.Contains(t, []int{exitOK, exitNotMet}, code, stderr)
}

// readReports reads what --out wrote.
func readReports(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range reportFiles {
		data, err := os.ReadFile(filepath.Join(dir, f.name))
		require.NoError(t, err)
		out[f.name] = string(data)
	}
	return out
}

var nodePseudonymRE = regexp.MustCompile(`node-[0-9a-f]{8}`)

// pseudonyms lists the distinct node pseudonyms of a text.
func pseudonyms(s string) []string {
	set := map[string]bool{}
	for _, p := range nodePseudonymRE.FindAllString(s, -1) {
		set[p] = true
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func TestCheckRedact(t *testing.T) {
	nodes, ips := demoIdentifiers(t)
	require.Equal(t, []string{"cpu-node-1", "gpu-node-1"}, nodes)
	require.Contains(t, ips, "127.0.10.2", "the GPU node's InternalIP")

	// Unredacted, the report shows them: what is asserted below can fail.
	plainDir := t.TempDir()
	code, _, errOut := run(t, "check", "all", "--fixture", "demo", "--out", plainDir)
	requireRan(t, code, errOut)
	plain := readReports(t, plainDir)
	shown := 0
	for _, v := range append(append([]string{}, nodes...), ips...) {
		if strings.Contains(plain["report.json"], v) {
			shown++
		}
	}
	require.GreaterOrEqual(t, shown, 6, "the demo report shows both nodes and several addresses")
	require.NotContains(t, plain["report.json"], `"redacted"`)

	key := filepath.Join(t.TempDir(), "redact.key")
	require.NoError(t, os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o600))
	dir := t.TempDir()
	code, stdout, errOut := run(t, "check", "all", "--fixture", "demo", "--redact", "--redact-key", key, "--out", dir, "-o", "markdown")
	requireRan(t, code, errOut)
	got := readReports(t, dir)
	got["stdout"] = stdout
	for name, content := range got {
		for _, v := range append(append([]string{}, nodes...), ips...) {
			assert.NotContains(t, content, v, name)
		}
	}
	assert.Equal(t, got["report.md"], stdout)
	assert.Contains(t, got["report.json"], `"redacted": true`)

	// Both nodes, under the same pseudonyms in every file.
	want := pseudonyms(got["report.json"])
	assert.Len(t, want, 2)
	assert.Equal(t, want, pseudonyms(got["report.md"]))
	assert.Equal(t, want, pseudonyms(got["junit.xml"]))
	assert.Equal(t, want, pseudonyms(got["report.html"]))

	// The same key again: the same files, byte for byte.
	again := t.TempDir()
	code, _, errOut = run(t, "check", "all", "--fixture", "demo", "--redact", "--redact-key", key, "--out", again)
	requireRan(t, code, errOut)
	assert.Equal(t, got["report.json"], readReports(t, again)["report.json"])

	// Without a key, a random one per run.
	random := t.TempDir()
	code, _, errOut = run(t, "check", "all", "--fixture", "demo", "--redact", "--out", random)
	requireRan(t, code, errOut)
	other := readReports(t, random)["report.json"]
	assert.Len(t, pseudonyms(other), 2)
	assert.NotEqual(t, want, pseudonyms(other))
	for _, v := range append(append([]string{}, nodes...), ips...) {
		assert.NotContains(t, other, v)
	}
}

func TestCheckRedactKeyErrors(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short.key")
	require.NoError(t, os.WriteFile(short, []byte("secret\n"), 0o600))
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"key without --redact", []string{"--redact-key", short}, "--redact-key is the key of --redact"},
		{"missing key file", []string{"--redact", "--redact-key", filepath.Join(t.TempDir(), "none")}, "--redact-key: open"},
		{"short key", []string{"--redact", "--redact-key", short}, "holds 7 bytes; a key needs at least 16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			code, _, errOut := run(t, append([]string{"check", "all", "--fixture", "demo", "--out", dir}, tt.args...)...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tt.stderr)
			_, err := os.Stat(filepath.Join(dir, "report.json"))
			assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written")
		})
	}
}
