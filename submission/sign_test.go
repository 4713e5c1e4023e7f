package submission

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newKey returns a fresh key pair; tests never share keys, so a signature
// can only verify under the key that made it.
func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return pub, priv
}

// writeTree writes files (slash paths relative to dir) with their content.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

// submissionTree is shaped like a submission directory, with a nested file
// named like the manifest, which must be listed (only the top-level one is
// the manifest).
var submissionTree = map[string]string{
	"PRODUCT.yaml":                  "metadata:\n  productName: demo\n",
	"report.json":                   `{"schemaVersion":"1"}`,
	"junit.xml":                     "<testsuites/>",
	"evidence/robust_controller.md": "# robust_controller\n",
	"evidence/gpu.md":               "",
	"evidence/old/SHA256SUMS":       "not ours\n",
}

func TestSignVerify(t *testing.T) {
	tests := []struct {
		name string
		// tamper changes the signed directory; it may return another key to
		// verify with.
		tamper func(t *testing.T, dir string) ed25519.PublicKey
		want   []Problem
	}{
		{name: "untouched", tamper: func(*testing.T, string) ed25519.PublicKey { return nil }},
		{
			name: "one changed byte",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				path := filepath.Join(dir, "evidence", "robust_controller.md")
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data[2] ^= 1
				require.NoError(t, os.WriteFile(path, data, 0o644))
				return nil
			},
			want: []Problem{{Kind: Changed, Path: "evidence/robust_controller.md"}},
		},
		{
			name: "an added file",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				writeTree(t, dir, map[string]string{"evidence/extra.md": "x"})
				return nil
			},
			want: []Problem{{Kind: Added, Path: "evidence/extra.md"}},
		},
		{
			name: "an added empty file",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				writeTree(t, dir, map[string]string{"z": ""})
				return nil
			},
			want: []Problem{{Kind: Added, Path: "z"}},
		},
		{
			name: "a removed file",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.Remove(filepath.Join(dir, "junit.xml")))
				return nil
			},
			want: []Problem{{Kind: Missing, Path: "junit.xml"}},
		},
		{
			name: "a renamed file is one missing and one added",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.Rename(filepath.Join(dir, "junit.xml"), filepath.Join(dir, "junit2.xml")))
				return nil
			},
			want: []Problem{{Kind: Missing, Path: "junit.xml"}, {Kind: Added, Path: "junit2.xml"}},
		},
		{
			name: "a file replaced by a symlink to the same content",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				path := filepath.Join(dir, "report.json")
				require.NoError(t, os.Rename(path, filepath.Join(t.TempDir(), "moved")))
				require.NoError(t, os.Symlink(filepath.Join(dir, "junit.xml"), path))
				return nil
			},
			want: []Problem{{Kind: NotRegular, Path: "report.json", Detail: "a symlink"}},
		},
		{
			name: "an added symlink",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "evidence", "link")))
				return nil
			},
			want: []Problem{{Kind: NotRegular, Path: "evidence/link", Detail: "a symlink"}},
		},
		{
			name: "a tampered manifest fails on the signature",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				// Edit a file and its line in the manifest consistently: only
				// the signature can catch it.
				writeTree(t, dir, map[string]string{"junit.xml": "<testsuites></testsuites>"})
				m, err := Scan(dir)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), m.Marshal(), 0o644))
				return nil
			},
			want: []Problem{{Kind: BadSignature, Path: ManifestName, Detail: "the signature does not match this manifest and key"}},
		},
		{
			name: "the wrong public key",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				other, _ := newKey(t)
				return other
			},
			want: []Problem{{Kind: BadSignature, Path: ManifestName, Detail: "the signature does not match this manifest and key"}},
		},
		{
			name: "a signature that is not base64",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.WriteFile(filepath.Join(dir, SignatureName), []byte("not a signature\n"), 0o644))
				return nil
			},
			want: []Problem{{Kind: BadSignature, Path: SignatureName, Detail: "not a base64 ed25519 signature"}},
		},
		{
			name: "no signature, and the files still compared",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.Remove(filepath.Join(dir, SignatureName)))
				require.NoError(t, os.Remove(filepath.Join(dir, "junit.xml")))
				return nil
			},
			want: []Problem{
				{Kind: BadSignature, Path: SignatureName, Detail: "missing; sign the directory first"},
				{Kind: Missing, Path: "junit.xml"},
			},
		},
		{
			name: "no manifest",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				require.NoError(t, os.Remove(filepath.Join(dir, ManifestName)))
				return nil
			},
			want: []Problem{{Kind: BadSignature, Path: ManifestName, Detail: "missing; sign the directory first"}},
		},
		{
			name: "a manifest that is a symlink",
			tamper: func(t *testing.T, dir string) ed25519.PublicKey {
				path := filepath.Join(dir, ManifestName)
				copyTo := filepath.Join(t.TempDir(), ManifestName)
				require.NoError(t, os.Rename(path, copyTo))
				require.NoError(t, os.Symlink(copyTo, path))
				return nil
			},
			want: []Problem{{Kind: BadSignature, Path: ManifestName, Detail: "a symlink"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, submissionTree)
			pub, priv := newKey(t)
			m, err := Sign(dir, priv)
			require.NoError(t, err)
			require.Len(t, m.Entries, len(submissionTree))

			if other := tt.tamper(t, dir); other != nil {
				pub = other
			}
			v, err := Verify(dir, pub)
			require.NoError(t, err)
			assert.Equal(t, tt.want, v.Problems)
			assert.Equal(t, len(tt.want) == 0, v.OK())
		})
	}
}

func TestVerifyCounts(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, submissionTree)
	pub, priv := newKey(t)
	_, err := Sign(dir, priv)
	require.NoError(t, err)
	v, err := Verify(dir, pub)
	require.NoError(t, err)
	assert.True(t, v.OK())
	assert.Equal(t, len(submissionTree), v.Files)
}

// TestResign: signing again covers the new content and never lists the old
// manifest, its signature, or leftovers of an interrupted sign.
func TestResign(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, submissionTree)
	pub, priv := newKey(t)
	_, err := Sign(dir, priv)
	require.NoError(t, err)
	writeTree(t, dir, map[string]string{
		"evidence/new.md":      "new",
		ManifestName + ".tmp":  "left by a crash",
		SignatureName + ".tmp": "left by a crash",
	})
	m, err := Sign(dir, priv)
	require.NoError(t, err)
	assert.Len(t, m.Entries, len(submissionTree)+1)
	for _, e := range m.Entries {
		assert.NotContains(t, []string{ManifestName, SignatureName, ManifestName + ".tmp", SignatureName + ".tmp"}, e.Path)
	}
	v, err := Verify(dir, pub)
	require.NoError(t, err)
	assert.Empty(t, v.Problems)
	assert.NoFileExists(t, filepath.Join(dir, ManifestName+".tmp"))
}

func TestSignRefuses(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o644))
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string
	}{
		{
			name: "a symlink to a file outside",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink(outside, filepath.Join(dir, "evidence", "x.md")))
			},
			wantErr: "evidence/x.md is a symlink; only regular files can be signed",
		},
		{
			name: "a symlink to a file inside",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink("gpu.md", filepath.Join(dir, "evidence", "y.md")))
			},
			wantErr: "evidence/y.md is a symlink",
		},
		{
			name: "a symlink to a directory outside",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "more")))
			},
			wantErr: "more is a symlink",
		},
		{
			name:    "a name with a newline",
			setup:   func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"a\nb": "x"}) },
			wantErr: "line break",
		},
		{
			name:    "a name with a backslash",
			setup:   func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{`a\b`: "x"}) },
			wantErr: "backslash",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, submissionTree)
			tt.setup(t, dir)
			_, priv := newKey(t)
			_, err := Sign(dir, priv)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NoFileExists(t, filepath.Join(dir, ManifestName), "a refused sign writes nothing")
		})
	}
	t.Run("a directory that does not exist", func(t *testing.T) {
		_, priv := newKey(t)
		_, err := Sign(filepath.Join(t.TempDir(), "nope"), priv)
		assert.Error(t, err)
	})
}
