package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiconform/aiconform/submission"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runSubmission runs argv through the real root and its exit-code mapping.
func runSubmission(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return run(t, args...)
}

// writeKeyPair writes an ed25519 pair as openssl encodes it: PKCS#8 and PKIX.
func writeKeyPair(t *testing.T, dir, name string) (privPath, pubPath string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	privPath = filepath.Join(dir, name+".pem")
	require.NoError(t, os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	der, err = x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	pubPath = filepath.Join(dir, name+".pub.pem")
	require.NoError(t, os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644))
	return privPath, pubPath
}

// writeSubmission writes a small submission directory and returns it.
func writeSubmission(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sub")
	for name, content := range map[string]string{
		"PRODUCT.yaml":                  "metadata:\n  productName: demo\n",
		"report.json":                   `{"schemaVersion":"1"}` + "\n",
		"evidence/robust_controller.md": "# robust_controller\n",
		"evidence/gpu notes.md":         "a name with a space\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

func TestSubmissionSignVerify(t *testing.T) {
	keys := t.TempDir()
	priv, pub := writeKeyPair(t, keys, "vendor")
	_, otherPub := writeKeyPair(t, keys, "other")

	tests := []struct {
		name       string
		tamper     func(t *testing.T, dir string)
		key        string
		code       int
		wantOut    string
		wantStderr string
	}{
		{name: "round trip", code: 0, wantOut: "verified 4 files\n"},
		{
			name: "one changed byte",
			tamper: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"schemaVersion":"2"}`+"\n"), 0o644))
			},
			code: 1, wantOut: "changed: report.json\n", wantStderr: "does not verify: 1 problem(s)",
		},
		{
			name: "an added file",
			tamper: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "late.md"), nil, 0o644))
			},
			code: 1, wantOut: "added: evidence/late.md\n",
		},
		{
			name: "a removed file",
			tamper: func(t *testing.T, dir string) {
				require.NoError(t, os.Remove(filepath.Join(dir, "evidence", "gpu notes.md")))
			},
			code: 1, wantOut: "missing: evidence/gpu notes.md\n",
		},
		{
			name: "a tampered SHA256SUMS fails on the signature",
			tamper: func(t *testing.T, dir string) {
				path := filepath.Join(dir, submission.ManifestName)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte("report.json"), []byte("report.jsoN"), 1), 0o644))
			},
			code: 1, wantOut: "bad signature: SHA256SUMS",
		},
		{name: "the wrong public key", key: otherPub, code: 1, wantOut: "bad signature: SHA256SUMS (the signature does not match this manifest and key)\n"},
		{name: "the private key to verify", key: priv, code: 2, wantStderr: "verifying takes the public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeSubmission(t)
			code, out, errOut := runSubmission(t, "submission", "sign", dir, "--key", priv)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, fmt.Sprintf("signed 4 files: wrote %s and %s\n",
				filepath.Join(dir, "SHA256SUMS"), filepath.Join(dir, "SHA256SUMS.sig")), out)

			if tt.tamper != nil {
				tt.tamper(t, dir)
			}
			key := pub
			if tt.key != "" {
				key = tt.key
			}
			code, out, errOut = runSubmission(t, "submission", "verify", dir, "--key", key)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out, tt.wantOut)
			assert.Contains(t, errOut, tt.wantStderr)
		})
	}
}

func TestSubmissionUsage(t *testing.T) {
	keys := t.TempDir()
	priv, pub := writeKeyPair(t, keys, "vendor")
	// An RSA key as `openssl genpkey -algorithm rsa` writes it: PKCS#8.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	rsaPEM := filepath.Join(keys, "rsa.pem")
	require.NoError(t, os.WriteFile(rsaPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	dir := writeSubmission(t)
	require.NoError(t, os.Symlink(filepath.Join(keys, "vendor.pub.pem"), filepath.Join(dir, "evidence", "key.pem")))
	keyInside, _ := writeKeyPair(t, filepath.Join(dir, "evidence"), "vendor")
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"sign needs --key", []string{"submission", "sign", dir}, 2, "--key FILE is required"},
		{"verify needs --key", []string{"submission", "verify", dir}, 2, "--key FILE is required"},
		{"sign needs a directory", []string{"submission", "sign", "--key", priv}, 2, "name one directory"},
		{"verify takes one directory", []string{"submission", "verify", dir, dir, "--key", pub}, 2, "name one directory (got 2 arguments)"},
		{"an RSA key names the file", []string{"submission", "sign", dir, "--key", rsaPEM}, 2, rsaPEM + ": an RSA private key; want ed25519"},
		{"the public key to sign", []string{"submission", "sign", dir, "--key", pub}, 2, "this is a public key"},
		{"a key that is not there", []string{"submission", "sign", dir, "--key", filepath.Join(keys, "nope.pem")}, 2, "nope.pem"},
		{"a symlink in DIR is refused", []string{"submission", "sign", dir, "--key", priv}, 2, "evidence/key.pem is a symlink"},
		{"a private key inside DIR", []string{"submission", "sign", dir, "--key", keyInside}, 2, "keep the private key out of the directory"},
		{"a directory that is not there", []string{"submission", "verify", filepath.Join(keys, "nope"), "--key", pub}, 2, "verify " + filepath.Join(keys, "nope")},
		{"keygen needs --out", []string{"submission", "keygen"}, 2, "--out PREFIX is required"},
		{"a mistyped subcommand", []string{"submission", "sing", dir}, 2, `unknown command "sing" for "aiconform submission"`},
		{"unknown flag", []string{"submission", "sign", dir, "--kee", priv}, 2, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runSubmission(t, tt.args...)
			assert.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, tt.wantStderr)
		})
	}
}

func TestSubmissionKeygen(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "vendor")
	code, out, errOut := runSubmission(t, "submission", "keygen", "--out", prefix)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote "+prefix+".pem")

	info, err := os.Stat(prefix + ".pem")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the private key is readable by its owner only")

	dir := writeSubmission(t)
	code, _, errOut = runSubmission(t, "submission", "sign", dir, "--key", prefix+".pem")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = runSubmission(t, "submission", "verify", dir, "--key", prefix+".pub.pem")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "verified 4 files\n", out)

	before, err := os.ReadFile(prefix + ".pem")
	require.NoError(t, err)
	code, _, errOut = runSubmission(t, "submission", "keygen", "--out", prefix)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "file exists")
	after, err := os.ReadFile(prefix + ".pem")
	require.NoError(t, err)
	assert.Equal(t, before, after, "keygen never overwrites a key")
}

// TestSubmissionWithOpenSSL: keys made by openssl itself are accepted, and
// openssl verifies our signature, so a reviewer needs nothing of ours.
func TestSubmissionWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not on PATH")
	}
	keys := t.TempDir()
	priv, pub := filepath.Join(keys, "vendor.pem"), filepath.Join(keys, "vendor.pub.pem")
	opensslRun(t, "genpkey", "-algorithm", "ed25519", "-out", priv)
	opensslRun(t, "pkey", "-in", priv, "-pubout", "-out", pub)

	dir := writeSubmission(t)
	code, _, errOut := runSubmission(t, "submission", "sign", dir, "--key", priv)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runSubmission(t, "submission", "verify", dir, "--key", pub)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "verified 4 files\n", out)

	t.Run("openssl verifies the signature", func(t *testing.T) {
		sigText, err := os.ReadFile(filepath.Join(dir, submission.SignatureName))
		require.NoError(t, err)
		sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sigText)))
		require.NoError(t, err)
		sigFile := filepath.Join(t.TempDir(), "sig.bin")
		require.NoError(t, os.WriteFile(sigFile, sig, 0o644))
		out := opensslRun(t, "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin",
			"-in", filepath.Join(dir, submission.ManifestName), "-sigfile", sigFile)
		assert.Contains(t, out, "Signature Verified Successfully")
	})
}

func opensslRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("openssl", args...).CombinedOutput()
	require.NoError(t, err, "openssl %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// TestSubmissionSHA256SumCheck: the manifest is what coreutils reads.
func TestSubmissionSHA256SumCheck(t *testing.T) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skip("sha256sum is not on PATH")
	}
	keys := t.TempDir()
	priv, _ := writeKeyPair(t, keys, "vendor")
	dir := writeSubmission(t)
	code, _, errOut := runSubmission(t, "submission", "sign", dir, "--key", priv)
	require.Equal(t, 0, code, errOut)

	cmd := exec.Command("sha256sum", "--strict", "-c", submission.ManifestName)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "evidence/gpu notes.md: OK")
	assert.Equal(t, 4, strings.Count(string(out), ": OK"))
}

// TestSubmissionFlags is the argv -> options layer.
func TestSubmissionFlags(t *testing.T) {
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}

	var sign *SignOptions
	cmd := NewCmdSubmissionSign(streams, func(o *SignOptions) error { sign = o; return nil })
	cmd.SetArgs([]string{"out/", "--key", "k.pem"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "out/", sign.Dir)
	assert.Equal(t, "k.pem", sign.Key)

	var verify *VerifyOptions
	cmd = NewCmdSubmissionVerify(streams, func(o *VerifyOptions) error { verify = o; return nil })
	cmd.SetArgs([]string{"--key", "k.pub.pem", "out/"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "out/", verify.Dir)
	assert.Equal(t, "k.pub.pem", verify.Key)

	var keygen *KeygenOptions
	cmd = NewCmdSubmissionKeygen(streams, func(o *KeygenOptions) error { keygen = o; return nil })
	cmd.SetArgs([]string{"--out", "keys/vendor"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, "keys/vendor", keygen.Out)
}
