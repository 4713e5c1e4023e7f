package submission

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestManifestFormat pins the bytes: sha256sum's text mode, sorted by whole
// path in byte order ("a-b" before "a/b", though WalkDir visits a/ first).
func TestManifestFormat(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a/b": "1", "a-b": "2", "B": "3", "a/c/d.md": ""})
	m, err := Scan(dir)
	require.NoError(t, err)
	want := sum("3") + "  B\n" +
		sum("2") + "  a-b\n" +
		sum("1") + "  a/b\n" +
		sum("") + "  a/c/d.md\n"
	assert.Equal(t, want, string(m.Marshal()))

	back, err := ParseManifest(m.Marshal())
	require.NoError(t, err)
	assert.Equal(t, m, back)
}

func TestEmptyDirectory(t *testing.T) {
	m, err := Scan(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, m.Marshal())
	back, err := ParseManifest(nil)
	require.NoError(t, err)
	assert.Empty(t, back.Entries)
}

func TestParseManifestRefuses(t *testing.T) {
	d := sum("x")
	tests := []struct {
		name, data, wantErr string
	}{
		{"a path that climbs out", d + "  ../etc/passwd\n", `"../etc/passwd" is not a path inside`},
		{"an absolute path", d + "  /etc/passwd\n", `"/etc/passwd" is not a path inside`},
		{"a dot element", d + "  a/./b\n", "not a path inside"},
		{"an empty path", d + "  \n", "not a path inside"},
		{"the manifest itself", d + "  SHA256SUMS\n", "cannot list itself"},
		{"the signature", d + "  SHA256SUMS.sig\n", "cannot list itself"},
		{"a listed twice", d + "  a\n" + d + "  a\n", `line 2: "a" is listed twice`},
		{"out of order", d + "  b\n" + d + "  a\n", `line 2: "a" is out of order`},
		{"uppercase hex", strings.ToUpper(d) + "  a\n", "line 1: want 64 lowercase hex"},
		{"binary mode marker", d + " *a\n", "line 1: want 64"},
		{"a short digest", d[:10] + "  a\n", "line 1: want 64"},
		{"not hex", strings.Repeat("zz", 32) + "  a\n", "line 1:"},
		{"no final newline", d + "  a", "newline"},
		{"a blank line", d + "  a\n\n", "line 2:"},
		{"CRLF", d + "  a\r\n", "line break"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tt.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
